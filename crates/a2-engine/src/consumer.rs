//! Consumers: named readers of every session's log, each with its own
//! durable position (a cursor for a string lane, a head per event otherwise),
//! and what a consumer's `run` receives. The run reaches its server only
//! through [`RunHost`], so a consumer's definition does not depend on the
//! server that runs it.

use a2_store::SessionKey;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use a2_store::{Cause, Cleared, Event, HeadRef, LogSpec, SessionClear, Store, StoreConsumer};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::abort::AbortRule;
use crate::cancel::{cancel_for, CancelCause, CancelReason};
use crate::history::{EventRange, EventStream, History};
use crate::scheduler::{ScheduleOrigin, Timing};
use crate::signals::SessionSignals;
use crate::{ids, A2Error, Contract, StateAt};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
pub(crate) type HostFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, A2Error>> + Send + 'a>>;
pub(crate) type RunFn = Arc<dyn Fn(ConsumerContext) -> BoxFuture<Result<Returned, BoxError>> + Send + Sync>;
pub(crate) type LaneFn = Arc<dyn Fn(&str, &AppendInput) -> Option<String> + Send + Sync>;

/// An event to append: its type, payload and, optionally, its own id.
#[derive(Debug, Clone, PartialEq)]
pub struct AppendInput {
    pub event_type: String,
    pub payload: Value,
    pub id: Option<String>,
}

/// What to schedule.
pub(crate) enum ScheduleWork {
    Append(Vec<AppendInput>),
    Clear { if_last_index: Option<u64> },
}

impl AppendInput {
    pub fn new(event_type: impl Into<String>, payload: Value) -> Self {
        Self { event_type: event_type.into(), payload, id: None }
    }
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
}

/// What a run returns: nothing, one event or a batch, appended atomically
/// with the completion.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Returned(pub Vec<AppendInput>);

impl From<()> for Returned {
    fn from(_: ()) -> Self {
        Self(Vec::new())
    }
}
impl From<AppendInput> for Returned {
    fn from(event: AppendInput) -> Self {
        Self(vec![event])
    }
}
impl From<Vec<AppendInput>> for Returned {
    fn from(events: Vec<AppendInput>) -> Self {
        Self(events)
    }
}
impl From<Option<AppendInput>> for Returned {
    fn from(event: Option<AppendInput>) -> Self {
        Self(event.into_iter().collect())
    }
}

/// How a consumer's heads are laid out.
#[derive(Clone)]
pub enum Lane {
    /// One ordered cursor per session (a log consumer).
    Log(String),
    /// A lane per event, resolved once at append; heads of one lane run in order.
    Function(LaneFn),
    /// Every event its own head, all in parallel.
    Concurrent,
}

pub(crate) struct ConsumerDef {
    pub name: String,
    pub types: Option<Vec<String>>,
    pub lane: Lane,
    pub backfill: bool,
    pub abort_on: Vec<AbortRule>,
    pub run: RunFn,
}

/// A defined consumer; cheap to clone.
#[derive(Clone)]
pub struct Consumer {
    pub(crate) def: Arc<ConsumerDef>,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer").field("name", &self.def.name).finish_non_exhaustive()
    }
}

/// Consumer names: 1–128 of letters, digits and `. _ : -`, starting with a letter or digit.
pub fn validate_consumer_name(name: &str) -> Result<(), A2Error> {
    if !crate::contract::valid_name(name) {
        return Err(A2Error::invalid_consumer(format!(
            "consumer name {name:?} must be 1-128 letters, digits, and . _ : - characters"
        )));
    }
    if name.starts_with("a2.") {
        return Err(A2Error::invalid_consumer(format!(
            "consumer name '{name}': names starting with 'a2.' are reserved"
        )));
    }
    Ok(())
}

/// Builds a [`Consumer`]; `run` validates and finishes it.
pub struct ConsumerBuilder {
    name: String,
    types: Option<Vec<String>>,
    lane: Lane,
    backfill: bool,
    abort_on: Vec<AbortRule>,
}

impl Consumer {
    pub fn builder(name: impl Into<String>) -> ConsumerBuilder {
        ConsumerBuilder {
            name: name.into(),
            types: None,
            lane: Lane::Concurrent,
            backfill: false,
            abort_on: Vec::new(),
        }
    }

    pub fn name(&self) -> &str {
        &self.def.name
    }

    pub fn is_log(&self) -> bool {
        matches!(self.def.lane, Lane::Log(_))
    }

    pub(crate) fn takes(&self, event_type: &str) -> bool {
        self.def.types.as_ref().is_none_or(|types| types.iter().any(|t| t == event_type))
    }

    /// The consumer as the store needs to know it.
    pub(crate) fn store_consumer(&self) -> StoreConsumer {
        match &self.def.lane {
            Lane::Log(lane) => StoreConsumer {
                name: self.def.name.clone(),
                log: Some(LogSpec { lane: lane.clone(), types: self.def.types.clone(), backfill: self.def.backfill }),
            },
            _ => StoreConsumer::targeted(self.def.name.clone()),
        }
    }

    /// Its types must exist in the contract the server implements.
    pub(crate) fn check_against(&self, contract: &Contract) -> Result<(), A2Error> {
        let abort_types = self.def.abort_on.iter().map(|rule| &rule.event_type);
        for event_type in self.def.types.iter().flatten().chain(abort_types) {
            if !contract.has_event_type(event_type) {
                return Err(A2Error::invalid_consumer(format!(
                    "consumer '{}': contract '{}' has no event type '{event_type}'",
                    self.def.name,
                    contract.name()
                )));
            }
        }
        Ok(())
    }
}

impl ConsumerBuilder {
    /// The event types it takes (default: every type).
    pub fn types<I, S>(mut self, types: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.types = Some(types.into_iter().map(Into::into).collect());
        self
    }

    /// A string lane: one ordered cursor per session.
    pub fn lane(mut self, lane: impl Into<String>) -> Self {
        self.lane = Lane::Log(lane.into());
        self
    }

    /// A lane per event, from the session id and the appended event.
    pub fn lane_fn(mut self, lane: impl Fn(&str, &AppendInput) -> Option<String> + Send + Sync + 'static) -> Self {
        self.lane = Lane::Function(Arc::new(lane));
        self
    }

    /// A new cursor starts at index 1 instead of at the session's head.
    pub fn backfill(mut self) -> Self {
        self.backfill = true;
        self
    }

    /// Event types whose arrival cancels a running attempt's token.
    pub fn abort_on<I, S>(mut self, types: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let rules = types.into_iter().map(|t| AbortRule { event_type: t.into(), matches: None });
        self.abort_on.extend(rules);
        self
    }

    /// Cancel a running attempt when an event of `event_type` lands after
    /// its trigger and `matches(event, trigger, attempt)` holds: targeted
    /// cancellation, e.g. only a `cancel` whose payload names the trigger.
    pub fn abort_on_when(
        mut self,
        event_type: impl Into<String>,
        matches: impl Fn(&Event, &Event, u32) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.abort_on.push(AbortRule { event_type: event_type.into(), matches: Some(Arc::new(matches)) });
        self
    }

    pub fn run<F, Fut, R>(self, run: F) -> Result<Consumer, A2Error>
    where
        F: Fn(ConsumerContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, BoxError>> + Send + 'static,
        R: Into<Returned>,
    {
        validate_consumer_name(&self.name)?;
        let name = &self.name;
        if self.types.as_ref().is_some_and(Vec::is_empty) {
            return Err(A2Error::invalid_consumer(format!(
                "consumer '{name}' lists no types; leave types out to take every type"
            )));
        }
        if let Lane::Log(lane) = &self.lane {
            if lane.is_empty() {
                return Err(A2Error::invalid_consumer(format!(
                    "lane for consumer '{name}' must be a non-empty string"
                )));
            }
        }
        if self.backfill && !matches!(self.lane, Lane::Log(_)) {
            return Err(A2Error::invalid_consumer(format!(
                "consumer '{name}' backfills, so its lane must be a string"
            )));
        }
        if self.backfill && !self.abort_on.is_empty() {
            return Err(A2Error::invalid_consumer(format!("consumer '{name}' backfills, so it can't use abort_on")));
        }
        let run: RunFn = Arc::new(move |ctx| {
            let fut = run(ctx);
            Box::pin(async move { fut.await.map(Into::into) })
        });
        Ok(Consumer {
            def: Arc::new(ConsumerDef {
                name: self.name,
                types: self.types,
                lane: self.lane,
                backfill: self.backfill,
                abort_on: self.abort_on,
                run,
            }),
        })
    }
}

/// What a run may ask of the server that hosts it: the server implements
/// it, and a run holds it as a trait object.
pub(crate) trait RunHost: Send + Sync {
    fn store(&self) -> &Arc<dyn Store>;
    fn key(&self, session_id: &str) -> SessionKey;
    /// Append events a run made, with its head as their cause; events without
    /// an id are named by `id_for(ordinal)` once their lanes are resolved.
    fn append<'a>(
        self: Arc<Self>,
        session_id: &'a str,
        events: Vec<AppendInput>,
        cause: Cause,
        id_for: Box<dyn Fn(usize) -> String + Send + Sync + 'a>,
    ) -> HostFuture<'a, Vec<Event>>;
    /// A reducer's state through `through` (the latest when `None`), its
    /// snapshot pinned for `pin` when given; `SESSION_CLEARED` once the
    /// session was cleared through `origin` (the run's trigger).
    fn state<'a>(
        self: Arc<Self>,
        session_id: &'a str,
        reducer: &'a str,
        through: Option<u64>,
        pin: Option<HeadRef>,
        origin: Option<u64>,
    ) -> HostFuture<'a, StateAt>;
    /// Run another log consumer through an index, as `waiter`'s run waits;
    /// `cancel` stops the wait (not the heads it started).
    fn consume<'a>(
        self: Arc<Self>,
        session_id: &'a str,
        consumer: &'a Consumer,
        through: Option<u64>,
        waiter: &'a str,
        cancel: Option<CancellationToken>,
    ) -> HostFuture<'a, u64>;
    /// Signs that the session `key` may have grown, subscribed now.
    fn signals(&self, key: SessionKey) -> SessionSignals;
    /// Schedule a task of the session on the run's behalf; returns its id.
    fn schedule<'a>(
        self: Arc<Self>,
        session_id: &'a str,
        name: &'a str,
        timing: Timing,
        work: ScheduleWork,
        origin: ScheduleOrigin,
    ) -> HostFuture<'a, String>;
    /// Write presence on the run's behalf, `seen` defaulting to its trigger's index.
    fn set_presence<'a>(
        self: Arc<Self>,
        session_id: &'a str,
        patch: crate::PresencePatch,
        default_seen: u64,
    ) -> HostFuture<'a, ()>;

    fn presence<'a>(self: Arc<Self>, session_id: &'a str) -> HostFuture<'a, crate::PresenceMap>;
}

/// The triggering event, the attempt number, a consumer-scoped session and
/// a cancellation token (cancelled when the claim is lost or an `abort_on`
/// event arrives).
pub struct ConsumerContext {
    /// The event with its public session id.
    pub event: Event,
    /// 1-based attempt number of this head.
    pub attempt: u32,
    pub session: ConsumerSession,
    pub cancel: CancellationToken,
    pub(crate) reason: CancelCause,
}

impl ConsumerContext {
    /// Why `cancel` was cancelled, once it was.
    pub fn cancel_reason(&self) -> Option<CancelReason> {
        self.reason.get().copied()
    }

    /// The error to give up with once the claim is lost (`CLAIM_EXPIRED` or
    /// `SUPERSEDED_ATTEMPT`); `None` before, or when cancelled for another
    /// reason. Returned from the run (`Err(e.into())`), it surrenders: the
    /// holder writes nothing, and the claim that takes the head over counts
    /// the lapse. Any other error is written as this attempt's failure.
    pub fn cancel_error(&self) -> Option<A2Error> {
        let (consumer, session, index) =
            (self.session.head.consumer.clone(), self.session.session_id.clone(), self.session.head.index);
        match self.cancel_reason()? {
            CancelReason::ClaimExpired => Some(A2Error::ClaimExpired { consumer, session, index }),
            CancelReason::SupersededAttempt => Some(A2Error::SupersededAttempt { consumer, session, index }),
            _ => None,
        }
    }
}

/// A session handle scoped to one running head: its appends carry the
/// head as their cause and get deterministic ids.
pub struct ConsumerSession {
    pub(crate) host: Arc<dyn RunHost>,
    pub(crate) session_id: String,
    pub(crate) trigger_id: String,
    /// When the trigger was appended: a scheduled delay counts from it, so a retried run schedules the same time.
    pub(crate) trigger_created_at: a2_store::Millis,
    pub(crate) head: HeadRef,
    pub(crate) attempt: u32,
    /// The run's own token: clearing the session from the run ends the attempt.
    pub(crate) cancel: CancellationToken,
    pub(crate) reason: CancelCause,
}

impl ConsumerSession {
    pub fn id(&self) -> &str {
        &self.session_id
    }

    fn cause(&self) -> Cause {
        Cause {
            consumer: self.head.consumer.clone(),
            lane: self.head.lane.clone(),
            index: self.head.index,
            attempt: self.attempt,
            batch_size: None,
        }
    }

    /// Append events named `name`; events without an id get one derived from
    /// the trigger, the name, their position and this consumer, so a re-run
    /// appends nothing twice.
    pub async fn append(&self, name: &str, events: Vec<AppendInput>) -> Result<Vec<Event>, A2Error> {
        if name.is_empty() {
            return Err(A2Error::InvalidArgument { message: "consumer append name must be a non-empty string".into() });
        }
        for id in events.iter().filter_map(|e| e.id.as_deref()) {
            ids::validate_event_id(id)?;
        }
        // The store refuses it in the append's own transaction once the session was cleared through the trigger.
        let (trigger, name, consumer) = (self.trigger_id.clone(), name.to_owned(), self.head.consumer.clone());
        let id_for = Box::new(move |ordinal| ids::appended_event_id(&trigger, &name, ordinal, &consumer));
        self.host.clone().append(&self.session_id, events, self.cause(), id_for).await
    }

    fn origin(&self) -> ScheduleOrigin {
        ScheduleOrigin {
            trigger_event_id: self.trigger_id.clone(),
            trigger_index: self.head.index,
            trigger_created_at: self.trigger_created_at,
            consumer: self.head.consumer.clone(),
        }
    }

    /// Schedule `events` for this session when `timing` says (a delay counts
    /// from the trigger's append); returns the task's id. The id is derived
    /// from the trigger, this consumer and `name`, so a retried run schedules
    /// one task; a clear through the trigger before it is due makes it a no-op.
    pub async fn schedule(&self, name: &str, timing: Timing, events: Vec<AppendInput>) -> Result<String, A2Error> {
        self.host.clone().schedule(&self.session_id, name, timing, ScheduleWork::Append(events), self.origin()).await
    }

    /// Schedule a clear of this session, only if its head is `if_last_index` then when given.
    pub async fn schedule_clear(
        &self,
        name: &str,
        timing: Timing,
        if_last_index: Option<u64>,
    ) -> Result<String, A2Error> {
        let work = ScheduleWork::Clear { if_last_index };
        self.host.clone().schedule(&self.session_id, name, timing, work, self.origin()).await
    }

    /// The reducer's state: the latest when `through` is `None`, as any
    /// session's read; through an explicit index, with that snapshot pinned
    /// while this head runs, so a retry reads the same state without refolding.
    /// A run whose trigger was cleared gets `SESSION_CLEARED`, not the initial state.
    pub async fn state(&self, reducer: &str, through: Option<u64>) -> Result<StateAt, A2Error> {
        let pin = through.map(|_| self.head.clone());
        self.host.clone().state(&self.session_id, reducer, through, pin, Some(self.head.index)).await
    }

    /// The session's events in `range`, oldest first, read as they are asked for.
    pub fn history(&self, range: EventRange) -> Result<History, A2Error> {
        History::new(self.host.store().clone(), self.host.key(&self.session_id), self.session_id.clone(), range)
    }

    /// A reader that yields every event after `after`, waiting for new ones.
    pub fn stream(&self, after: u64) -> EventStream {
        let key = self.host.key(&self.session_id);
        let signals = self.host.signals(key.clone());
        EventStream::after(self.host.store().clone(), key, self.session_id.clone(), after, signals)
    }

    /// Write presence (see `Session::set_presence`); `seen` defaults to the
    /// trigger's index, the frontier this run provably reflects.
    pub async fn set_presence(&self, patch: crate::PresencePatch) -> Result<(), A2Error> {
        self.host.clone().set_presence(&self.session_id, patch, self.head.index).await
    }

    /// Who is in the session now (see `Session::presence`), as the seeds give
    /// runs the session's presence: a point-in-time read, expired values pruned.
    pub async fn presence(&self) -> Result<crate::PresenceMap, A2Error> {
        self.host.clone().presence(&self.session_id).await
    }

    /// Clear the session (see `Session::clear`). Clearing through its own
    /// trigger ends this attempt: its token is cancelled, later appends and
    /// reads fail with `SESSION_CLEARED`, and what it returns is not appended.
    /// The clear is audited in its own transaction with the run that made it
    /// (consumer, lane, index, attempt), so a session found cleared says why.
    pub async fn clear(&self, if_last_index: Option<u64>) -> Result<Cleared, A2Error> {
        let key = self.host.key(&self.session_id);
        let actor = a2_store::Actor::of_process();
        let audit = a2_store::AuditEntry {
            at: self.host.store().clock().now_ms(),
            user: actor.user.clone(),
            host: actor.host.clone(),
            db_user: None,
            action: "run.clear".into(),
            contract: Some(a2_store::split_session_key(key.as_str()).0.to_owned()),
            session_id: Some(self.session_id.clone()),
            parameters: serde_json::json!({ "if_last_index": if_last_index, "cause": self.cause() }),
            outcome: Value::Null,
        };
        let cleared = self
            .host
            .store()
            .session_clear(SessionClear { session: key, if_last_index, audit: Some(audit), settles: None })
            .await?;
        if cleared.cleared && cleared.index >= self.head.index {
            cancel_for(&self.reason, &self.cancel, CancelReason::Cleared);
        }
        Ok(cleared)
    }

    /// Run another log consumer through an index (see `Session::consume`).
    pub async fn consume(&self, consumer: &Consumer, through: Option<u64>) -> Result<u64, A2Error> {
        self.consume_with(consumer, through, None).await
    }

    /// `consume`, whose wait `cancel` stops with `CANCELLED`; the heads it
    /// started carry on, and so does what they start.
    pub async fn consume_until_cancelled(
        &self,
        consumer: &Consumer,
        through: Option<u64>,
        cancel: CancellationToken,
    ) -> Result<u64, A2Error> {
        self.consume_with(consumer, through, Some(cancel)).await
    }

    async fn consume_with(
        &self,
        consumer: &Consumer,
        through: Option<u64>,
        cancel: Option<CancellationToken>,
    ) -> Result<u64, A2Error> {
        if consumer.name() == self.head.consumer {
            return Err(A2Error::invalid_consumer(format!(
                "consumer '{}' can't consume itself: its own head is running",
                consumer.name()
            )));
        }
        self.host.clone().consume(&self.session_id, consumer, through, &self.head.consumer, cancel).await
    }
}
