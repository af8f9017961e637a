//! Appends as one statement in the common case; the shared transaction
//! takes over when an id is already present.

use a2_store::codec::{kind_code, lane_column, target_kind, to_u64};
use a2_store::*;
use sqlx::types::Json;
use sqlx::Row;

use crate::db_error;

pub(crate) enum FastAppend {
    IdTaken,
    Failed(StoreError),
}

/// The whole append as one statement, so one round trip and one commit: the
/// session row is locked and its head moved first (so indexes stay dense),
/// then the events, their heads and new cursors go in. A duplicate id aborts
/// it whole (`IdTaken`), and the transactional path, which tells an
/// idempotent re-append from a partial duplicate, takes over.
pub(crate) async fn fast_append(
    pool: &sqlx::PgPool,
    params: &EventAppend,
    now: Millis,
) -> Result<Appended, FastAppend> {
    let key = params.session.as_str();
    let count = i64::try_from(params.events.len()).unwrap_or(i64::MAX);
    let ids: Vec<&str> = params.events.iter().map(|e| e.id.as_str()).collect();
    let types: Vec<&str> = params.events.iter().map(|e| e.event_type.as_str()).collect();
    let payloads: Vec<Json<&serde_json::Value>> = params.events.iter().map(|e| Json(&e.payload)).collect();
    let causes: Vec<Option<Json<&Cause>>> = params.events.iter().map(|e| e.cause.as_ref().map(Json)).collect();
    let (mut t_consumers, mut t_lanes, mut t_ordinals, mut t_kinds) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (ordinal, event) in params.events.iter().enumerate() {
        for target in &event.targets {
            t_consumers.push(target.consumer.as_str());
            t_lanes.push(lane_column(target.lane.as_deref()));
            t_ordinals.push(i64::try_from(ordinal + 1).unwrap_or(i64::MAX));
            t_kinds.push(kind_code(target_kind(target.lane.as_deref())));
        }
    }
    let logs: Vec<(&str, &str, bool)> = params
        .consumers
        .iter()
        .filter_map(|c| c.log.as_ref().map(|l| (c.name.as_str(), l.lane.as_str(), l.backfill)))
        .collect();
    let row = sqlx::query(
        "WITH s AS ( \
           INSERT INTO a2_sessions AS t (session, head, clear_index, created_at, updated_at) VALUES ($1, $2, 0, $3, $3) \
           ON CONFLICT (session) DO UPDATE SET head = t.head + $2, updated_at = $3 \
           RETURNING t.head - $2 AS base, t.clear_index), \
         ev AS ( \
           INSERT INTO a2_events (session, idx, id, type, payload, created_at, cause) \
           SELECT $1, s.base + x.o, x.d, x.t, x.p, $3, x.c \
           FROM s, UNNEST($4::text[], $5::text[], $6::jsonb[], $7::jsonb[]) WITH ORDINALITY AS x(d, t, p, c, o) RETURNING 1), \
         hd AS ( \
           INSERT INTO a2_heads (session, consumer, lane, idx, kind) \
           SELECT $1, y.c, y.l, s.base + y.o, y.k FROM s, UNNEST($8::text[], $9::text[], $10::bigint[], $11::smallint[]) AS y(c, l, o, k) \
           ON CONFLICT DO NOTHING RETURNING 1), \
         cur AS ( \
           INSERT INTO a2_heads (session, consumer, lane, idx, kind) \
           SELECT $1, z.c, z.l, CASE WHEN z.b THEN s.clear_index + 1 ELSE s.base + 1 END, 0 \
           FROM s, UNNEST($12::text[], $13::text[], $14::bool[]) AS z(c, l, b) \
           WHERE NOT EXISTS (SELECT 1 FROM a2_heads h WHERE h.session = $1 AND h.consumer = z.c AND h.kind = 0) \
           ON CONFLICT DO NOTHING RETURNING 1) \
         SELECT s.base FROM s",
    )
    .bind(key)
    .bind(count)
    .bind(now)
    .bind(&ids)
    .bind(&types)
    .bind(&payloads)
    .bind(&causes)
    .bind(&t_consumers)
    .bind(&t_lanes)
    .bind(&t_ordinals)
    .bind(&t_kinds)
    .bind(logs.iter().map(|l| l.0).collect::<Vec<_>>())
    .bind(logs.iter().map(|l| l.1).collect::<Vec<_>>())
    .bind(logs.iter().map(|l| l.2).collect::<Vec<_>>())
    .fetch_one(pool)
    .await;
    let row = match row {
        Ok(row) => row,
        Err(sqlx::Error::Database(db))
            if db.code().as_deref() == Some("23505") && db.constraint() == Some("a2_events_by_id") =>
        {
            return Err(FastAppend::IdTaken)
        }
        Err(error) => return Err(FastAppend::Failed(db_error(error))),
    };
    let base = to_u64(row.try_get::<i64, _>("base").map_err(|e| FastAppend::Failed(db_error(e)))?);
    let events = params
        .events
        .iter()
        .enumerate()
        .map(|(offset, e)| Event {
            id: e.id.clone(),
            event_type: e.event_type.clone(),
            payload: e.payload.clone(),
            index: base + 1 + offset as u64,
            session: key.to_owned(),
            created_at: now,
            cause: e.cause.clone(),
        })
        .collect::<Vec<_>>();
    Ok(Appended { head: base + events.len() as u64, events, duplicate: false })
}
