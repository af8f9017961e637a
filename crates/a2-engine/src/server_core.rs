//! The part of a server that its sessions, runs and drains share: the
//! contract, the store, the consumers and the run permits, behind methods;
//! and what every handle does through it (validate and append, fold state,
//! redrive). Background work is not here: a session that may have work is
//! *woken*, and the background service above decides what to drain.

use a2_store::SessionKey;
use std::sync::Arc;

use a2_store::{
    session_key, Cause, Clock, Event, EventAppend, EventList, HeadRef, Millis, NewEvent, RedriveAction, ScheduledBy,
    SnapshotGet, SnapshotPut, Store, StoreConsumer, Target,
};
use tokio::sync::{broadcast, mpsc, Notify, Semaphore};
use tokio_util::sync::{CancellationToken, DropGuard};
use tracing::Instrument;

use crate::consume_waits::ConsumeWaits;
use crate::consumer::LaneFn;
use crate::push::PushValidator;
use crate::scheduler::Scheduler;
use crate::signals::{AppendNotice, SessionSignals};
use crate::state_cache::{CachedState, StateCache};
use crate::timings::DrainTimings;
use crate::write_back::WriteBacks;
use crate::{ids, A2Error, AppendInput, Consumer, Contract, Lane, StateAt};

/// Names the event at an ordinal of an append that was given no id.
pub(crate) type IdFor<'a> = dyn Fn(usize) -> String + Send + Sync + 'a;

/// A random id for each event an external append gave none.
pub(crate) fn random_ids(_: usize) -> String {
    ids::random_event_id()
}

/// A lane function's answer; one that panics is an error naming it, not an unwind through the append.
fn lane_of_event(
    lane_of: &LaneFn,
    consumer: &str,
    session_id: &str,
    input: &AppendInput,
) -> Result<Option<String>, A2Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| lane_of(session_id, input))).map_err(|panic| {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        A2Error::invalid_consumer(format!(
            "the lane function of consumer '{consumer}' panicked on a '{}' event in session '{session_id}': {why}",
            input.event_type
        ))
    })
}

/// What a server is built from.
pub(crate) struct CoreParts {
    pub contract: Contract,
    pub store: Arc<dyn Store>,
    pub consumers: Vec<Consumer>,
    pub timings: DrainTimings,
    pub max_running: usize,
    pub snapshot_every: u64,
    /// Whether appends wake background drains.
    pub background: bool,
    /// Cancelled when the core is dropped: the background service stops with it.
    pub stop_on_drop: CancellationToken,
    /// Where `session.schedule` puts its tasks.
    pub scheduler: Arc<dyn Scheduler>,
    /// A scheduler was configured explicitly (`ServerBuilder::scheduler`):
    /// claims and external appends arm the drain watchdog (unless
    /// `DrainTimings::watchdog` is off), and `append_dispatch` is allowed.
    pub scheduler_configured: bool,
    /// How long a presence value lives without a refreshing write.
    pub presence_ttl: std::time::Duration,
    /// Sees every push before it is written.
    pub push_validator: Option<PushValidator>,
    /// The app's version, for the process registry.
    pub app_version: Option<String>,
}

pub(crate) struct ServerCore {
    contract: Contract,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    consumers: Vec<Consumer>,
    store_consumers: Vec<StoreConsumer>,
    timings: DrainTimings,
    notices: broadcast::Sender<AppendNotice>,
    /// Heads running at once across every drain of this server.
    running: Arc<Semaphore>,
    max_running: u32,
    consume_waits: ConsumeWaits,
    snapshot_every: u64,
    /// Sessions that may have work, for the background service; `None` when
    /// the server does not drain in the background.
    wake: Option<mpsc::UnboundedSender<String>>,
    /// Cancelled by `Server::shutdown` (and when the core is dropped): drains stop.
    stopping: CancellationToken,
    scheduler: Arc<dyn Scheduler>,
    scheduler_configured: bool,
    watchdog: bool,
    presence_ttl: std::time::Duration,
    push_validator: Option<PushValidator>,
    /// The newest state folded here per (session, reducer).
    states: Arc<StateCache>,
    /// Unpinned snapshot writes, off the reads' path.
    write_backs: WriteBacks,
    /// Wakes the background's delivery loop when a task is due before its next look.
    deliveries: Arc<Notify>,
    /// Due times of tasks scheduled here within a poll and not yet looked at
    /// by a delivery pass: the loop sleeps until the first rather than a whole poll.
    soon_due: std::sync::Mutex<std::collections::BTreeSet<Millis>>,
    /// The watchdog slots this process armed, by session: one task per (session, slot) here.
    watchdog_slots: std::sync::Mutex<std::collections::HashMap<String, (Millis, WatchdogArm)>>,
    /// This server's id in the process registry; its drains lease as `<id>/<drain>`.
    server_id: String,
    started_at: Millis,
    app_version: Option<String>,
    _stop_on_drop: DropGuard,
}

/// One watchdog slot's arm: set once the task is kept; shared by every caller of the slot.
pub(crate) type WatchdogArm = Arc<tokio::sync::OnceCell<()>>;

/// How an append's drain starts: here and now (`inline`, the default), or
/// through the scheduler (`dispatch`: a drain task, as the seeds' `append.dispatch`).
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum AppendMode {
    Inline,
    Dispatch,
}

impl AppendMode {
    fn name(self) -> &'static str {
        match self {
            Self::Inline => "inline",
            Self::Dispatch => "dispatch",
        }
    }
}

/// Who appends: a run (its appends start only what they add), an external
/// caller (its appends heal the session and arm the watchdog), or the
/// scheduler's delivery (heals, arms nothing: its task is the arm).
#[derive(Clone, Copy, PartialEq)]
enum Source {
    Consumer,
    External,
    Scheduler,
}

impl Source {
    fn name(self) -> &'static str {
        match self {
            Self::Consumer => "consumer",
            Self::External => "external",
            Self::Scheduler => "scheduler",
        }
    }
}

/// A scheduled task's delivery, as its append sees it.
#[derive(Clone, Copy)]
pub(crate) struct FromTask<'a> {
    pub by: &'a ScheduledBy,
    /// The index of the event whose run scheduled the task, if a run did.
    pub trigger_index: Option<u64>,
}

impl ServerCore {
    /// The core, and the receiving end of its wakes when it drains in the background.
    pub(crate) fn new(parts: CoreParts) -> (Arc<Self>, Option<mpsc::UnboundedReceiver<String>>) {
        let (notices, _) = broadcast::channel(1024);
        let (wake, wakes) = if parts.background {
            let (tx, rx) = mpsc::unbounded_channel();
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let clock_now = parts.store.clock().now_ms();
        let watchdog = parts.scheduler_configured && parts.timings.watchdog;
        let core = Self {
            clock: parts.store.clock(),
            store_consumers: parts.consumers.iter().map(Consumer::store_consumer).collect(),
            contract: parts.contract,
            store: parts.store,
            consumers: parts.consumers,
            timings: parts.timings,
            notices,
            running: Arc::new(Semaphore::new(parts.max_running)),
            max_running: u32::try_from(parts.max_running).unwrap_or(u32::MAX),
            consume_waits: ConsumeWaits::default(),
            snapshot_every: parts.snapshot_every,
            wake,
            stopping: parts.stop_on_drop.clone(),
            scheduler: parts.scheduler,
            scheduler_configured: parts.scheduler_configured,
            watchdog,
            presence_ttl: parts.presence_ttl,
            push_validator: parts.push_validator,
            states: Arc::new(StateCache::default()),
            write_backs: WriteBacks::default(),
            deliveries: Arc::new(Notify::new()),
            soon_due: std::sync::Mutex::new(std::collections::BTreeSet::new()),
            watchdog_slots: std::sync::Mutex::new(std::collections::HashMap::new()),
            server_id: uuid::Uuid::new_v4().to_string(),
            started_at: clock_now,
            app_version: parts.app_version,
            _stop_on_drop: parts.stop_on_drop.drop_guard(),
        };
        (Arc::new(core), wakes)
    }

    pub(crate) fn server_id(&self) -> &str {
        &self.server_id
    }

    /// What every lease holder of this server's drains starts with.
    pub(crate) fn holder_prefix(&self) -> String {
        format!("{}/", self.server_id)
    }

    pub(crate) fn started_at(&self) -> Millis {
        self.started_at
    }

    pub(crate) fn app_version(&self) -> Option<&str> {
        self.app_version.as_deref()
    }

    pub(crate) fn key(&self, session_id: &str) -> SessionKey {
        session_key(self.contract.name(), session_id)
    }

    pub(crate) fn contract(&self) -> &Contract {
        &self.contract
    }

    pub(crate) fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    pub(crate) fn consumers(&self) -> &[Consumer] {
        &self.consumers
    }

    /// The consumers as the store needs to know them for an append.
    pub(crate) fn store_consumers(&self) -> &[StoreConsumer] {
        &self.store_consumers
    }

    pub(crate) fn timings(&self) -> &DrainTimings {
        &self.timings
    }

    /// Permits for heads running at once across every drain of this server.
    pub(crate) fn run_permits(&self) -> &Arc<Semaphore> {
        &self.running
    }

    /// How many run permits there are in all.
    pub(crate) fn max_running(&self) -> u32 {
        self.max_running
    }

    pub(crate) fn consume_waits(&self) -> &ConsumeWaits {
        &self.consume_waits
    }

    /// Signs that the session `key` may have grown, subscribed now.
    pub(crate) fn signals(&self, key: SessionKey) -> SessionSignals {
        SessionSignals::new(self.notices.subscribe(), self.store.changes(), key, self.timings.stream_poll)
    }

    /// Cancelled when the server shuts down: every drain abandons its heads and ends.
    pub(crate) fn stopping(&self) -> &CancellationToken {
        &self.stopping
    }

    /// Where `session.schedule` puts its tasks.
    pub(crate) fn scheduler(&self) -> &Arc<dyn Scheduler> {
        &self.scheduler
    }

    /// Whether claims arm the drain watchdog.
    pub(crate) fn watchdog(&self) -> bool {
        self.watchdog
    }

    pub(crate) fn presence_ttl(&self) -> std::time::Duration {
        self.presence_ttl
    }

    pub(crate) fn push_validator(&self) -> Option<&PushValidator> {
        self.push_validator.as_ref()
    }

    /// Wake the delivery loop for a task due at `due_at` if it would otherwise look too late.
    pub(crate) fn wake_deliveries(&self, due_at: Millis) {
        if due_at <= self.clock.now_ms() + crate::timings::millis(self.timings.scheduler_poll) {
            self.soon_due().insert(due_at);
            self.deliveries.notify_one();
        }
    }

    fn soon_due(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeSet<Millis>> {
        self.soon_due.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Before a delivery pass: what is due by now is the pass's to deliver.
    pub(crate) fn delivery_pass_starts(&self) {
        let now = self.clock.now_ms();
        let mut soon = self.soon_due();
        *soon = soon.split_off(&now.saturating_add(1));
    }

    /// How long the delivery loop may sleep: a poll, or less when a task
    /// scheduled here is due sooner (a 300 ms timer lands at 300 ms, not at
    /// the next poll; so does one at 100 ms and another at 300 ms).
    pub(crate) fn delivery_wait(&self) -> std::time::Duration {
        let poll = self.timings.scheduler_poll;
        let Some(first) = self.soon_due().first().copied() else { return poll };
        let until = first.saturating_sub(self.clock.now_ms());
        std::time::Duration::from_millis(u64::try_from(until).unwrap_or(0)).min(poll)
    }

    /// The slot armed for `session_id` at `slot` or later, and its arm, shared
    /// by every caller of that slot (or a later one already armed): the first to await
    /// it schedules the task, the others wait on the same arm, and one that
    /// failed is tried again by the next. A session keeps only its latest slot,
    /// so the map holds one entry a session that claimed.
    pub(crate) fn watchdog_slot(&self, session_id: &str, slot: Millis) -> (Millis, WatchdogArm) {
        let mut slots = self.watchdog_slots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((armed, arm)) = slots.get(session_id) {
            if *armed >= slot {
                return (*armed, arm.clone());
            }
        }
        if slots.len() >= 4_096 {
            // Slots already due were delivered or are due now: forget them.
            let now = self.clock.now_ms();
            slots.retain(|_, (armed, _)| *armed > now);
        }
        let arm = WatchdogArm::default();
        slots.insert(session_id.to_owned(), (slot, arm.clone()));
        (slot, arm)
    }

    /// Notified when a task due soon was scheduled here.
    pub(crate) fn deliveries(&self) -> Arc<Notify> {
        self.deliveries.clone()
    }

    /// Ask the server's background drains to look at a session; nothing when
    /// the server does not drain in the background (or is shutting down).
    pub(crate) fn wake(&self, session_id: &str) {
        if let Some(wake) = &self.wake {
            // A closed channel means the background service has stopped: nothing left to wake.
            let _ = wake.send(session_id.to_owned());
        }
    }

    /// Validate events and resolve the heads of lane-function and concurrent consumers.
    /// `id_for(ordinal)` names an event the caller gave no id, after the lane
    /// functions ran: a lane function sees an id only when the caller gave one.
    pub(crate) fn new_events(
        &self,
        session_id: &str,
        events: Vec<AppendInput>,
        cause: Option<&Cause>,
        scheduled_by: Option<&ScheduledBy>,
        id_for: &IdFor<'_>,
    ) -> Result<Vec<NewEvent>, A2Error> {
        let batch_size = u32::try_from(events.len()).unwrap_or(u32::MAX);
        events
            .into_iter()
            .enumerate()
            .map(|(ordinal, input)| {
                self.contract.validate(&input.event_type, &input.payload)?;
                let mut targets = Vec::new();
                for consumer in self.consumers.iter().filter(|c| c.takes(&input.event_type)) {
                    let consumer_name = consumer.name().to_owned();
                    match &consumer.def.lane {
                        Lane::Log(_) => {}
                        Lane::Concurrent => targets.push(Target { consumer: consumer_name, lane: None }),
                        // No lane means: run it concurrently, not: drop it.
                        Lane::Function(lane_of) => match lane_of_event(lane_of, &consumer_name, session_id, &input)? {
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
                // A run's event named by the engine carries the size of its batch; one the caller named does not.
                let derived = input.id.is_none();
                let cause = cause.map(|c| Cause { batch_size: derived.then_some(batch_size), ..c.clone() });
                Ok(NewEvent {
                    id: input.id.unwrap_or_else(|| id_for(ordinal)),
                    event_type: input.event_type,
                    payload: input.payload,
                    cause,
                    scheduled_by: scheduled_by.cloned(),
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
        &self,
        session_id: &str,
        events: Vec<AppendInput>,
        cause: Option<Cause>,
        id_for: &IdFor<'_>,
    ) -> Result<Vec<Event>, A2Error> {
        self.append_from(session_id, events, cause, None, id_for).await
    }

    /// [`Self::append`], for a scheduled task's delivery as well: its events
    /// are marked with the task, and a clear through the event whose run
    /// scheduled it refuses the delivery like the run's own append.
    pub(crate) async fn append_from(
        &self,
        session_id: &str,
        events: Vec<AppendInput>,
        cause: Option<Cause>,
        task: Option<FromTask<'_>>,
        id_for: &IdFor<'_>,
    ) -> Result<Vec<Event>, A2Error> {
        let source = match (&cause, &task) {
            (Some(_), _) => Source::Consumer,
            (None, Some(_)) => Source::Scheduler,
            (None, None) => Source::External,
        };
        let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
        let span = self.append_span(session_id, &types, source.name(), AppendMode::Inline);
        async {
            if events.is_empty() {
                return Err(A2Error::InvalidArgument { message: "append requires at least one event".into() });
            }
            let new = self.new_events(session_id, events, cause.as_ref(), task.as_ref().map(|t| t.by), id_for)?;
            // A run's append names its trigger: the store refuses it past a clear, atomically.
            let origin = cause.as_ref().map(|c| c.index).or(task.and_then(|t| t.trigger_index));
            self.write_new(session_id, new, origin, source, AppendMode::Inline).await
        }
        .instrument(span)
        .await
    }

    /// The seeds' `append.dispatch`: external events written, and their drain
    /// left to the scheduler (a drain task due now, awaited) rather than
    /// started here. Refused, before anything is written, on a server
    /// configured without a scheduler of its own.
    pub(crate) async fn append_dispatch(
        &self,
        session_id: &str,
        events: Vec<AppendInput>,
        id_for: &IdFor<'_>,
    ) -> Result<Vec<Event>, A2Error> {
        let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
        let span = self.append_span(session_id, &types, Source::External.name(), AppendMode::Dispatch);
        async {
            if !self.scheduler_configured {
                return Err(A2Error::InvalidArgument {
                    message: "append.dispatch requires a configured scheduler adapter".into(),
                });
            }
            if events.is_empty() {
                return Err(A2Error::InvalidArgument { message: "append requires at least one event".into() });
            }
            let new = self.new_events(session_id, events, None, None, id_for)?;
            self.write_new(session_id, new, None, Source::External, AppendMode::Dispatch).await
        }
        .instrument(span)
        .await
    }

    /// An external append whose events [`Self::new_events`] already made
    /// (a push, checked whole before its patch was written): written as made.
    pub(crate) async fn append_new(&self, session_id: &str, new: Vec<NewEvent>) -> Result<Vec<Event>, A2Error> {
        let types: Vec<&str> = new.iter().map(|e| e.event_type.as_str()).collect();
        let span = self.append_span(session_id, &types, Source::External.name(), AppendMode::Inline);
        self.write_new(session_id, new, None, Source::External, AppendMode::Inline).instrument(span).await
    }

    fn append_span(&self, session_id: &str, types: &[&str], source: &str, mode: AppendMode) -> tracing::Span {
        tracing::info_span!(
            "a2.append",
            a2.contract = %self.contract.name(),
            a2.session_id = %session_id,
            a2.append.count = types.len(),
            a2.append.types = %types.join(","),
            a2.append.mode = mode.name(),
            a2.append.source = source,
            a2.append.head = tracing::field::Empty,
        )
    }

    async fn write_new(
        &self,
        session_id: &str,
        new: Vec<NewEvent>,
        origin_index: Option<u64>,
        source: Source,
        mode: AppendMode,
    ) -> Result<Vec<Event>, A2Error> {
        let work = self.has_work(&new);
        let key = self.key(session_id);
        let appended = self
            .store
            .event_append(EventAppend {
                session: key.clone(),
                events: new,
                consumers: self.store_consumers.clone(),
                origin_index,
            })
            .await?;
        tracing::Span::current().record("a2.append.head", appended.head);
        if !appended.duplicate && !appended.events.is_empty() {
            self.notify(&key);
        }
        // An append from outside a run heals the session, a re-sent duplicate included: work a
        // dead process left there runs now. A run's own appends only start what they add.
        let heals = work || source != Source::Consumer;
        // What the seeds call pending work: what this append added, or a re-sent duplicate's.
        let pending = work || appended.duplicate;
        match mode {
            AppendMode::Inline if heals => {
                self.wake(session_id);
                // As the seeds: an external append that leaves work leaves a durable watchdog
                // before it answers, so the work survives this process (waited for up to a bound).
                if source == Source::External && pending && self.watchdog {
                    let expires_at = self.clock.now_ms() + crate::timings::millis(self.timings.claim_ttl);
                    if let Err(error) = self.arm_watchdog_awaited(session_id, expires_at).await {
                        tracing::warn!(a2.session_id = %session_id, code = error.code(), %error, "the append's watchdog was not armed; it answers anyway");
                    }
                }
            }
            // Every dispatch heals, as an inline append does: its drain task finds what a dead process left.
            AppendMode::Dispatch if heals => self.arm_drain_now(session_id).await?,
            AppendMode::Inline | AppendMode::Dispatch => {}
        }
        // Handed out with the session's own id, as every other read does, never the storage key.
        Ok(appended
            .events
            .into_iter()
            .map(|mut event| {
                event.session = session_id.to_owned();
                event
            })
            .collect())
    }

    /// Resolves once the snapshot writes started so far have ended.
    pub(crate) async fn snapshots_written(&self) {
        self.write_backs.settled().await;
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
        origin: Option<u64>,
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
            // A run whose trigger was cleared works on events that are gone.
            if origin.is_some_and(|o| clear_index >= o) {
                return Err(A2Error::SessionCleared { session: session_id.to_owned(), index: clear_index });
            }
            let through = through.unwrap_or(head).min(head);
            tracing::Span::current().record("a2.state.through", through);
            if through <= clear_index {
                return Ok(StateAt { state: reducer.initial.clone(), index: clear_index });
            }
            let fresh = |c: &CachedState| c.clear_index == clear_index && c.index <= through;
            // Folded here exactly this far already: answered without a turn (a pinned read writes its snapshot).
            if let Some(c) = self.states.get(key.as_str(), &reducer.name).filter(|c| fresh(c) && c.index == through) {
                if pin.is_none() {
                    tracing::Span::current().record("a2.state.snapshot", "memory");
                    tracing::Span::current().record("a2.state.folded", 0);
                    tracing::Span::current().record("a2.state.index", c.index);
                    return Ok(StateAt { state: (*c.state).clone(), index: c.index });
                }
            }
            // One fold of a session's reducer at a time: the next finds this one's.
            let _turn = self.states.turn(key.as_str(), &reducer.name).await;
            // What this process folded already, if the session was not cleared since.
            let cached = self
                .states
                .get(key.as_str(), &reducer.name)
                .filter(fresh);
            // A snapshot is a cache: one that cannot be read is a miss, and the fold answers.
            let found = match &cached {
                Some(_) => None,
                None => match self
                    .store
                    .snapshot_get(SnapshotGet { session: key.clone(), reducer: reducer.name.clone(), at_most: through })
                    .await
                {
                    Ok(found) => found,
                    Err(error) => {
                        tracing::warn!(code = error.code(), %error, "could not read a snapshot; folding from the log");
                        None
                    }
                },
            };
            let outcome = match &found {
                None if cached.is_some() => "memory",
                None => "miss",
                Some(s) if reducer.state_check.as_ref().is_some_and(|check| !check(&s.state)) => "rejected",
                Some(_) => "hit",
            };
            tracing::Span::current().record("a2.state.snapshot", outcome);
            // A rejected snapshot is rewritten by the read that folds past it (the seeds' `repairsHead`).
            let repair_at = found.as_ref().filter(|_| outcome == "rejected").map(|s| s.index);
            let mut repaired = None;
            let snapshot = found.filter(|_| outcome == "hit");
            let (mut state, mut at, mut snapshot_at) = match (cached, snapshot) {
                (Some(c), _) => ((*c.state).clone(), c.index, c.snapshot_at),
                (None, Some(s)) => (s.state, s.index, s.index),
                (None, None) => (reducer.initial.clone(), clear_index, clear_index),
            };
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
                    if Some(event.index) == repair_at {
                        repaired = Some(state.clone());
                    }
                }
                folded += page.len() as u64;
                at = last;
            }
            tracing::Span::current().record("a2.state.folded", folded);
            tracing::Span::current().record("a2.state.index", at);
            // Worth a write once enough was folded since the last one, or when a running head pins it.
            let mut writes = Vec::new();
            if (folded > 0 && at - snapshot_at >= self.snapshot_every) || pin.is_some() {
                writes.push((at, state.clone(), pin));
            }
            if let (Some(index), Some(good)) = (repair_at, repaired) {
                if writes.first().is_none_or(|(written, _, _)| *written != index) {
                    writes.push((index, good, None));
                }
            }
            // Write-back is disposable: a failure costs the next read a fold, never this read its answer.
            // A pinned write is awaited (its pin must land before its head ends and lets pins go);
            // the rest are written after the answer, off the read's path.
            let mut later = Vec::new();
            for (index, state, pin) in writes {
                let put = SnapshotPut { session: key.clone(), reducer: reducer.name.clone(), index, state, pin };
                if put.pin.is_none() {
                    later.push(put);
                    continue;
                }
                match self.store.snapshot_put(put).await {
                    // Counted only once written: a failed write is tried again by the next read that folds.
                    Ok(()) if index == at => snapshot_at = at,
                    Ok(()) => {}
                    Err(error) => {
                        tracing::warn!(code = error.code(), %error, "could not write a snapshot; the next fold tries again");
                    }
                }
            }
            let kept = CachedState { clear_index, index: at, state: Arc::new(state.clone()), snapshot_at };
            self.states.put(key.as_str(), &reducer.name, kept);
            let (states, session, name) = (self.states.clone(), key.as_str().to_owned(), reducer.name.clone());
            self.write_backs.start(self.store.clone(), later, move |index| {
                if index == at {
                    states.snapshot_written(&session, &name, clear_index, index);
                }
            });
            Ok(StateAt { state, index: at })
        }
        .instrument(span)
        .await
    }

    pub(crate) async fn redrive(
        &self,
        session_id: &str,
        consumer: &str,
        index: u64,
        action: RedriveAction,
        audit: Option<a2_store::AuditEntry>,
    ) -> Result<bool, A2Error> {
        if index == 0 {
            return Err(A2Error::InvalidArgument { message: "redrive requires a positive index".into() });
        }
        if consumer.is_empty() {
            return Err(A2Error::InvalidArgument { message: "redrive requires a consumer name".into() });
        }
        let span = tracing::info_span!(
            "a2.redrive",
            a2.contract = %self.contract.name(),
            a2.session_id = %session_id,
            a2.redrive.consumer = %consumer,
            a2.redrive.index = index,
            a2.redrive.action = match action {
                RedriveAction::Retry => "retry",
                RedriveAction::Skip => "skip",
            },
            a2.redrive.redriven = tracing::field::Empty,
        );
        async {
            let params = a2_store::DeadLetterRedrive {
                session: self.key(session_id),
                consumer: consumer.to_owned(),
                index,
                action,
                audit,
            };
            let redriven = self.store.dead_letter_redrive(params).await?;
            tracing::Span::current().record("a2.redrive.redriven", redriven);
            if redriven {
                self.wake(session_id);
            }
            Ok(redriven)
        }
        .instrument(span)
        .await
    }
}
