//! The seeds' clock: `session.schedule` puts a delayed append (or clear) on
//! a `Scheduler` under a deterministic id, so a retried run schedules one
//! task; a delivery goes through the ordinary append (or clear) path, so a
//! task delivered twice appends once. The embedded scheduler keeps tasks in
//! the store, and every server serves the due tasks of its contract.

use a2_store::{
    ScheduledBy, ScheduledEvent, ScheduledTask, SessionClear, StoreError, TaskClaim, TaskFinish, TaskHeld, TaskList,
    TaskOutcome, TaskSchedule, TaskTrigger, TaskWork,
};

use tracing::Instrument;

use crate::consumer::ScheduleWork;
use crate::ids::{self, ScheduleKey};
use crate::scheduler::{ScheduleOrigin, Timing};
use crate::server_core::{FromTask, ServerCore};
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
        self.scheduler().schedule(task).instrument(span).await.map_err(|error| match error {
            A2Error::Store(store) => A2Error::SchedulerSendFailed { task: id.clone(), message: store.to_string() },
            other => other,
        })?;
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
    /// path: a failed arm is logged and never stops claiming.
    pub(crate) fn arm_watchdog(&self, session_id: &str, expires_at: a2_store::Millis) {
        if !self.watchdog() {
            return;
        }
        let due = expires_at + crate::timings::millis(self.timings().watchdog_grace);
        let slot = due.div_euclid(1_000) * 1_000 + if due.rem_euclid(1_000) > 0 { 1_000 } else { 0 };
        if !self.watchdog_slot_free(session_id, slot) {
            return;
        }
        let id = ids::watchdog_id(self.contract().name(), session_id, slot);
        let task = TaskSchedule {
            session: self.key(session_id),
            id,
            name: "a2.watchdog".into(),
            due_at: slot,
            work: TaskWork::Drain,
            trigger: None,
        };
        let scheduler = self.scheduler().clone();
        let session = session_id.to_owned();
        tokio::spawn(async move {
            if let Err(error) = scheduler.schedule(task).await {
                tracing::warn!(a2.session_id = %session, code = error.code(), %error, "could not arm the drain watchdog");
            }
        });
    }

    /// Deliver one task `holder` claimed, through the ordinary paths. A task
    /// whose trigger was cleared away, or a clear whose guard no longer holds,
    /// is an acknowledged no-op, as the seeds say.
    pub(crate) async fn deliver(&self, task: &ScheduledTask, holder: &str) -> Result<Delivery, A2Error> {
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
                    let inputs: Vec<AppendInput> = events
                        .iter()
                        .map(|e| AppendInput {
                            event_type: e.event_type.clone(),
                            payload: e.payload.clone(),
                            id: Some(e.id.clone()),
                        })
                        .collect();
                    let by = ScheduledBy { task: task.id.clone(), name: task.name.clone() };
                    let from = FromTask { by: &by, trigger_index: task.trigger.as_ref().map(|t| t.index) };
                    match self.append_from(&task.session_id, inputs, None, Some(from), &|_| String::new()).await {
                        Err(error) if error.code() != "SESSION_CLEARED" => Err(error),
                        // A second delivery appends nothing: the events' ids are fixed.
                        _ => Ok(Delivery::ToSettle),
                    }
                }
                // The background's drain of the session claims whatever a dead process left there.
                TaskWork::Drain if self.drains_in_background() && !self.consumers().is_empty() => {
                    self.wake(&task.session_id);
                    Ok(Delivery::ToSettle)
                }
                TaskWork::Drain => Err(A2Error::InvalidArgument {
                    message: "a watchdog's drain needs a server draining its consumers in the background: left for one"
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

    /// Whether `task` is still kept (a clear that cleared nothing either settled
    /// it, its guard no longer holding, or found another holder had it).
    async fn task_pending(&self, task: &ScheduledTask) -> Result<bool, A2Error> {
        let list = TaskList { session: Some(task.session_key()), limit: a2_store::MAX_PAGE, ..TaskList::default() };
        Ok(self.store().task_list(list).await?.iter().any(|t| t.id == task.id))
    }

    /// One delivery pass: claim this contract's due tasks and deliver each,
    /// a failure put back with a backoff. Returns how many were delivered.
    pub(crate) async fn deliver_due(&self, holder: &str, only: Option<&str>) -> Result<usize, A2Error> {
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
            let tasks = self.store().task_claim(claim).await?;
            let full = tasks.len() >= TASKS_PER_CLAIM as usize;
            for task in tasks {
                let outcome = match self.deliver(&task, holder).await {
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
