//! The engine's writes, each one short transaction: statements from the
//! backend, the decisions (claim, fail, fence, plan a batch) from
//! `a2_store::rules`, so every backend settles a head the same way.

use a2_store::codec::{kind_code, lane_column, target_kind, to_i64};
use a2_store::rules::{check_batch, claim_head, cursor_state, plan_batch, untaken_cursor, BatchPlan, HeadState};
use a2_store::*;

use crate::conn::Conn;
use crate::each::run_each;
use crate::rows::{event, head_ref, head_state};
use crate::value::Arg;
use crate::{SqlBackend, SqlStore};

/// The arguments naming one head: (consumer, lane, idx).
fn head_args(head: &HeadRef) -> [Arg; 3] {
    [Arg::text(&head.consumer), Arg::text(lane_column(head.lane.as_deref())), Arg::Int(to_i64(head.index))]
}

fn keyed(key: &str, head: &HeadRef) -> Vec<Arg> {
    std::iter::once(Arg::text(key)).chain(head_args(head)).collect()
}

fn fenced(held: &HeldHead) -> Vec<Arg> {
    head_args(&held.head).into_iter().chain([Arg::Int(i64::from(held.attempt))]).collect()
}

impl<B: SqlBackend> SqlStore<B> {
    /// `(head, clear_index)` of a session, if it exists.
    pub(crate) async fn session_row(&self, conn: &mut dyn Conn, key: &str) -> Result<Option<(u64, u64)>, StoreError> {
        let row = conn.fetch_optional(self.sql().session_row, vec![Arg::text(key)]).await?;
        row.map(|r| Ok((r.u64("head")?, r.u64("clear_index")?))).transpose()
    }

    /// Give log consumers without a cursor here one: after the head, or after
    /// the clear boundary when backfilling. Existing cursors are left alone.
    async fn ensure_cursors(
        &self,
        conn: &mut dyn Conn,
        key: &str,
        (head, clear): (u64, u64),
        consumers: &[StoreConsumer],
    ) -> Result<(), StoreError> {
        let rows: Vec<Vec<Arg>> = consumers
            .iter()
            .filter_map(|c| c.log.as_ref().map(|log| (c, log)))
            .map(|(c, log)| {
                let next = if log.backfill { clear + 1 } else { head + 1 };
                vec![Arg::text(&c.name), Arg::text(&log.lane), Arg::Int(to_i64(next))]
            })
            .collect();
        run_each(conn, &self.sql().cursors_ensure, &[Arg::text(key)], &rows).await?;
        Ok(())
    }

    /// Move a cursor no live attempt holds past events its consumer does not
    /// take; a lapsed attempt on such an event is dropped with the move.
    async fn skip_untaken(
        &self,
        conn: &mut dyn Conn,
        key: &str,
        head: u64,
        consumer: &StoreConsumer,
        now: Millis,
    ) -> Result<(), StoreError> {
        let Some(LogSpec { types: Some(types), .. }) = &consumer.log else { return Ok(()) };
        let args = vec![
            Arg::text(key),
            Arg::text(&consumer.name),
            Arg::texts(types),
            Arg::Int(to_i64(head + 1)),
            Arg::Int(to_i64(head)),
            Arg::Int(now),
        ];
        conn.execute(self.sql().untaken_skip, args).await?;
        Ok(())
    }

    /// Append a batch inside `conn`'s transaction: all ids present is an
    /// idempotent no-op (`true`), a mix of present and new is refused.
    pub(crate) async fn append_in(
        &self,
        conn: &mut dyn Conn,
        key: &str,
        events: Vec<NewEvent>,
        consumers: &[StoreConsumer],
        now: Millis,
    ) -> Result<(Vec<Event>, bool), StoreError> {
        check_batch(key, &events)?;
        if events.is_empty() {
            return Ok((Vec::new(), false));
        }
        // Lock (creating if need be) the session row: appends to one session serialize here.
        let row = conn.fetch_one(self.sql().session_open, vec![Arg::text(key), Arg::Int(now)]).await?;
        let (head, clear) = (row.u64("head")?, row.u64("clear_index")?);
        let ids: Vec<&str> = events.iter().map(|e| e.id.as_str()).collect();
        let present = conn.fetch(self.sql().events_by_ids, vec![Arg::text(key), Arg::texts(&ids)]).await?;
        let present: Vec<Event> = present.iter().map(|r| event(r, key, "")).collect::<Result<_, _>>()?;
        let present_ids: Vec<&str> = present.iter().map(|e| e.id.as_str()).collect();
        if plan_batch(key, &events, &present_ids)? == BatchPlan::AllPresent {
            let stored = ids.iter().filter_map(|id| present.iter().find(|e| e.id == *id).cloned()).collect();
            return Ok((stored, true));
        }
        self.ensure_cursors(conn, key, (head, clear), consumers).await?;
        let (mut event_rows, mut head_rows) = (Vec::with_capacity(events.len()), Vec::new());
        let mut stored = Vec::with_capacity(events.len());
        for (offset, new) in events.into_iter().enumerate() {
            let index = head + 1 + offset as u64;
            for target in &new.targets {
                head_rows.push(vec![
                    Arg::text(&target.consumer),
                    Arg::text(lane_column(target.lane.as_deref())),
                    Arg::Int(to_i64(index)),
                    Arg::Int(i64::from(kind_code(target_kind(target.lane.as_deref())))),
                ]);
            }
            let cause = new.cause.as_ref().map(serde_json::to_value).transpose();
            event_rows.push(vec![
                Arg::Int(to_i64(index)),
                Arg::text(&new.id),
                Arg::text(&new.event_type),
                Arg::Json(new.payload.clone()),
                Arg::OptJson(cause.map_err(|e| StoreError::invalid(format!("cause: {e}")))?),
            ]);
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
        run_each(conn, &self.sql().events_insert, &[Arg::text(key), Arg::Int(now)], &event_rows).await?;
        run_each(conn, &self.sql().event_heads_insert, &[Arg::text(key)], &head_rows).await?;
        let new_head = to_i64(head + stored.len() as u64);
        conn.execute(self.sql().session_advance, vec![Arg::Int(new_head), Arg::Int(now), Arg::text(key)]).await?;
        Ok((stored, false))
    }

    /// Write back the states of many heads.
    async fn put_states(
        &self,
        conn: &mut dyn Conn,
        key: &str,
        heads: &[(HeadRef, HeadState)],
    ) -> Result<(), StoreError> {
        let rows: Vec<Vec<Arg>> = heads
            .iter()
            .map(|(head, s)| {
                head_args(head)
                    .into_iter()
                    .chain([
                        Arg::Int(i64::from(s.attempt_count)),
                        Arg::Int(i64::from(s.failure_count)),
                        Arg::OptText(s.last_error.clone()),
                        Arg::OptInt(s.failed_at),
                        Arg::OptText(s.lease_holder.clone()),
                        Arg::OptInt(s.lease_expires_at),
                        Arg::OptInt(s.next_attempt_at),
                    ])
                    .collect()
            })
            .collect();
        run_each(conn, &self.sql().head_states_put, &[Arg::text(key)], &rows).await?;
        Ok(())
    }

    /// Lock a head row and return its kind and state.
    async fn lock_head(
        &self,
        conn: &mut dyn Conn,
        key: &str,
        head: &HeadRef,
    ) -> Result<Option<(i64, HeadState)>, StoreError> {
        let row = conn.fetch_optional(self.sql().head_lock, keyed(key, head)).await?;
        row.map(|r| Ok((r.int("kind")?, head_state(&r)?))).transpose()
    }

    /// Settle a head: move a cursor on, or drop a per-event head.
    async fn settle(&self, conn: &mut dyn Conn, key: &str, head: &HeadRef, kind: i64) -> Result<(), StoreError> {
        let sql = if kind == 0 { self.sql().cursor_settle } else { self.sql().event_head_settle };
        conn.execute(sql, keyed(key, head)).await?;
        Ok(())
    }

    pub(crate) async fn append(&self, params: EventAppend) -> Result<Appended, StoreError> {
        check_session_key(&params.session)?;
        check_batch(&params.session, &params.events)?;
        if params.events.is_empty() {
            let mut conn = self.backend.work().await?;
            let head = self.session_row(conn.as_mut(), &params.session).await?.map_or(0, |(h, _)| h);
            return Ok(Appended { head, events: Vec::new(), duplicate: false });
        }
        if let Some(appended) = self.backend.append_fast(&params).await? {
            self.backend.announce(&params.session);
            return Ok(appended);
        }
        let mut tx = self.backend.begin().await?;
        let (events, duplicate) =
            self.append_in(tx.as_mut(), &params.session, params.events, &params.consumers, self.now()).await?;
        let head = self.session_row(tx.as_mut(), &params.session).await?.map_or(0, |(h, _)| h);
        tx.commit().await?;
        if !duplicate {
            self.backend.announce(&params.session);
        }
        Ok(Appended { head, events, duplicate })
    }

    pub(crate) async fn claim(&self, params: HeadClaim) -> Result<Claimed, StoreError> {
        check_session_key(&params.session)?;
        let key = params.session.as_str();
        let mut tx = self.backend.begin().await?;
        let Some((head, clear)) = self.session_row(tx.as_mut(), key).await? else {
            return Ok(Claimed::default());
        };
        self.ensure_cursors(tx.as_mut(), key, (head, clear), &params.consumers).await?;
        let now = self.now();
        for consumer in &params.consumers {
            self.skip_untaken(tx.as_mut(), key, head, consumer, now).await?;
        }
        let names = Arg::texts(params.consumers.iter().map(|c| c.name.as_str()));
        let through = Arg::OptInt(params.through.map(to_i64));
        let limit = params.limit.max(1) as usize;
        let waits_args = vec![Arg::text(key), names.clone(), through.clone(), Arg::Int(now), Arg::Int(to_i64(head))];
        let waits = tx.fetch_one(self.sql().claim_waits, waits_args).await?;
        let mut claimed = Claimed {
            session_head: head,
            busy_until: waits.opt_int("busy_until")?,
            retry_at: waits.opt_int("retry_at")?,
            ..Claimed::default()
        };
        // Where each statement reads its own snapshot (Postgres, READ
        // COMMITTED), a cursor the skip above saw held can be completed onto
        // an untaken event before the selection reads it: such a cursor is
        // locked, skipped and looked at again, never run.
        for _pass in 0..4 {
            let fetch = i64::try_from(limit + params.exclude.len()).unwrap_or(i64::MAX);
            let args = vec![Arg::text(key), names.clone(), through.clone(), Arg::Int(now), Arg::Int(fetch)];
            let candidates = tx.fetch(self.sql().claim_candidates, args).await?;
            let (mut changed, mut untaken) = (Vec::new(), Vec::new());
            for row in &candidates {
                if claimed.heads.len() >= limit {
                    break;
                }
                let head_ref = head_ref(row)?;
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
            self.put_states(tx.as_mut(), key, &changed).await?;
            if untaken.is_empty() || claimed.heads.len() >= limit {
                break;
            }
            // The cursor may stand past the head read above: skip up to the head now.
            let head_now = self.session_row(tx.as_mut(), key).await?.map_or(head, |(h, _)| h);
            for consumer in params.consumers.iter().filter(|c| untaken.contains(&c.name)) {
                self.skip_untaken(tx.as_mut(), key, head_now, consumer, now).await?;
            }
        }
        tx.commit().await?;
        Ok(claimed)
    }

    pub(crate) async fn renew(&self, params: HeadRenew) -> Result<Renewed, StoreError> {
        let expires = self.now() + params.ttl_ms;
        let leading = [Arg::text(&params.session), Arg::text(&params.holder), Arg::Int(expires)];
        let rows: Vec<Vec<Arg>> = params.heads.iter().map(fenced).collect();
        let mut tx = self.backend.begin().await?;
        let kept = run_each(tx.as_mut(), &self.sql().heads_renew, &leading, &rows).await?;
        tx.commit().await?;
        let kept = kept.iter().map(head_ref).collect::<Result<Vec<_>, _>>()?;
        let (renewed, superseded) = params.heads.into_iter().map(|h| h.head).partition(|h| kept.contains(h));
        Ok(Renewed { renewed, superseded, lease_expires_at: expires })
    }

    pub(crate) async fn complete(&self, params: HeadComplete) -> Result<CompleteOutcome, StoreError> {
        let key = params.session.as_str();
        let now = self.now();
        let mut tx = self.backend.begin().await?;
        let Some((kind, state)) = self.lock_head(tx.as_mut(), key, &params.head).await? else {
            return Ok(CompleteOutcome::Superseded);
        };
        if !state.is_current(params.attempt) {
            return Ok(CompleteOutcome::Superseded);
        }
        let (appended, duplicate) = self.append_in(tx.as_mut(), key, params.events, &params.consumers, now).await?;
        // No touch of the session row: completions of one session's heads must not queue on it.
        self.settle(tx.as_mut(), key, &params.head, kind).await?;
        let session_head = self.session_row(tx.as_mut(), key).await?.map_or(0, |(h, _)| h);
        tx.commit().await?;
        let appended = if duplicate { Vec::new() } else { appended };
        if !appended.is_empty() {
            self.backend.announce(key);
        }
        Ok(CompleteOutcome::Completed { session_head, appended })
    }

    /// Cursors move on and per-event heads go, each fenced by its attempt.
    pub(crate) async fn complete_many(&self, params: HeadCompleteMany) -> Result<Vec<HeadRef>, StoreError> {
        let leading = [Arg::text(&params.session)];
        let rows: Vec<Vec<Arg>> = params.heads.iter().map(fenced).collect();
        let mut tx = self.backend.begin().await?;
        let mut settled = run_each(tx.as_mut(), &self.sql().cursors_complete, &leading, &rows).await?;
        settled.extend(run_each(tx.as_mut(), &self.sql().event_heads_complete, &leading, &rows).await?);
        tx.commit().await?;
        settled.iter().map(head_ref).collect()
    }

    pub(crate) async fn fail(&self, params: HeadFail) -> Result<FailOutcome, StoreError> {
        let key = params.session.as_str();
        let mut tx = self.backend.begin().await?;
        let Some((_, mut state)) = self.lock_head(tx.as_mut(), key, &params.head).await? else {
            return Ok(FailOutcome::Superseded);
        };
        if !state.is_current(params.attempt) {
            return Ok(FailOutcome::Superseded);
        }
        let outcome = state.fail(self.now(), params.error, params.max_failures, params.backoff);
        self.put_states(tx.as_mut(), key, &[(params.head, state)]).await?;
        tx.commit().await?;
        Ok(outcome)
    }

    pub(crate) async fn redrive(&self, params: DeadLetterRedrive) -> Result<bool, StoreError> {
        let mut tx = self.backend.begin().await?;
        let redriven = self.redrive_in(tx.as_mut(), &params).await?;
        if let Some(mut entry) = params.audit {
            // The action and its record commit together, or neither does.
            entry.outcome = serde_json::json!({ "redriven": redriven });
            self.audit_insert(tx.as_mut(), &entry).await?;
        }
        tx.commit().await?;
        Ok(redriven)
    }

    async fn redrive_in(&self, conn: &mut dyn Conn, params: &DeadLetterRedrive) -> Result<bool, StoreError> {
        let key = params.session.as_str();
        let args = vec![Arg::text(key), Arg::text(&params.consumer), Arg::Int(to_i64(params.index))];
        let Some(row) = conn.fetch_optional(self.sql().dead_letter_lock, args).await? else { return Ok(false) };
        let head = head_ref(&row)?;
        match params.action {
            RedriveAction::Skip => self.settle(conn, key, &head, row.int("kind")?).await?,
            RedriveAction::Retry => {
                let mut state = head_state(&row)?;
                state.retry();
                self.put_states(conn, key, &[(head, state)]).await?;
            }
        }
        conn.execute(self.sql().session_touch, vec![Arg::Int(self.now()), Arg::text(key)]).await?;
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
        let mut tx = self.backend.begin().await?;
        let Some((head, clear)) = self.session_row(tx.as_mut(), key).await? else {
            return Ok(CursorState::default());
        };
        self.ensure_cursors(tx.as_mut(), key, (head, clear), std::slice::from_ref(&params.consumer)).await?;
        self.skip_untaken(tx.as_mut(), key, head, &params.consumer, self.now()).await?;
        let args = vec![Arg::text(key), Arg::text(&params.consumer.name)];
        let row = tx.fetch_optional(self.sql().cursor_get, args).await?;
        tx.commit().await?;
        let Some(row) = row else { return Ok(CursorState { session_head: head, ..CursorState::default() }) };
        Ok(cursor_state(head, row.u64("idx")?, head_state(&row)?))
    }

    pub(crate) async fn clear(&self, params: SessionClear) -> Result<Cleared, StoreError> {
        check_session_key(&params.session)?;
        let mut tx = self.backend.begin().await?;
        let cleared = self.clear_in(tx.as_mut(), &params).await?;
        if let Some(mut entry) = params.audit {
            // The action and its record commit together, or neither does.
            entry.outcome = serde_json::json!(cleared);
            self.audit_insert(tx.as_mut(), &entry).await?;
        }
        tx.commit().await?;
        Ok(cleared)
    }

    async fn clear_in(&self, conn: &mut dyn Conn, params: &SessionClear) -> Result<Cleared, StoreError> {
        let key = Arg::text(&params.session);
        let Some(row) = conn.fetch_optional(self.sql().session_lock, vec![key.clone()]).await? else {
            return Ok(Cleared { cleared: params.if_last_index.is_none_or(|i| i == 0), index: 0 });
        };
        let head = row.u64("head")?;
        if params.if_last_index.is_some_and(|i| i != head) {
            return Ok(Cleared { cleared: false, index: head });
        }
        let boundary = Arg::Int(to_i64(head));
        let sql = self.sql();
        conn.execute(sql.clear_session, vec![boundary.clone(), Arg::Int(self.now()), key.clone()]).await?;
        conn.execute(sql.clear_cursors, vec![boundary.clone(), key.clone()]).await?;
        conn.execute(sql.clear_event_heads, vec![key.clone(), boundary]).await?;
        conn.execute(sql.clear_snapshots, vec![key]).await?;
        Ok(Cleared { cleared: true, index: head })
    }

    pub(crate) async fn put_snapshot(&self, params: SnapshotPut) -> Result<(), StoreError> {
        let key = params.session.as_str();
        let mut tx = self.backend.begin().await?;
        let Some((head, clear)) = self.session_row(tx.as_mut(), key).await? else {
            return Err(StoreError::not_found(format!("session {key:?}")));
        };
        if params.index <= clear || params.index > head {
            return Ok(());
        }
        let at = |index: u64| vec![Arg::text(key), Arg::text(&params.reducer), Arg::Int(to_i64(index))];
        let existing = tx.fetch(self.sql().snapshots_below, at(params.index)).await?;
        let mut pins: Vec<HeadRef> = params.pin.into_iter().collect();
        for row in &existing {
            let index = row.u64("idx")?;
            let row_pins: Vec<HeadRef> = row.json("pins")?;
            if index == params.index {
                pins.extend(row_pins);
                continue;
            }
            // Older snapshots of this reducer go, unless a running head still pins them.
            let mut live = false;
            for pin in &row_pins {
                live |= tx.fetch_one(self.sql().pin_live, keyed(key, pin)).await?.bool("live")?;
            }
            if !live {
                tx.execute(self.sql().snapshot_delete, at(index)).await?;
            }
        }
        pins.sort();
        pins.dedup();
        let pins = serde_json::to_value(&pins).map_err(|e| StoreError::invalid(e.to_string()))?;
        let mut args = at(params.index);
        args.extend([Arg::Json(params.state), Arg::Json(pins), Arg::Int(self.now())]);
        tx.execute(self.sql().snapshot_put, args).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Write an audit entry inside the caller's transaction.
    pub(crate) async fn audit_insert(&self, conn: &mut dyn Conn, entry: &AuditEntry) -> Result<u64, StoreError> {
        let args = vec![
            Arg::Int(entry.at),
            Arg::text(&entry.user),
            Arg::text(&entry.host),
            Arg::text(&entry.action),
            Arg::OptText(entry.contract.clone()),
            Arg::OptText(entry.session_id.clone()),
            Arg::Json(entry.parameters.clone()),
            Arg::Json(entry.outcome.clone()),
        ];
        conn.fetch_one(self.sql().audit_insert, args).await?.u64("id")
    }

    pub(crate) async fn audit_append(&self, entry: AuditEntry) -> Result<u64, StoreError> {
        let mut tx = self.backend.begin().await?;
        let id = self.audit_insert(tx.as_mut(), &entry).await?;
        tx.commit().await?;
        Ok(id)
    }

    pub(crate) async fn refresh_totals(&self) -> Result<TotalsSnapshot, StoreError> {
        let totals = self.read_totals(None).await?;
        let computed_at = self.now();
        let mut tx = self.backend.begin().await?;
        tx.execute(self.sql().totals_clear, Vec::new()).await?;
        for t in &totals {
            let args = vec![
                Arg::text(&t.contract),
                Arg::text(&t.consumer),
                Arg::Int(to_i64(t.sessions)),
                Arg::Int(to_i64(t.lagging_sessions)),
                Arg::Int(to_i64(t.total_lag)),
                Arg::Int(to_i64(t.dead_letters)),
                Arg::Int(computed_at),
            ];
            tx.execute(self.sql().totals_put, args).await?;
        }
        tx.commit().await?;
        Ok(TotalsSnapshot { computed_at, totals })
    }
}
