//! The in-memory backend: one mutex over every session, so each call is
//! atomic the way a SQL transaction is. For tests and the `memory:` demo.

mod attempts;
mod presence;
mod servers;
mod session;
mod tasks;
mod upkeep;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use session::{HeadSlot, SessionRow};

use crate::rules::HeadState;

use crate::attempts::*;
use crate::presence::{PresenceCell, PresencePrune, PresenceSet};
use crate::search::*;
use crate::store::page_size;
use crate::tasks::*;
use crate::types::*;
use crate::upkeep::{TotalsRefresh, TotalsRefreshed};
use crate::{Clock, Store, StoreError, SystemClock};

#[derive(Debug)]
pub struct MemoryStore {
    clock: Arc<dyn Clock>,
    sessions: Mutex<BTreeMap<SessionKey, SessionRow>>,
    audit: Mutex<Vec<AuditRecord>>,
    /// Kept totals by contract, each with when it was computed.
    totals: Mutex<BTreeMap<String, (Millis, Vec<ConsumerTotal>)>>,
    /// Paused consumers by (contract, consumer).
    pauses: Mutex<BTreeMap<(String, String), PausedConsumer>>,
    tasks: Mutex<tasks::Tasks>,
    presence: Mutex<presence::Presence>,
    servers: Mutex<servers::Servers>,
    upkeep: Mutex<upkeep::Upkeep>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new(Arc::new(SystemClock))
    }
}

impl MemoryStore {
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            sessions: Mutex::new(BTreeMap::new()),
            audit: Mutex::new(Vec::new()),
            totals: Mutex::new(BTreeMap::new()),
            pauses: Mutex::new(BTreeMap::new()),
            tasks: Mutex::new(tasks::Tasks::default()),
            presence: Mutex::new(presence::Presence::default()),
            servers: Mutex::new(servers::Servers::default()),
            upkeep: Mutex::new(upkeep::Upkeep::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<SessionKey, SessionRow>> {
        // A panic while holding the lock cannot leave a half-applied call:
        // every transition validates before it mutates.
        self.sessions.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn now(&self) -> Millis {
        self.clock.now_ms()
    }

    fn tasks(&self) -> MutexGuard<'_, tasks::Tasks> {
        self.tasks.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn servers(&self) -> MutexGuard<'_, servers::Servers> {
        self.servers.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn upkeep(&self) -> MutexGuard<'_, upkeep::Upkeep> {
        self.upkeep.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn presence(&self) -> MutexGuard<'_, presence::Presence> {
        self.presence.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn pauses(&self) -> MutexGuard<'_, BTreeMap<(String, String), PausedConsumer>> {
        self.pauses.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn is_paused(&self, contract: &str, consumer: &str) -> bool {
        self.pauses().contains_key(&(contract.to_owned(), consumer.to_owned()))
    }

    /// The claim without the consumers paused in its contract.
    fn unpaused(&self, mut claim: HeadClaim) -> HeadClaim {
        let contract = crate::split_session_key(&claim.session).0;
        let pauses = self.pauses();
        if pauses.keys().any(|(c, _)| c == contract) {
            claim.consumers.retain(|c| !pauses.contains_key(&(contract.to_owned(), c.name.clone())));
        }
        claim
    }

    fn advance(&self, params: &CursorAdvance) -> Result<CursorAdvanced, StoreError> {
        crate::check_session_key(&params.session)?;
        let now = self.now();
        let mut sessions = self.lock();
        let Some(row) = sessions.get_mut(&params.session) else {
            return Err(StoreError::NotFound {
                what: format!("session '{}'", crate::split_session_key(&params.session).1),
            });
        };
        row.ensure_cursors(std::slice::from_ref(&params.consumer));
        let head = row.head;
        let Some(cursor) = row.cursors.get_mut(&params.consumer.name) else {
            return Err(StoreError::invalid(format!(
                "consumer '{}' has no string lane, so it has no cursor",
                params.consumer.name
            )));
        };
        let through = params.through.unwrap_or(head).min(head);
        let advanced = crate::rules::cursor_advance(cursor.next, &cursor.state.status, through, now);
        if let CursorAdvanced::Moved { from, next } = advanced {
            if next > from {
                cursor.next = next;
                cursor.state = HeadState::default();
                row.updated_at = row.updated_at.max(now);
            }
        }
        Ok(advanced)
    }

    fn redrive(&self, params: DeadLetterRedrive) -> Result<bool, StoreError> {
        let now = self.now();
        let mut sessions = self.lock();
        let Some(row) = sessions.get_mut(&params.session) else {
            return Ok(false);
        };
        let dead = row.dead_letters().into_iter().find(|d| d.consumer == params.consumer && d.index == params.index);
        let Some(dead) = dead else { return Ok(false) };
        let head = HeadRef { consumer: dead.consumer, lane: dead.lane, index: dead.index };
        match params.action {
            RedriveAction::Skip => row.settle(&head),
            RedriveAction::Retry => {
                if let Some(slot) = row.slot(&head) {
                    slot_state(slot).retry();
                }
            }
        }
        row.updated_at = now;
        Ok(true)
    }

    fn clear(&self, params: SessionClear) -> Result<Cleared, StoreError> {
        crate::check_session_key(&params.session)?;
        let now = self.now();
        let mut sessions = self.lock();
        let Some(row) = sessions.get_mut(&params.session) else {
            let cleared = params.if_last_index.is_none_or(|i| i == 0);
            return Ok(Cleared { cleared, index: 0 });
        };
        let cleared = row.clear(params.if_last_index, now);
        if cleared.cleared {
            row.updated_at = now;
        }
        Ok(cleared)
    }

    /// Record an action's audit entry, if it has one, with its outcome.
    fn record_outcome(&self, audit: Option<AuditEntry>, outcome: serde_json::Value) {
        if let Some(mut entry) = audit {
            entry.outcome = outcome;
            self.record(entry);
        }
    }

    fn record(&self, entry: AuditEntry) -> u64 {
        let mut audit = self.audit.lock().unwrap_or_else(|p| p.into_inner());
        let id = audit.len() as u64 + 1;
        audit.push(AuditRecord { id, entry });
        id
    }
}

/// A contract's sessions in key order, after the session id `after` when given.
fn contract_sessions<'a>(
    sessions: &'a BTreeMap<SessionKey, SessionRow>,
    contract: &str,
    after: Option<&str>,
) -> impl Iterator<Item = (&'a SessionKey, &'a SessionRow)> + 'a {
    let prefix = crate::session_key(contract, "");
    let start = match after {
        Some(after) => std::ops::Bound::Excluded(crate::session_key(contract, after)),
        None => std::ops::Bound::Included(prefix.clone()),
    };
    sessions.range((start, std::ops::Bound::Unbounded)).take_while(move |(key, _)| key.starts_with(prefix.as_str()))
}

/// The cause a dead letter is grouped by.
fn letter_cause(letter: &DeadLetter) -> String {
    crate::error_cause(letter.last_error.as_deref().unwrap_or_default())
}

fn slot_state(slot: HeadSlot<'_>) -> &mut HeadState {
    match slot {
        HeadSlot::Cursor(cursor) => &mut cursor.state,
        HeadSlot::Target(state) => state,
    }
}

#[async_trait::async_trait]
impl Store for MemoryStore {
    fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    async fn event_append(&self, params: EventAppend) -> Result<Appended, StoreError> {
        crate::check_session_key(&params.session)?;
        let now = self.now();
        let mut sessions = self.lock();
        let mut row =
            sessions.get(&params.session).cloned().unwrap_or_else(|| SessionRow::new(params.session.clone(), now));
        crate::rules::check_origin(&params.session, params.origin_index, row.clear_index)?;
        let (events, duplicate) = row.append(params.events, &params.consumers, now)?;
        let head = row.head;
        if row.head > 0 {
            sessions.insert(params.session, row);
        }
        Ok(Appended { head, events, duplicate })
    }

    async fn head_claim(&self, params: HeadClaim) -> Result<Claimed, StoreError> {
        crate::check_session_key(&params.session)?;
        let now = self.now();
        let params = self.unpaused(params);
        let claimed = {
            let mut sessions = self.lock();
            sessions.get_mut(&params.session).map(|row| row.claim(&params, now))
        };
        let Some(mut claimed) = claimed else { return Ok(Claimed::default()) };
        crate::range::read_ranges(self, &params, &mut claimed).await?;
        Ok(claimed)
    }

    async fn head_renew(&self, params: HeadRenew) -> Result<Renewed, StoreError> {
        let now = self.now();
        let expires = now + params.ttl_ms;
        let mut sessions = self.lock();
        let mut renewed = Renewed { lease_expires_at: expires, ..Renewed::default() };
        let row = sessions.get_mut(&params.session);
        let Some(row) = row else {
            renewed.superseded = params.heads.into_iter().map(|h| h.head).collect();
            return Ok(renewed);
        };
        for held in params.heads {
            let owned = match row.fenced(&held.head, held.attempt) {
                Some(slot) => {
                    let state = slot_state(slot);
                    if state.status.lease_holder.as_deref() == Some(params.holder.as_str()) {
                        state.status.lease_expires_at = Some(expires);
                        true
                    } else {
                        false
                    }
                }
                None => false,
            };
            if owned {
                renewed.renewed.push(held.head);
            } else {
                renewed.superseded.push(held.head);
            }
        }
        Ok(renewed)
    }

    async fn head_complete(&self, params: HeadComplete) -> Result<CompleteOutcome, StoreError> {
        let now = self.now();
        let mut sessions = self.lock();
        let Some(row) = sessions.get_mut(&params.session) else {
            return Ok(CompleteOutcome::Superseded);
        };
        let held = row.fenced(&params.head, params.attempt).map(|slot| slot_state(slot).status.clone());
        let Some(held) = held.filter(|s| params.holder.is_none() || s.lease_holder == params.holder) else {
            row.record_attempt(Attempt::superseded(&params.head, params.attempt, now));
            return Ok(CompleteOutcome::Superseded);
        };
        let mut attempt = row.attempt_ended(&params.head, params.attempt, now, AttemptOutcome::Completed);
        // Append first: it refuses without mutating, so a refused batch leaves the head running.
        let session_head = row.head;
        let (appended, duplicate) = row.append(params.events, &params.consumers, now)?;
        attempt.appended = appended.iter().map(|e| e.id.clone()).collect();
        row.record_attempt(attempt);
        row.settle(&params.head);
        let next = HeadRef { index: params.head.index + 1, ..params.head.clone() };
        let mut holds_next = false;
        let paused = params.lease_next && self.is_paused(crate::split_session_key(&params.session).0, &next.consumer);
        // Only up to the head before this completion's own events: the range was read from those.
        if params.lease_next && !paused && next.index <= session_head {
            if let (Some(HeadSlot::Cursor(cursor)), Some(holder)) = (row.slot(&next), params.holder.as_ref()) {
                cursor.state.status.attempt_count = 1;
                cursor.state.status.lease_holder = Some(holder.clone());
                cursor.state.status.lease_expires_at = held.lease_expires_at;
                cursor.state.attempt_started_at = Some(now);
                holds_next = true;
            }
        }
        let appended = if duplicate { Vec::new() } else { appended };
        Ok(CompleteOutcome::Completed { session_head: row.head, appended, holds_next })
    }

    async fn head_complete_many(&self, params: HeadCompleteMany) -> Result<Vec<HeadRef>, StoreError> {
        let now = self.now();
        let mut sessions = self.lock();
        let Some(row) = sessions.get_mut(&params.session) else { return Ok(Vec::new()) };
        let mut settled = Vec::new();
        for held in params.heads {
            if row.fenced(&held.head, held.attempt).is_some() {
                let attempt = row.attempt_ended(&held.head, held.attempt, now, AttemptOutcome::Completed);
                row.record_attempt(attempt);
                row.settle(&held.head);
                settled.push(held.head);
            }
        }
        Ok(settled)
    }

    async fn head_fail(&self, params: HeadFail) -> Result<FailOutcome, StoreError> {
        let now = self.now();
        let mut sessions = self.lock();
        let Some(row) = sessions.get_mut(&params.session) else {
            return Ok(FailOutcome::Superseded);
        };
        let outcome = if params.aborted { AttemptOutcome::Aborted } else { AttemptOutcome::Failed };
        let mut attempt = row.attempt_ended(&params.head, params.attempt, now, outcome);
        attempt.error = Some(params.error.clone());
        let Some(slot) = row.fenced(&params.head, params.attempt) else {
            attempt.outcome = AttemptOutcome::Superseded;
            row.record_attempt(attempt);
            return Ok(FailOutcome::Superseded);
        };
        let failed = slot_state(slot).fail(now, params.error, params.max_failures, params.backoff);
        row.record_attempt(attempt);
        Ok(failed)
    }

    async fn dead_letter_redrive(&self, mut params: DeadLetterRedrive) -> Result<bool, StoreError> {
        let audit = params.audit.take();
        let redriven = self.redrive(params)?;
        self.record_outcome(audit, serde_json::json!({ "redriven": redriven }));
        Ok(redriven)
    }

    async fn session_clear(&self, mut params: SessionClear) -> Result<Cleared, StoreError> {
        crate::check_session_key(&params.session)?;
        let audit = params.audit.take();
        // Held through the clear: the task goes with it, or nothing is cleared.
        let mut tasks = self.tasks();
        if let Some(held) = &params.settles {
            if !tasks.settle(held) {
                let head = self.lock().get(&params.session).map_or(0, |row| row.head);
                return Ok(Cleared { cleared: false, index: head });
            }
        }
        let cleared = self.clear(params)?;
        drop(tasks);
        self.record_outcome(audit, serde_json::json!(cleared));
        Ok(cleared)
    }

    async fn cursor_wake(&self, params: CursorWake) -> Result<CursorState, StoreError> {
        crate::check_session_key(&params.session)?;
        if params.consumer.log.is_none() {
            return Err(StoreError::invalid(format!(
                "consumer '{}' has no string lane, so it has no cursor",
                params.consumer.name
            )));
        }
        let now = self.now();
        let mut sessions = self.lock();
        let Some(row) = sessions.get_mut(&params.session) else {
            return Ok(CursorState::default());
        };
        row.ensure_cursors(std::slice::from_ref(&params.consumer));
        row.skip_untaken(&params.consumer, now);
        let head = row.head;
        let Some(cursor) = row.cursors.get(&params.consumer.name) else {
            return Ok(CursorState { session_head: head, ..CursorState::default() });
        };
        let paused = self.is_paused(crate::split_session_key(&params.session).0, &params.consumer.name);
        Ok(CursorState { paused, ..crate::rules::cursor_state(head, cursor.next, cursor.state.clone()) })
    }

    async fn session_import(&self, mut params: SessionImport) -> Result<(), StoreError> {
        crate::check_session_key(&params.session)?;
        crate::rules::check_import(&params)?;
        let audit = params.audit.take();
        let row = SessionRow::imported(params);
        let mut sessions = self.lock();
        if sessions.contains_key(&row.key) {
            return Err(crate::rules::import_exists(&row.key));
        }
        sessions.insert(row.key.clone(), row);
        drop(sessions);
        self.record_outcome(audit, serde_json::json!({ "imported": true }));
        Ok(())
    }

    async fn cursor_advance(&self, mut params: CursorAdvance) -> Result<CursorAdvanced, StoreError> {
        let audit = params.audit.take();
        let advanced = self.advance(&params)?;
        self.record_outcome(audit, serde_json::json!(advanced));
        Ok(advanced)
    }

    async fn consumer_pause(&self, params: ConsumerPause) -> Result<PausedConsumer, StoreError> {
        let paused = PausedConsumer {
            contract: params.contract.clone(),
            consumer: params.consumer.clone(),
            actor: params.actor,
            reason: params.reason,
            paused_at: self.now(),
        };
        let kept = self.pauses().entry((params.contract, params.consumer)).or_insert(paused).clone();
        self.record_outcome(params.audit, serde_json::json!(kept));
        Ok(kept)
    }

    async fn consumer_resume(&self, params: ConsumerResume) -> Result<bool, StoreError> {
        let resumed = self.pauses().remove(&(params.contract, params.consumer)).is_some();
        self.record_outcome(params.audit, serde_json::json!({ "resumed": resumed }));
        Ok(resumed)
    }

    async fn consumer_pause_list(&self, contract: Option<&str>) -> Result<Vec<PausedConsumer>, StoreError> {
        Ok(self.pauses().values().filter(|p| contract.is_none_or(|c| p.contract == c)).cloned().collect())
    }

    async fn session_bounds(&self, session: &SessionKey) -> Result<SessionBounds, StoreError> {
        let sessions = self.lock();
        Ok(sessions
            .get(session)
            .map_or_else(SessionBounds::default, |row| SessionBounds { head: row.head, clear_index: row.clear_index }))
    }

    async fn snapshot_put(&self, params: SnapshotPut) -> Result<(), StoreError> {
        let now = self.now();
        let mut sessions = self.lock();
        let Some(row) = sessions.get_mut(&params.session) else {
            return Err(StoreError::not_found(format!("session {:?}", params.session)));
        };
        if params.index <= row.clear_index || params.index > row.head {
            return Ok(());
        }
        let mut pins: Vec<HeadRef> = row
            .snapshots
            .iter()
            .filter(|s| s.reducer == params.reducer && s.index == params.index)
            .flat_map(|s| s.pins.clone())
            .collect();
        pins.extend(params.pin);
        pins.sort();
        pins.dedup();
        let mut snapshots = std::mem::take(&mut row.snapshots);
        // Older snapshots of this reducer go, unless a running head still pins them.
        snapshots.retain(|s| {
            s.reducer != params.reducer
                || (s.index > params.index)
                || (s.index < params.index && s.pins.iter().any(|p| row.pin_live(p)))
        });
        snapshots.push(Snapshot {
            reducer: params.reducer,
            index: params.index,
            state: params.state,
            pins,
            created_at: now,
        });
        row.snapshots = snapshots;
        Ok(())
    }

    async fn snapshot_get(&self, params: SnapshotGet) -> Result<Option<Snapshot>, StoreError> {
        let sessions = self.lock();
        let Some(row) = sessions.get(&params.session) else { return Ok(None) };
        Ok(row
            .snapshots
            .iter()
            .filter(|s| s.reducer == params.reducer && s.index <= params.at_most && s.index > row.clear_index)
            .max_by_key(|s| s.index)
            .cloned())
    }

    async fn event_list(&self, params: EventList) -> Result<Vec<Event>, StoreError> {
        let sessions = self.lock();
        let Some(row) = sessions.get(&params.session) else { return Ok(Vec::new()) };
        let low = params.after.unwrap_or(0).max(row.clear_index);
        let high = params.before.unwrap_or(u64::MAX);
        let in_range = row.events.iter().filter(|e| e.index > low && e.index < high);
        let limit = page_size(params.limit);
        Ok(if params.newest_first {
            in_range.rev().take(limit).cloned().collect()
        } else {
            in_range.take(limit).cloned().collect()
        })
    }

    async fn session_search(&self, params: SessionSearch) -> Result<SessionSearchPage, StoreError> {
        params.filter.check()?;
        let scan = crate::search::scan_size(params.scan) as usize;
        let sessions = self.lock();
        let page: Vec<&SessionRow> = contract_sessions(&sessions, &params.contract, params.after.as_deref())
            .take(scan)
            .map(|(_, row)| row)
            .collect();
        let found = page
            .iter()
            .filter_map(|row| {
                let mut matching = row.events.iter().filter(|e| e.index > row.clear_index && params.filter.accepts(e));
                let first = matching.next()?.clone();
                Some(SessionMatch {
                    session_id: crate::split_session_key(&row.key).1.to_owned(),
                    matches: 1 + matching.count() as u64,
                    first,
                })
            })
            .collect();
        let scanned_through =
            page.last().filter(|_| page.len() >= scan).map(|row| crate::split_session_key(&row.key).1.to_owned());
        Ok(SessionSearchPage { found, scanned: page.len() as u64, scanned_through })
    }

    async fn session_count(&self, contract: &str) -> Result<u64, StoreError> {
        Ok(contract_sessions(&self.lock(), contract, None).count() as u64)
    }

    async fn event_filter(&self, params: EventFilter) -> Result<EventFilterPage, StoreError> {
        params.filter.check()?;
        let sessions = self.lock();
        let Some(row) = sessions.get(&params.session) else { return Ok(EventFilterPage::default()) };
        let low = params.after.unwrap_or(0).max(row.clear_index);
        let scan = crate::search::scan_size(params.scan) as usize;
        let looked: Vec<&Event> = row.events.iter().filter(|e| e.index > low).take(scan).collect();
        let scanned_through = looked.last().filter(|_| looked.len() >= scan).map(|e| e.index);
        let events = looked.into_iter().filter(|e| params.filter.accepts(e)).cloned().collect();
        Ok(EventFilterPage { events, scanned_through })
    }

    async fn contract_list(&self) -> Result<Vec<String>, StoreError> {
        let sessions = self.lock();
        let contracts: BTreeSet<&str> = sessions.keys().map(|k| crate::split_session_key(k).0).collect();
        Ok(contracts.into_iter().map(str::to_owned).collect())
    }

    async fn session_list(&self, params: SessionList) -> Result<Vec<SessionSummary>, StoreError> {
        let prefix = crate::session_key(&params.contract, params.id_prefix.as_deref().unwrap_or(""));
        let sessions = self.lock();
        let start = match &params.after {
            Some(after) => std::ops::Bound::Excluded(crate::session_key(&params.contract, after)),
            None => std::ops::Bound::Included(prefix.clone()),
        };
        Ok(sessions
            .range((start, std::ops::Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(crate::session_key(&params.contract, "").as_str()))
            .filter(|(key, _)| key.starts_with(prefix.as_str()))
            .take(page_size(params.limit))
            .map(|(_, row)| row.summary())
            .collect())
    }

    async fn session_list_runnable(&self, params: SessionsRunnable) -> Result<RunnablePage, StoreError> {
        let now = self.now();
        let consumers: Vec<String> =
            params.consumers.iter().filter(|c| !self.is_paused(&params.contract, c)).cloned().collect();
        let sessions = self.lock();
        let scanned = contract_sessions(&sessions, &params.contract, params.after.as_deref())
            .take(page_size(params.limit))
            .map(|(key, row)| (key.clone(), row.runnable(&consumers, now)))
            .collect();
        Ok(RunnablePage::from_scan(scanned, params.limit))
    }

    async fn session_list_by_activity(&self, params: SessionsByActivity) -> Result<Vec<SessionSummary>, StoreError> {
        let prefix = crate::session_key(&params.contract, "");
        let sessions = self.lock();
        let mut rows: Vec<&SessionRow> =
            sessions.iter().filter(|(k, _)| k.starts_with(prefix.as_str())).map(|(_, r)| r).collect();
        let order = |r: &SessionRow| (r.updated_at, crate::split_session_key(&r.key).1.to_owned());
        rows.sort_by_key(|r| std::cmp::Reverse(order(r)));
        Ok(rows
            .into_iter()
            .filter(|r| params.before.as_ref().is_none_or(|b| order(r) < *b))
            .take(page_size(params.limit))
            .map(SessionRow::summary)
            .collect())
    }

    async fn session_get(&self, session: &SessionKey) -> Result<Option<SessionSummary>, StoreError> {
        Ok(self.lock().get(session).map(SessionRow::summary))
    }

    async fn head_list(&self, session: &SessionKey) -> Result<Vec<HeadInfo>, StoreError> {
        Ok(self.lock().get(session).map(SessionRow::head_infos).unwrap_or_default())
    }

    async fn head_scan(&self, params: HeadScan) -> Result<Vec<HeadInfo>, StoreError> {
        let sessions = self.lock();
        let from = params.after.as_ref().map(|a| a.session.as_str()).unwrap_or_default();
        let infos = sessions
            .range::<str, _>((std::ops::Bound::Included(from), std::ops::Bound::Unbounded))
            .map(|(key, row)| (key.clone(), row.head_infos()));
        Ok(crate::rules::scan_heads(infos, &params, page_size(params.limit)))
    }

    async fn dead_letter_list(&self, params: DeadLetterList) -> Result<Vec<DeadLetter>, StoreError> {
        let sessions = self.lock();
        let limit = page_size(params.limit);
        let mut page = Vec::new();
        for (key, row) in sessions.iter() {
            if params.session.as_ref().is_some_and(|s| s != key)
                || params.contract.as_ref().is_some_and(|c| c != crate::split_session_key(key).0)
                || params.after.as_ref().is_some_and(|a| key < &a.session)
            {
                continue;
            }
            for letter in row.dead_letters() {
                if params.after.as_ref().is_some_and(|a| &letter.key() <= a)
                    || params.consumer.as_ref().is_some_and(|c| c != &letter.consumer)
                    || params.cause.as_ref().is_some_and(|c| *c != letter_cause(&letter))
                {
                    continue;
                }
                page.push(letter);
                if page.len() == limit {
                    return Ok(page);
                }
            }
        }
        Ok(page)
    }

    async fn consumer_totals(&self, contract: Option<&str>) -> Result<Vec<ConsumerTotal>, StoreError> {
        let sessions = self.lock();
        let mut totals: BTreeMap<(String, String), (ConsumerTotal, BTreeSet<SessionKey>, BTreeSet<SessionKey>)> =
            BTreeMap::new();
        for (key, row) in sessions.iter() {
            let row_contract = crate::split_session_key(key).0;
            if contract.is_some_and(|c| c != row_contract) {
                continue;
            }
            for info in row.head_infos() {
                let entry = totals.entry((info.contract.clone(), info.consumer.clone())).or_insert_with(|| {
                    (
                        ConsumerTotal {
                            contract: info.contract.clone(),
                            consumer: info.consumer.clone(),
                            sessions: 0,
                            lagging_sessions: 0,
                            total_lag: 0,
                            dead_letters: 0,
                            served: None,
                        },
                        BTreeSet::new(),
                        BTreeSet::new(),
                    )
                });
                entry.1.insert(key.clone());
                if info.lag > 0 {
                    entry.2.insert(key.clone());
                }
                entry.0.total_lag += info.lag;
                entry.0.dead_letters += u64::from(info.dead());
            }
        }
        Ok(totals
            .into_values()
            .map(|(mut total, sessions, lagging)| {
                total.sessions = sessions.len() as u64;
                total.lagging_sessions = lagging.len() as u64;
                total
            })
            .collect())
    }

    /// Memory recomputes its scope whole: a pass over a map is what a
    /// backend's incremental refresh costs, and it is the reference the
    /// incremental ones are held to.
    async fn consumer_totals_refresh(&self, params: TotalsRefresh) -> Result<TotalsRefreshed, StoreError> {
        let now = self.now();
        if let Some(fence) = &params.fence {
            self.upkeep().check(fence, now)?;
        }
        let contract = params.contract.as_deref().filter(|c| !c.is_empty());
        // What an incremental backend would fold in: every session of a contract never refreshed (or on
        // a full pass), else the ones appended to or run since its last refresh.
        let marks: BTreeMap<String, Millis> =
            self.totals.lock().unwrap_or_else(|p| p.into_inner()).iter().map(|(c, (at, _))| (c.clone(), *at)).collect();
        let (contracts, sessions_folded, full_passes) = {
            let sessions = self.lock();
            let mut contracts: BTreeSet<String> = BTreeSet::new();
            let (mut folded, mut full) = (0u64, BTreeSet::new());
            for (key, row) in sessions.iter() {
                let name = crate::split_session_key(key).0;
                if contract.is_some_and(|c| c != name) {
                    continue;
                }
                contracts.insert(name.to_owned());
                let since = match marks.get(name) {
                    Some(at) if !params.full => at.saturating_sub(crate::TOTALS_SETTLE_MS),
                    _ => {
                        full.insert(name.to_owned());
                        Millis::MIN
                    }
                };
                folded += u64::from(row.updated_at >= since || row.attempts.values().any(|a| a.ended_at >= since));
            }
            (contracts, folded, u32::try_from(full.len()).unwrap_or(u32::MAX))
        };
        let totals = self.consumer_totals(contract).await?;
        {
            let mut kept = self.totals.lock().unwrap_or_else(|p| p.into_inner());
            if contract.is_none() {
                kept.clear();
            }
            for name in contracts {
                let of_contract = totals.iter().filter(|t| t.contract == name).cloned().collect();
                kept.insert(name, (now, of_contract));
            }
        }
        let snapshot = TotalsSnapshot {
            computed_at: now,
            totals,
            catalog: Vec::new(),
            origin: TotalsOrigin::Kept,
            refreshed_by: Vec::new(),
        };
        Ok(TotalsRefreshed { snapshot, sessions_folded, full_passes })
    }

    async fn consumer_totals_snapshot(&self, contract: Option<&str>) -> Result<Option<TotalsSnapshot>, StoreError> {
        let kept = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        let mut computed_at: Option<Millis> = None;
        let mut totals = Vec::new();
        for (name, (at, of_contract)) in kept.iter() {
            if contract.is_some_and(|c| c != name) {
                continue;
            }
            computed_at = Some(computed_at.map_or(*at, |c| c.min(*at)));
            totals.extend(of_contract.iter().cloned());
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
        let sessions = self.lock();
        let Some(row) = sessions.get(session) else { return Ok(Vec::new()) };
        let mut infos: Vec<SnapshotInfo> = row
            .snapshots
            .iter()
            .map(|s| SnapshotInfo {
                reducer: s.reducer.clone(),
                index: s.index,
                size_bytes: serde_json::to_vec(&s.state).map(|v| v.len() as u64).unwrap_or(0),
                state: s.state.clone(),
                pins: s.pins.clone(),
                created_at: s.created_at,
            })
            .collect();
        infos.sort_by(|a, b| b.index.cmp(&a.index).then_with(|| a.reducer.cmp(&b.reducer)));
        Ok(infos)
    }

    async fn attempt_list(&self, params: AttemptList) -> Result<Vec<Attempt>, StoreError> {
        Ok(attempts::list(&self.lock(), &params))
    }

    async fn attempt_prune(&self, params: AttemptPrune) -> Result<AttemptPruned, StoreError> {
        Ok(attempts::prune(&mut self.lock(), &params))
    }

    async fn attempt_rates(&self, params: AttemptRates) -> Result<Vec<AttemptRate>, StoreError> {
        Ok(attempts::rates(&self.lock(), &params))
    }

    async fn dead_letter_groups(&self, params: DeadLetterGroups) -> Result<Vec<DeadLetterGroup>, StoreError> {
        let sessions = self.lock();
        let mut groups: BTreeMap<(String, String, String), DeadLetterGroup> = BTreeMap::new();
        let rows = sessions
            .iter()
            .filter(|(key, _)| params.contract.as_ref().is_none_or(|c| c == crate::split_session_key(key).0));
        // In the storage key's order (contract, then session id: the separator sorts before any id
        // character), as a backend's index reads them, up to the bound.
        let mut letters: Vec<_> = rows.flat_map(|(_, row)| row.dead_letters()).collect();
        letters.sort_by(|a, b| {
            (&a.contract, &a.session_id, &a.consumer, &a.lane, a.index).cmp(&(
                &b.contract,
                &b.session_id,
                &b.consumer,
                &b.lane,
                b.index,
            ))
        });
        let scan = params.scan_limit();
        for letter in letters.into_iter().take(scan as usize) {
            let cause = letter_cause(&letter);
            let id = (letter.contract.clone(), letter.consumer.clone(), cause.clone());
            let group = groups.entry(id).or_insert_with(|| DeadLetterGroup {
                contract: letter.contract.clone(),
                consumer: letter.consumer.clone(),
                cause,
                count: 0,
                first_failed_at: letter.failed_at,
                last_failed_at: letter.failed_at,
                sample_error: letter.last_error.clone().unwrap_or_default(),
                sample: letter.key(),
                partial: false,
            });
            group.count += 1;
            group.first_failed_at = group.first_failed_at.min(letter.failed_at);
            group.last_failed_at = group.last_failed_at.max(letter.failed_at);
        }
        let groups = crate::attempts::mark_partial(groups.into_values().collect(), scan);
        Ok(crate::attempts::largest_first(groups))
    }

    async fn audit_append(&self, entry: AuditEntry) -> Result<u64, StoreError> {
        Ok(self.record(entry))
    }

    async fn audit_list(&self, params: AuditList) -> Result<Vec<AuditRecord>, StoreError> {
        let audit = self.audit.lock().unwrap_or_else(|p| p.into_inner());
        let before = params.before.unwrap_or(u64::MAX);
        let of_action = |r: &&AuditRecord| params.action.as_ref().is_none_or(|action| &r.entry.action == action);
        Ok(audit
            .iter()
            .rev()
            .filter(|r| r.id < before)
            .filter(of_action)
            .take(page_size(params.limit))
            .cloned()
            .collect())
    }

    async fn task_schedule(&self, params: TaskSchedule) -> Result<bool, StoreError> {
        crate::check_session_key(&params.session)?;
        Ok(self.tasks().schedule(params, self.now()))
    }

    async fn task_claim(&self, params: TaskClaim) -> Result<Vec<ScheduledTask>, StoreError> {
        Ok(self.tasks().claim(&params, self.now()))
    }

    async fn task_finish(&self, params: TaskFinish) -> Result<bool, StoreError> {
        Ok(self.tasks().finish(params))
    }

    async fn task_list(&self, params: TaskList) -> Result<Vec<ScheduledTask>, StoreError> {
        Ok(self.tasks().list(&params))
    }

    async fn task_cancel(&self, params: TaskChange) -> Result<Option<ScheduledTask>, StoreError> {
        let cancelled = self.tasks().cancel(&params.id, self.now());
        self.record_outcome(params.audit.filter(|_| cancelled.is_some()), serde_json::json!({ "cancelled": true }));
        Ok(cancelled)
    }

    async fn task_hasten(&self, params: TaskChange) -> Result<Option<ScheduledTask>, StoreError> {
        let hastened = self.tasks().hasten(&params.id, self.now());
        self.record_outcome(params.audit.filter(|_| hastened.is_some()), serde_json::json!({ "due_now": true }));
        Ok(hastened)
    }

    async fn presence_set(&self, params: PresenceSet) -> Result<Vec<String>, StoreError> {
        crate::check_session_key(&params.session)?;
        Ok(self.presence().set(params, self.now()))
    }

    async fn presence_read(&self, session: &SessionKey) -> Result<Vec<PresenceCell>, StoreError> {
        Ok(self.presence().read(session.as_str(), self.now()))
    }

    async fn presence_prune(&self, params: PresencePrune) -> Result<u64, StoreError> {
        Ok(self.presence().prune(params.limit, self.now()))
    }

    async fn presence_sessions(&self) -> Result<Vec<(String, u64)>, StoreError> {
        Ok(self.presence().sessions(self.now()))
    }

    async fn server_beat(&self, params: crate::ServerBeat) -> Result<(), StoreError> {
        self.servers().beat(params, self.now())
    }

    async fn server_remove(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.servers().remove(id))
    }

    async fn server_list(&self, params: crate::ServerList) -> Result<Vec<crate::ServerRecord>, StoreError> {
        Ok(self.servers().list(&params))
    }

    async fn head_list_leased(&self, params: crate::HeadsLeased) -> Result<Vec<crate::LeasedHead>, StoreError> {
        let heads = self.lock().values().flat_map(SessionRow::head_infos).collect::<Vec<_>>();
        Ok(servers::leased(heads, &params, self.now()))
    }

    async fn upkeep_lease(&self, params: crate::UpkeepLease) -> Result<Option<u64>, StoreError> {
        let now = self.now();
        self.upkeep().lease(params, now)
    }

    async fn upkeep_release(&self, params: crate::UpkeepRelease) -> Result<bool, StoreError> {
        Ok(self.upkeep().release(&params))
    }

    async fn upkeep_leaders(&self) -> Result<Vec<crate::UpkeepLeader>, StoreError> {
        Ok(self.upkeep().leaders())
    }
}
