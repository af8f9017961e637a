//! The presence plane over SQL: one upsert a field, last writer winning in
//! the statement's own `WHERE`, the patch in one transaction; a write that
//! changed anything is announced like an append, so streams re-read.

use a2_store::codec::to_i64;
use a2_store::*;

use crate::value::{Arg, Row};
use crate::{page, SqlBackend, SqlStore};

fn cell(row: &Row) -> Result<PresenceCell, StoreError> {
    Ok(PresenceCell {
        participant: row.text("participant")?,
        field: row.text("field")?,
        value: row.opt_json("value")?,
        seen: row.u64("seen")?,
        at: row.int("at")?,
        expires_at: row.int("expires_at")?,
    })
}

pub(crate) async fn set<B: SqlBackend>(store: &SqlStore<B>, params: PresenceSet) -> Result<Vec<String>, StoreError> {
    check_session_key(&params.session)?;
    let now = store.now();
    let expires_at = now.saturating_add(params.ttl_ms);
    // In field order: two patches of one participant lock its rows in the same order, never crosswise.
    let mut values: Vec<&(String, Option<serde_json::Value>)> = params.values.iter().collect();
    values.sort_by(|a, b| a.0.cmp(&b.0));
    let mut tx = store.backend.begin().await?;
    let mut changed = Vec::new();
    for (field, value) in values {
        let args = vec![
            Arg::text(params.session.as_str()),
            Arg::text(&params.participant),
            Arg::text(field),
            Arg::OptJson(value.clone()),
            Arg::Int(to_i64(params.seen)),
            Arg::Int(params.at),
            Arg::Int(expires_at),
            Arg::Int(now),
        ];
        if tx.fetch_optional(store.sql().presence_upsert, args).await?.is_some() {
            changed.push(field.clone());
        }
    }
    tx.commit().await?;
    if !changed.is_empty() {
        store.backend.announce(params.session.as_str());
    }
    Ok(changed)
}

pub(crate) async fn read<B: SqlBackend>(
    store: &SqlStore<B>,
    session: &SessionKey,
) -> Result<Vec<PresenceCell>, StoreError> {
    let args = vec![Arg::text(session.as_str()), Arg::Int(store.now())];
    let rows = store.backend.read().await?.fetch(store.sql().presence_read, args).await?;
    rows.iter().map(cell).collect()
}

pub(crate) async fn prune<B: SqlBackend>(store: &SqlStore<B>, params: PresencePrune) -> Result<u64, StoreError> {
    let args = vec![Arg::Int(store.now()), page(params.limit)];
    let mut tx = store.backend.begin().await?;
    let rows = tx.fetch(store.sql().presence_prune, args).await?;
    tx.commit().await?;
    Ok(rows.len() as u64)
}

pub(crate) async fn sessions<B: SqlBackend>(store: &SqlStore<B>) -> Result<Vec<(String, u64)>, StoreError> {
    let rows = store.backend.read().await?.fetch(store.sql().presence_sessions, vec![Arg::Int(store.now())]).await?;
    rows.iter().map(|row| Ok((row.text("contract")?, row.u64("sessions")?))).collect()
}
