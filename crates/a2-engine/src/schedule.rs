//! The seeds' clock: `session.schedule` puts a delayed append (or clear) on
//! a `Scheduler` under a deterministic id, so a retried run schedules one
//! task; a delivery goes through the ordinary append (or clear) path, so a
//! task delivered twice appends once. The embedded scheduler keeps tasks in
//! the store, and every server serves the due tasks of its contract.

use a2_store::{
    ScheduledBy, ScheduledEvent, ScheduledTask, SessionClear, StoreError, TaskClaim, TaskFinish, TaskHeld, TaskList,
    TaskOutcome, TaskSchedule, TaskTrigger, TaskWork,
};

use std::sync::Arc;

use tracing::Instrument;

use crate::consumer::ScheduleWork;
use crate::drain::{drain_joined, spawn_drain, DrainOptions};
use crate::ids::{self, ScheduleKey};
use crate::scheduler::{ScheduleOrigin, Timing};
use crate::server_core::{FromTask, ServerCore};
use crate::timings::SCHEDULER_ARM_WAIT;
use crate::{A2Error, AppendInput};

/// How a delivery left its task.
pub(crate) enum Delivery {
    /// Delivered; the task is to be deleted (fenced by its holder).
    ToSettle,
    /// Delivered and deleted in the delivery's own transaction.
    Settled,
    /// Another holder had taken the task over: it delivers, not this one.
    Lost,
}

/// Any error of a scheduler's while taking task `id`, as the seeds mark it
/// (`markSchedulerSendFailure`): one code the caller can branch on.
fn send_failed(id: &str, error: A2Error) -> A2Error {
    match error {
        A2Error::SchedulerSendFailed { .. } => error,
        other => A2Error::SchedulerSendFailed { task: id.to_owned(), message: other.to_string() },
    }
}

/// Tasks claimed at once by one delivery pass.
const TASKS_PER_CLAIM: u32 = 64;

impl ServerCore {
    /// Validate and schedule a task of `session_id`; returns its id. Events are
    /// checked against the contract now, not at delivery.
    pub(crate) async fn schedule(
        &self,
        session_id: &str,
        name: &str,
        timing: &Timing,
        work: ScheduleWork,
        origin: Option<&ScheduleOrigin>,
    ) -> Result<String, A2Error> {
        if name.is_empty() {
            return Err(A2Error::InvalidArgument { message: "schedule name must be a non-empty string".into() });
        }
        let due_at = timing.due_at(origin.map_or_else(|| self.clock().now_ms(), |o| o.trigger_created_at))?;
        // A run after a clear schedules a task of its own; outside a run the name alone keys it.
        let clear_index = match origin {
            Some(_) => self.store().session_bounds(&self.key(session_id)).await?.clear_index,
            None => 0,
        };
        let key = ScheduleKey {
            contract: self.contract().name(),
            session_id,
            trigger_event_id: origin.map(|o| o.trigger_event_id.as_str()),
            name,
            clear_index,
            consumer: origin.map(|o| o.consumer.as_str()),
        };
        let (id, work) = match work {
            ScheduleWork::Append(events) => {
                let id = ids::schedule_id(&key);
                let events = self.scheduled_events(session_id, &id, events, origin.is_some())?;
                (id, TaskWork::Append { events })
            }
            ScheduleWork::Clear { if_last_index } => {
                (ids::schedule_clear_id(&key, if_last_index), TaskWork::Clear { if_last_index })
            }
        };
        let trigger = origin.map(|o| TaskTrigger {
            event_id: o.trigger_event_id.clone(),
            index: o.trigger_index,
            consumer: Some(o.consumer.clone()),
        });
        let span = tracing::info_span!(
            "a2.schedule",
            a2.contract = %self.contract().name(),
            a2.session_id = %session_id,
            a2.schedule.name = %name,
            a2.schedule.id = %id,
            a2.schedule.kind = work.kind(),
            a2.schedule.due_at = due_at,
        );
        let task = TaskSchedule {
            session: self.key(session_id),
            id: id.clone(),
            name: name.to_owned(),
            due_at,
            work,
            trigger,
        };
        self.scheduler().schedule(task).instrument(span).await.map_err(|error| send_failed(&id, error))?;
        self.wake_deliveries(due_at);
        Ok(id)
    }

    fn scheduled_events(
        &self,
        session_id: &str,
        schedule_id: &str,
        events: Vec<AppendInput>,
        in_run: bool,
    ) -> Result<Vec<ScheduledEvent>, A2Error> {
        if events.is_empty() {
            return Err(A2Error::InvalidArgument { message: "schedule requires at least one event".into() });
        }
        let mut seen = std::collections::HashSet::new();
        let mut scheduled = Vec::with_capacity(events.len());
        for (ordinal, event) in events.into_iter().enumerate() {
            self.contract().validate(&event.event_type, &event.payload)?;
            let id = match event.id {
                Some(id) if in_run => ids::validate_event_id(&id).map(|()| id)?,
                Some(id) => ids::validate_external_id(&id).map(|()| id)?,
                None => ids::scheduled_event_id(schedule_id, ordinal),
            };
            if !seen.insert(id.clone()) {
                return Err(StoreError::PartialDuplicateBatch {
                    session: session_id.to_owned(),
                    ids: format!("'{id}' appears twice in the scheduled batch"),
                }
                .into());
            }
            scheduled.push(ScheduledEvent { id, event_type: event.event_type, payload: event.payload });
        }
        Ok(scheduled)
    }

    /// Arm the watchdog of a claim whose leases expire at `expires_at`: a drain
    /// task due at the expiry plus grace, slotted up to the second, so one task
    /// covers every claim and beat of a session in that second. Off the claim's
    /// path: a failed arm is logged (and tried again by the slot's next caller)
    /// and never stops claiming.
    pub(crate) fn arm_watchdog(&self, session_id: &str, expires_at: a2_store::Millis) {
        let Some(arming) = self.watchdog_arming(session_id, expires_at) else { return };
        let session = session_id.to_owned();
        tokio::spawn(async move {
            if let Err(error) = arming.await {
                tracing::warn!(a2.session_id = %session, code = error.code(), %error, "could not arm the drain watchdog");
            }
        });
    }

    /// [`Self::arm_watchdog`], waited for up to [`SCHEDULER_ARM_WAIT`]: an
    /// external append answers once its watchdog is kept (the slot's arm
    /// shared with every other caller of it), or once the wait ran out.
    pub(crate) async fn arm_watchdog_awaited(
        &self,
        session_id: &str,
        expires_at: a2_store::Millis,
    ) -> Result<(), A2Error> {
        let Some(arming) = self.watchdog_arming(session_id, expires_at) else { return Ok(()) };
        // Spawned: an append whose caller gives up waiting still leaves the arm.
        match tokio::time::timeout(SCHEDULER_ARM_WAIT, tokio::spawn(arming)).await {
            Ok(Ok(armed)) => armed,
            Ok(Err(join)) => {
                Err(A2Error::SchedulerSendFailed { task: "a2.watchdog".into(), message: join.to_string() })
            }
            Err(_) => Err(A2Error::SchedulerSendFailed {
                task: "a2.watchdog".into(),
                message: format!("not armed within {} ms", SCHEDULER_ARM_WAIT.as_millis()),
            }),
        }
    }

    /// The arm of the watchdog slot after `expires_at` plus grace: the slot's
    /// first caller schedules its task, later ones await that same arm, and
    /// one that failed is scheduled again by the next. `None` when watchdogs are off.
    fn watchdog_arming(
        &self,
        session_id: &str,
        expires_at: a2_store::Millis,
    ) -> Option<impl std::future::Future<Output = Result<(), A2Error>> + Send + 'static> {
        if !self.watchdog() {
            return None;
        }
        let due = expires_at + crate::timings::millis(self.timings().watchdog_grace);
        let slot = due.div_euclid(1_000) * 1_000 + if due.rem_euclid(1_000) > 0 { 1_000 } else { 0 };
        // The task of the slot kept (a later one may be armed already), never an earlier one in its place.
        let (slot, arm) = self.watchdog_slot(session_id, slot);
        let task = self.drain_task(session_id, slot);
        let scheduler = self.scheduler().clone();
        Some(async move {
            let id = task.id.clone();
            arm.get_or_try_init(|| scheduler.schedule(task)).await.map_err(|error| send_failed(&id, error))?;
            Ok(())
        })
    }

    /// `append.dispatch`'s arm: a drain task due in the current second (the
    /// same task for every dispatch of the session in it), awaited, and any
    /// error of the scheduler's is `SCHEDULER_SEND_FAILED`.
    pub(crate) async fn arm_drain_now(&self, session_id: &str) -> Result<(), A2Error> {
        let slot = self.clock().now_ms().div_euclid(1_000) * 1_000;
        let task = self.drain_task(session_id, slot);
        let id = task.id.clone();
        self.scheduler().schedule(task).await.map_err(|error| send_failed(&id, error))?;
        self.wake_deliveries(slot);
        Ok(())
    }

    fn drain_task(&self, session_id: &str, slot: a2_store::Millis) -> TaskSchedule {
        TaskSchedule {
            session: self.key(session_id),
            id: ids::watchdog_id(self.contract().name(), session_id, slot),
            name: "a2.watchdog".into(),
            due_at: slot,
            work: TaskWork::Drain,
            trigger: None,
        }
    }

    /// Deliver one task `holder` claimed, through the ordinary paths. A task
    /// whose trigger was cleared away, or a clear whose guard no longer holds,
    /// is an acknowledged no-op, as the seeds say.
    pub(crate) async fn deliver(
        self: &Arc<Self>,
        task: &ScheduledTask,
        holder: &str,
        deadline: tokio::time::Instant,
    ) -> Result<Delivery, A2Error> {
        let span = tracing::info_span!(
            "a2.schedule.deliver",
            a2.contract = %task.contract,
            a2.session_id = %task.session_id,
            a2.schedule.id = %task.id,
            a2.schedule.kind = task.work.kind(),
            a2.schedule.attempt = task.attempts,
        );
        async {
            match &task.work {
                TaskWork::Append { events } => {
                    let trigger_index = task.trigger.as_ref().map(|t| t.index);
                    self.deliver_append(&task.session_id, &task.id, &task.name, events, trigger_index).await?;
                    Ok(Delivery::ToSettle)
                }
                // A drain of the session claims whatever a dead process left there; the task
                // is settled once that claim answered, so a delivery that dies before it is redelivered.
                TaskWork::Drain if !self.consumers().is_empty() => {
                    // Bounded for the whole pass: a drain waiting for a run permit must not hold up
                    // the pass's other tasks (their leases would lapse); a task past it is tried again.
                    let wait = (self.timings().claim_ttl / 3).min(deadline.saturating_duration_since(tokio::time::Instant::now()));
                    if wait.is_zero() {
                        return Err(A2Error::Cancelled {
                            message: "the delivery pass ran out of its lease before this watchdog: left for the next".into(),
                        });
                    }
                    let (told, first_claim) = tokio::sync::oneshot::channel();
                    let options = DrainOptions { first_claim: Some(told), ..DrainOptions::default() };
                    let drain = spawn_drain(self, &task.session_id, options);
                    let session = task.session_id.clone();
                    tokio::spawn(async move {
                        if let Err(error) = drain_joined(&session, drain.await) {
                            tracing::warn!(a2.session_id = %session, code = error.code(), %error, "a watchdog's drain failed");
                        }
                    });
                    match tokio::time::timeout(wait, first_claim).await {
                        Ok(Ok(true)) => Ok(Delivery::ToSettle),
                        Ok(Ok(false)) => Err(A2Error::Store(StoreError::unavailable(format!(
                            "the watchdog's drain of session '{}' could not claim",
                            task.session_id
                        )))),
                        // The drain stopped before it claimed (its server shuts down): no claim, no settle.
                        Ok(Err(_)) => Err(A2Error::Cancelled {
                            message: format!("the watchdog's drain of session '{}' stopped before it claimed", task.session_id),
                        }),
                        Err(_) => Err(A2Error::Cancelled {
                            message: format!(
                                "the watchdog's drain of session '{}' did not claim within {} ms (no run permit free)",
                                task.session_id,
                                wait.as_millis()
                            ),
                        }),
                    }
                }
                TaskWork::Drain => Err(A2Error::InvalidArgument {
                    message: "a watchdog's drain needs a server that runs the contract's consumers: left for one"
                        .into(),
                }),
                // A clear is not idempotent: the task is settled in the clear's own transaction.
                TaskWork::Clear { if_last_index } => {
                    let settles = Some(TaskHeld { id: task.id.clone(), holder: holder.to_owned() });
                    let clear = SessionClear {
                        session: task.session_key(),
                        if_last_index: *if_last_index,
                        audit: None,
                        settles,
                    };
                    let cleared = self.store().session_clear(clear).await?;
                    Ok(if cleared.cleared || !self.task_pending(task).await? {
                        Delivery::Settled
                    } else {
                        Delivery::Lost
                    })
                }
            }
        }
        .instrument(span)
        .await
    }

    /// A scheduled append through the ordinary append path, its events marked
    /// with the task; a trigger cleared away makes it an acknowledged no-op
    /// (`false`), and a second delivery appends nothing (the events' ids are fixed).
    async fn deliver_append(
        &self,
        session_id: &str,
        task_id: &str,
        name: &str,
        events: &[ScheduledEvent],
        trigger_index: Option<u64>,
    ) -> Result<bool, A2Error> {
        let inputs: Vec<AppendInput> = events
            .iter()
            .map(|e| AppendInput {
                event_type: e.event_type.clone(),
                payload: e.payload.clone(),
                id: Some(e.id.clone()),
            })
            .collect();
        let by = ScheduledBy { task: task_id.to_owned(), name: name.to_owned() };
        let from = FromTask { by: &by, trigger_index };
        match self.append_from(session_id, inputs, None, Some(from), &|_| String::new()).await {
            Ok(_) => Ok(true),
            Err(error) if error.code() == "SESSION_CLEARED" => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// The session id of a task a scheduler adapter hands back, once it is
    /// checked to be this contract's, of `kind`, with a valid session id:
    /// what an adapter's transport brings is not trusted as it comes.
    fn adapter_task_session<'t>(&self, task: &'t TaskSchedule, kind: &str) -> Result<&'t str, A2Error> {
        let contract = task.session.contract();
        if contract != self.contract().name() {
            return Err(A2Error::InvalidArgument {
                message: format!(
                    "a2 scheduler: {kind} task for contract '{contract}' cannot be delivered to '{}'",
                    self.contract().name()
                ),
            });
        }
        if task.work.kind() != kind {
            return Err(A2Error::InvalidArgument {
                message: format!("a2 scheduler: task '{}' is a {} task, not a {kind} task", task.id, task.work.kind()),
            });
        }
        if task.id.is_empty() {
            return Err(A2Error::InvalidArgument { message: "a2 scheduler: a task needs its id".into() });
        }
        let session_id = task.session.session_id();
        a2_store::validate_session_id(session_id)
            .map_err(|e| A2Error::InvalidSessionId { id: session_id.to_owned(), reason: e.to_string() })?;
        Ok(session_id)
    }

    /// A custom scheduler's append task, delivered (`deliverSchedulerAppend`).
    pub(crate) async fn deliver_adapter_append(&self, task: &TaskSchedule) -> Result<(), A2Error> {
        let session_id = self.adapter_task_session(task, "append")?;
        let TaskWork::Append { events } = &task.work else {
            return Err(A2Error::InvalidArgument { message: format!("task '{}' appends nothing", task.id) });
        };
        for event in events {
            ids::validate_event_id(&event.id)?;
        }
        let trigger_index = task.trigger.as_ref().map(|t| t.index);
        if !self.deliver_append(session_id, &task.id, &task.name, events, trigger_index).await? {
            return Ok(());
        }
        // As the seeds' `schedulerAppend`: the work it leaves is armed durably before the
        // adapter may let the task go, and a failed arm fails the delivery (it is delivered again).
        let expires_at = self.clock().now_ms() + crate::timings::millis(self.timings().claim_ttl);
        self.arm_watchdog_awaited(session_id, expires_at).await
    }

    /// A custom scheduler's clear task, delivered (`deliverSchedulerClear`):
    /// a guard that no longer holds clears nothing, and says so.
    pub(crate) async fn deliver_adapter_clear(&self, task: &TaskSchedule) -> Result<a2_store::Cleared, A2Error> {
        let session_id = self.adapter_task_session(task, "clear")?;
        let TaskWork::Clear { if_last_index } = task.work else {
            return Err(A2Error::InvalidArgument { message: format!("task '{}' clears nothing", task.id) });
        };
        let clear = SessionClear { session: self.key(session_id), if_last_index, audit: None, settles: None };
        Ok(self.store().session_clear(clear).await?)
    }

    /// A custom scheduler's drain task (a watchdog or a dispatch): the session
    /// id it names, checked; the caller drains it here and now.
    pub(crate) fn adapter_drain_session<'t>(&self, task: &'t TaskSchedule) -> Result<&'t str, A2Error> {
        let session_id = self.adapter_task_session(task, "drain")?;
        if self.consumers().is_empty() {
            return Err(A2Error::InvalidArgument {
                message: "a drain task needs a server that runs the contract's consumers: this one runs none".into(),
            });
        }
        Ok(session_id)
    }

    /// Whether `task` is still kept (a clear that cleared nothing either settled
    /// it, its guard no longer holding, or found another holder had it).
    async fn task_pending(&self, task: &ScheduledTask) -> Result<bool, A2Error> {
        let list = TaskList { session: Some(task.session_key()), limit: a2_store::MAX_PAGE, ..TaskList::default() };
        Ok(self.store().task_list(list).await?.iter().any(|t| t.id == task.id))
    }

    /// One delivery pass: claim this contract's due tasks and deliver each,
    /// a failure put back with a backoff. Returns how many were delivered.
    pub(crate) async fn deliver_due(self: &Arc<Self>, holder: &str, only: Option<&str>) -> Result<usize, A2Error> {
        let mut delivered = 0;
        loop {
            let claim = TaskClaim {
                only: only.map(str::to_owned),
                contract: self.contract().name().to_owned(),
                holder: holder.to_owned(),
                // A delivery is held as long as a head's claim: a dead server's tasks are redelivered as soon.
                ttl_ms: crate::timings::millis(self.timings().claim_ttl),
                limit: TASKS_PER_CLAIM,
            };
            // What of the claim's lease the pass may spend waiting on drains' first claims.
            let deadline = tokio::time::Instant::now() + self.timings().claim_ttl * 2 / 3;
            let tasks = self.store().task_claim(claim).await?;
            let full = tasks.len() >= TASKS_PER_CLAIM as usize;
            for task in tasks {
                let outcome = match self.deliver(&task, holder, deadline).await {
                    Ok(Delivery::Settled) => {
                        delivered += 1;
                        continue;
                    }
                    Ok(Delivery::Lost) => continue,
                    Ok(Delivery::ToSettle) => TaskOutcome::Delivered,
                    Err(error) => {
                        tracing::warn!(a2.schedule.id = %task.id, code = error.code(), %error, "scheduled task not delivered; retrying");
                        let delay = self.timings().backoff.delay_ms(task.attempts);
                        TaskOutcome::Failed { error: error.to_string(), retry_at: self.clock().now_ms() + delay }
                    }
                };
                let delivered_now = outcome == TaskOutcome::Delivered;
                let finish = TaskFinish { id: task.id.clone(), holder: holder.to_owned(), outcome };
                if self.store().task_finish(finish).await? && delivered_now {
                    delivered += 1;
                }
            }
            if !full {
                return Ok(delivered);
            }
        }
    }
}
