//! A completion that appends, in four round trips instead of a dozen: the
//! fenced settle with its attempt record, then the append as one statement,
//! in one transaction. What it cannot decide alone (the head is no longer
//! this attempt's, or an id is already in the session) it leaves to the
//! shared path, which records a late outcome or tells an idempotent
//! re-append from a partial duplicate.

use a2_store::codec::{lane_column, to_i64};
use a2_store::{CompleteOutcome, EventAppend, HeadComplete, Millis, StoreError};
use sqlx::types::Json;

use crate::append::append_batch_as_statement;
use crate::db_error;

/// The head settled if it is still this attempt's (a cursor moves on, a
/// per-event head goes), with its attempt recorded as completed and the ids
/// it appended; `settled` is 0 when the fence refused. The same reasoning as
/// the batch completion (`heads_complete`): the row's lock and the fence,
/// rechecked on the row, make the holder and start read from it this attempt's.
pub(crate) const SETTLE_RECORDED: &str = "WITH moved AS (UPDATE a2_heads h SET idx = h.idx + 1, attempt_count = 0, \
       failure_count = 0, last_error = NULL, failed_at = NULL, lease_holder = NULL, lease_expires_at = NULL, \
       next_attempt_at = NULL \
     FROM a2_heads o WHERE o.session = $1 AND o.consumer = $2 AND o.lane = $3 AND o.idx = $4 AND o.kind = 0 \
       AND h.session = o.session AND h.consumer = o.consumer AND h.lane = o.lane AND h.idx = o.idx \
       AND h.attempt_count = $5 AND h.failed_at IS NULL \
     RETURNING o.lease_holder, o.attempt_started_at), \
   gone AS (DELETE FROM a2_heads h WHERE h.session = $1 AND h.consumer = $2 AND h.lane = $3 AND h.idx = $4 \
       AND h.kind <> 0 AND h.attempt_count = $5 AND h.failed_at IS NULL \
     RETURNING h.lease_holder, h.attempt_started_at), \
   done AS (SELECT * FROM moved UNION ALL SELECT * FROM gone), \
   recorded AS (INSERT INTO a2_attempts (session, consumer, lane, idx, attempt, holder, started_at, ended_at, \
       outcome, appended) \
     SELECT $1, $2, $3, $4, $5, lease_holder, attempt_started_at, $6, 0, $7 FROM done ON CONFLICT DO NOTHING) \
   SELECT COUNT(*) AS settled FROM done";

/// `Ok(None)`: nothing was written; the shared path decides.
pub(crate) async fn complete_and_append(
    pool: &sqlx::PgPool,
    params: &HeadComplete,
    now: Millis,
) -> Result<Option<CompleteOutcome>, StoreError> {
    let attempt = i32::try_from(params.attempt)
        .map_err(|_| StoreError::invalid(format!("attempt {} is out of range", params.attempt)))?;
    let ids: Vec<&str> = params.events.iter().map(|e| e.id.as_str()).collect();
    let mut tx = pool.begin().await.map_err(db_error)?;
    let settled: i64 = sqlx::query_scalar(SETTLE_RECORDED)
        .bind(params.session.as_str())
        .bind(&params.head.consumer)
        .bind(lane_column(params.head.lane.as_deref()))
        .bind(to_i64(params.head.index))
        .bind(attempt)
        .bind(now)
        .bind(Json(&ids))
        .fetch_one(&mut *tx)
        .await
        .map_err(db_error)?;
    if settled == 0 {
        return Ok(None);
    }
    let append = EventAppend {
        session: params.session.clone(),
        events: params.events.clone(),
        consumers: params.consumers.clone(),
        origin_index: None,
    };
    match append_batch_as_statement(&mut *tx, &[&append], now).await {
        Ok(mut appended) => {
            let Some(appended) = appended.pop() else {
                return Err(StoreError::Schema { message: "the append statement returned no row".into() });
            };
            tx.commit().await.map_err(db_error)?;
            Ok(Some(CompleteOutcome::Completed { session_head: appended.head, appended: appended.events }))
        }
        Err(sqlx::Error::Database(db))
            if db.code().as_deref() == Some("23505") && db.constraint() == Some("a2_events_by_id") =>
        {
            Ok(None)
        }
        Err(error) => Err(db_error(error)),
    }
}
