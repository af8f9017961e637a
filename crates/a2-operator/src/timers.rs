//! What is due: the scheduler's pending tasks as an operator sees them,
//! and the two things an operator may do to one (deliver it now, cancel it),
//! each refused read-only and audited in the store's own transaction.

use a2_store::{Millis, ScheduledTask, TaskChange, TaskList, TaskWork};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::{Operator, OperatorError, Page, Result};

/// A task due this long ago and still pending means no server of its
/// contract is delivering: a production incident, shown as overdue.
pub const OVERDUE_AFTER_MS: i64 = 10_000;

/// One event a timer will append; its payload as exact JSON text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TimerEvent {
    pub id: String,
    #[serde(rename = "type")]
    pub event_type: String,
    pub payload: String,
}

/// The run that scheduled a timer: its trigger event and consumer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TimerTrigger {
    pub event_id: String,
    pub index: u64,
    pub consumer: Option<String>,
}

/// A pending scheduled task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TimerView {
    pub id: String,
    pub contract: String,
    pub session: String,
    /// The schedule's name, as the app gave it.
    pub name: String,
    /// `append`, `clear`, or `drain` (a watchdog a claim armed at its lease's expiry).
    pub kind: String,
    pub due_at: Millis,
    /// Until it is due; negative once it is.
    pub due_in_ms: i64,
    /// Due more than [`OVERDUE_AFTER_MS`] ago and not being delivered.
    pub overdue: bool,
    /// What an append timer will append (empty for a clear).
    pub events: Vec<TimerEvent>,
    /// A clear timer's guard.
    pub if_last_index: Option<u64>,
    pub trigger: Option<TimerTrigger>,
    pub created_at: Millis,
    /// Deliveries started; more than one means one failed or its server died.
    pub attempts: u32,
    pub last_error: Option<String>,
    /// The server delivering it right now, if any.
    pub lease_holder: Option<String>,
    pub lease_expires_at: Option<Millis>,
}

impl TimerView {
    pub fn new(task: ScheduledTask, now: Millis) -> Self {
        let delivering = task.lease_expires_at.is_some_and(|until| until > now);
        let kind = task.work.kind().to_owned();
        let (events, if_last_index) = match task.work {
            TaskWork::Append { events } => (
                events
                    .into_iter()
                    .map(|e| TimerEvent { id: e.id, event_type: e.event_type, payload: e.payload.to_string() })
                    .collect(),
                None,
            ),
            TaskWork::Clear { if_last_index } => (Vec::new(), if_last_index),
            TaskWork::Drain => (Vec::new(), None),
        };
        Self {
            kind,
            due_in_ms: task.due_at.saturating_sub(now),
            overdue: !delivering && task.due_at.saturating_add(OVERDUE_AFTER_MS) < now,
            id: task.id,
            contract: task.contract,
            session: task.session_id,
            name: task.name,
            due_at: task.due_at,
            events,
            if_last_index,
            trigger: task.trigger.map(|t| TimerTrigger { event_id: t.event_id, index: t.index, consumer: t.consumer }),
            created_at: task.created_at,
            attempts: task.attempts,
            last_error: task.last_error,
            lease_holder: task.lease_holder,
            lease_expires_at: task.lease_expires_at,
        }
    }
}

/// Where a page of timers ends: the next page starts after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TimerCursor {
    pub due_at: Millis,
    pub id: String,
}

/// Pending timers, soonest first: store-wide, of a contract, or of one session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TimerQuery {
    #[serde(default)]
    pub contract: Option<String>,
    /// A session id; needs `contract`.
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub after: Option<TimerCursor>,
    /// Rows a page (0: the default page).
    #[serde(default)]
    pub limit: u32,
}

/// One timer, by its id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TimerRef {
    pub id: String,
}

/// What "deliver now" did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TimerDelivered {
    /// The timer as it was made due.
    pub timer: TimerView,
    /// Delivered by this process (it hosts the contract); otherwise the
    /// next delivery pass of any server of the contract delivers it.
    pub delivered: bool,
}

impl Operator {
    /// Pending timers, soonest first.
    pub async fn timer_list(&self, query: &TimerQuery) -> Result<Page<TimerView, TimerCursor>> {
        let session = match (&query.contract, &query.session) {
            (Some(contract), Some(session)) => Some(crate::key(contract, session)?),
            (None, Some(_)) => return Err(OperatorError::invalid("a session's timers need its contract too")),
            _ => None,
        };
        let limit = crate::params::page_limit(query.limit)?;
        let params = TaskList {
            contract: query.contract.clone(),
            session,
            after: query.after.clone().map(|c| (c.due_at, c.id)),
            limit,
        };
        let now = self.now();
        let items: Vec<TimerView> =
            self.store().task_list(params).await?.into_iter().map(|t| TimerView::new(t, now)).collect();
        let next = (items.len() >= limit as usize)
            .then(|| items.last().map(|t| TimerCursor { due_at: t.due_at, id: t.id.clone() }))
            .flatten();
        Ok(Page { items, next })
    }

    /// Make a timer due now; where this process hosts its contract, deliver it here.
    pub async fn timer_deliver(&self, target: &TimerRef) -> Result<TimerDelivered> {
        let id = checked(target)?;
        self.writable("timer.deliver")?;
        let audit = Some(self.wide_entry("timer.deliver", None, json!({ "id": id })));
        let task = self.store().task_hasten(TaskChange { id: id.to_owned(), audit }).await?;
        let task = task.ok_or_else(|| OperatorError::NotFound { what: format!("timer '{id}'") })?;
        let timer = TimerView::new(task, self.now());
        let delivered = match self.hosted.iter().find(|s| s.contract().name() == timer.contract) {
            Some(server) => server.deliver_task(&timer.id).await?,
            None => false,
        };
        Ok(TimerDelivered { timer, delivered })
    }

    /// Cancel a timer before it is delivered.
    pub async fn timer_cancel(&self, target: &TimerRef) -> Result<TimerView> {
        let id = checked(target)?;
        self.writable("timer.cancel")?;
        let audit = Some(self.wide_entry("timer.cancel", None, json!({ "id": id })));
        let task = self.store().task_cancel(TaskChange { id: id.to_owned(), audit }).await?;
        let what = format!("timer '{id}' (or one not being delivered right now)");
        let task = task.ok_or(OperatorError::NotFound { what })?;
        Ok(TimerView::new(task, self.now()))
    }
}

fn checked(target: &TimerRef) -> Result<&str> {
    let id = target.id.trim();
    if id.is_empty() {
        return Err(OperatorError::invalid("a timer is named by its id"));
    }
    Ok(id)
}
