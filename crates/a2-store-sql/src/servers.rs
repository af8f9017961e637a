//! The process registry over SQL: a beat upserts the server's row and prunes
//! rows a day old in one transaction (one statement where the dialect can);
//! a clean shutdown deletes the row; the list reads the kept rows.

use a2_store::*;

use crate::value::{Arg, Row};
use crate::{SqlBackend, SqlStore};

fn record(row: &Row) -> Result<ServerRecord, StoreError> {
    Ok(ServerRecord { id: row.text("id")?, info: row.json("info")?, last_seen: row.int("last_seen")? })
}

pub(crate) async fn beat<B: SqlBackend>(store: &SqlStore<B>, params: ServerBeat) -> Result<(), StoreError> {
    if params.id.is_empty() || params.info.contract.is_empty() {
        return Err(StoreError::invalid("a server beat needs the server's id and its contract"));
    }
    let now = store.now();
    let info = crate::tasks::json_of(&params.info, "a server's registry row")?;
    let prune_before = now.saturating_sub(SERVER_KEPT_MS);
    let mut args = vec![
        Arg::text(&params.id),
        Arg::text(&params.info.contract),
        Arg::Json(info),
        Arg::Int(params.info.started_at),
        Arg::Int(now),
    ];
    let mut tx = store.backend.begin().await?;
    match store.sql().server_prune {
        // A dialect that cannot prune in the upsert's own statement prunes first.
        Some(prune) => {
            tx.execute(prune, vec![Arg::Int(prune_before)]).await?;
        }
        None => args.push(Arg::Int(prune_before)),
    }
    tx.execute(store.sql().server_beat, args).await?;
    tx.commit().await
}

pub(crate) async fn remove<B: SqlBackend>(store: &SqlStore<B>, id: &str) -> Result<bool, StoreError> {
    let mut tx = store.backend.begin().await?;
    let removed = tx.execute(store.sql().server_remove, vec![Arg::text(id)]).await?;
    tx.commit().await?;
    Ok(removed > 0)
}

pub(crate) async fn leased<B: SqlBackend>(
    store: &SqlStore<B>,
    params: HeadsLeased,
) -> Result<Vec<LeasedHead>, StoreError> {
    if params.holder_prefix.is_empty() {
        return Err(StoreError::invalid("a list of held heads needs a holder prefix"));
    }
    let limit = a2_store::page_size(params.limit);
    let args = vec![
        Arg::text(&params.holder_prefix),
        Arg::Int(store.now()),
        Arg::Int(i64::try_from(limit).unwrap_or(i64::MAX)),
    ];
    let rows = store.backend.read().await?.fetch(store.sql().heads_leased, args).await?;
    rows.iter()
        .map(|row| {
            let key = row.text("session")?;
            let (contract, session) = split_session_key(&key);
            Ok(LeasedHead {
                contract: contract.to_owned(),
                session_id: session.to_owned(),
                consumer: row.text("consumer")?,
                lane: a2_store::codec::lane_from_column(row.text("lane")?),
                index: row.u64("idx")?,
                attempt: row.u32("attempt_count")?,
                holder: row.text("lease_holder")?,
                lease_expires_at: row.int("lease_expires_at")?,
            })
        })
        .collect()
}

pub(crate) async fn list<B: SqlBackend>(
    store: &SqlStore<B>,
    params: ServerList,
) -> Result<Vec<ServerRecord>, StoreError> {
    let contract = params.contract.unwrap_or_default();
    let rows = store.backend.read().await?.fetch(store.sql().server_list, vec![Arg::text(contract)]).await?;
    rows.iter().map(record).collect()
}
