//! The engine's writes, each one `BEGIN IMMEDIATE` transaction on the writer.

use a2_store::codec::{kind_code, lane_column, pins_from_json, pins_to_json, target_kind, to_i64, to_u64};
use a2_store::rules::{check_batch, claim_head, cursor_state, plan_batch, untaken_cursor, BatchPlan, HeadState};
use a2_store::*;
use sqlx::{Row, SqliteConnection};

use crate::rows::{event, get, head_state};
use crate::{db_error, SqliteStore};

type Tx = sqlx::Transaction<'static, sqlx::Sqlite>;

fn json_list<T: serde::Serialize>(items: &[T]) -> Result<String, StoreError> {
    serde_json::to_string(items).map_err(|e| StoreError::invalid(e.to_string()))
}

/// `(head, clear_index)` of a session, if it exists.
pub(crate) async fn session_row(conn: &mut SqliteConnection, key: &str) -> Result<Option<(u64, u64)>, StoreError> {
    let row = sqlx::query("SELECT head, clear_index FROM a2_sessions WHERE session = ?")
        .bind(key)
        .fetch_optional(conn)
        .await
        .map_err(db_error)?;
    row.map(|r| Ok((to_u64(get(&r, "head")?), to_u64(get(&r, "clear_index")?)))).transpose()
}

/// Give log consumers without a cursor here one: after the head, or after the clear boundary when backfilling.
async fn ensure_cursors(
    conn: &mut SqliteConnection,
    key: &str,
    head: u64,
    clear: u64,
    consumers: &[StoreConsumer],
) -> Result<(), StoreError> {
    for consumer in consumers {
        let Some(log) = &consumer.log else { continue };
        let next = if log.backfill { clear + 1 } else { head + 1 };
        sqlx::query(
            "INSERT INTO a2_heads (session, consumer, lane, idx, kind) VALUES (?, ?, ?, ?, 0) ON CONFLICT DO NOTHING",
        )
        .bind(key)
        .bind(&consumer.name)
        .bind(&log.lane)
        .bind(to_i64(next))
        .execute(&mut *conn)
        .await
        .map_err(db_error)?;
    }
    Ok(())
}

/// Move a fresh cursor past events its consumer does not take.
/// Move a cursor no live attempt holds past events its consumer does not
/// take; a lapsed attempt on such an event is dropped with the move.
async fn skip_untaken(
    conn: &mut SqliteConnection,
    key: &str,
    head: u64,
    consumer: &StoreConsumer,
    now: Millis,
) -> Result<(), StoreError> {
    let Some(LogSpec { types: Some(types), .. }) = &consumer.log else { return Ok(()) };
    sqlx::query(
        "UPDATE a2_heads SET idx = COALESCE((SELECT MIN(e.idx) FROM a2_events e WHERE e.session = a2_heads.session \
           AND e.idx >= a2_heads.idx AND e.type IN (SELECT value FROM json_each(?3))), ?4), \
           attempt_count = 0, failure_count = 0, last_error = NULL, lease_holder = NULL, lease_expires_at = NULL, \
           next_attempt_at = NULL \
         WHERE session = ?1 AND consumer = ?2 AND kind = 0 AND failed_at IS NULL AND idx <= ?5 \
           AND (lease_holder IS NULL OR lease_expires_at <= ?6) \
           AND NOT EXISTS (SELECT 1 FROM a2_events e WHERE e.session = a2_heads.session AND e.idx = a2_heads.idx \
             AND e.type IN (SELECT value FROM json_each(?3)))",
    )
    .bind(key)
    .bind(&consumer.name)
    .bind(json_list(types)?)
    .bind(to_i64(head + 1))
    .bind(to_i64(head))
    .bind(now)
    .execute(conn)
    .await
    .map_err(db_error)?;
    Ok(())
}

/// Append a batch inside `conn`'s transaction; all-present is a no-op, a mix is refused.
async fn append_core(
    conn: &mut SqliteConnection,
    key: &str,
    events: Vec<NewEvent>,
    consumers: &[StoreConsumer],
    now: Millis,
) -> Result<(Vec<Event>, bool), StoreError> {
    check_batch(key, &events)?;
    if events.is_empty() {
        return Ok((Vec::new(), false));
    }
    let ids: Vec<&str> = events.iter().map(|e| e.id.as_str()).collect();
    let present = sqlx::query("SELECT id, idx, type, payload, created_at, cause FROM a2_events WHERE session = ? AND id IN (SELECT value FROM json_each(?))")
        .bind(key)
        .bind(json_list(&ids)?)
        .fetch_all(&mut *conn)
        .await
        .map_err(db_error)?;
    let present: Vec<Event> = present.iter().map(|r| event(r, key, "")).collect::<Result<_, _>>()?;
    let present_ids: Vec<&str> = present.iter().map(|e| e.id.as_str()).collect();
    if plan_batch(key, &events, &present_ids)? == BatchPlan::AllPresent {
        let stored = ids.iter().filter_map(|id| present.iter().find(|e| e.id == *id).cloned()).collect();
        return Ok((stored, true));
    }
    sqlx::query("INSERT INTO a2_sessions (session, head, clear_index, created_at, updated_at) VALUES (?1, 0, 0, ?2, ?2) ON CONFLICT DO NOTHING")
        .bind(key)
        .bind(now)
        .execute(&mut *conn)
        .await
        .map_err(db_error)?;
    let (head, clear) = session_row(conn, key).await?.unwrap_or((0, 0));
    ensure_cursors(conn, key, head, clear, consumers).await?;
    let mut stored = Vec::with_capacity(events.len());
    for (offset, new) in events.into_iter().enumerate() {
        let index = head + 1 + offset as u64;
        let payload = serde_json::to_string(&new.payload).map_err(|e| StoreError::invalid(format!("payload: {e}")))?;
        let cause = new
            .cause
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| StoreError::invalid(e.to_string()))?;
        sqlx::query(
            "INSERT INTO a2_events (session, idx, id, type, payload, created_at, cause) VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(key)
        .bind(to_i64(index))
        .bind(&new.id)
        .bind(&new.event_type)
        .bind(&payload)
        .bind(now)
        .bind(&cause)
        .execute(&mut *conn)
        .await
        .map_err(db_error)?;
        for target in &new.targets {
            sqlx::query("INSERT INTO a2_heads (session, consumer, lane, idx, kind) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING")
                .bind(key)
                .bind(&target.consumer)
                .bind(lane_column(target.lane.as_deref()))
                .bind(to_i64(index))
                .bind(kind_code(target_kind(target.lane.as_deref())))
                .execute(&mut *conn)
                .await
                .map_err(db_error)?;
        }
        stored.push(Event {
            id: new.id,
            event_type: new.event_type,
            payload: new.payload,
            index,
            session: key.to_owned(),
            created_at: now,
            cause: new.cause,
        });
    }
    sqlx::query("UPDATE a2_sessions SET head = ?, updated_at = ? WHERE session = ?")
        .bind(to_i64(head + stored.len() as u64))
        .bind(now)
        .bind(key)
        .execute(&mut *conn)
        .await
        .map_err(db_error)?;
    Ok((stored, false))
}

async fn update_state(conn: &mut SqliteConnection, key: &str, head: &HeadRef, s: &HeadState) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE a2_heads SET attempt_count = ?, failure_count = ?, last_error = ?, failed_at = ?, lease_holder = ?, \
         lease_expires_at = ?, next_attempt_at = ? WHERE session = ? AND consumer = ? AND lane = ? AND idx = ?",
    )
    .bind(i64::from(s.attempt_count))
    .bind(i64::from(s.failure_count))
    .bind(&s.last_error)
    .bind(s.failed_at)
    .bind(&s.lease_holder)
    .bind(s.lease_expires_at)
    .bind(s.next_attempt_at)
    .bind(key)
    .bind(&head.consumer)
    .bind(lane_column(head.lane.as_deref()))
    .bind(to_i64(head.index))
    .execute(conn)
    .await
    .map_err(db_error)?;
    Ok(())
}

/// The kind and state of a head row, if it exists.
async fn head_row(
    conn: &mut SqliteConnection,
    key: &str,
    head: &HeadRef,
) -> Result<Option<(i64, HeadState)>, StoreError> {
    let row = sqlx::query("SELECT * FROM a2_heads WHERE session = ? AND consumer = ? AND lane = ? AND idx = ?")
        .bind(key)
        .bind(&head.consumer)
        .bind(lane_column(head.lane.as_deref()))
        .bind(to_i64(head.index))
        .fetch_optional(conn)
        .await
        .map_err(db_error)?;
    row.map(|r| Ok((get::<i64>(&r, "kind")?, head_state(&r)?))).transpose()
}

/// Settle a head: move a cursor on, or drop a per-event head.
async fn settle(conn: &mut SqliteConnection, key: &str, head: &HeadRef, kind: i64) -> Result<(), StoreError> {
    let statement = if kind == 0 {
        "UPDATE a2_heads SET idx = idx + 1, attempt_count = 0, failure_count = 0, last_error = NULL, failed_at = NULL, \
         lease_holder = NULL, lease_expires_at = NULL, next_attempt_at = NULL \
         WHERE session = ? AND consumer = ? AND lane = ? AND idx = ?"
    } else {
        "DELETE FROM a2_heads WHERE session = ? AND consumer = ? AND lane = ? AND idx = ?"
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

async fn touch(conn: &mut SqliteConnection, key: &str, now: Millis) -> Result<(), StoreError> {
    sqlx::query("UPDATE a2_sessions SET updated_at = ? WHERE session = ?")
        .bind(now)
        .bind(key)
        .execute(conn)
        .await
        .map_err(db_error)?;
    Ok(())
}

impl SqliteStore {
    pub(crate) async fn begin(&self) -> Result<Tx, StoreError> {
        self.writer()?.begin_with("BEGIN IMMEDIATE").await.map_err(db_error)
    }

    fn now(&self) -> Millis {
        self.clock.now_ms()
    }

    pub(crate) async fn append(&self, params: EventAppend) -> Result<Appended, StoreError> {
        check_session_key(&params.session)?;
        let mut tx = self.begin().await?;
        let (events, duplicate) =
            append_core(&mut tx, &params.session, params.events, &params.consumers, self.now()).await?;
        let head = session_row(&mut tx, &params.session).await?.map_or(0, |(h, _)| h);
        tx.commit().await.map_err(db_error)?;
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
        for consumer in &params.consumers {
            skip_untaken(&mut tx, key, head, consumer, self.now()).await?;
        }
        let now = self.now();
        let names: Vec<&str> = params.consumers.iter().map(|c| c.name.as_str()).collect();
        let names = json_list(&names)?;
        let through = params.through.map(to_i64);
        let limit = params.limit.max(1) as usize;
        // Runnable or lapsed heads, a lane's lowest only; a log cursor joins an event only while behind the head.
        let candidates = sqlx::query(
            "SELECT h.*, e.id AS e_id, e.type AS e_type, e.payload AS e_payload, e.idx AS e_idx, \
               e.created_at AS e_created_at, e.cause AS e_cause \
             FROM a2_heads h JOIN a2_events e ON e.session = h.session AND e.idx = h.idx \
             WHERE h.session = ?1 AND h.consumer IN (SELECT value FROM json_each(?2)) AND h.failed_at IS NULL \
               AND (?3 IS NULL OR h.idx <= ?3) \
               AND (h.kind <> 1 OR h.idx = (SELECT MIN(l.idx) FROM a2_heads l WHERE l.session = h.session AND l.consumer = h.consumer AND l.lane = h.lane)) \
               AND (h.lease_holder IS NULL OR h.lease_expires_at <= ?4) \
               AND (h.next_attempt_at IS NULL OR h.next_attempt_at <= ?4) \
             ORDER BY h.idx, h.consumer, h.lane LIMIT ?5",
        )
        .bind(key)
        .bind(&names)
        .bind(through)
        .bind(now)
        .bind(i64::try_from(limit + params.exclude.len()).unwrap_or(i64::MAX))
        .fetch_all(&mut *tx)
        .await
        .map_err(db_error)?;
        let waits = sqlx::query(
            "SELECT MIN(CASE WHEN h.lease_holder IS NOT NULL AND h.lease_expires_at > ?4 THEN h.lease_expires_at END) AS busy_until, \
                    MIN(CASE WHEN (h.lease_holder IS NULL OR h.lease_expires_at <= ?4) AND h.next_attempt_at > ?4 THEN h.next_attempt_at END) AS retry_at \
             FROM a2_heads h \
             WHERE h.session = ?1 AND h.consumer IN (SELECT value FROM json_each(?2)) AND h.failed_at IS NULL \
               AND (?3 IS NULL OR h.idx <= ?3) AND h.idx <= ?5 \
               AND (h.kind <> 1 OR h.idx = (SELECT MIN(l.idx) FROM a2_heads l WHERE l.session = h.session AND l.consumer = h.consumer AND l.lane = h.lane))",
        )
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
        for row in &candidates {
            if claimed.heads.len() >= limit {
                break;
            }
            let head_ref = HeadRef {
                consumer: get(row, "consumer")?,
                lane: a2_store::codec::lane_from_column(get(row, "lane")?),
                index: to_u64(get(row, "idx")?),
            };
            if params.exclude.contains(&head_ref) {
                continue;
            }
            let mut state = head_state(row)?;
            let event = event(row, key, "e_")?;
            // The skip above ran in this same write transaction, so this only guards the rule.
            if untaken_cursor(&params, &head_ref, &event.event_type) {
                continue;
            }
            if claim_head(&mut state, head_ref.clone(), event, &params, now, &mut claimed) {
                update_state(&mut tx, key, &head_ref, &state).await?;
            }
        }
        tx.commit().await.map_err(db_error)?;
        Ok(claimed)
    }

    pub(crate) async fn renew(&self, params: HeadRenew) -> Result<Renewed, StoreError> {
        let expires = self.now() + params.ttl_ms;
        let mut tx = self.begin().await?;
        let mut renewed = Renewed { lease_expires_at: expires, ..Renewed::default() };
        for held in params.heads {
            let done = sqlx::query(
                "UPDATE a2_heads SET lease_expires_at = ? WHERE session = ? AND consumer = ? AND lane = ? AND idx = ? \
                 AND attempt_count = ? AND failed_at IS NULL AND lease_holder = ?",
            )
            .bind(expires)
            .bind(&params.session)
            .bind(&held.head.consumer)
            .bind(lane_column(held.head.lane.as_deref()))
            .bind(to_i64(held.head.index))
            .bind(i64::from(held.attempt))
            .bind(&params.holder)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
            if done.rows_affected() == 1 {
                renewed.renewed.push(held.head);
            } else {
                renewed.superseded.push(held.head);
            }
        }
        tx.commit().await.map_err(db_error)?;
        Ok(renewed)
    }

    pub(crate) async fn complete(&self, params: HeadComplete) -> Result<CompleteOutcome, StoreError> {
        let key = params.session.as_str();
        let now = self.now();
        let mut tx = self.begin().await?;
        let Some((kind, state)) = head_row(&mut tx, key, &params.head).await? else {
            return Ok(CompleteOutcome::Superseded);
        };
        if !state.is_current(params.attempt) {
            return Ok(CompleteOutcome::Superseded);
        }
        let (appended, duplicate) = append_core(&mut tx, key, params.events, &params.consumers, now).await?;
        settle(&mut tx, key, &params.head, kind).await?;
        let session_head = session_row(&mut tx, key).await?.map_or(0, |(h, _)| h);
        tx.commit().await.map_err(db_error)?;
        let appended = if duplicate { Vec::new() } else { appended };
        Ok(CompleteOutcome::Completed { session_head, appended })
    }

    pub(crate) async fn complete_many(&self, params: HeadCompleteMany) -> Result<Vec<HeadRef>, StoreError> {
        let key = params.session.as_str();
        let mut tx = self.begin().await?;
        let mut settled = Vec::new();
        for held in params.heads {
            let Some((kind, state)) = head_row(&mut tx, key, &held.head).await? else { continue };
            if state.is_current(held.attempt) {
                settle(&mut tx, key, &held.head, kind).await?;
                settled.push(held.head);
            }
        }
        tx.commit().await.map_err(db_error)?;
        Ok(settled)
    }

    pub(crate) async fn fail(&self, params: HeadFail) -> Result<FailOutcome, StoreError> {
        let key = params.session.as_str();
        let mut tx = self.begin().await?;
        let Some((_, mut state)) = head_row(&mut tx, key, &params.head).await? else {
            return Ok(FailOutcome::Superseded);
        };
        if !state.is_current(params.attempt) {
            return Ok(FailOutcome::Superseded);
        }
        let outcome = state.fail(self.now(), params.error, params.max_failures, params.backoff);
        update_state(&mut tx, key, &params.head, &state).await?;
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

    async fn redrive_in(&self, tx: &mut SqliteConnection, params: &DeadLetterRedrive) -> Result<bool, StoreError> {
        let key = params.session.as_str();
        let row = sqlx::query(
            "SELECT h.* FROM a2_heads h JOIN a2_events e ON e.session = h.session AND e.idx = h.idx \
             WHERE h.session = ? AND h.consumer = ? AND h.idx = ? AND h.failed_at IS NOT NULL LIMIT 1",
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
            lane: a2_store::codec::lane_from_column(get(&row, "lane")?),
            index: params.index,
        };
        match params.action {
            RedriveAction::Skip => settle(&mut *tx, key, &head, get(&row, "kind")?).await?,
            RedriveAction::Retry => {
                let mut state = head_state(&row)?;
                state.retry();
                update_state(&mut *tx, key, &head, &state).await?;
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
        let row = sqlx::query("SELECT * FROM a2_heads WHERE session = ? AND consumer = ? AND kind = 0")
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

    async fn clear_in(&self, tx: &mut SqliteConnection, params: &SessionClear) -> Result<Cleared, StoreError> {
        check_session_key(&params.session)?;
        let key = params.session.as_str();
        let Some((head, _)) = session_row(&mut *tx, key).await? else {
            return Ok(Cleared { cleared: params.if_last_index.is_none_or(|i| i == 0), index: 0 });
        };
        if params.if_last_index.is_some_and(|i| i != head) {
            return Ok(Cleared { cleared: false, index: head });
        }
        let boundary = to_i64(head);
        sqlx::query("UPDATE a2_sessions SET clear_index = ?, updated_at = ? WHERE session = ?")
            .bind(boundary)
            .bind(self.now())
            .bind(key)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        sqlx::query(
            "UPDATE a2_heads SET idx = ?1 + 1, attempt_count = 0, failure_count = 0, last_error = NULL, failed_at = NULL, \
             lease_holder = NULL, lease_expires_at = NULL, next_attempt_at = NULL WHERE session = ?2 AND kind = 0 AND idx <= ?1",
        )
        .bind(boundary)
        .bind(key)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        sqlx::query("DELETE FROM a2_heads WHERE session = ? AND kind <> 0 AND idx <= ?")
            .bind(key)
            .bind(boundary)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        sqlx::query("DELETE FROM a2_snapshots WHERE session = ?")
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
        let existing = sqlx::query("SELECT idx, pins FROM a2_snapshots WHERE session = ? AND reducer = ? AND idx <= ?")
            .bind(key)
            .bind(&params.reducer)
            .bind(to_i64(params.index))
            .fetch_all(&mut *tx)
            .await
            .map_err(db_error)?;
        let mut pins: Vec<HeadRef> = params.pin.into_iter().collect();
        for row in &existing {
            let index = to_u64(get(row, "idx")?);
            let row_pins = pins_from_json(&get::<String>(row, "pins")?)?;
            if index == params.index {
                pins.extend(row_pins);
                continue;
            }
            // Older snapshots of this reducer go, unless a running head still pins them.
            let mut live = false;
            for pin in &row_pins {
                live |= pin_live(&mut tx, key, pin).await?;
            }
            if !live {
                sqlx::query("DELETE FROM a2_snapshots WHERE session = ? AND reducer = ? AND idx = ?")
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
        let state =
            serde_json::to_string(&params.state).map_err(|e| StoreError::invalid(format!("snapshot state: {e}")))?;
        sqlx::query(
            "INSERT INTO a2_snapshots (session, reducer, idx, state, pins, created_at) VALUES (?, ?, ?, ?, ?, ?) \
             ON CONFLICT (session, reducer, idx) DO UPDATE SET state = excluded.state, pins = excluded.pins, created_at = excluded.created_at",
        )
        .bind(key)
        .bind(&params.reducer)
        .bind(to_i64(params.index))
        .bind(state)
        .bind(pins_to_json(&pins)?)
        .bind(self.now())
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(())
    }
}

/// Whether the head a snapshot pin names is still pending.
async fn pin_live(conn: &mut SqliteConnection, key: &str, pin: &HeadRef) -> Result<bool, StoreError> {
    let row = sqlx::query(
        "SELECT EXISTS (SELECT 1 FROM a2_heads WHERE session = ?1 AND consumer = ?2 AND lane = ?3 \
           AND ((kind = 0 AND idx <= ?4) OR (kind <> 0 AND idx = ?4))) AS live",
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
