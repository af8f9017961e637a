//! A completion that appends, in one statement and one round trip: the
//! fenced settle with its attempt record, and the append, gated on the
//! fence. What it cannot decide alone (the head is no longer this attempt's,
//! or an id is already in the session) it leaves to the shared path, which
//! records a late outcome or tells an idempotent re-append from a partial
//! duplicate; in both cases the statement wrote nothing.

use a2_store::codec::{lane_column, to_i64, to_u64};
use a2_store::{CompleteOutcome, EventAppend, HeadComplete, Millis, StoreError};
use sqlx::types::Json;
use sqlx::Row;

use crate::append::{append_ctes, appended_at, bind_columns, Columns};
use crate::db_error;
use crate::route::Db;

/// A settled cursor's columns: moved on and released, or, where its range
/// goes on (`k.keep`), leased to the same holder as the next position's first
/// attempt, keeping the range's expiry.
macro_rules! range_moves {
    () => {
        "attempt_count = CASE WHEN k.keep THEN 1 ELSE 0 END, failure_count = 0, last_error = NULL, \
         failed_at = NULL, lease_holder = CASE WHEN k.keep THEN o.lease_holder END, \
         lease_expires_at = CASE WHEN k.keep THEN o.lease_expires_at END, next_attempt_at = NULL, \
         attempt_started_at = CASE WHEN k.keep THEN $3 ELSE o.attempt_started_at END"
    };
}

/// Whether a range goes on past the cursor `o`: asked (`$ask`), the next
/// position at or below the session's head as this statement's snapshot
/// sees it (before its own append), and the consumer not paused. Its
/// `LATERAL` ends in `OFFSET 0` so the planner keeps it a subquery, read
/// once a row: pulled up, `k.keep` was an expression whose two lookups ran
/// again at each of its five uses (a third of the statement's time).
macro_rules! range_keeps {
    ($ask:literal) => {
        concat!(
            "COALESCE(",
            $ask,
            ", false) AND o.lease_holder IS NOT NULL \
             AND o.idx + 1 <= (SELECT ss.head FROM a2_sessions ss WHERE ss.session = o.session) \
             AND NOT EXISTS (SELECT 1 FROM a2_consumer_pauses z \
               WHERE z.contract = split_part(o.session, chr(31), 1) AND z.consumer = o.consumer)"
        )
    };
}

/// The head settled if it is still this attempt's (a cursor moves on, a
/// per-event head goes), with its attempt recorded as completed and the ids
/// it appended; `settled` is 0 when the fence refused, and then `req` is
/// empty and nothing is appended. The same reasoning as the batch completion
/// (`heads_complete`): the row's lock and the fence, rechecked on the row,
/// make the holder and start read from it this attempt's. The append's
/// parameters come first (`$1`–`$18`, `$3` the time); the head's follow.
pub(crate) const SETTLE_AND_APPEND: &str = concat!(
    "WITH moved AS (UPDATE a2_heads h SET idx = h.idx + 1, ",
    range_moves!(),
    " FROM a2_heads o, LATERAL (SELECT ",
    range_keeps!("$26"),
    " AS keep OFFSET 0) k \
     WHERE o.session = $19 AND o.consumer = $20 AND o.lane = $21 AND o.idx = $22 AND o.kind = 0 \
       AND h.session = o.session AND h.consumer = o.consumer AND h.lane = o.lane AND h.idx = o.idx \
       AND h.attempt_count = $23 AND h.failed_at IS NULL AND ($25::text IS NULL OR o.lease_holder = $25) \
     RETURNING o.lease_holder, o.attempt_started_at, k.keep), \
   gone AS (DELETE FROM a2_heads h WHERE h.session = $19 AND h.consumer = $20 AND h.lane = $21 AND h.idx = $22 \
       AND h.kind <> 0 AND h.attempt_count = $23 AND h.failed_at IS NULL AND ($25::text IS NULL OR h.lease_holder = $25) \
     RETURNING h.lease_holder, h.attempt_started_at, false AS keep), \
   done AS (SELECT * FROM moved UNION ALL SELECT * FROM gone), \
   recorded AS (INSERT INTO a2_attempts (session, consumer, lane, idx, attempt, holder, started_at, ended_at, \
       outcome, appended) \
     SELECT $19, $20, $21, $22, $23, lease_holder, attempt_started_at, $3, 0, $24 FROM done ON CONFLICT DO NOTHING), ",
    append_ctes!("EXISTS (SELECT 1 FROM done)"),
    " SELECT (SELECT COUNT(*) FROM done) AS settled, (SELECT bool_or(keep) FROM done) AS holds_next, b.base \
     FROM (SELECT 1) AS one LEFT JOIN b ON true"
);

/// `Ok(None)`: nothing was written; the shared path decides.
pub(crate) async fn complete_and_append(
    pool: &Db,
    params: &HeadComplete,
    now: Millis,
) -> Result<Option<CompleteOutcome>, StoreError> {
    let attempt = i32::try_from(params.attempt)
        .map_err(|_| StoreError::invalid(format!("attempt {} is out of range", params.attempt)))?;
    let ids: Vec<&str> = params.events.iter().map(|e| e.id.as_str()).collect();
    let append = EventAppend {
        session: params.session.clone(),
        events: params.events.clone(),
        consumers: params.consumers.clone(),
        origin_index: None,
    };
    let mut columns = Columns::default();
    columns.push(&append);
    let mut conn = pool.conn().await?;
    let settled = bind_columns(sqlx::query(SETTLE_AND_APPEND).persistent(pool.prepared()), &columns, now)
        .bind(params.session.as_str())
        .bind(&params.head.consumer)
        .bind(lane_column(params.head.lane.as_deref()))
        .bind(to_i64(params.head.index))
        .bind(attempt)
        .bind(Json(&ids))
        .bind(params.holder.as_deref())
        .bind(params.lease_next)
        .fetch_one(&mut *conn)
        .await;
    let row = match settled {
        Ok(row) => row,
        Err(sqlx::Error::Database(db))
            if db.code().as_deref() == Some("23505") && db.constraint() == Some("a2_events_by_id") =>
        {
            return Ok(None)
        }
        Err(error) => return Err(db_error(error)),
    };
    conn.done().await?;
    if row.try_get::<i64, _>("settled").map_err(db_error)? == 0 {
        return Ok(None);
    }
    let Some(base) = row.try_get::<Option<i64>, _>("base").map_err(db_error)? else {
        return Err(StoreError::Schema { message: "the settle-and-append statement returned no base".into() });
    };
    let holds_next = row.try_get::<Option<bool>, _>("holds_next").map_err(db_error)?.unwrap_or(false);
    let appended = appended_at(&append, to_u64(base), now);
    Ok(Some(CompleteOutcome::Completed { session_head: appended.head, appended: appended.events, holds_next }))
}

/// [`SETTLE_AND_APPEND`] for many sessions' completions at once, a completion
/// a session (`$19`–`$24`, one element each): every head is fenced on its
/// own, and a session's events go in only when its head settled, so one
/// completion superseded never holds back its neighbours. Heads of one flush
/// are disjoint (a head's holder completes it once), and sessions are locked
/// in key order by the append, so two flushes cannot deadlock on each other.
pub(crate) const SETTLE_AND_APPEND_MANY: &str = concat!(
    "WITH u AS (SELECT * FROM UNNEST($19::text[], $20::text[], $21::text[], $22::bigint[], $23::int[], $24::jsonb[], \
       $25::text[], $26::bool[]) AS u(s, c, l, i, a, ids, hd, nx)), \
   moved AS (UPDATE a2_heads h SET idx = h.idx + 1, ",
    range_moves!(),
    " FROM u, a2_heads o, LATERAL (SELECT ",
    range_keeps!("u.nx"),
    " AS keep OFFSET 0) k \
     WHERE o.session = u.s AND o.consumer = u.c AND o.lane = u.l AND o.idx = u.i AND o.kind = 0 \
       AND h.session = o.session AND h.consumer = o.consumer AND h.lane = o.lane AND h.idx = o.idx \
       AND h.attempt_count = u.a AND h.failed_at IS NULL AND (u.hd IS NULL OR o.lease_holder = u.hd) \
     RETURNING o.session, o.consumer, o.lane, o.idx, u.a, u.ids, o.lease_holder, o.attempt_started_at, k.keep), \
   gone AS (DELETE FROM a2_heads h USING u WHERE h.session = u.s AND h.consumer = u.c AND h.lane = u.l \
       AND h.idx = u.i AND h.kind <> 0 AND h.attempt_count = u.a AND h.failed_at IS NULL \
       AND (u.hd IS NULL OR h.lease_holder = u.hd) \
     RETURNING h.session, h.consumer, h.lane, h.idx, u.a, u.ids, h.lease_holder, h.attempt_started_at, false AS keep), \
   done AS (SELECT * FROM moved UNION ALL SELECT * FROM gone), \
   recorded AS (INSERT INTO a2_attempts (session, consumer, lane, idx, attempt, holder, started_at, ended_at, \
       outcome, appended) \
     SELECT session, consumer, lane, idx, a, lease_holder, attempt_started_at, $3, 0, ids FROM done \
     ON CONFLICT DO NOTHING), ",
    append_ctes!("r.session IN (SELECT session FROM done)"),
    " SELECT u.s AS session, (u.s IN (SELECT session FROM done)) AS settled, \
       COALESCE((SELECT bool_or(keep) FROM done WHERE done.session = u.s), false) AS holds_next, b.base \
     FROM u LEFT JOIN b ON b.session = u.s"
);

/// Many sessions' completions in one statement and one commit, at most one a
/// session (the caller sends the rest alone). `Ok(None)` for a completion
/// whose fence refused: it wrote nothing, and the shared path decides. An id
/// already in some session fails the whole statement (`Err`), and the caller
/// completes each alone, which tells that one apart.
pub(crate) async fn complete_and_append_many(
    pool: &Db,
    batch: &[&HeadComplete],
    now: Millis,
) -> Result<Vec<Option<CompleteOutcome>>, StoreError> {
    let mut appends = Vec::with_capacity(batch.len());
    let (mut sessions, mut consumers, mut lanes, mut indexes, mut attempts, mut ids) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut holders, mut lease_next) = (Vec::new(), Vec::new());
    for params in batch {
        let attempt = i32::try_from(params.attempt)
            .map_err(|_| StoreError::invalid(format!("attempt {} is out of range", params.attempt)))?;
        sessions.push(params.session.as_str());
        consumers.push(params.head.consumer.as_str());
        lanes.push(lane_column(params.head.lane.as_deref()));
        indexes.push(to_i64(params.head.index));
        attempts.push(attempt);
        ids.push(Json(params.events.iter().map(|e| e.id.as_str()).collect::<Vec<_>>()));
        holders.push(params.holder.as_deref());
        lease_next.push(params.lease_next);
        appends.push(EventAppend {
            session: params.session.clone(),
            events: params.events.clone(),
            consumers: params.consumers.clone(),
            origin_index: None,
        });
    }
    let mut columns = Columns::default();
    for append in &appends {
        columns.push(append);
    }
    let mut conn = pool.conn().await?;
    let rows = bind_columns(sqlx::query(SETTLE_AND_APPEND_MANY).persistent(pool.prepared()), &columns, now)
        .bind(&sessions)
        .bind(&consumers)
        .bind(&lanes)
        .bind(&indexes)
        .bind(&attempts)
        .bind(&ids)
        .bind(&holders)
        .bind(&lease_next)
        .fetch_all(&mut *conn)
        .await
        .map_err(db_error)?;
    conn.done().await?;
    let mut settled = std::collections::HashMap::with_capacity(rows.len());
    for row in rows {
        let session: String = row.try_get("session").map_err(db_error)?;
        let base: Option<i64> = row.try_get("base").map_err(db_error)?;
        let holds_next: bool = row.try_get("holds_next").map_err(db_error)?;
        settled.insert(session, (row.try_get::<bool, _>("settled").map_err(db_error)?, base, holds_next));
    }
    appends
        .iter()
        .map(|append| match settled.get(append.session.as_str()) {
            Some((true, Some(base), holds_next)) => {
                let appended = appended_at(append, to_u64(*base), now);
                let (session_head, appended, holds_next) = (appended.head, appended.events, *holds_next);
                Ok(Some(CompleteOutcome::Completed { session_head, appended, holds_next }))
            }
            Some((true, None, _)) => {
                Err(StoreError::Schema { message: "the grouped settle-and-append statement returned no base".into() })
            }
            Some((false, _, _)) => Ok(None),
            None => Err(StoreError::Schema {
                message: format!("the grouped settle-and-append statement left out session {}", append.session),
            }),
        })
        .collect()
}

/// A flush of the completion queue: the first completion of each session
/// together in one statement, the rest (and all of them, if that statement
/// fails) one statement each. Answers in `batch`'s order.
pub(crate) async fn flush(
    pool: &Db,
    batch: Vec<HeadComplete>,
    now: Millis,
) -> Vec<Result<Option<CompleteOutcome>, StoreError>> {
    let mut answers: Vec<Option<Result<Option<CompleteOutcome>, StoreError>>> = batch.iter().map(|_| None).collect();
    let mut seen = std::collections::HashSet::new();
    let together: Vec<usize> = (0..batch.len()).filter(|&i| seen.insert(batch[i].session.as_str())).collect();
    if together.len() > 1 {
        let shared: Vec<&HeadComplete> = together.iter().map(|&i| &batch[i]).collect();
        match complete_and_append_many(pool, &shared, now).await {
            Ok(outcomes) => {
                for (&i, outcome) in together.iter().zip(outcomes) {
                    answers[i] = Some(Ok(outcome));
                }
            }
            Err(error) => tracing::debug!(%error, "a grouped completion failed; each completes alone"),
        }
    }
    for (i, answer) in answers.iter_mut().enumerate() {
        if answer.is_none() {
            *answer = Some(complete_and_append(pool, &batch[i], now).await);
        }
    }
    answers
        .into_iter()
        .map(|a| a.unwrap_or_else(|| Err(StoreError::unavailable("a completion went unanswered"))))
        .collect()
}
