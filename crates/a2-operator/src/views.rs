//! What the operator API returns: flat, snake_case, the field names the
//! CLI's `--json` and the Studio rely on.

use a2_store::{HeadInfo, HeadKind, HeadStatus, Millis};
use serde::{Deserialize, Serialize};

/// A cursor or head, with why it is not moving in one line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct HeadView {
    pub consumer: String,
    pub kind: HeadKind,
    pub lane: Option<String>,
    pub next_index: u64,
    pub session_head: u64,
    pub lag: u64,
    pub oldest_pending_age_ms: Option<i64>,
    #[serde(flatten)]
    pub status: HeadStatus,
    /// Dead-lettered: `failed_at` is set, said once more for the table's filter.
    pub dead: bool,
    pub reason: String,
}

/// A registered server, and whether it still beats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ProcessView {
    #[serde(flatten)]
    pub server: a2_store::ServerRecord,
    /// Beat within its last three beats.
    pub live: bool,
    /// Holds its contract's upkeep lease now: it refreshes the kept totals and prunes.
    pub leads_upkeep: bool,
}

/// Why a head is where it is, for a person at 3 a.m.
pub fn reason(head: &HeadInfo, now: Millis) -> String {
    if head.dead() {
        let error = head.status.last_error.as_deref().unwrap_or("no error recorded");
        return format!("dead-lettered at {} after {} failures: {error}", head.next_index, head.status.failure_count);
    }
    if let (Some(holder), Some(until)) = (&head.status.lease_holder, head.status.lease_expires_at) {
        if until > now {
            return format!("leased by {holder} until {until} (attempt {})", head.status.attempt_count);
        }
        return format!("lease of {holder} lapsed at {until}: the next claim takes it over");
    }
    if let Some(at) = head.status.next_attempt_at.filter(|at| *at > now) {
        return format!("waiting for retry at {at} after {} failures", head.status.failure_count);
    }
    if head.lag == 0 {
        return "caught up".into();
    }
    format!("runnable: {} behind, waiting for a drain", head.lag)
}

impl HeadView {
    pub fn from_info(head: HeadInfo, now: Millis) -> Self {
        let reason = reason(&head, now);
        Self {
            oldest_pending_age_ms: head.oldest_pending_at.map(|at| (now - at).max(0)),
            dead: head.dead(),
            consumer: head.consumer,
            kind: head.kind,
            lane: head.lane,
            next_index: head.next_index,
            session_head: head.session_head,
            lag: head.lag,
            status: head.status,
            reason,
        }
    }
}

/// A page and where the next one starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Page<T, C> {
    pub items: Vec<T>,
    pub next: Option<C>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Redriven {
    pub redriven: bool,
}

/// What a consume would do: the cursor's next index and the events it would take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsumePlan {
    pub from_index: u64,
    pub events: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Consumed {
    pub index: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum ConsumeMode {
    /// Run the consumer's own code: only for a contract this process hosts.
    Run,
    /// Advance the cursor; each event is recorded as acknowledged by the operator.
    Ack,
    /// Write each event as a JSON line to a file, then advance.
    Export,
}
