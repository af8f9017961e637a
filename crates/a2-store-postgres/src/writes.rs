//! The engine's writes: short READ COMMITTED transactions, rows locked in
//! index order, batches sent as arrays so a call is a handful of round trips.

use a2_store::codec::{lane_column, lane_from_column, to_i64, to_u64};
use a2_store::rules::{check_batch, claim_head, cursor_state, untaken_cursor, HeadState};
use a2_store::*;
use sqlx::types::Json;
use sqlx::{PgConnection, Row};

use crate::append::{append_core, fast_append, FastAppend};
use crate::rows::{event, get, head_state, kind};
use crate::{db_error, PgStore};

type Tx = sqlx::Transaction<'static, sqlx::Postgres>;

pub(crate) async fn session_row(conn: &mut PgConnection, key: &str) -> Result<Option<(u64, u64)>, StoreError> {
    let row = sqlx::query("SELECT head, clear_index FROM a2_sessions WHERE session = $1")
        .bind(key)
        .fetch_optional(conn)
        .await
        .map_err(db_error)?;
    row.map(|r| Ok((to_u64(get(&r, "head")?), to_u64(get(&r, "clear_index")?)))).transpose()
}

pub(crate) async fn ensure_cursors(
    conn: &mut PgConnection,
    key: &str,
    head: u64,
    clear: u64,
    consumers: &[StoreConsumer],
) -> Result<(), StoreError> {
    let (mut names, mut lanes, mut nexts) = (Vec::new(), Vec::new(), Vec::new());
    for consumer in consumers {
        let Some(log) = &consumer.log else { continue };
        names.push(consumer.name.as_str());
        lanes.push(log.lane.as_str());
        nexts.push(to_i64(if log.backfill { clear + 1 } else { head + 1 }));
    }
    if names.is_empty() {
        return Ok(());
    }
    sqlx::query(
        // The NOT EXISTS sees existing cursors in the snapshot, so the insert
        // never waits on a cursor another transaction is moving.
        "INSERT INTO a2_heads (session, consumer, lane, idx, kind) \
         SELECT $1, c, l, i, 0 FROM UNNEST($2::text[], $3::text[], $4::bigint[]) AS t(c, l, i) \
         WHERE NOT EXISTS (SELECT 1 FROM a2_heads h WHERE h.session = $1 AND h.consumer = t.c AND h.kind = 0) \
         ON CONFLICT DO NOTHING",
    )
    .bind(key)
    .bind(&names)
    .bind(&lanes)
    .bind(&nexts)
    .execute(conn)
    .await
    .map_err(db_error)?;
    Ok(())
}

/// Move a cursor no live attempt holds past events its consumer does not
/// take; a lapsed attempt on such an event is dropped with the move.
async fn skip_untaken(
    conn: &mut PgConnection,
    key: &str,
    head: u64,
    consumer: &StoreConsumer,
    now: Millis,
) -> Result<(), StoreError> {
    let Some(LogSpec { types: Some(types), .. }) = &consumer.log else { return Ok(()) };
    sqlx::query(
        "UPDATE a2_heads h SET idx = COALESCE((SELECT MIN(e.idx) FROM a2_events e WHERE e.session = h.session \
           AND e.idx >= h.idx AND e.type = ANY($3)), $4), \
           attempt_count = 0, failure_count = 0, last_error = NULL, lease_holder = NULL, lease_expires_at = NULL, \
           next_attempt_at = NULL \
         WHERE h.session = $1 AND h.consumer = $2 AND h.kind = 0 AND h.failed_at IS NULL AND h.idx <= $5 \
           AND (h.lease_holder IS NULL OR h.lease_expires_at <= $6) \
           AND NOT EXISTS (SELECT 1 FROM a2_events e WHERE e.session = h.session AND e.idx = h.idx AND e.type = ANY($3))",
    )
    .bind(key)
    .bind(&consumer.name)
    .bind(types)
    .bind(to_i64(head + 1))
    .bind(to_i64(head))
    .bind(now)
    .execute(conn)
    .await
    .map_err(db_error)?;
    Ok(())
}

/// Write back the states of many heads in one statement.
async fn update_states(conn: &mut PgConnection, key: &str, heads: &[(HeadRef, HeadState)]) -> Result<(), StoreError> {
    if heads.is_empty() {
        return Ok(());
    }
    let col = |f: &dyn Fn(&(HeadRef, HeadState)) -> Option<i64>| heads.iter().map(f).collect::<Vec<Option<i64>>>();
    let consumers: Vec<&str> = heads.iter().map(|(h, _)| h.consumer.as_str()).collect();
    let lanes: Vec<&str> = heads.iter().map(|(h, _)| lane_column(h.lane.as_deref())).collect();
    let idxs: Vec<i64> = heads.iter().map(|(h, _)| to_i64(h.index)).collect();
    let attempts: Vec<i32> = heads.iter().map(|(_, s)| i32::try_from(s.attempt_count).unwrap_or(i32::MAX)).collect();
    let failures: Vec<i32> = heads.iter().map(|(_, s)| i32::try_from(s.failure_count).unwrap_or(i32::MAX)).collect();
    let errors: Vec<Option<&str>> = heads.iter().map(|(_, s)| s.last_error.as_deref()).collect();
    let holders: Vec<Option<&str>> = heads.iter().map(|(_, s)| s.lease_holder.as_deref()).collect();
    sqlx::query(
        "UPDATE a2_heads h SET attempt_count = u.a, failure_count = u.f, last_error = u.e, failed_at = u.fa, \
           lease_holder = u.lh, lease_expires_at = u.le, next_attempt_at = u.na \
         FROM UNNEST($2::text[], $3::text[], $4::bigint[], $5::int[], $6::int[], $7::text[], $8::bigint[], $9::text[], $10::bigint[], $11::bigint[]) \
           AS u(c, l, i, a, f, e, fa, lh, le, na) \
         WHERE h.session = $1 AND h.consumer = u.c AND h.lane = u.l AND h.idx = u.i",
    )
    .bind(key)
    .bind(&consumers)
    .bind(&lanes)
    .bind(&idxs)
    .bind(&attempts)
    .bind(&failures)
    .bind(&errors)
    .bind(col(&|(_, s)| s.failed_at))
    .bind(&holders)
    .bind(col(&|(_, s)| s.lease_expires_at))
    .bind(col(&|(_, s)| s.next_attempt_at))
    .execute(conn)
    .await
    .map_err(db_error)?;
    Ok(())
}

/// Lock a head row and return its kind and state.
async fn lock_head(conn: &mut PgConnection, key: &str, head: &HeadRef) -> Result<Option<(i64, HeadState)>, StoreError> {
    let row = sqlx::query(
        "SELECT * FROM a2_heads WHERE session = $1 AND consumer = $2 AND lane = $3 AND idx = $4 FOR UPDATE",
    )
    .bind(key)
    .bind(&head.consumer)
    .bind(lane_column(head.lane.as_deref()))
    .bind(to_i64(head.index))
    .fetch_optional(conn)
    .await
    .map_err(db_error)?;
    row.map(|r| Ok((kind(&r)?, head_state(&r)?))).transpose()
}

async fn settle(conn: &mut PgConnection, key: &str, head: &HeadRef, kind: i64) -> Result<(), StoreError> {
    let statement = if kind == 0 {
        "UPDATE a2_heads SET idx = idx + 1, attempt_count = 0, failure_count = 0, last_error = NULL, failed_at = NULL, \
         lease_holder = NULL, lease_expires_at = NULL, next_attempt_at = NULL \
         WHERE session = $1 AND consumer = $2 AND lane = $3 AND idx = $4"
    } else {
        "DELETE FROM a2_heads WHERE session = $1 AND consumer = $2 AND lane = $3 AND idx = $4"
    };
    sqlx::query(statement)
        .bind(key)
        .bind(&head.consumer)
        .bind(lane_column(head.lane.as_deref()))
        .bind(to_i64(head.index))
        .execute(conn)
        .await
        .map_err(db_error)?;
    Ok(())
}

async fn touch(conn: &mut PgConnection, key: &str, now: Millis) -> Result<(), StoreError> {
    sqlx::query("UPDATE a2_sessions SET updated_at = GREATEST(updated_at, $1) WHERE session = $2")
        .bind(now)
        .bind(key)
        .execute(conn)
        .await
        .map_err(db_error)?;
    Ok(())
}

const RUNNABLE: &str = "h.session = $1 AND h.consumer = ANY($2) AND h.failed_at IS NULL AND ($3::bigint IS NULL OR h.idx <= $3) \
    AND (h.kind <> 1 OR h.idx = (SELECT MIN(l.idx) FROM a2_heads l WHERE l.session = h.session AND l.consumer = h.consumer AND l.lane = h.lane))";

impl PgStore {
    pub(crate) async fn begin(&self) -> Result<Tx, StoreError> {
        self.writable()?;
        self.pool.begin().await.map_err(db_error)
    }

    fn now(&self) -> Millis {
        self.clock.now_ms()
    }

    pub(crate) async fn append(&self, params: EventAppend) -> Result<Appended, StoreError> {
        check_session_key(&params.session)?;
        check_batch(&params.session, &params.events)?;
        if params.events.is_empty() {
            let head = session_row(&mut *self.pool.acquire().await.map_err(db_error)?, &params.session)
                .await?
                .map_or(0, |(h, _)| h);
            return Ok(Appended { head, events: Vec::new(), duplicate: false });
        }
        self.writable()?;
        match fast_append(&self.pool, &params, self.now()).await {
            Ok(appended) => {
                self.notify(&params.session);
                return Ok(appended);
            }
            // An id already in the session: the careful path sorts out a re-append from a partial duplicate.
            Err(FastAppend::IdTaken) => {}
            Err(FastAppend::Failed(error)) => return Err(error),
        }
        let mut tx = self.begin().await?;
        let (events, duplicate) =
            append_core(&mut tx, &params.session, params.events, &params.consumers, self.now()).await?;
        let head = session_row(&mut tx, &params.session).await?.map_or(0, |(h, _)| h);
        tx.commit().await.map_err(db_error)?;
        if !duplicate {
            self.notify(&params.session);
        }
        Ok(Appended { head, events, duplicate })
    }

    pub(crate) async fn claim(&self, params: HeadClaim) -> Result<Claimed, StoreError> {
        check_session_key(&params.session)?;
        let key = params.session.as_str();
        let mut tx = self.begin().await?;
        let Some((head, clear)) = session_row(&mut tx, key).await? else {
            return Ok(Claimed::default());
        };
        ensure_cursors(&mut tx, key, head, clear, &params.consumers).await?;
        let now = self.now();
        for consumer in &params.consumers {
            skip_untaken(&mut tx, key, head, consumer, now).await?;
        }
        let names: Vec<&str> = params.consumers.iter().map(|c| c.name.as_str()).collect();
        let through = params.through.map(to_i64);
        let limit = params.limit.max(1) as usize;
        let waits = sqlx::query(&format!(
            "SELECT MIN(CASE WHEN h.lease_holder IS NOT NULL AND h.lease_expires_at > $4 THEN h.lease_expires_at END) AS busy_until, \
                    MIN(CASE WHEN (h.lease_holder IS NULL OR h.lease_expires_at <= $4) AND h.next_attempt_at > $4 THEN h.next_attempt_at END) AS retry_at \
             FROM a2_heads h WHERE {RUNNABLE} AND h.idx <= $5"
        ))
        .bind(key)
        .bind(&names)
        .bind(through)
        .bind(now)
        .bind(to_i64(head))
        .fetch_one(&mut *tx)
        .await
        .map_err(db_error)?;
        let mut claimed = Claimed {
            session_head: head,
            busy_until: get(&waits, "busy_until")?,
            retry_at: get(&waits, "retry_at")?,
            ..Claimed::default()
        };
        // Each statement reads its own snapshot (READ COMMITTED): a cursor the
        // skip above saw held can be completed onto an untaken event before the
        // selection below reads it. Such a cursor is locked, skipped and looked
        // at again, never run.
        for _pass in 0..4 {
            let candidates = sqlx::query(&format!(
                "SELECT h.*, e.id AS e_id, e.type AS e_type, e.payload AS e_payload, e.idx AS e_idx, \
                   e.created_at AS e_created_at, e.cause AS e_cause \
                 FROM a2_heads h JOIN a2_events e ON e.session = h.session AND e.idx = h.idx \
                 WHERE {RUNNABLE} \
                   AND (h.lease_holder IS NULL OR h.lease_expires_at <= $4) \
                   AND (h.next_attempt_at IS NULL OR h.next_attempt_at <= $4) \
                 ORDER BY h.idx, h.consumer, h.lane LIMIT $5 FOR UPDATE OF h SKIP LOCKED"
            ))
            .bind(key)
            .bind(&names)
            .bind(through)
            .bind(now)
            .bind(i64::try_from(limit + params.exclude.len()).unwrap_or(i64::MAX))
            .fetch_all(&mut *tx)
            .await
            .map_err(db_error)?;
            let mut changed = Vec::new();
            let mut untaken = Vec::new();
            for row in &candidates {
                if claimed.heads.len() >= limit {
                    break;
                }
                let head_ref = HeadRef {
                    consumer: get(row, "consumer")?,
                    lane: lane_from_column(get(row, "lane")?),
                    index: to_u64(get(row, "idx")?),
                };
                if params.exclude.contains(&head_ref) {
                    continue;
                }
                let mut state = head_state(row)?;
                let event = event(row, key, "e_")?;
                if untaken_cursor(&params, &head_ref, &event.event_type) {
                    untaken.push(head_ref.consumer);
                    continue;
                }
                if claim_head(&mut state, head_ref.clone(), event, &params, now, &mut claimed) {
                    changed.push((head_ref, state));
                }
            }
            update_states(&mut tx, key, &changed).await?;
            if untaken.is_empty() || claimed.heads.len() >= limit {
                break;
            }
            // The cursor may stand past the head read above: skip up to the head now.
            let head_now = session_row(&mut tx, key).await?.map_or(head, |(h, _)| h);
            for consumer in params.consumers.iter().filter(|c| untaken.contains(&c.name)) {
                skip_untaken(&mut tx, key, head_now, consumer, now).await?;
            }
        }
        tx.commit().await.map_err(db_error)?;
        Ok(claimed)
    }

    pub(crate) async fn renew(&self, params: HeadRenew) -> Result<Renewed, StoreError> {
        self.writable()?;
        let expires = self.now() + params.ttl_ms;
        let consumers: Vec<&str> = params.heads.iter().map(|h| h.head.consumer.as_str()).collect();
        let lanes: Vec<&str> = params.heads.iter().map(|h| lane_column(h.head.lane.as_deref())).collect();
        let idxs: Vec<i64> = params.heads.iter().map(|h| to_i64(h.head.index)).collect();
        let attempts: Vec<i32> = params.heads.iter().map(|h| i32::try_from(h.attempt).unwrap_or(i32::MAX)).collect();
        let rows = sqlx::query(
            "UPDATE a2_heads h SET lease_expires_at = $6 \
             FROM UNNEST($2::text[], $3::text[], $4::bigint[], $5::int[]) AS u(c, l, i, a) \
             WHERE h.session = $1 AND h.consumer = u.c AND h.lane = u.l AND h.idx = u.i AND h.attempt_count = u.a \
               AND h.failed_at IS NULL AND h.lease_holder = $7 \
             RETURNING h.consumer, h.lane, h.idx",
        )
        .bind(&params.session)
        .bind(&consumers)
        .bind(&lanes)
        .bind(&idxs)
        .bind(&attempts)
        .bind(expires)
        .bind(&params.holder)
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        let mut kept = Vec::with_capacity(rows.len());
        for row in &rows {
            kept.push(HeadRef {
                consumer: get(row, "consumer")?,
                lane: lane_from_column(get(row, "lane")?),
                index: to_u64(get(row, "idx")?),
            });
        }
        let (renewed, superseded) = params.heads.into_iter().map(|h| h.head).partition(|h| kept.contains(h));
        Ok(Renewed { renewed, superseded, lease_expires_at: expires })
    }

    pub(crate) async fn complete(&self, params: HeadComplete) -> Result<CompleteOutcome, StoreError> {
        let key = params.session.as_str();
        let now = self.now();
        let mut tx = self.begin().await?;
        let Some((kind, state)) = lock_head(&mut tx, key, &params.head).await? else {
            return Ok(CompleteOutcome::Superseded);
        };
        if !state.is_current(params.attempt) {
            return Ok(CompleteOutcome::Superseded);
        }
        let (appended, duplicate) = append_core(&mut tx, key, params.events, &params.consumers, now).await?;
        // No touch of the session row: completions of one session's heads must not queue on it.
        settle(&mut tx, key, &params.head, kind).await?;
        let session_head = session_row(&mut tx, key).await?.map_or(0, |(h, _)| h);
        tx.commit().await.map_err(db_error)?;
        let appended = if duplicate { Vec::new() } else { appended };
        if !appended.is_empty() {
            self.notify(key);
        }
        Ok(CompleteOutcome::Completed { session_head, appended })
    }

    /// Two statements whatever the batch size: cursors move on, per-event heads go.
    pub(crate) async fn complete_many(&self, params: HeadCompleteMany) -> Result<Vec<HeadRef>, StoreError> {
        let consumers: Vec<&str> = params.heads.iter().map(|h| h.head.consumer.as_str()).collect();
        let lanes: Vec<&str> = params.heads.iter().map(|h| lane_column(h.head.lane.as_deref())).collect();
        let idxs: Vec<i64> = params.heads.iter().map(|h| to_i64(h.head.index)).collect();
        let attempts: Vec<i32> = params.heads.iter().map(|h| i32::try_from(h.attempt).unwrap_or(i32::MAX)).collect();
        let mut tx = self.begin().await?;
        let mut rows = sqlx::query(
            "UPDATE a2_heads h SET idx = h.idx + 1, attempt_count = 0, failure_count = 0, last_error = NULL, failed_at = NULL, \
               lease_holder = NULL, lease_expires_at = NULL, next_attempt_at = NULL \
             FROM UNNEST($2::text[], $3::text[], $4::bigint[], $5::int[]) AS u(c, l, i, a) \
             WHERE h.session = $1 AND h.kind = 0 AND h.consumer = u.c AND h.lane = u.l AND h.idx = u.i \
               AND h.attempt_count = u.a AND h.failed_at IS NULL \
             RETURNING u.c AS consumer, u.l AS lane, u.i AS idx",
        )
        .bind(&params.session)
        .bind(&consumers)
        .bind(&lanes)
        .bind(&idxs)
        .bind(&attempts)
        .fetch_all(&mut *tx)
        .await
        .map_err(db_error)?;
        rows.extend(
            sqlx::query(
                "DELETE FROM a2_heads h USING UNNEST($2::text[], $3::text[], $4::bigint[], $5::int[]) AS u(c, l, i, a) \
                 WHERE h.session = $1 AND h.kind <> 0 AND h.consumer = u.c AND h.lane = u.l AND h.idx = u.i \
                   AND h.attempt_count = u.a AND h.failed_at IS NULL \
                 RETURNING h.consumer, h.lane, h.idx",
            )
            .bind(&params.session)
            .bind(&consumers)
            .bind(&lanes)
            .bind(&idxs)
            .bind(&attempts)
            .fetch_all(&mut *tx)
            .await
            .map_err(db_error)?,
        );
        tx.commit().await.map_err(db_error)?;
        rows.iter()
            .map(|row| {
                Ok(HeadRef {
                    consumer: get(row, "consumer")?,
                    lane: lane_from_column(get(row, "lane")?),
                    index: to_u64(get(row, "idx")?),
                })
            })
            .collect()
    }

    pub(crate) async fn fail(&self, params: HeadFail) -> Result<FailOutcome, StoreError> {
        let key = params.session.as_str();
        let mut tx = self.begin().await?;
        let Some((_, mut state)) = lock_head(&mut tx, key, &params.head).await? else {
            return Ok(FailOutcome::Superseded);
        };
        if !state.is_current(params.attempt) {
            return Ok(FailOutcome::Superseded);
        }
        let outcome = state.fail(self.now(), params.error, params.max_failures, params.backoff);
        update_states(&mut tx, key, &[(params.head, state)]).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(outcome)
    }

    pub(crate) async fn redrive(&self, params: DeadLetterRedrive) -> Result<bool, StoreError> {
        let mut tx = self.begin().await?;
        let result = self.redrive_in(&mut tx, &params).await?;
        if let Some(mut entry) = params.audit {
            // The action and its record commit together, or neither does.
            entry.outcome = serde_json::json!({ "redriven": result });
            crate::audit::insert_audit(&mut tx, &entry).await?;
        }
        tx.commit().await.map_err(db_error)?;
        Ok(result)
    }

    async fn redrive_in(&self, tx: &mut PgConnection, params: &DeadLetterRedrive) -> Result<bool, StoreError> {
        let key = params.session.as_str();
        let row = sqlx::query(
            "SELECT h.* FROM a2_heads h JOIN a2_events e ON e.session = h.session AND e.idx = h.idx \
             WHERE h.session = $1 AND h.consumer = $2 AND h.idx = $3 AND h.failed_at IS NOT NULL LIMIT 1 FOR UPDATE OF h",
        )
        .bind(key)
        .bind(&params.consumer)
        .bind(to_i64(params.index))
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_error)?;
        let Some(row) = row else { return Ok(false) };
        let head = HeadRef {
            consumer: params.consumer.clone(),
            lane: lane_from_column(get(&row, "lane")?),
            index: params.index,
        };
        match params.action {
            RedriveAction::Skip => settle(&mut *tx, key, &head, kind(&row)?).await?,
            RedriveAction::Retry => {
                let mut state = head_state(&row)?;
                state.retry();
                update_states(&mut *tx, key, &[(head, state)]).await?;
            }
        }
        touch(&mut *tx, key, self.now()).await?;
        Ok(true)
    }

    pub(crate) async fn wake(&self, params: CursorWake) -> Result<CursorState, StoreError> {
        check_session_key(&params.session)?;
        if params.consumer.log.is_none() {
            return Err(StoreError::invalid(format!(
                "consumer '{}' has no string lane, so it has no cursor",
                params.consumer.name
            )));
        }
        let key = params.session.as_str();
        let mut tx = self.begin().await?;
        let Some((head, clear)) = session_row(&mut tx, key).await? else {
            return Ok(CursorState::default());
        };
        ensure_cursors(&mut tx, key, head, clear, std::slice::from_ref(&params.consumer)).await?;
        skip_untaken(&mut tx, key, head, &params.consumer, self.now()).await?;
        let row = sqlx::query("SELECT * FROM a2_heads WHERE session = $1 AND consumer = $2 AND kind = 0")
            .bind(key)
            .bind(&params.consumer.name)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        let Some(row) = row else { return Ok(CursorState { session_head: head, ..CursorState::default() }) };
        Ok(cursor_state(head, to_u64(get(&row, "idx")?), head_state(&row)?))
    }

    pub(crate) async fn clear(&self, params: SessionClear) -> Result<Cleared, StoreError> {
        let mut tx = self.begin().await?;
        let result = self.clear_in(&mut tx, &params).await?;
        if let Some(mut entry) = params.audit {
            // The action and its record commit together, or neither does.
            entry.outcome = serde_json::json!(result);
            crate::audit::insert_audit(&mut tx, &entry).await?;
        }
        tx.commit().await.map_err(db_error)?;
        Ok(result)
    }

    async fn clear_in(&self, tx: &mut PgConnection, params: &SessionClear) -> Result<Cleared, StoreError> {
        check_session_key(&params.session)?;
        let key = params.session.as_str();
        let row = sqlx::query("SELECT head FROM a2_sessions WHERE session = $1 FOR UPDATE")
            .bind(key)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_error)?;
        let Some(row) = row else {
            return Ok(Cleared { cleared: params.if_last_index.is_none_or(|i| i == 0), index: 0 });
        };
        let head = to_u64(get(&row, "head")?);
        if params.if_last_index.is_some_and(|i| i != head) {
            return Ok(Cleared { cleared: false, index: head });
        }
        let boundary = to_i64(head);
        sqlx::query("UPDATE a2_sessions SET clear_index = $1, updated_at = $2 WHERE session = $3")
            .bind(boundary)
            .bind(self.now())
            .bind(key)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        sqlx::query(
            "UPDATE a2_heads SET idx = $1 + 1, attempt_count = 0, failure_count = 0, last_error = NULL, failed_at = NULL, \
             lease_holder = NULL, lease_expires_at = NULL, next_attempt_at = NULL WHERE session = $2 AND kind = 0 AND idx <= $1",
        )
        .bind(boundary)
        .bind(key)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        sqlx::query("DELETE FROM a2_heads WHERE session = $1 AND kind <> 0 AND idx <= $2")
            .bind(key)
            .bind(boundary)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        sqlx::query("DELETE FROM a2_snapshots WHERE session = $1")
            .bind(key)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        Ok(Cleared { cleared: true, index: head })
    }

    pub(crate) async fn put_snapshot(&self, params: SnapshotPut) -> Result<(), StoreError> {
        let key = params.session.as_str();
        let mut tx = self.begin().await?;
        let Some((head, clear)) = session_row(&mut tx, key).await? else {
            return Err(StoreError::not_found(format!("session {key:?}")));
        };
        if params.index <= clear || params.index > head {
            return Ok(());
        }
        let existing = sqlx::query(
            "SELECT idx, pins FROM a2_snapshots WHERE session = $1 AND reducer = $2 AND idx <= $3 FOR UPDATE",
        )
        .bind(key)
        .bind(&params.reducer)
        .bind(to_i64(params.index))
        .fetch_all(&mut *tx)
        .await
        .map_err(db_error)?;
        let mut pins: Vec<HeadRef> = params.pin.into_iter().collect();
        for row in &existing {
            let index = to_u64(get(row, "idx")?);
            let row_pins: Vec<HeadRef> = crate::rows::json(row, "pins")?;
            if index == params.index {
                pins.extend(row_pins);
                continue;
            }
            let mut live = false;
            for pin in &row_pins {
                live |= pin_live(&mut tx, key, pin).await?;
            }
            if !live {
                sqlx::query("DELETE FROM a2_snapshots WHERE session = $1 AND reducer = $2 AND idx = $3")
                    .bind(key)
                    .bind(&params.reducer)
                    .bind(to_i64(index))
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error)?;
            }
        }
        pins.sort();
        pins.dedup();
        let pins = serde_json::to_value(&pins).map_err(|e| StoreError::invalid(e.to_string()))?;
        sqlx::query(
            "INSERT INTO a2_snapshots (session, reducer, idx, state, pins, created_at) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (session, reducer, idx) DO UPDATE SET state = EXCLUDED.state, pins = EXCLUDED.pins, created_at = EXCLUDED.created_at",
        )
        .bind(key)
        .bind(&params.reducer)
        .bind(to_i64(params.index))
        .bind(Json(&params.state))
        .bind(Json(pins))
        .bind(self.now())
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(())
    }
}

async fn pin_live(conn: &mut PgConnection, key: &str, pin: &HeadRef) -> Result<bool, StoreError> {
    let row = sqlx::query(
        "SELECT EXISTS (SELECT 1 FROM a2_heads WHERE session = $1 AND consumer = $2 AND lane = $3 \
           AND ((kind = 0 AND idx <= $4) OR (kind <> 0 AND idx = $4))) AS live",
    )
    .bind(key)
    .bind(&pin.consumer)
    .bind(lane_column(pin.lane.as_deref()))
    .bind(to_i64(pin.index))
    .fetch_one(conn)
    .await
    .map_err(db_error)?;
    row.try_get::<bool, _>("live").map_err(db_error)
}
