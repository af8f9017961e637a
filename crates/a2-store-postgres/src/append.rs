//! Appends as one statement in the common case; the shared transaction
//! takes over when an id is already present.

use a2_store::codec::{kind_code, lane_column, target_kind, to_u64};
use a2_store::*;
use sqlx::types::Json;
use sqlx::Row;

use crate::db_error;
use crate::route::Db;

type PgQuery<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

pub(crate) enum StatementAppendError {
    IdTaken,
    Failed(StoreError),
}

/// The whole append as one statement, so one round trip and one commit: the
/// session row is locked and its head moved first (so indexes stay dense),
/// then the events, their heads and new cursors go in — the batch statement
/// with one session. A duplicate id aborts it whole (`IdTaken`), and the
/// transactional path, which tells an idempotent re-append from a partial
/// duplicate, takes over.
pub(crate) async fn append_as_statement(
    pool: &Db,
    params: &EventAppend,
    now: Millis,
) -> Result<Appended, StatementAppendError> {
    match append_batch_as_statement(pool, &[params], now).await {
        Ok(mut appended) => appended.pop().ok_or_else(|| {
            StatementAppendError::Failed(StoreError::Schema { message: "the append statement returned no row".into() })
        }),
        Err(sqlx::Error::Database(db))
            if db.code().as_deref() == Some("23505") && db.constraint() == Some("a2_events_by_id") =>
        {
            Err(StatementAppendError::IdTaken)
        }
        Err(error) => Err(StatementAppendError::Failed(db_error(error))),
    }
}

/// The columns of one statement appending to many sessions: a row a session,
/// an event, a target and a new cursor, each naming its session.
#[derive(Default)]
pub(crate) struct Columns<'a> {
    sessions: Vec<&'a str>,
    counts: Vec<i64>,
    ev_sessions: Vec<&'a str>,
    ev_ordinals: Vec<i64>,
    ids: Vec<&'a str>,
    types: Vec<&'a str>,
    payloads: Vec<Json<&'a serde_json::Value>>,
    causes: Vec<Option<Json<CauseColumn<'a>>>>,
    t_sessions: Vec<&'a str>,
    t_consumers: Vec<&'a str>,
    t_lanes: Vec<&'a str>,
    t_ordinals: Vec<i64>,
    t_kinds: Vec<i16>,
    l_sessions: Vec<&'a str>,
    l_consumers: Vec<&'a str>,
    l_lanes: Vec<&'a str>,
    l_backfill: Vec<bool>,
}

impl<'a> Columns<'a> {
    pub(crate) fn push(&mut self, params: &'a EventAppend) {
        let key = params.session.as_str();
        self.sessions.push(key);
        self.counts.push(i64::try_from(params.events.len()).unwrap_or(i64::MAX));
        for (ordinal, event) in params.events.iter().enumerate() {
            let ordinal = i64::try_from(ordinal + 1).unwrap_or(i64::MAX);
            self.ev_sessions.push(key);
            self.ev_ordinals.push(ordinal);
            self.ids.push(&event.id);
            self.types.push(&event.event_type);
            self.payloads.push(Json(&event.payload));
            self.causes.push(CauseColumn::of(event.cause.as_ref(), event.scheduled_by.as_ref()).map(Json));
            for target in &event.targets {
                self.t_sessions.push(key);
                self.t_consumers.push(&target.consumer);
                self.t_lanes.push(lane_column(target.lane.as_deref()));
                self.t_ordinals.push(ordinal);
                self.t_kinds.push(kind_code(target_kind(target.lane.as_deref())));
            }
        }
        for consumer in &params.consumers {
            if let Some(log) = &consumer.log {
                self.l_sessions.push(key);
                self.l_consumers.push(&consumer.name);
                self.l_lanes.push(&log.lane);
                self.l_backfill.push(log.backfill);
            }
        }
    }
}

/// An append restamps its session's `updated_at` only when the stamp is a
/// second old or more: the row of a session appended to faster than that
/// keeps every indexed column, so its update is HOT (no index entry, less
/// WAL). The totals refresh's change query looks back that much further
/// (`SESSION_RESTAMP_MS`, the `1000` of the statements here and in
/// `session_advance`).
const _: () = assert!(a2_store::SESSION_RESTAMP_MS == 1_000);

/// The CTEs of an append to many sessions, `$1`–`$18` (see
/// [`append_batch_as_statement`]): `req` (sessions and counts) kept where
/// `$gate` holds, so a statement that completes a head first appends only
/// if its fence passed; `b` gives each session's base index.
macro_rules! append_ctes {
    ($gate:literal) => {
        concat!(
            "req AS (SELECT * FROM UNNEST($1::text[], $2::bigint[]) AS r(session, n) WHERE ",
            $gate,
            "), ",
            "s AS ( \
       INSERT INTO a2_sessions AS t (session, head, clear_index, created_at, updated_at) \
       SELECT r.session, r.n, 0, $3, $3 FROM req r ORDER BY r.session \
       ON CONFLICT (session) DO UPDATE SET head = t.head + EXCLUDED.head, \
         updated_at = CASE WHEN t.updated_at > $3 - 1000 THEN t.updated_at ELSE $3 END \
       RETURNING t.session, t.head, t.clear_index), \
     b AS (SELECT s.session, s.head - r.n AS base, s.clear_index FROM s JOIN req r ON r.session = s.session), \
     ev AS ( \
       INSERT INTO a2_events (session, idx, id, type, payload, created_at, cause) \
       SELECT x.s, b.base + x.o, x.d, x.t, x.p, $3, x.c \
       FROM UNNEST($4::text[], $5::bigint[], $6::text[], $7::text[], $8::jsonb[], $9::jsonb[]) AS x(s, o, d, t, p, c) \
       JOIN b ON b.session = x.s RETURNING 1), \
     hd AS ( \
       INSERT INTO a2_heads (session, consumer, lane, idx, kind) \
       SELECT y.s, y.c, y.l, b.base + y.o, y.k \
       FROM UNNEST($10::text[], $11::text[], $12::text[], $13::bigint[], $14::smallint[]) AS y(s, c, l, o, k) \
       JOIN b ON b.session = y.s ON CONFLICT DO NOTHING RETURNING 1), \
     cur AS ( \
       INSERT INTO a2_heads (session, consumer, lane, idx, kind) \
       SELECT z.s, z.c, z.l, CASE WHEN z.b THEN b.clear_index + 1 ELSE b.base + 1 END, 0 \
       FROM UNNEST($15::text[], $16::text[], $17::text[], $18::bool[]) AS z(s, c, l, b) \
       JOIN b ON b.session = z.s \
       WHERE NOT EXISTS (SELECT 1 FROM a2_heads h WHERE h.session = z.s AND h.consumer = z.c AND h.kind = 0) \
       ON CONFLICT DO NOTHING RETURNING 1)"
        )
    };
}
pub(crate) use append_ctes;

/// Appends to many sessions in one statement (see [`append_batch_as_statement`]).
pub(crate) const APPEND_BATCH: &str = concat!("WITH ", append_ctes!("true"), " SELECT session, base FROM b");

/// Appends to many sessions (each at most once) as one statement and one
/// commit: what [`append_as_statement`] does for one session, for all of them.
/// Sessions are locked in key order, so two such statements cannot deadlock
/// on each other. Any failure fails the whole statement; the caller then
/// appends each on its own, so one bad append never fails its neighbours.
pub(crate) async fn append_batch_as_statement(
    pool: &Db,
    batch: &[&EventAppend],
    now: Millis,
) -> Result<Vec<Appended>, sqlx::Error> {
    let mut columns = Columns::default();
    for params in batch {
        columns.push(params);
    }
    let mut conn = pool.acquire().await?;
    let statement = sqlx::query(APPEND_BATCH).persistent(pool.prepared());
    let rows = bind_columns(statement, &columns, now).fetch_all(&mut *conn).await?;
    conn.commit().await?;
    let mut bases = std::collections::HashMap::with_capacity(rows.len());
    for row in rows {
        bases.insert(row.try_get::<String, _>("session")?, to_u64(row.try_get::<i64, _>("base")?));
    }
    batch
        .iter()
        .map(|params| {
            let base = bases.get(params.session.as_str()).copied().ok_or_else(|| {
                sqlx::Error::Protocol(format!("the batch append returned no base for {}", params.session))
            })?;
            Ok(appended_at(params, base, now))
        })
        .collect()
}

/// The append statement's parameters `$1`–`$18`, from `columns`.
pub(crate) fn bind_columns<'q>(query: PgQuery<'q>, columns: &'q Columns<'q>, now: Millis) -> PgQuery<'q> {
    query
        .bind(&columns.sessions)
        .bind(&columns.counts)
        .bind(now)
        .bind(&columns.ev_sessions)
        .bind(&columns.ev_ordinals)
        .bind(&columns.ids)
        .bind(&columns.types)
        .bind(&columns.payloads)
        .bind(&columns.causes)
        .bind(&columns.t_sessions)
        .bind(&columns.t_consumers)
        .bind(&columns.t_lanes)
        .bind(&columns.t_ordinals)
        .bind(&columns.t_kinds)
        .bind(&columns.l_sessions)
        .bind(&columns.l_consumers)
        .bind(&columns.l_lanes)
        .bind(&columns.l_backfill)
}

/// The events of `params` as appended after index `base`.
pub(crate) fn appended_at(params: &EventAppend, base: u64, now: Millis) -> Appended {
    let events = params
        .events
        .iter()
        .enumerate()
        .map(|(offset, e)| Event {
            id: e.id.clone(),
            event_type: e.event_type.clone(),
            payload: e.payload.clone(),
            index: base + 1 + offset as u64,
            session: params.session.to_string(),
            created_at: now,
            cause: e.cause.clone(),
            scheduled_by: e.scheduled_by.clone(),
        })
        .collect::<Vec<_>>();
    Appended { head: base + events.len() as u64, events, duplicate: false }
}

/// A flush of the append queue: the first append of each session together
/// in one statement, the rest (and all of them, if that statement fails)
/// one by one. Answers in `batch`'s order; `Ok(None)`: an id already in the
/// session, for the shared path, which tells an idempotent re-append from a
/// partial duplicate.
pub(crate) async fn flush(
    pool: &Db,
    batch: Vec<EventAppend>,
    now: Millis,
) -> Vec<Result<Option<Appended>, StoreError>> {
    let mut answers: Vec<Option<Result<Option<Appended>, StoreError>>> = (0..batch.len()).map(|_| None).collect();
    let mut seen = std::collections::HashSet::new();
    let together: Vec<usize> = (0..batch.len()).filter(|&i| seen.insert(batch[i].session.as_str())).collect();
    if together.len() > 1 {
        let shared: Vec<&EventAppend> = together.iter().map(|&i| &batch[i]).collect();
        if let Ok(appended) = append_batch_as_statement(pool, &shared, now).await {
            for (&i, appended) in together.iter().zip(appended) {
                answers[i] = Some(Ok(Some(appended)));
            }
        }
    }
    for (i, answer) in answers.iter_mut().enumerate() {
        if answer.is_none() {
            *answer = Some(match append_as_statement(pool, &batch[i], now).await {
                Ok(appended) => Ok(Some(appended)),
                Err(StatementAppendError::IdTaken) => Ok(None),
                Err(StatementAppendError::Failed(error)) => Err(error),
            });
        }
    }
    answers
        .into_iter()
        .map(|a| a.unwrap_or_else(|| Err(StoreError::unavailable("an append went unanswered"))))
        .collect()
}
