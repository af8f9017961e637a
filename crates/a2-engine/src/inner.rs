//! The shared state behind a server and its sessions, and what every
//! handle does through it: validate and append, fold state, redrive, and
//! keep sessions drained in the background (appends, retries, the rescuer).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2_store::{
    session_key, Cause, Clock, Event, EventAppend, EventList, HeadRef, NewEvent, RedriveAction, SnapshotGet,
    SnapshotPut, Store, StoreConsumer, Target,
};
use serde_json::Value;
use tokio::sync::{broadcast, Notify};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::drain::DrainTimings;
use crate::{ids, A2Error, AppendInput, Consumer, Contract, Lane};

/// A reducer's state and the index of the last event folded into it.
#[derive(Debug, Clone, PartialEq)]
pub struct StateAt {
    pub state: Value,
    pub index: u64,
}

/// Sent to every listener when a session's log grows.
#[derive(Debug, Clone)]
pub(crate) struct AppendNotice {
    pub session: String,
}

/// One background drain per session at a time; appends while it runs ask it to go again.
#[derive(Default)]
pub(crate) struct DrainSlot {
    pub again: std::sync::atomic::AtomicBool,
    pub wake: Notify,
}

pub(crate) struct Inner {
    pub contract: Contract,
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub consumers: Vec<Consumer>,
    pub store_consumers: Vec<StoreConsumer>,
    pub timings: DrainTimings,
    pub background: bool,
    pub notices: broadcast::Sender<AppendNotice>,
    pub drains: Mutex<HashMap<String, Arc<DrainSlot>>>,
    pub shutdown: CancellationToken,
    /// Heads running at once across every drain of this server.
    pub running: Arc<tokio::sync::Semaphore>,
    /// Sessions drained at once in the background: a worker that finds
    /// thousands of sessions with work drains as many as it can run, and
    /// the rest wait as small tasks rather than as drains holding claims.
    pub draining: Arc<tokio::sync::Semaphore>,
    /// The kept-totals refresher runs once the server first drains in the background.
    pub refresher: std::sync::atomic::AtomicBool,
    /// The rescuer runs from the first moment a background server has a runtime.
    pub rescuer: std::sync::atomic::AtomicBool,
    /// Per session, which consumer's running head waits in `consume` on which:
    /// a cycle there would wait forever.
    pub consume_waits: Mutex<HashMap<String, HashMap<String, String>>>,
    pub snapshot_every: u64,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Inner {
    pub(crate) fn key(&self, session_id: &str) -> String {
        session_key(self.contract.name(), session_id)
    }

    /// Validate events and resolve the heads of lane-function and concurrent consumers.
    pub(crate) fn new_events(
        &self,
        session_id: &str,
        events: Vec<AppendInput>,
        cause: Option<&Cause>,
    ) -> Result<Vec<NewEvent>, A2Error> {
        events
            .into_iter()
            .map(|input| {
                self.contract.validate(&input.event_type, &input.payload)?;
                let mut targets = Vec::new();
                for consumer in self.consumers.iter().filter(|c| c.takes(&input.event_type)) {
                    let consumer_name = consumer.name().to_owned();
                    match &consumer.def.lane {
                        Lane::Log(_) => {}
                        Lane::Concurrent => targets.push(Target { consumer: consumer_name, lane: None }),
                        // No lane means: run it concurrently, not: drop it.
                        Lane::Function(lane_of) => match lane_of(session_id, &input) {
                            Some(lane) if lane.is_empty() => {
                                return Err(A2Error::InvalidArgument {
                                    message: format!(
                                        "the lane function of consumer '{consumer_name}' returned an empty lane for a \
                                         '{}' event in session '{session_id}': return a non-empty lane, or none to run it concurrently",
                                        input.event_type
                                    ),
                                })
                            }
                            lane => targets.push(Target { consumer: consumer_name, lane }),
                        },
                    }
                }
                Ok(NewEvent {
                    id: input.id.unwrap_or_else(ids::random_event_id),
                    event_type: input.event_type,
                    payload: input.payload,
                    cause: cause.cloned(),
                    targets,
                })
            })
            .collect()
    }

    /// Whether stored events give any consumer work.
    pub(crate) fn has_work(&self, events: &[NewEvent]) -> bool {
        events
            .iter()
            .any(|e| !e.targets.is_empty() || self.consumers.iter().any(|c| c.is_log() && c.takes(&e.event_type)))
    }

    pub(crate) async fn append(
        self: &Arc<Self>,
        session_id: &str,
        events: Vec<AppendInput>,
        cause: Option<Cause>,
        from_consumer: bool,
    ) -> Result<Vec<Event>, A2Error> {
        let span = tracing::info_span!(
            "a2.append",
            a2.contract = %self.contract.name(),
            a2.session_id = %session_id,
            a2.append.count = events.len(),
            a2.append.types = %events.iter().map(|e| e.event_type.as_str()).collect::<Vec<_>>().join(","),
            // The seeds also dispatch through a scheduler; this engine appends inline only.
            a2.append.mode = "inline",
            a2.append.source = if from_consumer { "consumer" } else { "external" },
            a2.append.head = tracing::field::Empty,
        );
        async {
            let new = self.new_events(session_id, events, cause.as_ref())?;
            let work = self.has_work(&new);
            let key = self.key(session_id);
            let appended = self
                .store
                .event_append(EventAppend {
                    session: key.clone(),
                    events: new,
                    consumers: self.store_consumers.clone(),
                })
                .await?;
            tracing::Span::current().record("a2.append.head", appended.head);
            if !appended.duplicate && !appended.events.is_empty() {
                self.notify(&key);
            }
            // An external append heals the session, a re-sent duplicate included: work a
            // dead process left there runs now. A run's own appends only start what they add.
            if work || !from_consumer {
                self.schedule_drain(session_id);
            }
            Ok(appended.events)
        }
        .instrument(span)
        .await
    }

    pub(crate) fn notify(&self, key: &str) {
        // No receiver is fine: nobody is streaming.
        let _ = self.notices.send(AppendNotice { session: key.to_owned() });
    }

    pub(crate) async fn state(
        &self,
        session_id: &str,
        reducer: &str,
        through: Option<u64>,
        pin: Option<HeadRef>,
    ) -> Result<StateAt, A2Error> {
        let reducer = self.contract.reducer_named(reducer)?;
        let span = tracing::info_span!(
            "a2.state",
            a2.contract = %self.contract.name(),
            a2.session_id = %session_id,
            a2.state.reducer = %reducer.name,
            a2.state.through = tracing::field::Empty,
            a2.state.snapshot = tracing::field::Empty,
            a2.state.snapshot_index = tracing::field::Empty,
            a2.state.folded = tracing::field::Empty,
            a2.state.index = tracing::field::Empty,
        );
        async {
            let key = self.key(session_id);
            let summary = self.store.session_get(&key).await?;
            let (head, clear_index) = summary.map_or((0, 0), |s| (s.head, s.clear_index));
            let through = through.unwrap_or(head).min(head);
            tracing::Span::current().record("a2.state.through", through);
            if through <= clear_index {
                return Ok(StateAt { state: reducer.initial.clone(), index: clear_index });
            }
            let found = self
                .store
                .snapshot_get(SnapshotGet { session: key.clone(), reducer: reducer.name.clone(), at_most: through })
                .await?;
            let outcome = match &found {
                None => "miss",
                Some(s) if reducer.state_check.as_ref().is_some_and(|check| !check(&s.state)) => "rejected",
                Some(_) => "hit",
            };
            tracing::Span::current().record("a2.state.snapshot", outcome);
            let snapshot = found.filter(|_| outcome == "hit");
            let (mut state, mut at) = match snapshot {
                Some(s) => (s.state, s.index),
                None => (reducer.initial.clone(), clear_index),
            };
            let base = at;
            tracing::Span::current().record("a2.state.snapshot_index", at);
            let mut folded = 0u64;
            while at < through {
                let params = EventList {
                    session: key.clone(),
                    after: Some(at),
                    before: Some(through + 1),
                    limit: a2_store::MAX_PAGE,
                    newest_first: false,
                };
                let page = self.store.event_list(params).await?;
                let Some(last) = page.last().map(|e| e.index) else { break };
                for event in &page {
                    state = (reducer.fold)(state, event);
                }
                folded += page.len() as u64;
                at = last;
            }
            tracing::Span::current().record("a2.state.folded", folded);
            tracing::Span::current().record("a2.state.index", at);
            // A snapshot is a cache: worth a write once enough was folded, or when a running head pins it.
            if (folded > 0 && at - base >= self.snapshot_every) || pin.is_some() {
                self.store
                    .snapshot_put(SnapshotPut {
                        session: key,
                        reducer: reducer.name.clone(),
                        index: at,
                        state: state.clone(),
                        pin,
                    })
                    .await?;
            }
            Ok(StateAt { state, index: at })
        }
        .instrument(span)
        .await
    }

    pub(crate) async fn redrive(
        self: &Arc<Self>,
        session_id: &str,
        consumer: &str,
        index: u64,
        action: RedriveAction,
    ) -> Result<bool, A2Error> {
        if index == 0 {
            return Err(A2Error::InvalidArgument { message: "redrive requires a positive index".into() });
        }
        let span = tracing::info_span!(
            "a2.redrive",
            a2.contract = %self.contract.name(),
            a2.session_id = %session_id,
            a2.redrive.consumer = %consumer,
            a2.redrive.index = index,
            a2.redrive.action = ?action,
            a2.redrive.redriven = tracing::field::Empty,
        );
        async {
            let params = a2_store::DeadLetterRedrive {
                session: self.key(session_id),
                consumer: consumer.to_owned(),
                index,
                action,
                audit: None,
            };
            let redriven = self.store.dead_letter_redrive(params).await?;
            tracing::Span::current().record("a2.redrive.redriven", redriven);
            if redriven {
                self.schedule_drain(session_id);
            }
            Ok(redriven)
        }
        .instrument(span)
        .await
    }

    /// Keep the store's consumer totals fresh while this server works in the background.
    fn start_refresher(self: &Arc<Self>) {
        if self.refresher.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let inner = Arc::downgrade(self);
        let (every, shutdown) = (self.timings.totals_refresh, self.shutdown.clone());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(every) => {},
                    () = shutdown.cancelled() => return,
                }
                let Some(inner) = inner.upgrade() else { return };
                if let Err(error) = inner.store.consumer_totals_refresh().await {
                    tracing::warn!(code = error.code(), %error, "could not refresh the kept consumer totals");
                }
                inner.prune_attempts().await;
            }
        });
    }

    /// Keep the attempt history within its retention: each head its newest
    /// attempts, a dead-lettered head all of its own; a page of sessions a call.
    async fn prune_attempts(&self) {
        let mut after = None;
        loop {
            let params = a2_store::AttemptPrune {
                contract: self.contract.name().to_owned(),
                after,
                sessions: a2_store::MAX_PAGE,
                keep: a2_store::ATTEMPTS_KEPT_PER_HEAD,
            };
            match self.store.attempt_prune(params).await {
                Ok(a2_store::AttemptPruned { next: Some(next), .. }) => after = Some(next),
                Ok(_) => return,
                Err(error) => {
                    tracing::warn!(code = error.code(), %error, "could not prune the attempt history; trying again later");
                    return;
                }
            }
        }
    }

    /// Look for work a dead process left, on start and every `rescue_every`,
    /// and drain each session that has some. Holds the server only while it looks.
    pub(crate) fn start_rescuer(self: &Arc<Self>) {
        if !self.background || self.consumers.is_empty() || self.rescuer.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        let inner = Arc::downgrade(self);
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            loop {
                let Some(strong) = inner.upgrade() else { return };
                strong.rescue().await;
                let every = strong.timings.rescue_every;
                drop(strong);
                tokio::select! {
                    () = tokio::time::sleep(every) => {},
                    () = shutdown.cancelled() => return,
                }
            }
        });
    }

    /// One pass of the rescuer: every session with runnable work gets a drain.
    async fn rescue(self: &Arc<Self>) {
        let consumers: Vec<String> = self.consumers.iter().map(|c| c.name().to_owned()).collect();
        let mut after = None;
        loop {
            let params = a2_store::SessionsRunnable {
                contract: self.contract.name().to_owned(),
                consumers: consumers.clone(),
                after,
                limit: a2_store::MAX_PAGE,
            };
            let page = match self.store.session_list_runnable(params).await {
                Ok(page) => page,
                Err(error) => {
                    tracing::warn!(code = error.code(), %error, "could not look for stranded work; trying again later");
                    return;
                }
            };
            for session_id in &page.sessions {
                self.schedule_drain(session_id);
            }
            match page.scanned_through {
                Some(through) => after = Some(through),
                None => return,
            }
        }
    }

    /// Start (or re-arm) the background drain of a session.
    pub(crate) fn schedule_drain(self: &Arc<Self>, session_id: &str) {
        if !self.background || self.shutdown.is_cancelled() {
            return;
        }
        self.start_refresher();
        self.start_rescuer();
        let slot = {
            let mut drains = self.drains.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(slot) = drains.get(session_id) {
                slot.again.store(true, std::sync::atomic::Ordering::SeqCst);
                slot.wake.notify_one();
                return;
            }
            let slot = Arc::new(DrainSlot::default());
            drains.insert(session_id.to_owned(), slot.clone());
            slot
        };
        let inner = Arc::downgrade(self);
        let session_id = session_id.to_owned();
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = crate::drain::background(inner, session_id, slot) => {},
                () = shutdown.cancelled() => {},
            }
        });
    }
}

/// A pause that a drain error waits before trying again.
pub(crate) const DRAIN_ERROR_PAUSE: Duration = Duration::from_secs(1);
