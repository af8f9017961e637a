//! The upkeep lease over SQL: one upsert takes or keeps it (the conflict
//! clause's `WHERE` lets only its owner or a taker of an expired lease
//! through), so two servers can never both be handed it.

use a2_store::*;

use crate::value::Arg;
use crate::{SqlBackend, SqlStore};

pub(crate) async fn lease<B: SqlBackend>(store: &SqlStore<B>, params: UpkeepLease) -> Result<Option<u64>, StoreError> {
    if params.scope.is_empty() || params.owner.is_empty() || params.ttl_ms <= 0 {
        return Err(StoreError::invalid("an upkeep lease needs a scope, an owner and a positive ttl"));
    }
    let now = store.now();
    let args = vec![
        Arg::text(&params.scope),
        Arg::text(&params.owner),
        Arg::Int(now),
        Arg::Int(now.saturating_add(params.ttl_ms)),
    ];
    let mut tx = store.backend.begin().await?;
    let row = tx.fetch_optional(store.sql().upkeep_lease, args).await?;
    tx.commit().await?;
    row.map(|row| row.u64("generation")).transpose()
}

pub(crate) async fn release<B: SqlBackend>(store: &SqlStore<B>, params: UpkeepRelease) -> Result<bool, StoreError> {
    let mut tx = store.backend.begin().await?;
    let released =
        tx.execute(store.sql().upkeep_release, vec![Arg::text(&params.scope), Arg::text(&params.owner)]).await?;
    tx.commit().await?;
    Ok(released > 0)
}

pub(crate) async fn leaders<B: SqlBackend>(store: &SqlStore<B>) -> Result<Vec<UpkeepLeader>, StoreError> {
    let rows = store.backend.read().await?.fetch(store.sql().upkeep_leaders, Vec::new()).await?;
    rows.iter()
        .map(|row| {
            Ok(UpkeepLeader {
                scope: row.text("scope")?,
                owner: row.text("owner")?,
                generation: row.u64("generation")?,
                expires_at: row.int("expires_at")?,
            })
        })
        .collect()
}
