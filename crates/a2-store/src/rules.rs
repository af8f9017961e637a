//! The transitions of a head's running state, shared by every backend so
//! that memory, SQLite and Postgres cannot drift apart: a backend loads the
//! rows, applies these, and writes them back in the same transaction.
//! The states, who may move a head and what fences whom are drawn in
//! `docs/head-lifecycle.md`.

use crate::types::{Backoff, FailOutcome, HeadStatus, Millis};

/// The running state of a cursor or a per-event head as a backend stores
/// it: the status every view shows, and when the current attempt started
/// (kept apart because only the attempt history reads it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeadState {
    pub status: HeadStatus,
    /// When the current attempt's claim leased the head: its attempt history's start.
    pub attempt_started_at: Option<Millis>,
}

/// What a claim found a head to be, or did to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimStep {
    /// Dead-lettered: it blocks its lane until redriven.
    Dead,
    /// Another holder's lease is live until then.
    Busy(Millis),
    /// Waiting out its backoff until then.
    Waiting(Millis),
    /// Its lapsed attempts used up the budget: dead-lettered now, not run.
    Exhausted,
    /// Runnable; the caller may take it (see [`HeadState::take`]).
    Runnable,
}

impl HeadState {
    /// Inspect a head for a claim. A lease that lapsed without an outcome is
    /// charged as a failure here, by the claim that takes it over.
    pub fn check(&mut self, now: Millis, max_failures: u32) -> ClaimStep {
        let s = &mut self.status;
        if s.dead() {
            return ClaimStep::Dead;
        }
        if s.lease_live(now) {
            return ClaimStep::Busy(s.lease_expires_at.unwrap_or(now));
        }
        if let Some(at) = s.next_attempt_at.filter(|at| *at > now) {
            return ClaimStep::Waiting(at);
        }
        if s.lease_holder.take().is_some() {
            s.lease_expires_at = None;
            s.failure_count += 1;
            // The lapse is counted; `last_error` stays what the consumer last threw, and
            // stays empty when every failure was a lapse (the seeds: the attempt history
            // says what happened, no error is invented).
            if s.failure_count >= max_failures {
                s.failed_at = Some(now);
                s.next_attempt_at = None;
                return ClaimStep::Exhausted;
            }
        }
        ClaimStep::Runnable
    }

    /// Lease a runnable head to `holder`; returns the new attempt number.
    pub fn take(&mut self, now: Millis, holder: &str, ttl_ms: i64) -> u32 {
        let s = &mut self.status;
        s.attempt_count += 1;
        s.lease_holder = Some(holder.to_owned());
        s.lease_expires_at = Some(now + ttl_ms);
        s.next_attempt_at = None;
        self.attempt_started_at = Some(now);
        s.attempt_count
    }

    /// Record a failed attempt (already fenced): backoff, or dead at the budget.
    pub fn fail(&mut self, now: Millis, error: String, max_failures: u32, backoff: Backoff) -> FailOutcome {
        let s = &mut self.status;
        s.failure_count += 1;
        s.last_error = Some(error);
        s.release();
        if s.failure_count >= max_failures {
            s.failed_at = Some(now);
            s.next_attempt_at = None;
            return FailOutcome::DeadLettered { failure_count: s.failure_count };
        }
        let retry_at = now + backoff.delay_ms(s.failure_count);
        s.next_attempt_at = Some(retry_at);
        FailOutcome::Failed { failure_count: s.failure_count, retry_at }
    }

    /// Redrive retry: a fresh failure budget, runnable now. The attempt count
    /// keeps counting so it stays a valid fencing token.
    pub fn retry(&mut self) {
        let s = &mut self.status;
        s.failure_count = 0;
        s.failed_at = None;
        s.next_attempt_at = None;
        s.release();
    }
}

/// Apply a claim to one candidate head: take it, or dead-letter it when its
/// lapsed attempts used up the budget, recording it in `claimed`; busy and
/// waiting heads only narrow `claimed`'s retry times. Returns whether `state`
/// changed and must be written back.
pub fn claim_head(
    state: &mut HeadState,
    head: crate::HeadRef,
    event: crate::Event,
    params: &crate::HeadClaim,
    now: Millis,
    claimed: &mut crate::Claimed,
) -> bool {
    let min = |current: Option<Millis>, at: Millis| Some(current.map_or(at, |c| c.min(at)));
    match state.check(now, params.max_failures) {
        ClaimStep::Dead => false,
        ClaimStep::Busy(until) => {
            claimed.busy_until = min(claimed.busy_until, until);
            false
        }
        ClaimStep::Waiting(at) => {
            claimed.retry_at = min(claimed.retry_at, at);
            false
        }
        ClaimStep::Exhausted => {
            claimed.exhausted.push(crate::ClaimedHead {
                head,
                attempt: state.status.attempt_count,
                failure_count: state.status.failure_count,
                lease_expires_at: now,
                event,
            });
            true
        }
        ClaimStep::Runnable => {
            let attempt = state.take(now, &params.holder, params.ttl_ms);
            claimed.heads.push(crate::ClaimedHead {
                head,
                attempt,
                failure_count: state.status.failure_count,
                lease_expires_at: now + params.ttl_ms,
                event,
            });
            true
        }
    }
}

/// Whether a claim candidate is a log cursor standing on an event its
/// consumer does not take. Such a head must be skipped, never run: the
/// cursor can reach it between a claim's skip and its selection (another
/// transaction's completion), or after a deploy narrowed the consumer's types.
pub fn untaken_cursor(params: &crate::HeadClaim, head: &crate::HeadRef, event_type: &str) -> bool {
    params.consumers.iter().any(|c| {
        c.name == head.consumer
            && c.log.as_ref().is_some_and(|log| head.lane.as_deref() == Some(log.lane.as_str()))
            && !c.takes(event_type)
    })
}

/// A log consumer's cursor as `consume` watches it.
pub fn cursor_state(session_head: u64, next: u64, s: HeadState) -> crate::CursorState {
    crate::CursorState { session_head, next: (next <= session_head).then_some(next), status: s.status, paused: false }
}

/// Where an operator's acknowledgement through `through` leaves a cursor
/// standing at `next` with state `s`: moved, or why not.
pub fn cursor_advance(next: u64, s: &HeadStatus, through: u64, now: Millis) -> crate::CursorAdvanced {
    if next > through {
        return crate::CursorAdvanced::Moved { from: next, next };
    }
    if s.failed_at.is_some() {
        return crate::CursorAdvanced::DeadLettered { index: next, last_error: s.last_error.clone() };
    }
    if let (Some(holder), Some(until)) = (&s.lease_holder, s.lease_expires_at) {
        if until > now {
            return crate::CursorAdvanced::Held { index: next, holder: holder.clone(), until };
        }
    }
    crate::CursorAdvanced::Moved { from: next, next: through + 1 }
}

/// One row of a backend's heads: a log cursor (its next index) or a
/// per-event head, with the creation time of the event at its index.
#[derive(Debug, Clone)]
pub struct HeadRow {
    pub consumer: String,
    pub kind: crate::HeadKind,
    pub lane: Option<String>,
    pub index: u64,
    pub state: HeadState,
    pub event_created_at: Option<Millis>,
}

/// Cursors and pending heads as the Studio shows them: one row per cursor,
/// one per lane (its lowest pending head, with the lane's count as lag), and
/// one per pending concurrent head. `rows` must be sorted by (consumer, lane, index).
pub fn head_infos(session_key: &str, session_head: u64, rows: Vec<HeadRow>) -> Vec<crate::HeadInfo> {
    use crate::{HeadInfo, HeadKind};
    let (contract, session_id) = crate::split_session_key(session_key);
    let mut infos: Vec<HeadInfo> = Vec::new();
    for row in rows {
        if row.kind == HeadKind::Lane {
            if let Some(last) = infos.last_mut() {
                if last.kind == HeadKind::Lane && last.consumer == row.consumer && last.lane == row.lane {
                    last.lag += 1;
                    continue;
                }
            }
        }
        let lag = match row.kind {
            HeadKind::Log => (session_head + 1).saturating_sub(row.index),
            HeadKind::Lane | HeadKind::Concurrent => 1,
        };
        infos.push(HeadInfo {
            contract: contract.to_owned(),
            session_id: session_id.to_owned(),
            consumer: row.consumer,
            kind: row.kind,
            lane: row.lane,
            next_index: row.index,
            session_head,
            lag,
            oldest_pending_at: if lag > 0 { row.event_created_at } else { None },
            status: row.state.status,
        });
    }
    infos
}

/// Refuse the append of a run whose event (`origin_index`) the session was
/// cleared through; checked under the session's lock, in the append's transaction.
pub fn check_origin(session: &str, origin_index: Option<u64>, clear_index: u64) -> Result<(), crate::StoreError> {
    match origin_index {
        Some(origin) if clear_index >= origin => {
            let (_, session_id) = crate::split_session_key(session);
            Err(crate::StoreError::SessionCleared { session: session_id.to_owned(), index: clear_index })
        }
        _ => Ok(()),
    }
}

/// Refuse a batch with an empty id or an id twice, before anything is written.
pub fn check_batch(session: &str, events: &[crate::NewEvent]) -> Result<(), crate::StoreError> {
    let mut seen = std::collections::HashSet::new();
    for event in events {
        if event.id.is_empty() {
            return Err(crate::StoreError::invalid("event id must not be empty"));
        }
        if event.event_type.is_empty() {
            return Err(crate::StoreError::invalid(format!("event {:?} has no type", event.id)));
        }
        if !seen.insert(event.id.as_str()) {
            return Err(crate::StoreError::PartialDuplicateBatch {
                session: session.to_owned(),
                ids: format!("'{}' appears twice in the batch", event.id),
            });
        }
    }
    Ok(())
}

/// What to do with a batch given which of its ids the session already holds.
#[derive(Debug, PartialEq, Eq)]
pub enum BatchPlan {
    /// Nothing present: append it all.
    Append,
    /// Everything present: an idempotent no-op.
    AllPresent,
}

pub fn plan_batch(session: &str, events: &[crate::NewEvent], present: &[&str]) -> Result<BatchPlan, crate::StoreError> {
    if present.is_empty() {
        return Ok(BatchPlan::Append);
    }
    if present.len() == events.len() {
        return Ok(BatchPlan::AllPresent);
    }
    let ids: Vec<&str> = events.iter().map(|e| e.id.as_str()).filter(|id| present.contains(id)).collect();
    Err(crate::StoreError::PartialDuplicateBatch { session: session.to_owned(), ids: ids.join(", ") })
}

/// One page of a store-wide head scan: `sessions` in key order, each with its
/// heads as [`head_infos`] gives them; stops as soon as the page is full, so a
/// lazy iterator reads no further than it must.
pub fn scan_heads(
    sessions: impl IntoIterator<Item = (crate::SessionKey, Vec<crate::HeadInfo>)>,
    params: &crate::HeadScan,
    limit: usize,
) -> Vec<crate::HeadInfo> {
    let mut page = Vec::new();
    for (session, infos) in sessions {
        if params.after.as_ref().is_some_and(|a| session < a.session) {
            continue;
        }
        for info in infos {
            let key = crate::HeadKey {
                session: session.clone(),
                consumer: info.consumer.clone(),
                lane: info.lane.clone(),
                index: info.next_index,
            };
            if params.after.as_ref().is_some_and(|a| &key <= a)
                || params.consumer.as_ref().is_some_and(|c| c != &info.consumer)
            {
                continue;
            }
            page.push(info);
            if page.len() == limit {
                return page;
            }
        }
    }
    page
}

/// Whether an imported session is whole and consistent: every event after
/// the clear boundary, in order, ids unique; heads where events are;
/// snapshots at or below the head. The first fault is named.
pub fn check_import(import: &crate::SessionImport) -> Result<(), crate::StoreError> {
    use crate::{HeadKind, StoreError};
    let (head, clear) = (import.head, import.clear_index);
    if clear > head {
        return Err(StoreError::invalid(format!("the clear boundary {clear} is past the head {head}")));
    }
    if import.events.len() as u64 != head - clear {
        return Err(StoreError::invalid(format!(
            "a session with head {head} cleared through {clear} has {} events after the boundary, not {}",
            head - clear,
            import.events.len()
        )));
    }
    let mut ids = std::collections::HashSet::new();
    for (expected, event) in (clear + 1..).zip(&import.events) {
        if event.index != expected {
            return Err(StoreError::invalid(format!("event {} stands where event {expected} belongs", event.index)));
        }
        if event.id.is_empty() || !ids.insert(event.id.as_str()) {
            return Err(StoreError::invalid(format!(
                "event {} has an empty or repeated id '{}'",
                event.index, event.id
            )));
        }
    }
    let mut heads = std::collections::HashSet::new();
    for h in &import.heads {
        let fits = match h.kind {
            HeadKind::Log => h.lane.is_some() && (clear + 1..=head + 1).contains(&h.index),
            HeadKind::Lane => h.lane.is_some() && (clear + 1..=head).contains(&h.index),
            HeadKind::Concurrent => h.lane.is_none() && (clear + 1..=head).contains(&h.index),
        };
        let key = match h.kind {
            HeadKind::Log => (h.consumer.as_str(), None, 0),
            _ => (h.consumer.as_str(), h.lane.as_deref(), h.index),
        };
        if h.consumer.is_empty() || !fits || !heads.insert(key) {
            return Err(StoreError::invalid(format!(
                "head of consumer '{}' ({:?}, lane {:?}, index {}) does not fit a session with head {head} cleared through {clear}, or is repeated",
                h.consumer, h.kind, h.lane, h.index
            )));
        }
    }
    let mut snapshots = std::collections::HashSet::new();
    for s in &import.snapshots {
        if !(clear + 1..=head).contains(&s.index) || !snapshots.insert((s.reducer.as_str(), s.index)) {
            return Err(StoreError::invalid(format!(
                "snapshot of reducer '{}' at {} is outside {}..={head} or repeated",
                s.reducer,
                s.index,
                clear + 1
            )));
        }
    }
    Ok(())
}

/// An imported head's state here: its failures kept, no lease.
pub fn imported_state(h: &crate::ImportedHead) -> HeadState {
    HeadState {
        status: HeadStatus {
            attempt_count: h.attempt_count,
            failure_count: h.failure_count,
            last_error: h.last_error.clone(),
            failed_at: h.failed_at,
            lease_holder: None,
            lease_expires_at: None,
            next_attempt_at: h.next_attempt_at,
        },
        attempt_started_at: None,
    }
}

/// The refusal for an import onto a session that exists: a copy never merges.
pub fn import_exists(key: &str) -> crate::StoreError {
    crate::StoreError::invalid(format!(
        "session '{}' already exists in this store: import it under another id",
        crate::split_session_key(key).1
    ))
}
