//! The store-backed scheduler's tasks: a delayed append or a delayed clear
//! of one session, keyed by the deterministic id the engine derives, so
//! scheduling twice is one task and delivering twice appends once. The Studio
//! shows them through its own view (payloads as exact JSON text).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::types::{AuditEntry, Millis, SessionKey};

/// One event a task will append, its id already fixed at schedule time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduledEvent {
    pub id: String,
    #[serde(rename = "type")]
    pub event_type: String,
    pub payload: Value,
}

/// What a task does when it is due.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TaskWork {
    /// Append these events through the ordinary append path.
    Append { events: Vec<ScheduledEvent> },
    /// Clear the session, only if its head is `if_last_index` when given.
    Clear { if_last_index: Option<u64> },
    /// Drain the session: the watchdog a claim arms at its lease's expiry,
    /// so work a dead process held is retried then, by whoever serves it.
    Drain,
}

impl TaskWork {
    pub fn kind(&self) -> &'static str {
        match self {
            TaskWork::Append { .. } => "append",
            TaskWork::Clear { .. } => "clear",
            TaskWork::Drain => "drain",
        }
    }
}

/// The run that scheduled a task, when a consumer did: its trigger event
/// and index (a clear through it makes the task a no-op) and its consumer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskTrigger {
    pub event_id: String,
    pub index: u64,
    pub consumer: Option<String>,
}

/// A task as the store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduledTask {
    /// The schedule id the engine derived: the task's key.
    pub id: String,
    pub contract: String,
    #[serde(rename = "session")]
    pub session_id: String,
    /// The schedule's name, as the app gave it.
    pub name: String,
    pub due_at: Millis,
    #[serde(flatten)]
    pub work: TaskWork,
    pub trigger: Option<TaskTrigger>,
    pub created_at: Millis,
    /// Deliveries started: more than one means a delivery failed or its server died.
    pub attempts: u32,
    pub lease_holder: Option<String>,
    pub lease_expires_at: Option<Millis>,
    /// Why the last delivery failed; it is tried again at `due_at`.
    pub last_error: Option<String>,
}

impl ScheduledTask {
    pub fn session_key(&self) -> SessionKey {
        crate::session_key(&self.contract, &self.session_id)
    }

    /// Due and not held by a live delivery: a claim may take it.
    pub fn claimable(&self, now: Millis) -> bool {
        self.due_at <= now && self.lease_expires_at.is_none_or(|until| until <= now)
    }
}

/// Put a task in the store; a task with its id already there is left as it
/// is. Serializable whole, so a scheduler adapter can keep it in a queue of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSchedule {
    pub session: SessionKey,
    pub id: String,
    pub name: String,
    pub due_at: Millis,
    pub work: TaskWork,
    pub trigger: Option<TaskTrigger>,
}

/// Lease due tasks of a contract to a holder, oldest due first.
#[derive(Debug, Clone)]
pub struct TaskClaim {
    pub contract: String,
    pub holder: String,
    pub ttl_ms: i64,
    pub limit: u32,
    /// Only this task (an operator's "deliver now"), if it is due and free.
    pub only: Option<String>,
}

/// How a claimed task's delivery ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskOutcome {
    /// Delivered (or an acknowledged no-op): the task is deleted.
    Delivered,
    /// Not delivered: released, due again at `retry_at`.
    Failed { error: String, retry_at: Millis },
}

/// Settle a claimed task, fenced by its holder: a holder whose lease lapsed
/// and was taken over settles nothing.
#[derive(Debug, Clone)]
pub struct TaskFinish {
    pub id: String,
    pub holder: String,
    pub outcome: TaskOutcome,
}

/// A claimed task and who holds it: what a delivery settles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskHeld {
    pub id: String,
    pub holder: String,
}

/// Pending tasks by due time, then id.
#[derive(Debug, Clone, Default)]
pub struct TaskList {
    pub contract: Option<String>,
    /// One session's tasks (`contract` is then not needed).
    pub session: Option<SessionKey>,
    /// Keyset position: the (due_at, id) of the last task of the previous page.
    pub after: Option<(Millis, String)>,
    pub limit: u32,
}

/// An operator's change to one task, audited in the same transaction.
#[derive(Debug, Clone)]
pub struct TaskChange {
    pub id: String,
    pub audit: Option<AuditEntry>,
}
