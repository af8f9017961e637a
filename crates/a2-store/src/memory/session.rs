//! One session's rows and the transitions on them. Every method validates
//! before it mutates, so a refused call leaves the session as it was.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::attempts::*;
use crate::rules::{HeadRow, HeadState};
use crate::types::*;
use crate::StoreError;

#[derive(Debug, Clone)]
pub(crate) struct Cursor {
    pub lane: String,
    pub next: u64,
    pub state: HeadState,
}

/// Key of a per-event head: consumer, lane (none for concurrent), index.
pub(crate) type TargetKey = (String, Option<String>, u64);

#[derive(Debug, Clone)]
pub(crate) struct SessionRow {
    pub key: SessionKey,
    pub head: u64,
    pub clear_index: u64,
    pub created_at: Millis,
    pub updated_at: Millis,
    /// `events[i]` has index `i + 1`.
    pub events: Vec<Event>,
    pub ids: HashMap<String, u64>,
    pub cursors: BTreeMap<String, Cursor>,
    pub heads: BTreeMap<TargetKey, HeadState>,
    pub snapshots: Vec<Snapshot>,
    /// The attempt history, by head and attempt number; it outlives a clear.
    pub attempts: BTreeMap<AttemptId, Attempt>,
}

/// An attempt's place in the history: consumer, lane, index, attempt number.
pub(crate) type AttemptId = (String, Option<String>, u64, u32);

pub(crate) enum HeadSlot<'a> {
    Cursor(&'a mut Cursor),
    Target(&'a mut HeadState),
}

impl SessionRow {
    pub fn new(key: SessionKey, now: Millis) -> Self {
        Self {
            key,
            head: 0,
            clear_index: 0,
            created_at: now,
            updated_at: now,
            events: Vec::new(),
            ids: HashMap::new(),
            cursors: BTreeMap::new(),
            heads: BTreeMap::new(),
            snapshots: Vec::new(),
            attempts: BTreeMap::new(),
        }
    }

    /// A session as an import describes it (checked by the caller). Events
    /// below the clear boundary were not copied; empty rows keep their
    /// places, since `events[i]` is index `i + 1`, and no read shows them.
    pub fn imported(import: SessionImport) -> Self {
        let mut row = Self::new(import.session.clone(), import.created_at);
        row.head = import.head;
        row.clear_index = import.clear_index;
        row.updated_at = import.updated_at;
        row.events = (1..=import.clear_index)
            .map(|index| Event {
                id: String::new(),
                event_type: String::new(),
                payload: serde_json::Value::Null,
                index,
                session: import.session.to_string(),
                created_at: import.created_at,
                cause: None,
                scheduled_by: None,
            })
            .collect();
        for mut event in import.events {
            event.session = import.session.to_string();
            row.ids.insert(event.id.clone(), event.index);
            row.events.push(event);
        }
        for h in &import.heads {
            let state = crate::rules::imported_state(h);
            match h.kind {
                HeadKind::Log => {
                    let lane = h.lane.clone().unwrap_or_default();
                    row.cursors.insert(h.consumer.clone(), Cursor { lane, next: h.index, state });
                }
                HeadKind::Lane | HeadKind::Concurrent => {
                    row.heads.insert((h.consumer.clone(), h.lane.clone(), h.index), state);
                }
            }
        }
        row.snapshots = import.snapshots;
        row
    }

    pub fn event(&self, index: u64) -> Option<&Event> {
        index.checked_sub(1).and_then(|i| self.events.get(i as usize))
    }

    /// Give log consumers that have no cursor here one: after the head, or
    /// after the clear boundary for a backfilling consumer.
    pub fn ensure_cursors(&mut self, consumers: &[StoreConsumer]) {
        for consumer in consumers {
            let Some(log) = &consumer.log else { continue };
            if self.cursors.contains_key(&consumer.name) {
                continue;
            }
            let next = if log.backfill { self.clear_index + 1 } else { self.head + 1 };
            self.cursors
                .insert(consumer.name.clone(), Cursor { lane: log.lane.clone(), next, state: HeadState::default() });
        }
    }

    /// Move a cursor that no live attempt holds past events its consumer
    /// does not take. A lapsed attempt on such an event (its types were
    /// narrowed since) is dropped with it: it must never run again.
    pub fn skip_untaken(&mut self, consumer: &StoreConsumer, now: Millis) {
        let Some(cursor) = self.cursors.get_mut(&consumer.name) else { return };
        if cursor.state.status.failed_at.is_some() || cursor.state.status.lease_live(now) {
            return;
        }
        let start = cursor.next;
        while cursor.next <= self.head {
            let taken = index_slot(&self.events, cursor.next).is_some_and(|e| consumer.takes(&e.event_type));
            if taken {
                break;
            }
            cursor.next += 1;
        }
        if cursor.next != start {
            cursor.state = HeadState::default();
        }
    }

    /// Append a batch; all-present is an idempotent no-op, a mix is refused.
    pub fn append(
        &mut self,
        events: Vec<NewEvent>,
        consumers: &[StoreConsumer],
        now: Millis,
    ) -> Result<(Vec<Event>, bool), StoreError> {
        crate::rules::check_batch(&self.key, &events)?;
        let present: Vec<&str> = events.iter().map(|e| e.id.as_str()).filter(|id| self.ids.contains_key(*id)).collect();
        if crate::rules::plan_batch(&self.key, &events, &present)? == crate::rules::BatchPlan::AllPresent {
            let stored =
                events.iter().filter_map(|e| self.ids.get(&e.id).and_then(|i| self.event(*i)).cloned()).collect();
            return Ok((stored, true));
        }
        self.ensure_cursors(consumers);
        let mut stored = Vec::with_capacity(events.len());
        for new in events {
            self.head += 1;
            let index = self.head;
            for target in &new.targets {
                self.heads.insert((target.consumer.clone(), target.lane.clone(), index), HeadState::default());
            }
            let event = Event {
                id: new.id,
                event_type: new.event_type,
                payload: new.payload,
                index,
                session: self.key.to_string(),
                created_at: now,
                cause: new.cause,
                scheduled_by: new.scheduled_by,
            };
            self.ids.insert(event.id.clone(), index);
            self.events.push(event.clone());
            stored.push(event);
        }
        if !stored.is_empty() {
            self.updated_at = now;
        }
        Ok((stored, false))
    }

    /// The running state of a head, whether a cursor or a per-event head.
    pub fn slot(&mut self, head: &HeadRef) -> Option<HeadSlot<'_>> {
        if let Some(cursor) = self.cursors.get_mut(&head.consumer) {
            if head.lane.as_deref() == Some(cursor.lane.as_str()) {
                return (cursor.next == head.index).then_some(HeadSlot::Cursor(cursor));
            }
        }
        self.heads.get_mut(&(head.consumer.clone(), head.lane.clone(), head.index)).map(HeadSlot::Target)
    }

    /// The current attempt of `head`, if `attempt` is it: the fence.
    pub fn fenced(&mut self, head: &HeadRef, attempt: u32) -> Option<HeadSlot<'_>> {
        let slot = self.slot(head)?;
        let state = match &slot {
            HeadSlot::Cursor(c) => &c.state,
            HeadSlot::Target(s) => s,
        };
        state.status.is_current(attempt).then_some(slot)
    }

    /// Settle a head: move the cursor on, or drop the per-event head.
    pub fn settle(&mut self, head: &HeadRef) {
        match self.slot(head) {
            Some(HeadSlot::Cursor(cursor)) => {
                cursor.next = head.index + 1;
                cursor.state = HeadState::default();
            }
            Some(HeadSlot::Target(_)) => {
                self.heads.remove(&(head.consumer.clone(), head.lane.clone(), head.index));
            }
            None => {}
        }
    }

    pub fn claim(&mut self, params: &HeadClaim, now: Millis) -> Claimed {
        self.ensure_cursors(&params.consumers);
        for consumer in &params.consumers {
            if consumer.log.is_some() {
                self.skip_untaken(consumer, now);
            }
        }
        let mut claimed = Claimed { session_head: self.head, ..Claimed::default() };
        let excluded: HashSet<&HeadRef> = params.exclude.iter().collect();
        let names: HashSet<&str> = params.consumers.iter().map(|c| c.name.as_str()).collect();
        let log_names: HashSet<&str> =
            params.consumers.iter().filter(|c| c.log.is_some()).map(|c| c.name.as_str()).collect();
        let limit = params.limit.max(1) as usize;
        let events = &self.events;
        let mut lapsed = Vec::new();
        let mut consider = |head: HeadRef, state: &mut HeadState, claimed: &mut Claimed| {
            if params.through.is_some_and(|t| head.index > t) || excluded.contains(&head) {
                return;
            }
            if claimed.heads.len() >= limit && state.status.failed_at.is_none() && !state.status.lease_live(now) {
                return;
            }
            let Some(event) = index_slot(events, head.index).cloned() else { return };
            if crate::rules::untaken_cursor(params, &head, &event.event_type) {
                return;
            }
            let lapse = Attempt::lapsed(&head, state, now);
            if crate::rules::claim_head(state, head, event, params, now, claimed) {
                lapsed.extend(lapse);
            }
        };
        for (name, cursor) in self.cursors.iter_mut() {
            if !log_names.contains(name.as_str()) || cursor.next > self.head {
                continue;
            }
            let head = HeadRef { consumer: name.clone(), lane: Some(cursor.lane.clone()), index: cursor.next };
            consider(head, &mut cursor.state, &mut claimed);
        }
        let mut open_lanes: HashSet<(String, String)> = HashSet::new();
        for ((consumer, lane, index), state) in self.heads.iter_mut() {
            if !names.contains(consumer.as_str()) {
                continue;
            }
            if let Some(lane) = lane {
                // Lane-function heads run one at a time per lane, lowest index first.
                if !open_lanes.insert((consumer.clone(), lane.clone())) {
                    continue;
                }
            }
            let head = HeadRef { consumer: consumer.clone(), lane: lane.clone(), index: *index };
            consider(head, state, &mut claimed);
        }
        for attempt in lapsed {
            self.record_attempt(attempt);
        }
        claimed
    }

    /// Keep an attempt's record: a new one, or one replacing its lapse (see [`Attempt::replaced_by`]).
    pub fn record_attempt(&mut self, attempt: Attempt) {
        let id = (attempt.consumer.clone(), attempt.lane.clone(), attempt.index, attempt.attempt);
        match self.attempts.get_mut(&id) {
            Some(kept) if kept.replaced_by(&attempt) => {
                kept.outcome = attempt.outcome;
                kept.ended_at = attempt.ended_at;
                kept.error = attempt.error.or(kept.error.take());
            }
            Some(_) => {}
            None => {
                self.attempts.insert(id, attempt);
            }
        }
    }

    /// The state a head runs under, if it is pending here.
    pub fn state(&mut self, head: &HeadRef) -> Option<HeadState> {
        self.slot(head).map(|slot| match slot {
            HeadSlot::Cursor(c) => c.state.clone(),
            HeadSlot::Target(s) => s.clone(),
        })
    }

    /// Record how an attempt ended, from the state it ran under.
    pub fn attempt_ended(&mut self, head: &HeadRef, attempt: u32, now: Millis, outcome: AttemptOutcome) -> Attempt {
        let state = self.state(head).unwrap_or_default();
        Attempt::ended(head, &state, attempt, now, outcome)
    }

    /// Whether a head is dead-lettered now (its history is kept whole).
    pub fn is_dead(&self, consumer: &str, lane: Option<&str>, index: u64) -> bool {
        if let Some(cursor) = self.cursors.get(consumer) {
            if lane == Some(cursor.lane.as_str()) {
                return cursor.next == index && cursor.state.status.failed_at.is_some();
            }
        }
        self.heads
            .get(&(consumer.to_owned(), lane.map(str::to_owned), index))
            .is_some_and(|s| s.status.failed_at.is_some())
    }

    /// Whether a head of these consumers could run now with no live claim on it.
    pub fn runnable(&self, consumers: &[String], now: Millis) -> bool {
        let free = |s: &HeadState| {
            s.status.failed_at.is_none()
                && !s.status.lease_live(now)
                && s.status.next_attempt_at.is_none_or(|at| at <= now)
        };
        let ours = |name: &str| consumers.iter().any(|c| c == name);
        let cursor_behind = self.cursors.iter().any(|(name, c)| ours(name) && c.next <= self.head && free(&c.state));
        let mut lanes_seen: HashSet<(&str, &str)> = HashSet::new();
        let head_pending = self.heads.iter().any(|((consumer, lane, _), state)| {
            if !ours(consumer) {
                return false;
            }
            // Only a lane's lowest head can run.
            if let Some(lane) = lane {
                if !lanes_seen.insert((consumer.as_str(), lane.as_str())) {
                    return false;
                }
            }
            free(state)
        });
        cursor_behind || head_pending
    }

    pub fn clear(&mut self, if_last_index: Option<u64>, now: Millis) -> Cleared {
        if if_last_index.is_some_and(|i| i != self.head) {
            return Cleared { cleared: false, index: self.head };
        }
        let boundary = self.head;
        // Attempts running through the boundary end here.
        let cursors = self.cursors.iter().map(|(name, c)| (HeadRef::new(name, Some(&c.lane), c.next), &c.state));
        let heads = self.heads.iter().map(|((name, lane, index), s)| (HeadRef::new(name, lane.as_deref(), *index), s));
        let running: Vec<Attempt> = cursors
            .chain(heads)
            .filter(|(head, state)| head.index <= boundary && state.status.lease_live(now))
            .map(|(head, state)| Attempt::ended(&head, state, state.status.attempt_count, now, AttemptOutcome::Cleared))
            .collect();
        for attempt in running {
            self.record_attempt(attempt);
        }
        self.clear_index = boundary;
        for cursor in self.cursors.values_mut() {
            if cursor.next <= boundary {
                cursor.next = boundary + 1;
                cursor.state = HeadState::default();
            }
        }
        self.heads.retain(|(_, _, index), _| *index > boundary);
        self.snapshots.clear();
        Cleared { cleared: true, index: boundary }
    }

    /// Whether the head a snapshot pin names is still pending.
    pub fn pin_live(&self, pin: &HeadRef) -> bool {
        if let Some(cursor) = self.cursors.get(&pin.consumer) {
            if pin.lane.as_deref() == Some(cursor.lane.as_str()) {
                return cursor.next <= pin.index;
            }
        }
        self.heads.contains_key(&(pin.consumer.clone(), pin.lane.clone(), pin.index))
    }

    /// Cursors and pending heads as the Studio shows them.
    pub fn head_infos(&self) -> Vec<HeadInfo> {
        let created = |index: u64| self.event(index).map(|e| e.created_at);
        let cursors = self.cursors.iter().map(|(name, c)| HeadRow {
            consumer: name.clone(),
            kind: HeadKind::Log,
            lane: Some(c.lane.clone()),
            index: c.next,
            state: c.state.clone(),
            event_created_at: created(c.next),
        });
        let heads = self.heads.iter().map(|((consumer, lane, index), state)| HeadRow {
            consumer: consumer.clone(),
            kind: if lane.is_some() { HeadKind::Lane } else { HeadKind::Concurrent },
            lane: lane.clone(),
            index: *index,
            state: state.clone(),
            event_created_at: created(*index),
        });
        let mut rows: Vec<HeadRow> = cursors.chain(heads).collect();
        rows.sort_by(|a, b| (&a.consumer, &a.lane, a.index).cmp(&(&b.consumer, &b.lane, b.index)));
        crate::rules::head_infos(&self.key, self.head, rows)
    }

    /// Every dead head of the session.
    pub fn dead_letters(&self) -> Vec<DeadLetter> {
        let (contract, session_id) = crate::split_session_key(&self.key);
        let cursor_rows = self.cursors.iter().map(|(name, c)| (name.as_str(), Some(c.lane.clone()), c.next, &c.state));
        let head_rows = self.heads.iter().map(|((name, lane, index), s)| (name.as_str(), lane.clone(), *index, s));
        let mut letters: Vec<DeadLetter> = cursor_rows
            .chain(head_rows)
            .filter_map(|(consumer, lane, index, state)| {
                let failed_at = state.status.failed_at?;
                let event = self.event(index)?;
                Some(DeadLetter {
                    contract: contract.to_owned(),
                    session_id: session_id.to_owned(),
                    consumer: consumer.to_owned(),
                    lane,
                    index,
                    event_id: event.id.clone(),
                    event_type: event.event_type.clone(),
                    attempt_count: state.status.attempt_count,
                    failure_count: state.status.failure_count,
                    last_error: state.status.last_error.clone(),
                    failed_at,
                })
            })
            .collect();
        letters.sort_by_key(DeadLetter::key);
        letters
    }

    pub fn summary(&self) -> SessionSummary {
        let (contract, session_id) = crate::split_session_key(&self.key);
        let infos = self.head_infos();
        SessionSummary {
            contract: contract.to_owned(),
            session_id: session_id.to_owned(),
            head: self.head,
            clear_index: self.clear_index,
            created_at: self.created_at,
            updated_at: self.updated_at,
            dead_letters: infos.iter().filter(|h| h.dead()).count() as u64,
            lag: infos.iter().map(|h| h.lag).sum(),
        }
    }
}

fn index_slot(events: &[Event], index: u64) -> Option<&Event> {
    index.checked_sub(1).and_then(|i| events.get(i as usize))
}
