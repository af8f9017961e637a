//! The server: a contract bound to a store and the consumers that react to
//! its events; sessions are handles onto it.

use std::sync::Arc;
use std::time::Duration;

use a2_store::{Cleared, Event, RedriveAction, SessionClear, Store, TaskSchedule};
use tokio_util::sync::CancellationToken;

use crate::background::Background;
use crate::consumer::ScheduleWork;
use crate::drain::{run_drain, DrainOptions, DrainResult};
use crate::history::{DeadHead, DeadHeads, EventRange, EventStream, History};
use crate::presence::{PresenceFeed, PresenceMap, PresencePatch, PRESENCE_TTL};
use crate::push::{Push, PushContext, PushFuture, PushValidator};
use crate::scheduler::{Scheduler, StoreScheduler, Timing};
use crate::server_core::{random_ids, CoreParts, ServerCore};
use crate::timings::DrainTimings;
use crate::{ids, A2Error, AppendInput, Consumer, Contract, StateAt};

/// Builds a [`Server`].
pub struct ServerBuilder {
    contract: Contract,
    store: Arc<dyn Store>,
    consumers: Vec<Consumer>,
    timings: DrainTimings,
    background: bool,
    max_running: usize,
    snapshot_every: u64,
    scheduler: Option<Arc<dyn Scheduler>>,
    presence_ttl: Option<Duration>,
    push_validator: Option<PushValidator>,
    app_version: Option<String>,
}

impl ServerBuilder {
    /// The app's name and version (a release, a commit), shown beside the
    /// engine's in the process registry: which build serves which consumers.
    pub fn app_version(mut self, version: impl Into<String>) -> Self {
        self.app_version = Some(version.into()).filter(|v| !v.is_empty());
        self
    }

    /// How long a presence value lives without a refreshing write (default
    /// 60 s), counted on the store's clock. Only for a contract that declares
    /// presence fields; `build` refuses it otherwise, and refuses zero.
    pub fn presence_ttl(mut self, ttl: Duration) -> Self {
        self.presence_ttl = Some(ttl);
        self
    }

    /// Check every push (`Session::push`, the wire's push route) before it
    /// is written: called once with its events and once with its presence
    /// patch; an `Err(reason)` refuses the push whole with `PUSH_REFUSED`.
    /// The seeds' `validatePush`: where a route authorizes who writes what.
    pub fn validate_push<F, Fut>(mut self, validate: F) -> Self
    where
        F: Fn(Arc<PushContext>) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<(), String>> + Send + 'static,
    {
        self.push_validator = Some(Arc::new(move |context| -> PushFuture { Box::pin(validate(context)) }));
        self
    }

    /// Where `session.schedule` puts tasks (default: the server's own store,
    /// whose due tasks every server of the contract serves in the background).
    /// A scheduler configured here also arms the drain watchdog on every claim
    /// (unless `DrainTimings::watchdog` is off), as the seeds do when a scheduler
    /// is configured; without one, stranded work heals by appends and the rescuer.
    pub fn scheduler(mut self, scheduler: Arc<dyn Scheduler>) -> Self {
        self.scheduler = Some(scheduler);
        self
    }

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
        if let Some(ttl) = self.presence_ttl {
            if !self.contract.declares_presence() {
                return Err(A2Error::InvalidArgument {
                    message: format!(
                        "the presence option requires a contract that declares presence fields — '{}' has none",
                        self.contract.name()
                    ),
                });
            }
            if ttl.as_millis() == 0 {
                return Err(A2Error::InvalidArgument {
                    message: "presence ttl must be a positive number of milliseconds".into(),
                });
            }
        }
        let stop_on_drop = CancellationToken::new();
        let scheduler_configured = self.scheduler.is_some();
        let scheduler = self.scheduler.unwrap_or_else(|| Arc::new(StoreScheduler::new(self.store.clone())));
        let (core, wakes) = ServerCore::new(CoreParts {
            scheduler_configured,
            scheduler,
            presence_ttl: self.presence_ttl.unwrap_or(PRESENCE_TTL),
            push_validator: self.push_validator,
            app_version: self.app_version,
            contract: self.contract,
            store: self.store,
            consumers: self.consumers,
            timings: self.timings,
            max_running: self.max_running,
            snapshot_every: self.snapshot_every,
            background: self.background,
            stop_on_drop: stop_on_drop.clone(),
        });
        let background = Arc::new(Background::new(&core, wakes, stop_on_drop, self.max_running));
        // Built inside a runtime: look for work left by dead processes from the start.
        background.ensure_started();
        let server = Server { core, background };
        Ok(server)
    }
}

/// A contract implemented over a store.
#[derive(Clone)]
pub struct Server {
    core: Arc<ServerCore>,
    background: Arc<Background>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("contract", &self.core.contract().name()).finish_non_exhaustive()
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
            scheduler: None,
            presence_ttl: None,
            push_validator: None,
            app_version: None,
        }
    }

    pub fn contract(&self) -> &Contract {
        self.core.contract()
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        self.core.store()
    }

    /// The consumer this server runs under that name.
    pub fn consumer(&self, name: &str) -> Option<Consumer> {
        self.core.consumers().iter().find(|c| c.name() == name).cloned()
    }

    pub fn session(&self, id: &str) -> Result<Session, A2Error> {
        a2_store::validate_session_id(id)
            .map_err(|e| A2Error::InvalidSessionId { id: id.to_owned(), reason: e.to_string() })?;
        Ok(Session { core: self.core.clone(), background: self.background.clone(), id: id.to_owned() })
    }

    /// Deliver the contract's due scheduled tasks here and now (the
    /// background does it every `scheduler_poll`); returns how many were delivered.
    pub async fn deliver_due(&self) -> Result<usize, A2Error> {
        self.background.ensure_started();
        self.core.deliver_due(self.background.holder(), None).await
    }

    /// Deliver one task here and now if it is due and no delivery holds it:
    /// an operator's "deliver now" after making it due. Whether it was delivered.
    pub async fn deliver_task(&self, id: &str) -> Result<bool, A2Error> {
        self.background.ensure_started();
        Ok(self.core.deliver_due(self.background.holder(), Some(id)).await? == 1)
    }

    /// Deliver an append task that a scheduler of the app's own kept (the
    /// seeds' `deliverSchedulerAppend`), when it is due: through the ordinary
    /// append path, its events marked with the task, appended once however
    /// often it is delivered, a no-op past a clear of its trigger. A task of
    /// another contract, or not an append, is refused (`INVALID_ARGUMENT`).
    /// With watchdogs on, the work it appended is armed durably before this
    /// answers, and `SCHEDULER_SEND_FAILED` says the arm failed: keep the task.
    pub async fn deliver_scheduled_append(&self, task: &TaskSchedule) -> Result<(), A2Error> {
        self.background.ensure_started();
        self.core.deliver_adapter_append(task).await
    }

    /// Deliver a clear task a scheduler of the app's own kept (the seeds'
    /// `deliverSchedulerClear`): the session is cleared if its guard still
    /// holds (`cleared` says whether); another contract's task is refused.
    pub async fn deliver_scheduled_clear(&self, task: &TaskSchedule) -> Result<Cleared, A2Error> {
        self.background.ensure_started();
        self.core.deliver_adapter_clear(task).await
    }

    /// Deliver a drain task (a watchdog, an `append_dispatch`) a scheduler of
    /// the app's own kept: the session it names is drained here and now, as
    /// the seeds' scheduler handler calls `server.drain`.
    pub async fn deliver_scheduled_drain(&self, task: &TaskSchedule) -> Result<DrainResult, A2Error> {
        let session_id = self.core.adapter_drain_session(task)?;
        self.background.ensure_started();
        run_drain(&self.core, session_id, DrainOptions::default()).await
    }

    /// Resolves once the snapshot writes this server's state reads started so
    /// far have ended: a read never waits for its write-back, so a test or an
    /// orderly exit that wants the snapshots on disk waits here.
    pub async fn snapshots_written(&self) {
        self.core.snapshots_written().await;
    }

    /// Stop every drain of this server, in the background or not: none claims
    /// again, running heads are abandoned (each drain logs how many) and
    /// their leases lapse, to be charged to the attempts that ran.
    pub fn shutdown(&self) {
        self.background.shutdown();
    }

    /// `shutdown`, then wait (a few seconds at most) until this server's row
    /// in the process registry is removed: what a process about to exit
    /// calls, since its runtime ends with it and would take the removal along.
    pub async fn stop(&self) {
        self.background.stopped().await;
    }
}

/// One session of the server's contract.
#[derive(Clone)]
pub struct Session {
    core: Arc<ServerCore>,
    background: Arc<Background>,
    id: String,
}

impl Session {
    /// Write a participant's presence fields (`null` deletes one), checked
    /// whole before any is written; last writer wins per field by `at`.
    /// Never an append: no log row, no drain. `seen` defaults to 0 here.
    pub async fn set_presence(&self, patch: PresencePatch) -> Result<(), A2Error> {
        self.core.set_presence(&self.id, patch, 0).await
    }

    /// Who is here now: participant → field → value, expired values pruned.
    pub async fn presence(&self) -> Result<PresenceMap, A2Error> {
        self.core.presence(&self.id).await
    }

    /// The two-plane feed: one snapshot of the presence map, then the
    /// events after `after` and presence changes as they come. On a contract
    /// without presence fields, as in the seeds, the snapshot is empty and
    /// only events follow.
    pub fn stream_with_presence(&self, after: u64) -> PresenceFeed {
        let key = self.core.key(&self.id);
        let signals = self.core.signals(key.clone());
        let history = History::after(self.core.store().clone(), key.clone(), self.id.clone(), after);
        PresenceFeed::new(self.core.store().clone(), key, history, signals)
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// Append external events atomically; ids left out get a random one
    /// (after the lane functions ran: they see only the ids the caller gave).
    pub async fn append(&self, events: Vec<AppendInput>) -> Result<Vec<Event>, A2Error> {
        for event in &events {
            if let Some(id) = &event.id {
                ids::validate_external_id(id)?;
            }
        }
        self.background.ensure_started();
        self.core.append(&self.id, events, None, &random_ids).await
    }

    /// The seeds' `append.dispatch`: write external events and leave their
    /// drain to the scheduler (a drain task due now, armed before this
    /// answers) instead of starting it here. `INVALID_ARGUMENT` on a server
    /// built without `ServerBuilder::scheduler`; `SCHEDULER_SEND_FAILED` when
    /// the events were written but the scheduler did not take the arm.
    pub async fn append_dispatch(&self, events: Vec<AppendInput>) -> Result<Vec<Event>, A2Error> {
        for event in &events {
            if let Some(id) = &event.id {
                ids::validate_external_id(id)?;
            }
        }
        self.background.ensure_started();
        self.core.append_dispatch(&self.id, events, &random_ids).await
    }

    /// What a client pushed (the wire's push route): the server's
    /// `validate_push` sees each plane, the whole push is checked, then its
    /// patch is written and its events appended; the appended events come back.
    pub async fn push(&self, push: Push) -> Result<Vec<Event>, A2Error> {
        self.background.ensure_started();
        self.core.push(&self.id, push).await
    }

    /// Schedule `events` to be appended to this session when `timing` says;
    /// returns the task's id. Scheduling the same name again is the same
    /// task, whatever clears came between (as the seeds: outside a run the
    /// id derives from the session and the name, at clear index 0; inside
    /// one, `ctx.session.schedule` keys on the trigger and its clear index).
    /// The events are checked against the contract now.
    pub async fn schedule(&self, name: &str, timing: Timing, events: Vec<AppendInput>) -> Result<String, A2Error> {
        self.background.ensure_started();
        self.core.schedule(&self.id, name, &timing, ScheduleWork::Append(events), None).await
    }

    /// Schedule a clear of this session, only if its head is `if_last_index` then when given.
    pub async fn schedule_clear(
        &self,
        name: &str,
        timing: Timing,
        if_last_index: Option<u64>,
    ) -> Result<String, A2Error> {
        self.background.ensure_started();
        self.core.schedule(&self.id, name, &timing, ScheduleWork::Clear { if_last_index }, None).await
    }

    /// A reducer's state through `through` (default: the head), with the index it reflects.
    pub async fn state(&self, reducer: &str, through: Option<u64>) -> Result<StateAt, A2Error> {
        self.core.state(&self.id, reducer, through, None, None).await
    }

    /// Clear through the head, only if the head is `if_last_index` when given.
    pub async fn clear(&self, if_last_index: Option<u64>) -> Result<Cleared, A2Error> {
        let key = self.core.key(&self.id);
        Ok(self
            .core
            .store()
            .session_clear(SessionClear { session: key, if_last_index, audit: None, settles: None })
            .await?)
    }

    /// Run a log consumer until its cursor passes `through` (default: the head now).
    pub async fn consume(&self, consumer: &Consumer, through: Option<u64>) -> Result<u64, A2Error> {
        self.background.ensure_started();
        crate::consume::consume(&self.core, &self.id, consumer, through, None, None).await
    }

    /// `consume`, whose wait `cancel` stops with `CANCELLED`; a run already
    /// in progress carries on, and so does what it starts.
    pub async fn consume_until_cancelled(
        &self,
        consumer: &Consumer,
        through: Option<u64>,
        cancel: CancellationToken,
    ) -> Result<u64, A2Error> {
        self.background.ensure_started();
        crate::consume::consume(&self.core, &self.id, consumer, through, None, Some(cancel)).await
    }

    /// Retry or skip a dead head; `false` when it is not dead.
    pub async fn redrive(&self, consumer: &str, index: u64, action: RedriveAction) -> Result<bool, A2Error> {
        self.background.ensure_started();
        self.core.redrive(&self.id, consumer, index, action, None).await
    }

    /// [`Self::redrive`] with an audit entry written in the redrive's own
    /// transaction: the operator's path when it hosts the contract, so a
    /// Studio redrive goes through the engine's checks and span like any other.
    pub async fn redrive_audited(
        &self,
        consumer: &str,
        index: u64,
        action: RedriveAction,
        audit: a2_store::AuditEntry,
    ) -> Result<bool, A2Error> {
        self.background.ensure_started();
        self.core.redrive(&self.id, consumer, index, action, Some(audit)).await
    }

    /// Drain the session here and now, returning how it ended.
    pub async fn drain(&self) -> Result<DrainResult, A2Error> {
        self.background.ensure_started();
        run_drain(&self.core, &self.id, DrainOptions::default()).await
    }

    /// The session's events in `range`, oldest first, read as they are asked
    /// for; `INVALID_ARGUMENT` for a range whose `gte` is past its `lte`.
    pub fn history(&self, range: EventRange) -> Result<History, A2Error> {
        History::new(self.core.store().clone(), self.core.key(&self.id), self.id.clone(), range)
    }

    /// A reader that yields every event after `after`, waiting for new ones.
    pub fn stream(&self, after: u64) -> EventStream {
        let key = self.core.key(&self.id);
        let signals = self.core.signals(key.clone());
        EventStream::after(self.core.store().clone(), key, self.id.clone(), after, signals)
    }

    /// Every dead head of the session, with the payload and time of its event
    /// (all of them, read a page at a time).
    pub async fn dead_letters(&self) -> Result<Vec<DeadHead>, A2Error> {
        self.dead_letter_pages(a2_store::MAX_PAGE).collect().await
    }

    /// The session's dead heads, `limit` a page, each page read as it is asked for.
    pub fn dead_letter_pages(&self, limit: u32) -> DeadHeads {
        DeadHeads::new(self.core.store().clone(), self.core.key(&self.id), limit)
    }
}
