//! The server: a contract bound to a store and the consumers that react to
//! its events; sessions are handles onto it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2_store::{
    session_key, Cause, Cleared, Clock, CursorWake, Event, EventAppend, EventList, HeadRef, NewEvent, RedriveAction,
    SessionClear, SnapshotGet, SnapshotPut, Store, StoreConsumer, Target,
};
use serde_json::Value;
use tokio::sync::{broadcast, Notify};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::drain::{DrainOptions, DrainResult, DrainTimings};
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
    /// The kept-totals refresher runs once the server first drains in the background.
    pub refresher: std::sync::atomic::AtomicBool,
    /// The rescuer runs from the first moment a background server has a runtime.
    pub rescuer: std::sync::atomic::AtomicBool,
    /// Per session, which consumer's running head waits in `consume` on which:
    /// a cycle there would wait forever.
    pub consume_waits: Mutex<HashMap<String, HashMap<String, String>>>,
    pub snapshot_every: u64,
}

/// A run's wait in `consume`, recorded while it lasts. One that would close
/// a cycle is not recorded: it may only return what is already done.
pub(crate) struct ConsumeWait {
    inner: Arc<Inner>,
    session: String,
    recorded: Option<String>,
    /// The waiter, when waiting would close a cycle.
    pub cycle: Option<String>,
}

impl ConsumeWait {
    fn record(inner: &Arc<Inner>, session_id: &str, waiter: Option<&str>, target: &str) -> Self {
        let mut wait = Self { inner: inner.clone(), session: session_id.to_owned(), recorded: None, cycle: None };
        let Some(waiter) = waiter else { return wait };
        let mut all = inner.consume_waits.lock().unwrap_or_else(|p| p.into_inner());
        let waits = all.entry(session_id.to_owned()).or_default();
        let mut next = Some(target.to_owned());
        while let Some(name) = next {
            if name == waiter {
                wait.cycle = Some(waiter.to_owned());
                return wait;
            }
            next = waits.get(&name).cloned();
        }
        waits.insert(waiter.to_owned(), target.to_owned());
        wait.recorded = Some(waiter.to_owned());
        wait
    }
}

impl Drop for ConsumeWait {
    fn drop(&mut self) {
        let Some(waiter) = self.recorded.take() else { return };
        let mut all = self.inner.consume_waits.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(waits) = all.get_mut(&self.session) {
            waits.remove(&waiter);
            if waits.is_empty() {
                all.remove(&self.session);
            }
        }
    }
}

/// Builds a [`Server`].
pub struct ServerBuilder {
    contract: Contract,
    store: Arc<dyn Store>,
    consumers: Vec<Consumer>,
    timings: DrainTimings,
    background: bool,
    max_running: usize,
    snapshot_every: u64,
}

impl ServerBuilder {
    /// Write a reducer's snapshot once a read folded this many events past
    /// the last one (default 100), not on every read; reads a running head
    /// pins are written whatever the count.
    pub fn snapshot_every(mut self, events: u64) -> Self {
        self.snapshot_every = events.max(1);
        self
    }

    /// At most this many heads run at once across every session (default 256):
    /// more would only queue on the store's connections.
    pub fn max_running(mut self, max_running: usize) -> Self {
        self.max_running = max_running.max(1);
        self
    }

    pub fn consumer(mut self, consumer: Consumer) -> Self {
        self.consumers.push(consumer);
        self
    }

    pub fn consumers(mut self, consumers: impl IntoIterator<Item = Consumer>) -> Self {
        self.consumers.extend(consumers);
        self
    }

    pub fn timings(mut self, timings: DrainTimings) -> Self {
        self.timings = timings;
        self
    }

    /// Whether appends start background drains (default: yes). A server that
    /// only inspects, or moves consumers with `consume`, turns it off.
    pub fn run_in_background(mut self, background: bool) -> Self {
        self.background = background;
        self
    }

    pub fn build(self) -> Result<Server, A2Error> {
        let mut names = std::collections::HashSet::new();
        for consumer in &self.consumers {
            consumer.check_against(&self.contract)?;
            if !names.insert(consumer.name().to_owned()) {
                return Err(A2Error::invalid_consumer(format!("two consumers are named '{}'", consumer.name())));
            }
        }
        let (notices, _) = broadcast::channel(1024);
        let store_consumers = self.consumers.iter().map(Consumer::store_consumer).collect();
        let server = Server {
            inner: Arc::new(Inner {
                clock: self.store.clock(),
                contract: self.contract,
                store: self.store,
                consumers: self.consumers,
                store_consumers,
                timings: self.timings,
                background: self.background,
                notices,
                drains: Mutex::new(HashMap::new()),
                shutdown: CancellationToken::new(),
                running: Arc::new(tokio::sync::Semaphore::new(self.max_running)),
                refresher: std::sync::atomic::AtomicBool::new(false),
                rescuer: std::sync::atomic::AtomicBool::new(false),
                consume_waits: Mutex::new(HashMap::new()),
                snapshot_every: self.snapshot_every,
            }),
        };
        // Built inside a runtime: look for work left by dead processes from the start.
        if tokio::runtime::Handle::try_current().is_ok() {
            server.inner.start_rescuer();
        }
        Ok(server)
    }
}

/// A contract implemented over a store.
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("contract", &self.inner.contract.name()).finish_non_exhaustive()
    }
}

impl Server {
    pub fn builder(contract: Contract, store: Arc<dyn Store>) -> ServerBuilder {
        ServerBuilder {
            contract,
            store,
            consumers: Vec::new(),
            timings: DrainTimings::default(),
            background: true,
            max_running: 256,
            snapshot_every: 100,
        }
    }

    /// A builder on the store this environment defaults to (`A2_ENV`): the
    /// SQLite dev file in development, memory in tests; production must
    /// name its store, so there this is `STORE_NOT_CONFIGURED`.
    pub async fn builder_from_env(contract: Contract) -> Result<ServerBuilder, A2Error> {
        let store = crate::resolve_store(crate::Environment::from_env()?, None, &crate::dev_store_path()).await?;
        Ok(Self::builder(contract, store))
    }

    pub fn contract(&self) -> &Contract {
        &self.inner.contract
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// The consumer this server runs under that name.
    pub fn consumer(&self, name: &str) -> Option<Consumer> {
        self.inner.consumers.iter().find(|c| c.name() == name).cloned()
    }

    pub fn session(&self, id: &str) -> Result<Session, A2Error> {
        a2_store::validate_session_id(id)
            .map_err(|e| A2Error::InvalidSessionId { id: id.to_owned(), reason: e.to_string() })?;
        Ok(Session { inner: self.inner.clone(), id: id.to_owned() })
    }

    /// Stop background drains; running heads are abandoned and their leases lapse.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// One session of the server's contract.
#[derive(Clone)]
pub struct Session {
    pub(crate) inner: Arc<Inner>,
    pub(crate) id: String,
}

impl Session {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Append external events atomically; ids left out get a random one.
    pub async fn append(&self, events: Vec<AppendInput>) -> Result<Vec<Event>, A2Error> {
        for event in &events {
            if let Some(id) = &event.id {
                ids::validate_external_id(id)?;
            }
        }
        let events = events
            .into_iter()
            .map(|mut e| {
                e.id.get_or_insert_with(ids::random_event_id);
                e
            })
            .collect();
        self.inner.append(&self.id, events, None, false).await
    }

    /// A reader that yields every event after `after`, waiting for new ones.
    pub fn stream(&self, after: u64) -> EventStream {
        EventStream {
            inner: self.inner.clone(),
            session: self.id.clone(),
            after,
            buffer: std::collections::VecDeque::new(),
            notices: self.inner.notices.subscribe(),
            changes: self.inner.store.changes(),
        }
    }

    /// A reducer's state through `through` (default: the head), with the index it reflects.
    pub async fn state(&self, reducer: &str, through: Option<u64>) -> Result<StateAt, A2Error> {
        self.inner.state(&self.id, reducer, through, None).await
    }

    /// Clear through the head, only if the head is `if_last_index` when given.
    pub async fn clear(&self, if_last_index: Option<u64>) -> Result<Cleared, A2Error> {
        let key = self.inner.key(&self.id);
        Ok(self.inner.store.session_clear(SessionClear { session: key, if_last_index, audit: None }).await?)
    }

    /// Run a log consumer until its cursor passes `through` (default: the head now).
    pub async fn consume(&self, consumer: &Consumer, through: Option<u64>) -> Result<u64, A2Error> {
        self.inner.consume(&self.id, consumer, through, None, None).await
    }

    /// `consume`, whose wait `cancel` stops with `CANCELLED`; a run already
    /// in progress carries on, and so does what it starts.
    pub async fn consume_until_cancelled(
        &self,
        consumer: &Consumer,
        through: Option<u64>,
        cancel: CancellationToken,
    ) -> Result<u64, A2Error> {
        self.inner.consume(&self.id, consumer, through, None, Some(cancel)).await
    }

    /// Retry or skip a dead head; `false` when it is not dead.
    pub async fn redrive(&self, consumer: &str, index: u64, action: RedriveAction) -> Result<bool, A2Error> {
        self.inner.redrive(&self.id, consumer, index, action).await
    }

    /// Drain the session here and now, returning how it ended.
    pub async fn drain(&self) -> Result<DrainResult, A2Error> {
        crate::drain::run_drain(&self.inner, &self.id, DrainOptions::default()).await
    }
}

/// Every event of a session after a point, in order, as it is appended.
pub struct EventStream {
    inner: Arc<Inner>,
    session: String,
    after: u64,
    buffer: std::collections::VecDeque<Event>,
    notices: broadcast::Receiver<AppendNotice>,
    /// Appends from other processes, where the store can tell.
    changes: Option<broadcast::Receiver<String>>,
}

impl EventStream {
    /// The next event; waits for an append (or polls, for other processes).
    pub async fn next(&mut self) -> Result<Event, A2Error> {
        loop {
            if let Some(event) = self.buffer.pop_front() {
                self.after = event.index;
                return Ok(event);
            }
            let page = self.inner.history(&self.session, self.after, 100).await?;
            if !page.is_empty() {
                self.buffer.extend(page);
                continue;
            }
            let key = self.inner.key(&self.session);
            let poll = tokio::time::sleep(self.inner.timings.stream_poll);
            tokio::pin!(poll);
            loop {
                let change = async {
                    match self.changes.as_mut() {
                        Some(changes) => changes.recv().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    notice = self.notices.recv() => match notice {
                        Ok(n) if n.session != key => continue,
                        _ => break,
                    },
                    change = change => match change {
                        Ok(changed) if changed != key => continue,
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => break,
                        Err(broadcast::error::RecvError::Closed) => self.changes = None,
                    },
                    () = &mut poll => break,
                }
            }
        }
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

    pub(crate) async fn history(&self, session_id: &str, after: u64, limit: u32) -> Result<Vec<Event>, A2Error> {
        let params =
            EventList { session: self.key(session_id), after: Some(after), before: None, limit, newest_first: false };
        let mut events = self.store.event_list(params).await?;
        for event in &mut events {
            event.session = session_id.to_owned();
        }
        Ok(events)
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

    pub(crate) async fn consume(
        self: &Arc<Self>,
        session_id: &str,
        consumer: &Consumer,
        through: Option<u64>,
        waiter: Option<&str>,
        cancel: Option<CancellationToken>,
    ) -> Result<u64, A2Error> {
        if !consumer.is_log() {
            return Err(A2Error::invalid_consumer(format!(
                "consumer '{}' needs a string lane to be consumed: only then does it have one position",
                consumer.name()
            )));
        }
        consumer.check_against(&self.contract)?;
        if let Some(own) = self.consumers.iter().find(|c| c.name() == consumer.name()) {
            if !Arc::ptr_eq(&own.def, &consumer.def) {
                return Err(A2Error::invalid_consumer(format!(
                    "this server runs a different consumer named '{}'",
                    consumer.name()
                )));
            }
        }
        // Checked and recorded before any await, so two runs cannot both pass.
        let wait = ConsumeWait::record(self, session_id, waiter, consumer.name());
        let span = tracing::info_span!(
            "a2.consume",
            a2.contract = %self.contract.name(),
            a2.session_id = %session_id,
            a2.consume.consumer = %consumer.name(),
            a2.consume.through = tracing::field::Empty,
            a2.consume.index = tracing::field::Empty,
            a2.consume.drains = tracing::field::Empty,
        );
        let nested = waiter.is_some();
        let result = self.consume_loop(session_id, consumer, through, &wait, nested, cancel).instrument(span).await;
        drop(wait);
        result
    }

    async fn consume_loop(
        self: &Arc<Self>,
        session_id: &str,
        consumer: &Consumer,
        through: Option<u64>,
        wait_record: &ConsumeWait,
        nested: bool,
        cancel: Option<CancellationToken>,
    ) -> Result<u64, A2Error> {
        let cancelled = || async {
            match &cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let wake = CursorWake { session: self.key(session_id), consumer: consumer.store_consumer() };
        let mut woken = self.store.cursor_wake(wake.clone()).await?;
        let through = through.unwrap_or(woken.session_head).min(woken.session_head);
        tracing::Span::current().record("a2.consume.through", through);
        let done = |next: Option<u64>| next.is_none_or(|n| n > through);
        if let Some(waiter) = wait_record.cycle.as_deref() {
            if !done(woken.next) {
                return Err(A2Error::ConsumeCycle {
                    waiter: waiter.to_owned(),
                    consumer: consumer.name().to_owned(),
                    session: session_id.to_owned(),
                    through,
                });
            }
        }
        let mut drains = 0u32;
        let mut wait = self.timings.consume_wait_min;
        while !done(woken.next) {
            if cancel.as_ref().is_some_and(CancellationToken::is_cancelled) {
                return Err(A2Error::Cancelled { message: format!("consume of '{}' was cancelled", consumer.name()) });
            }
            if woken.failed_at.is_some() {
                return Err(A2Error::ConsumerDeadLettered {
                    consumer: consumer.name().to_owned(),
                    session: session_id.to_owned(),
                    index: woken.next.unwrap_or(0),
                    last_error: woken
                        .last_error
                        .clone()
                        .unwrap_or_else(|| "every attempt ended before it finished".into()),
                });
            }
            drains += 1;
            let options = DrainOptions { only: Some(consumer.clone()), through: Some(through), nested };
            let mut drain = crate::drain::spawn_drain(self, session_id, options);
            tokio::select! {
                joined = &mut drain => {
                    joined.unwrap_or_else(|join| Err(A2Error::StoreUnavailable { message: format!("the drain's task ended: {join}") }))?;
                }
                () = cancelled() => {
                    // The wait stops; the drain and its running heads carry on, and what they
                    // append still reaches the server's consumers.
                    let inner = self.clone();
                    let id = session_id.to_owned();
                    tokio::spawn(async move {
                        let _ = drain.await;
                        inner.schedule_drain(&id);
                    });
                    return Err(A2Error::Cancelled { message: format!("consume of '{}' was cancelled", consumer.name()) });
                }
            }
            let before = woken;
            woken = self.store.cursor_wake(wake.clone()).await?;
            let moved = woken.next != before.next || woken.attempt_count != before.attempt_count;
            if done(woken.next) || moved {
                wait = self.timings.consume_wait_min;
                continue;
            }
            // Another invocation holds the head, or it waits out a failure.
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = cancelled() => {}
            }
            wait = (wait * 2).min(self.timings.consume_wait_max);
        }
        if drains > 0 {
            self.schedule_drain(session_id);
        }
        let index = woken.next.map_or(woken.session_head, |n| n - 1);
        let span = tracing::Span::current();
        span.record("a2.consume.index", index);
        span.record("a2.consume.drains", drains);
        Ok(index)
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
            }
        });
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
