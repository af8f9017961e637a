//! The transitions of a head's running state, shared by every backend so
//! that memory, SQLite and Postgres cannot drift apart: a backend loads the
//! rows, applies these, and writes them back in the same transaction.

use crate::types::{Backoff, FailOutcome, Millis};

/// The running state of a cursor or a per-event head.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeadState {
    pub attempt_count: u32,
    pub failure_count: u32,
    pub last_error: Option<String>,
    pub failed_at: Option<Millis>,
    pub lease_holder: Option<String>,
    pub lease_expires_at: Option<Millis>,
    pub next_attempt_at: Option<Millis>,
}

/// What a claim found a head to be, or did to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimStep {
    /// Dead-lettered: it blocks its lane until redriven.
    Dead,
    /// Another holder's lease is live until then.
    Busy(Millis),
    /// Waiting out its backoff until then.
    Waiting(Millis),
    /// Its lapsed attempts used up the budget: dead-lettered now, not run.
    Exhausted,
    /// Runnable; the caller may take it (see [`HeadState::take`]).
    Runnable,
}

impl HeadState {
    pub fn lease_live(&self, now: Millis) -> bool {
        self.lease_holder.is_some() && self.lease_expires_at.is_some_and(|t| t > now)
    }

    pub fn release(&mut self) {
        self.lease_holder = None;
        self.lease_expires_at = None;
    }

    /// Whether `attempt` is the current, live attempt: the fence of complete, fail and renew.
    pub fn is_current(&self, attempt: u32) -> bool {
        self.attempt_count == attempt && self.failed_at.is_none()
    }

    /// Inspect a head for a claim. A lease that lapsed without an outcome is
    /// charged as a failure here, by the claim that takes it over.
    pub fn check(&mut self, now: Millis, max_failures: u32) -> ClaimStep {
        if self.failed_at.is_some() {
            return ClaimStep::Dead;
        }
        if self.lease_live(now) {
            return ClaimStep::Busy(self.lease_expires_at.unwrap_or(now));
        }
        if let Some(at) = self.next_attempt_at.filter(|at| *at > now) {
            return ClaimStep::Waiting(at);
        }
        if let Some(holder) = self.lease_holder.take() {
            self.lease_expires_at = None;
            self.failure_count += 1;
            self.last_error =
                Some(format!("attempt {} by holder {holder} lapsed without completing", self.attempt_count));
            if self.failure_count >= max_failures {
                self.failed_at = Some(now);
                self.next_attempt_at = None;
                return ClaimStep::Exhausted;
            }
        }
        ClaimStep::Runnable
    }

    /// Lease a runnable head to `holder`; returns the new attempt number.
    pub fn take(&mut self, now: Millis, holder: &str, ttl_ms: i64) -> u32 {
        self.attempt_count += 1;
        self.lease_holder = Some(holder.to_owned());
        self.lease_expires_at = Some(now + ttl_ms);
        self.next_attempt_at = None;
        self.attempt_count
    }

    /// Record a failed attempt (already fenced): backoff, or dead at the budget.
    pub fn fail(&mut self, now: Millis, error: String, max_failures: u32, backoff: Backoff) -> FailOutcome {
        self.failure_count += 1;
        self.last_error = Some(error);
        self.release();
        if self.failure_count >= max_failures {
            self.failed_at = Some(now);
            self.next_attempt_at = None;
            return FailOutcome::DeadLettered { failure_count: self.failure_count };
        }
        let retry_at = now + backoff.delay_ms(self.failure_count);
        self.next_attempt_at = Some(retry_at);
        FailOutcome::Failed { failure_count: self.failure_count, retry_at }
    }

    /// Redrive retry: a fresh failure budget, runnable now. The attempt count
    /// keeps counting so it stays a valid fencing token.
    pub fn retry(&mut self) {
        self.failure_count = 0;
        self.failed_at = None;
        self.next_attempt_at = None;
        self.release();
    }
}
