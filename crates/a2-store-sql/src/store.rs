//! The store trait, implemented once for every SQL backend: each method is
//! the operation itself, over the backend's statements; `steps.rs` holds
//! what several of them share.

use std::sync::Arc;

use a2_store::codec::to_i64;
use a2_store::rules::{self, check_batch, claim_head, cursor_state, untaken_cursor};
use a2_store::*;

use crate::each::run_each;
use crate::rows::{
    contract_range, dead_letter, dead_letter_group, event, head_ref, head_state, paused_consumer, snapshot_info,
    summary,
};
use crate::steps::{held_head_args, pick_args, session_head_args};
use crate::value::Arg;
use crate::{page, SqlBackend, SqlStore};

impl<B: SqlBackend> SqlStore<B> {
    /// The claim itself: the heads it leased (a range's later positions are read after it).
    async fn claim_heads(&self, params: HeadClaim) -> Result<Claimed, StoreError> {
        check_session_key(&params.session)?;
        let pick = self.sql().claim_pick;
        // Without log consumers there are no cursors to give or move, and the
        // picking statement reports the session's head with what it took.
        let logs = params.consumers.iter().any(|c| c.log.is_some());
        let now = self.now();
        if let Some(sql) = pick {
            // Leased nothing unless the claim was whole: the rules path below claims afresh.
            if let Some(claimed) = self.claim_autocommit(&params, sql, now).await? {
                return Ok(claimed);
            }
        }
        let key = params.session.as_str();
        let mut tx = self.backend.begin().await?;
        let mut bounds = None;
        if logs || pick.is_none() {
            let Some((head, clear)) = self.session_row(tx.as_mut(), key).await? else {
                return Ok(Claimed::default());
            };
            self.ensure_cursors(tx.as_mut(), key, (head, clear), &params.consumers).await?;
            for consumer in &params.consumers {
                self.skip_untaken(tx.as_mut(), key, head, consumer, now).await?;
            }
            bounds = Some(head);
        }
        let names = Arg::texts(params.consumers.iter().map(|c| c.name.as_str()));
        let through = Arg::OptInt(params.through.map(to_i64));
        let limit = params.limit.max(1) as usize;
        let mut claimed = Claimed { session_head: bounds.unwrap_or(0), ..Claimed::default() };
        // Where each statement reads its own snapshot (Postgres, READ
        // COMMITTED), a cursor the skip above saw held can be completed onto
        // an untaken event before the selection reads it: such a cursor is
        // locked, skipped and looked at again, never run.
        let mut lapsed = Vec::new();
        for pass in 0..4 {
            let candidates = match pick {
                Some(sql) if pass == 0 => {
                    let args = pick_args(&params, names.clone(), through.clone(), now, false);
                    tx.fetch(sql, args).await?
                }
                _ => {
                    let fetch = i64::try_from(limit + params.exclude.len()).unwrap_or(i64::MAX);
                    let args = vec![Arg::text(key), names.clone(), through.clone(), Arg::Int(now), Arg::Int(fetch)];
                    tx.fetch(self.sql().claim_candidates, args).await?
                }
            };
            let (mut changed, mut untaken) = (Vec::new(), Vec::new());
            let picked = pick.is_some() && pass == 0;
            for row in &candidates {
                if picked {
                    claimed.session_head = row.u64("session_head")?;
                }
                if picked && row.bool("fresh")? {
                    claimed.heads.push(crate::rows::leased_head(row, key, now + params.ttl_ms)?);
                    continue;
                }
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
                let lapse = Attempt::lapsed(&head_ref, &state, now);
                if claim_head(&mut state, head_ref.clone(), event, &params, now, &mut claimed) {
                    lapsed.extend(lapse);
                    changed.push((head_ref, state));
                }
            }
            self.put_states(tx.as_mut(), key, &changed).await?;
            if untaken.is_empty() || claimed.heads.len() >= limit {
                break;
            }
            // The cursor may stand past the head read above: skip up to the head now.
            let head_now = self.session_row(tx.as_mut(), key).await?.map_or(claimed.session_head, |(h, _)| h);
            for consumer in params.consumers.iter().filter(|c| untaken.contains(&c.name)) {
                self.skip_untaken(tx.as_mut(), key, head_now, consumer, now).await?;
            }
        }
        // What to wait for matters only to a claim that found nothing to run
        // (a drain that took heads claims again after them): one read fewer a claim.
        if claimed.heads.is_empty() {
            let head = match bounds {
                Some(head) => head,
                None => match self.session_row(tx.as_mut(), key).await? {
                    Some((head, _)) => head,
                    None => return Ok(Claimed::default()),
                },
            };
            claimed.session_head = head;
            let waits_args = vec![Arg::text(key), names, through, Arg::Int(now), Arg::Int(to_i64(head))];
            let waits = tx.fetch_one(self.sql().claim_waits, waits_args).await?;
            claimed.busy_until = waits.opt_int("busy_until")?;
            claimed.retry_at = waits.opt_int("retry_at")?;
        }
        self.attempts_put(tx.as_mut(), key, &lapsed).await?;
        // A lapse is dated at its lease's expiry, maybe long ago, and may have made a dead letter: the
        // session is stamped now, so the next totals refresh sees it.
        if !lapsed.is_empty() {
            tx.execute(self.sql().session_touch, vec![Arg::Int(now), Arg::text(key)]).await?;
        }
        tx.commit().await?;
        Ok(claimed)
    }
    /// One append, in its own transaction (or the backend's faster path).
    pub(crate) async fn append_single(&self, params: EventAppend) -> Result<Appended, StoreError> {
        if let Some(appended) = self.backend.event_append_native(&params).await? {
            self.backend.announce(&params.session);
            return Ok(appended);
        }
        let mut tx = self.backend.begin().await?;
        let appended = self
            .append_in_tx(
                tx.as_mut(),
                &params.session,
                params.events,
                &params.consumers,
                params.origin_index,
                self.now(),
            )
            .await?;
        tx.commit().await?;
        if !appended.duplicate {
            self.backend.announce(&params.session);
        }
        Ok(appended)
    }
}

#[async_trait::async_trait]
impl<B: SqlBackend> Store for SqlStore<B> {
    fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }
    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        self.backend.changes()
    }
    async fn event_append(&self, params: EventAppend) -> Result<Appended, StoreError> {
        check_session_key(&params.session)?;
        check_batch(&params.session, &params.events)?;
        if params.events.is_empty() {
            let mut conn = self.backend.work().await?;
            let head = self.session_row(conn.as_mut(), &params.session).await?.map_or(0, |(h, _)| h);
            return Ok(Appended { head, events: Vec::new(), duplicate: false });
        }
        // A run's append is checked against the clear boundary in its own transaction.
        let guarded = params.origin_index.is_some();
        match &self.append_batcher {
            Some(append_batcher) if !guarded => append_batcher
                .submit(params)
                .await
                .unwrap_or_else(|| Err(StoreError::unavailable("the store's append queue stopped"))),
            _ => self.append_single(params).await,
        }
    }
    async fn head_claim(&self, params: HeadClaim) -> Result<Claimed, StoreError> {
        if params.range <= 1 {
            return self.claim_heads(params).await;
        }
        let mut claimed = self.claim_heads(params.clone()).await?;
        a2_store::range::read_ranges(self, &params, &mut claimed).await?;
        Ok(claimed)
    }
    async fn head_renew(&self, params: HeadRenew) -> Result<Renewed, StoreError> {
        let expires = self.now() + params.ttl_ms;
        let leading = [Arg::text(&params.session), Arg::text(&params.holder), Arg::Int(expires)];
        let rows: Vec<Vec<Arg>> = params.heads.iter().map(held_head_args).collect();
        let mut tx = self.backend.begin().await?;
        let kept = run_each(tx.as_mut(), &self.sql().heads_renew, &leading, &rows).await?;
        tx.commit().await?;
        let kept = kept.iter().map(head_ref).collect::<Result<Vec<_>, _>>()?;
        let (renewed, superseded) = params.heads.into_iter().map(|h| h.head).partition(|h| kept.contains(h));
        Ok(Renewed { renewed, superseded, lease_expires_at: expires })
    }
    async fn head_complete(&self, params: HeadComplete) -> Result<CompleteOutcome, StoreError> {
        let key = params.session.as_str();
        let now = self.now();
        if !params.events.is_empty() {
            check_batch(key, &params.events)?;
            if let Some(outcome) = self.backend.head_complete_native(&params, now).await? {
                if matches!(&outcome, CompleteOutcome::Completed { appended, .. } if !appended.is_empty()) {
                    self.backend.announce(key);
                }
                return Ok(outcome);
            }
        }
        let mut tx = self.backend.begin().await?;
        let locked = self.lock_head(tx.as_mut(), key, &params.head).await?;
        let ours =
            |state: &a2_store::rules::HeadState| params.holder.is_none() || state.status.lease_holder == params.holder;
        let Some((kind, state)) = locked.filter(|(_, state)| state.status.is_current(params.attempt) && ours(state))
        else {
            let late = Attempt::superseded(&params.head, params.attempt, now);
            self.attempts_put(tx.as_mut(), key, &[late]).await?;
            tx.commit().await?;
            return Ok(CompleteOutcome::Superseded);
        };
        let mut attempt = Attempt::ended(&params.head, &state, params.attempt, now, AttemptOutcome::Completed);
        let Appended { head: session_head, events: appended, duplicate } =
            self.append_in_tx(tx.as_mut(), key, params.events, &params.consumers, None, now).await?;
        attempt.appended = appended.iter().map(|e| e.id.clone()).collect();
        self.attempts_put(tx.as_mut(), key, &[attempt]).await?;
        // No touch of the session row: completions of one session's heads must not queue on it.
        self.settle(tx.as_mut(), key, &params.head, kind).await?;
        // The range was read up to the head before this completion's own events.
        let head_before = if duplicate { session_head } else { session_head - appended.len() as u64 };
        let holds_next = match (&params.holder, params.lease_next && kind == 0) {
            (Some(holder), true) => {
                self.lease_next(tx.as_mut(), key, &params.head, &state, holder, head_before).await?
            }
            _ => false,
        };
        tx.commit().await?;
        let appended = if duplicate { Vec::new() } else { appended };
        if !appended.is_empty() {
            self.backend.announce(key);
        }
        Ok(CompleteOutcome::Completed { session_head, appended, holds_next })
    }
    /// Cursors move on and per-event heads go, each fenced by its attempt, with its attempt recorded.
    async fn head_complete_many(&self, params: HeadCompleteMany) -> Result<Vec<HeadRef>, StoreError> {
        if params.heads.is_empty() {
            return Ok(Vec::new());
        }
        match &self.completion_batcher {
            Some(completion_batcher) => completion_batcher
                .submit(params)
                .await
                .unwrap_or_else(|| Err(StoreError::unavailable("the store's completion queue stopped"))),
            None => {
                Ok(self.complete_batch(std::slice::from_ref(&params)).await?.into_iter().next().unwrap_or_default())
            }
        }
    }
    async fn head_fail(&self, params: HeadFail) -> Result<FailOutcome, StoreError> {
        let key = params.session.as_str();
        let now = self.now();
        let mut tx = self.backend.begin().await?;
        let locked = self.lock_head(tx.as_mut(), key, &params.head).await?;
        let ran = if params.aborted { AttemptOutcome::Aborted } else { AttemptOutcome::Failed };
        let Some((_, mut state)) = locked.filter(|(_, state)| state.status.is_current(params.attempt)) else {
            let mut late = Attempt::superseded(&params.head, params.attempt, now);
            late.error = Some(params.error);
            self.attempts_put(tx.as_mut(), key, &[late]).await?;
            tx.commit().await?;
            return Ok(FailOutcome::Superseded);
        };
        let mut attempt = Attempt::ended(&params.head, &state, params.attempt, now, ran);
        attempt.error = Some(params.error.clone());
        let outcome = state.fail(now, params.error, params.max_failures, params.backoff);
        self.attempts_put(tx.as_mut(), key, &[attempt]).await?;
        self.put_states(tx.as_mut(), key, &[(params.head, state)]).await?;
        tx.commit().await?;
        Ok(outcome)
    }
    async fn dead_letter_redrive(&self, params: DeadLetterRedrive) -> Result<bool, StoreError> {
        let mut tx = self.backend.begin().await?;
        let redriven = self.redrive_in(tx.as_mut(), &params).await?;
        self.audit_in(tx.as_mut(), params.audit, serde_json::json!({ "redriven": redriven })).await?;
        tx.commit().await?;
        Ok(redriven)
    }
    async fn cursor_wake(&self, params: CursorWake) -> Result<CursorState, StoreError> {
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
        Ok(CursorState { paused: row.bool("paused")?, ..cursor_state(head, row.u64("idx")?, head_state(&row)?) })
    }
    async fn session_import(&self, params: SessionImport) -> Result<(), StoreError> {
        check_session_key(&params.session)?;
        rules::check_import(&params)?;
        let key = params.session.as_str();
        let mut tx = self.backend.begin().await?;
        if self.session_row(tx.as_mut(), key).await?.is_some() {
            return Err(rules::import_exists(key));
        }
        let bounds = [params.head, params.clear_index].map(|n| Arg::Int(to_i64(n)));
        let times = [Arg::Int(params.created_at), Arg::Int(params.updated_at)];
        let args = std::iter::once(Arg::text(key)).chain(bounds).chain(times).collect();
        tx.execute(self.sql().session_import, args).await?;
        let events = params.events.iter().map(imported_event_row).collect::<Result<Vec<_>, _>>()?;
        run_each(tx.as_mut(), &self.sql().events_import, &[Arg::text(key)], &events).await?;
        let heads: Vec<Vec<Arg>> = params.heads.iter().map(imported_head_row).collect();
        run_each(tx.as_mut(), &self.sql().heads_import, &[Arg::text(key)], &heads).await?;
        if !heads.is_empty() {
            // The imported heads keep their source's stamps, older than any refresh: recount the contract.
            let contract = split_session_key(key).0;
            tx.execute(self.sql().totals.mark_forget, vec![Arg::text(contract)]).await?;
        }
        for snapshot in &params.snapshots {
            let pins = serde_json::to_value(&snapshot.pins).map_err(|e| StoreError::invalid(format!("pins: {e}")))?;
            let args = vec![
                Arg::text(key),
                Arg::text(&snapshot.reducer),
                Arg::Int(to_i64(snapshot.index)),
                Arg::Json(snapshot.state.clone()),
                Arg::Json(pins),
                Arg::Int(snapshot.created_at),
            ];
            tx.execute(self.sql().snapshot_import, args).await?;
        }
        self.audit_in(tx.as_mut(), params.audit, serde_json::json!({ "imported": true })).await?;
        tx.commit().await?;
        Ok(())
    }
    async fn cursor_advance(&self, params: CursorAdvance) -> Result<CursorAdvanced, StoreError> {
        check_session_key(&params.session)?;
        let key = params.session.as_str();
        if params.consumer.log.is_none() {
            return Err(StoreError::invalid(format!(
                "consumer '{}' has no string lane, so it has no cursor",
                params.consumer.name
            )));
        }
        let mut tx = self.backend.begin().await?;
        let Some((head, clear)) = self.session_row(tx.as_mut(), key).await? else {
            return Err(StoreError::NotFound { what: format!("session '{}'", split_session_key(key).1) });
        };
        self.ensure_cursors(tx.as_mut(), key, (head, clear), std::slice::from_ref(&params.consumer)).await?;
        let args = vec![Arg::text(key), Arg::text(&params.consumer.name)];
        let cursor = tx.fetch_one(self.sql().cursor_lock, args).await?;
        let through = params.through.unwrap_or(head).min(head);
        let now = self.now();
        let advanced = rules::cursor_advance(cursor.u64("idx")?, &head_state(&cursor)?.status, through, now);
        if let CursorAdvanced::Moved { from, next } = advanced {
            if next > from {
                let args = vec![Arg::text(key), Arg::text(&params.consumer.name), Arg::Int(to_i64(next))];
                tx.execute(self.sql().cursor_move, args).await?;
                tx.execute(self.sql().session_touch, vec![Arg::Int(now), Arg::text(key)]).await?;
            }
        }
        self.audit_in(tx.as_mut(), params.audit, serde_json::json!(advanced)).await?;
        tx.commit().await?;
        Ok(advanced)
    }
    async fn consumer_pause(&self, params: ConsumerPause) -> Result<PausedConsumer, StoreError> {
        let mut tx = self.backend.begin().await?;
        let (contract, consumer) = (Arg::text(&params.contract), Arg::text(&params.consumer));
        let args = vec![contract.clone(), consumer.clone(), Arg::text(&params.actor), Arg::text(&params.reason)];
        tx.execute(self.sql().pause_put, args.into_iter().chain([Arg::Int(self.now())]).collect()).await?;
        let kept = paused_consumer(&tx.fetch_one(self.sql().pause_get, vec![contract, consumer]).await?)?;
        self.audit_in(tx.as_mut(), params.audit, serde_json::json!(kept)).await?;
        tx.commit().await?;
        Ok(kept)
    }
    async fn consumer_resume(&self, params: ConsumerResume) -> Result<bool, StoreError> {
        let mut tx = self.backend.begin().await?;
        let args = vec![Arg::text(&params.contract), Arg::text(&params.consumer)];
        let resumed = tx.fetch_optional(self.sql().pause_delete, args).await?.is_some();
        self.audit_in(tx.as_mut(), params.audit, serde_json::json!({ "resumed": resumed })).await?;
        tx.commit().await?;
        Ok(resumed)
    }
    async fn consumer_pause_list(&self, contract: Option<&str>) -> Result<Vec<PausedConsumer>, StoreError> {
        let mut conn = self.backend.read().await?;
        let rows = conn.fetch(self.sql().pauses_list, vec![Arg::opt_text(contract)]).await?;
        rows.iter().map(paused_consumer).collect()
    }
    async fn session_bounds(&self, session: &SessionKey) -> Result<SessionBounds, StoreError> {
        let mut conn = self.backend.work().await?;
        let bounds = self.session_row(conn.as_mut(), session).await?;
        Ok(bounds.map_or_else(SessionBounds::default, |(head, clear_index)| SessionBounds { head, clear_index }))
    }
    async fn session_clear(&self, params: SessionClear) -> Result<Cleared, StoreError> {
        check_session_key(&params.session)?;
        let mut tx = self.backend.begin().await?;
        if let Some(held) = &params.settles {
            let args = vec![Arg::text(&held.id), Arg::text(&held.holder)];
            if tx.fetch_optional(self.sql().task_delete_held, args).await?.is_none() {
                // Another delivery holds (or settled) the task: it clears, not this one. Dropping `tx` rolls back.
                let head = self.session_row(tx.as_mut(), &params.session).await?.map_or(0, |(head, _)| head);
                return Ok(Cleared { cleared: false, index: head });
            }
        }
        let cleared = self.clear_in(tx.as_mut(), &params).await?;
        self.audit_in(tx.as_mut(), params.audit, serde_json::json!(cleared)).await?;
        tx.commit().await?;
        Ok(cleared)
    }
    async fn snapshot_put(&self, params: SnapshotPut) -> Result<(), StoreError> {
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
                live |= tx.fetch_one(self.sql().pin_live, session_head_args(key, pin)).await?.bool("live")?;
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
    async fn snapshot_get(&self, params: SnapshotGet) -> Result<Option<Snapshot>, StoreError> {
        let args = vec![Arg::Text(params.session.into()), Arg::Text(params.reducer), Arg::Int(to_i64(params.at_most))];
        let row = self.backend.read().await?.fetch_optional(self.sql().snapshot_get, args).await?;
        row.map(|r| {
            Ok(Snapshot {
                reducer: r.text("reducer")?,
                index: r.u64("idx")?,
                state: r.json("state")?,
                pins: r.json("pins")?,
                created_at: r.int("created_at")?,
            })
        })
        .transpose()
    }
    async fn session_list_runnable(&self, params: SessionsRunnable) -> Result<RunnablePage, StoreError> {
        let (lo, hi) = codec::prefix_range(&session_key(&params.contract, ""));
        let after = params.after.map(|a| session_key(&params.contract, &a)).unwrap_or_default();
        let args = vec![
            Arg::Text(lo),
            Arg::Text(hi),
            Arg::Text(after.into()),
            Arg::Texts(params.consumers),
            Arg::Int(self.now()),
            Arg::Int(i64::from(params.limit.clamp(1, MAX_PAGE))),
        ];
        // The engine's own connections: the rescuer works, it does not inspect.
        let mut conn = self.backend.work().await?;
        let rows = conn.fetch(self.sql().runnable_sessions, args).await?;
        let scanned = rows
            .iter()
            .map(|r| Ok((SessionKey::from_stored(r.text("session")?), r.bool("runnable")?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(RunnablePage::from_scan(scanned, params.limit))
    }
    async fn event_list(&self, params: EventList) -> Result<Vec<Event>, StoreError> {
        let sql = if params.newest_first { self.sql().events_newest_first } else { self.sql().events_oldest_first };
        let args = vec![
            Arg::text(&params.session),
            Arg::Int(to_i64(params.after.unwrap_or(0))),
            Arg::Int(params.before.map_or(i64::MAX, to_i64)),
            page(params.limit),
        ];
        let rows = self.backend.read().await?.fetch(sql, args).await?;
        rows.iter().map(|r| event(r, &params.session, "")).collect()
    }
    async fn session_search(&self, params: SessionSearch) -> Result<SessionSearchPage, StoreError> {
        self.search_sessions(params).await
    }
    async fn session_count(&self, contract: &str) -> Result<u64, StoreError> {
        let (lo, hi) = codec::prefix_range(&session_key(contract, ""));
        let row =
            self.backend.read().await?.fetch_one(self.sql().session_count, vec![Arg::Text(lo), Arg::Text(hi)]).await?;
        row.u64("n")
    }
    async fn event_filter(&self, params: EventFilter) -> Result<EventFilterPage, StoreError> {
        self.filter_events(params).await
    }
    async fn contract_list(&self) -> Result<Vec<String>, StoreError> {
        // A loose index scan: one seek per contract, not a scan of every session.
        let rows = self.backend.read().await?.fetch(self.sql().contracts, Vec::new()).await?;
        rows.iter().map(|r| r.text("contract")).collect()
    }
    async fn session_list(&self, params: SessionList) -> Result<Vec<SessionSummary>, StoreError> {
        let prefix = session_key(&params.contract, params.id_prefix.as_deref().unwrap_or(""));
        let (lo, hi) = codec::prefix_range(&prefix);
        let after = params.after.map(|a| session_key(&params.contract, &a)).unwrap_or_default();
        let args = vec![Arg::Text(lo), Arg::Text(hi), Arg::Text(after.into()), page(params.limit)];
        let rows = self.backend.read().await?.fetch(self.sql().session_page, args).await?;
        rows.iter().map(summary).collect()
    }
    async fn session_list_by_activity(&self, params: SessionsByActivity) -> Result<Vec<SessionSummary>, StoreError> {
        // The first page starts above every real key: a keyset, never an OR the planner cannot seek on.
        let (at, after) = params.before.map_or((i64::MAX, "\u{10FFFF}".to_owned()), |(at, id)| {
            (at, session_key(&params.contract, &id).into_string())
        });
        let args = vec![Arg::text(&params.contract), Arg::Int(at), Arg::Text(after), page(params.limit)];
        let rows = self.backend.read().await?.fetch(self.sql().sessions_by_activity, args).await?;
        rows.iter().map(summary).collect()
    }
    async fn session_get(&self, session: &SessionKey) -> Result<Option<SessionSummary>, StoreError> {
        let row = self.backend.read().await?.fetch_optional(self.sql().session_get, vec![Arg::text(session)]).await?;
        row.as_ref().map(summary).transpose()
    }
    async fn head_list(&self, session: &SessionKey) -> Result<Vec<HeadInfo>, StoreError> {
        self.heads_on(self.backend.read().await?.as_mut(), session).await
    }
    async fn head_scan(&self, params: HeadScan) -> Result<Vec<HeadInfo>, StoreError> {
        let limit = page_size(params.limit);
        let from = params.after.as_ref().map(|a| a.session.clone()).unwrap_or_default();
        let args = vec![
            Arg::Text(from.into()),
            Arg::OptText(params.consumer.clone()),
            Arg::Int(i64::try_from(limit + 1).unwrap_or(i64::MAX)),
        ];
        let mut conn = self.backend.read().await?;
        let sessions = conn.fetch(self.sql().sessions_with_heads, args).await?;
        let mut found = Vec::new();
        for row in sessions {
            let session = SessionKey::from_stored(row.text("session")?);
            let infos = self.heads_on(conn.as_mut(), &session).await?;
            found.extend(a2_store::rules::scan_heads([(session, infos)], &params, limit - found.len()));
            if found.len() == limit {
                break;
            }
        }
        Ok(found)
    }
    async fn dead_letter_list(&self, params: DeadLetterList) -> Result<Vec<DeadLetter>, StoreError> {
        let (lo, hi) = contract_range(params.contract.as_deref());
        let after = params.after.unwrap_or(HeadKey {
            session: SessionKey::default(),
            consumer: String::new(),
            lane: None,
            index: 0,
        });
        let args = vec![
            Arg::Text(lo),
            Arg::Text(hi),
            Arg::OptText(params.session.map(String::from)),
            Arg::OptText(params.consumer),
            Arg::Text(after.session.into()),
            Arg::Text(after.consumer),
            Arg::text(codec::lane_column(after.lane.as_deref())),
            Arg::Int(to_i64(after.index)),
            page(params.limit),
            Arg::OptText(params.cause),
        ];
        let rows = self.backend.read().await?.fetch(self.sql().dead_letters, args).await?;
        rows.iter().map(dead_letter).collect()
    }
    /// A chunk of sessions a statement (by key range), summed: every chunk
    /// stays inside the reader's statement timeout however large the store.
    async fn consumer_totals(&self, contract: Option<&str>) -> Result<Vec<ConsumerTotal>, StoreError> {
        let (mut lo, hi) = contract_range(contract);
        let mut conn = self.backend.read().await?;
        let mut summed: std::collections::BTreeMap<(String, String), ConsumerTotal> = Default::default();
        loop {
            let nth = vec![Arg::Text(lo.clone()), Arg::Text(hi.clone()), Arg::Int(i64::from(self.totals_chunk))];
            let end = conn.fetch_optional(self.sql().session_nth, nth).await?.map(|r| r.text("session")).transpose()?;
            let range = vec![Arg::Text(lo), Arg::text(end.as_deref().unwrap_or(&hi))];
            for row in &conn.fetch(self.sql().consumer_totals, range).await? {
                let total = crate::rows::consumer_total(row, "lagging")?;
                summed
                    .entry((total.contract.clone(), total.consumer.clone()))
                    .and_modify(|sum| {
                        sum.sessions += total.sessions;
                        sum.lagging_sessions += total.lagging_sessions;
                        sum.total_lag += total.total_lag;
                        sum.dead_letters += total.dead_letters;
                    })
                    .or_insert(total);
            }
            match end {
                Some(end) => lo = end,
                None => return Ok(summed.into_values().collect()),
            }
        }
    }
    async fn consumer_totals_refresh(&self, params: TotalsRefresh) -> Result<TotalsRefreshed, StoreError> {
        crate::totals::refresh(self, params).await
    }
    async fn consumer_totals_snapshot(&self, contract: Option<&str>) -> Result<Option<TotalsSnapshot>, StoreError> {
        let rows = self.backend.read().await?.fetch(self.sql().kept_totals, vec![Arg::opt_text(contract)]).await?;
        let mut computed_at: Option<Millis> = None;
        let mut totals = Vec::with_capacity(rows.len());
        for row in &rows {
            let at = row.int("computed_at")?;
            computed_at = Some(computed_at.map_or(at, |c| c.min(at)));
            totals.push(crate::rows::consumer_total(row, "lagging_sessions")?);
        }
        Ok(computed_at.map(|computed_at| TotalsSnapshot {
            computed_at,
            totals,
            catalog: Vec::new(),
            origin: TotalsOrigin::Kept,
            refreshed_by: Vec::new(),
        }))
    }
    async fn snapshot_list(&self, session: &SessionKey) -> Result<Vec<SnapshotInfo>, StoreError> {
        let rows = self.backend.read().await?.fetch(self.sql().snapshots_of_session, vec![Arg::text(session)]).await?;
        rows.iter().map(snapshot_info).collect()
    }
    async fn attempt_list(&self, params: AttemptList) -> Result<Vec<Attempt>, StoreError> {
        let sql = if params.oldest_first { self.sql().attempts_oldest_first } else { self.sql().attempts_newest_first };
        // The first page starts beyond every real position, in the list's direction.
        let (consumer, lane, index, attempt) = match params.after {
            Some(after) => {
                let lane = codec::lane_column(after.lane.as_deref()).to_owned();
                (after.consumer, lane, to_i64(after.index), i64::from(after.attempt))
            }
            None if params.oldest_first => (String::new(), String::new(), -1, -1),
            None => ("\u{10FFFF}".to_owned(), String::new(), 0, 0),
        };
        let args = vec![
            Arg::text(&params.session),
            Arg::OptText(params.consumer),
            Arg::OptInt(params.index.map(to_i64)),
            Arg::Text(consumer),
            Arg::Text(lane),
            Arg::Int(index),
            Arg::Int(attempt),
            page(params.limit),
        ];
        let rows = self.backend.read().await?.fetch(sql, args).await?;
        rows.iter().map(crate::rows::attempt).collect()
    }
    async fn attempt_prune(&self, params: AttemptPrune) -> Result<AttemptPruned, StoreError> {
        let (lo, hi) = codec::prefix_range(&session_key(&params.contract, ""));
        let after = params.after.map(|a| session_key(&params.contract, &a)).unwrap_or_default();
        let scan = params.sessions.clamp(1, MAX_PAGE);
        let args = vec![Arg::Text(lo), Arg::Text(hi), Arg::Text(after.into()), Arg::Int(i64::from(scan))];
        let mut tx = self.backend.begin().await?;
        let keys = tx.fetch(self.sql().search_sessions, args).await?;
        let keys = keys.iter().map(|r| r.text("session")).collect::<Result<Vec<_>, _>>()?;
        let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
            return Ok(AttemptPruned::default());
        };
        let args = vec![Arg::text(first), Arg::text(last), Arg::Int(i64::from(params.keep.max(1)))];
        let pruned = tx.execute(self.sql().attempts_prune, args).await?;
        tx.commit().await?;
        let next = (keys.len() >= scan as usize).then(|| split_session_key(last).1.to_owned());
        Ok(AttemptPruned { pruned, next })
    }
    async fn attempt_rates(&self, params: AttemptRates) -> Result<Vec<AttemptRate>, StoreError> {
        if params.kept {
            if params.bucket_ms != crate::rates::MINUTE_MS {
                return Err(StoreError::invalid("kept attempt rates are by the minute (bucket_ms 60000)"));
            }
            return crate::rates::kept(self, &params).await;
        }
        let (lo, hi) = contract_range(params.contract.as_deref());
        let args = vec![Arg::Text(lo), Arg::Text(hi), Arg::Int(params.since), Arg::Int(params.bucket_ms.max(1))];
        let rows = self.backend.read().await?.fetch(self.sql().attempt_rates, args).await?;
        rows.iter().map(crate::rows::attempt_rate).collect()
    }
    async fn dead_letter_groups(&self, params: DeadLetterGroups) -> Result<Vec<DeadLetterGroup>, StoreError> {
        let (lo, hi) = contract_range(params.contract.as_deref());
        let scan = params.scan_limit();
        let args = vec![Arg::Text(lo), Arg::Text(hi), Arg::Int(i64::from(scan))];
        let rows = self.backend.read().await?.fetch(self.sql().dead_letter_groups, args).await?;
        let groups = rows.iter().map(dead_letter_group).collect::<Result<Vec<_>, _>>()?;
        Ok(mark_partial(groups, scan))
    }
    async fn audit_append(&self, entry: AuditEntry) -> Result<u64, StoreError> {
        let mut tx = self.backend.begin().await?;
        let id = self.audit_insert(tx.as_mut(), &entry).await?;
        tx.commit().await?;
        Ok(id)
    }
    async fn audit_list(&self, params: AuditList) -> Result<Vec<AuditRecord>, StoreError> {
        let before = Arg::Int(params.before.map_or(i64::MAX, to_i64));
        let args = vec![before, page(params.limit), Arg::OptText(params.action)];
        let rows = self.backend.read().await?.fetch(self.sql().audit_list, args).await?;
        rows.iter().map(crate::rows::audit_record).collect()
    }
    async fn task_schedule(&self, params: TaskSchedule) -> Result<bool, StoreError> {
        crate::tasks::schedule(self, params).await
    }
    async fn task_claim(&self, params: TaskClaim) -> Result<Vec<ScheduledTask>, StoreError> {
        crate::tasks::claim(self, params).await
    }
    async fn task_finish(&self, params: TaskFinish) -> Result<bool, StoreError> {
        crate::tasks::finish(self, params).await
    }
    async fn task_list(&self, params: TaskList) -> Result<Vec<ScheduledTask>, StoreError> {
        crate::tasks::list(self, params).await
    }
    async fn task_cancel(&self, params: TaskChange) -> Result<Option<ScheduledTask>, StoreError> {
        crate::tasks::change(self, params, false).await
    }
    async fn task_hasten(&self, params: TaskChange) -> Result<Option<ScheduledTask>, StoreError> {
        crate::tasks::change(self, params, true).await
    }
    async fn presence_set(&self, params: PresenceSet) -> Result<Vec<String>, StoreError> {
        crate::presence::set(self, params).await
    }
    async fn presence_read(&self, session: &SessionKey) -> Result<Vec<PresenceCell>, StoreError> {
        crate::presence::read(self, session).await
    }
    async fn presence_prune(&self, params: PresencePrune) -> Result<u64, StoreError> {
        crate::presence::prune(self, params).await
    }
    async fn presence_sessions(&self) -> Result<Vec<(String, u64)>, StoreError> {
        crate::presence::sessions(self).await
    }
    async fn server_beat(&self, params: ServerBeat) -> Result<(), StoreError> {
        crate::servers::beat(self, params).await
    }
    async fn server_remove(&self, id: &str) -> Result<bool, StoreError> {
        crate::servers::remove(self, id).await
    }
    async fn server_list(&self, params: ServerList) -> Result<Vec<ServerRecord>, StoreError> {
        crate::servers::list(self, params).await
    }
    async fn head_list_leased(&self, params: HeadsLeased) -> Result<Vec<LeasedHead>, StoreError> {
        crate::servers::leased(self, params).await
    }
    async fn upkeep_lease(&self, params: UpkeepLease) -> Result<Option<u64>, StoreError> {
        crate::upkeep::lease(self, params).await
    }
    async fn upkeep_release(&self, params: UpkeepRelease) -> Result<bool, StoreError> {
        crate::upkeep::release(self, params).await
    }
    async fn upkeep_leaders(&self) -> Result<Vec<UpkeepLeader>, StoreError> {
        crate::upkeep::leaders(self).await
    }
}

fn imported_event_row(event: &Event) -> Result<Vec<Arg>, StoreError> {
    let cause = CauseColumn::json(event.cause.as_ref(), event.scheduled_by.as_ref())?;
    Ok(vec![
        Arg::Int(to_i64(event.index)),
        Arg::text(&event.id),
        Arg::text(&event.event_type),
        Arg::Json(event.payload.clone()),
        Arg::Int(event.created_at),
        Arg::OptJson(cause),
    ])
}

fn imported_head_row(head: &ImportedHead) -> Vec<Arg> {
    vec![
        Arg::text(&head.consumer),
        Arg::text(a2_store::codec::lane_column(head.lane.as_deref())),
        Arg::Int(to_i64(head.index)),
        Arg::Int(i64::from(a2_store::codec::kind_code(head.kind))),
        Arg::Int(i64::from(head.attempt_count)),
        Arg::Int(i64::from(head.failure_count)),
        Arg::OptText(head.last_error.clone()),
        Arg::OptInt(head.failed_at),
        Arg::OptInt(head.next_attempt_at),
    ]
}
