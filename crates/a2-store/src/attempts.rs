//! Attempt history: every run of a head, kept by the store in the same
//! transaction as the outcome it records, so the Studio can show what
//! happened over time (durations, errors, what each attempt appended) and
//! group dead letters by what caused them.

use serde::{Deserialize, Serialize};

use crate::rules::HeadState;
use crate::types::{HeadKey, HeadRef, Millis};
use crate::{SessionKey, StoreError};

/// Attempts kept per head by the background pruning; a dead-lettered head keeps all of its.
pub const ATTEMPTS_KEPT_PER_HEAD: u32 = 20;

/// How one attempt of a head ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum AttemptOutcome {
    /// Its run returned and the head moved on.
    Completed,
    /// Its run threw: the head backs off, or is dead-lettered at the budget.
    Failed,
    /// Its lease ran out with no outcome; the claim that took the head over recorded it.
    Lapsed,
    /// It wrote its outcome after a newer attempt (or an operator) had taken the head.
    Superseded,
    /// Its run was cancelled (an `abort_on` event, or its lease lost) and ended with an error.
    Aborted,
    /// The session was cleared through its event while it ran.
    Cleared,
}

impl AttemptOutcome {
    pub const ALL: [Self; 6] =
        [Self::Completed, Self::Failed, Self::Lapsed, Self::Superseded, Self::Aborted, Self::Cleared];

    /// The stored code (SQL stores keep a small integer).
    pub fn code(self) -> i16 {
        match self {
            Self::Completed => 0,
            Self::Failed => 1,
            Self::Lapsed => 2,
            Self::Superseded => 3,
            Self::Aborted => 4,
            Self::Cleared => 5,
        }
    }

    pub fn from_code(code: i64) -> Result<Self, StoreError> {
        Self::ALL
            .into_iter()
            .find(|o| i64::from(o.code()) == code)
            .ok_or_else(|| StoreError::Schema { message: format!("attempt outcome code {code} is not known") })
    }

    /// Whether the attempt counts as a failure in throughput figures.
    pub fn is_failure(self) -> bool {
        matches!(self, Self::Failed | Self::Aborted | Self::Lapsed)
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Lapsed => "lapsed",
            Self::Superseded => "superseded",
            Self::Aborted => "aborted",
            Self::Cleared => "cleared",
        }
    }
}

/// One attempt of one head, as the history keeps it. Times are the store's clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Attempt {
    pub consumer: String,
    pub lane: Option<String>,
    pub index: u64,
    pub attempt: u32,
    /// The drain that ran it (unknown for a superseded attempt nobody else recorded).
    pub holder: Option<String>,
    /// When its claim leased the head.
    pub started_at: Option<Millis>,
    pub ended_at: Millis,
    pub outcome: AttemptOutcome,
    /// What the run threw, whole (with its source chain), for failed and aborted attempts.
    pub error: Option<String>,
    /// Ids of the events it appended with its completion.
    pub appended: Vec<String>,
}

impl Attempt {
    /// The keyset position of this attempt in a session's history.
    pub fn key(&self) -> AttemptKey {
        AttemptKey {
            consumer: self.consumer.clone(),
            lane: self.lane.clone(),
            index: self.index,
            attempt: self.attempt,
        }
    }

    /// An attempt ending now, from the head state it ran under.
    pub fn ended(head: &HeadRef, state: &HeadState, attempt: u32, ended_at: Millis, outcome: AttemptOutcome) -> Self {
        let own = state.status.attempt_count == attempt;
        Self {
            consumer: head.consumer.clone(),
            lane: head.lane.clone(),
            index: head.index,
            attempt,
            holder: if own { state.status.lease_holder.clone() } else { None },
            started_at: if own { state.attempt_started_at } else { None },
            ended_at,
            outcome,
            error: None,
            appended: Vec::new(),
        }
    }

    /// A late outcome of an attempt a newer one (or an operator) had taken
    /// over: what the store knows of it is kept by [`Self::replaced_by`].
    pub fn superseded(head: &HeadRef, attempt: u32, now: Millis) -> Self {
        Self::ended(head, &HeadState::default(), attempt, now, AttemptOutcome::Superseded)
    }

    /// The attempt a claim is about to take over, if its lease lapsed with no outcome.
    pub fn lapsed(head: &HeadRef, state: &HeadState, now: Millis) -> Option<Self> {
        if state.status.failed_at.is_some() || state.status.lease_holder.is_none() || state.status.lease_live(now) {
            return None;
        }
        let ended_at = state.status.lease_expires_at.unwrap_or(now).min(now);
        Some(Self::ended(head, state, state.status.attempt_count, ended_at, AttemptOutcome::Lapsed))
    }

    /// Whether a later record of the same attempt replaces this one: only a
    /// lapse is replaced, by the attempt's own late outcome (superseded).
    pub fn replaced_by(&self, later: &Attempt) -> bool {
        self.outcome == AttemptOutcome::Lapsed && later.outcome == AttemptOutcome::Superseded
    }
}

/// Keyset position in a session's attempt history, which is kept in head
/// order: `(consumer, lane, index, attempt)`, the table's own key, so the
/// history needs no index of its own besides it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AttemptKey {
    pub consumer: String,
    pub lane: Option<String>,
    pub index: u64,
    pub attempt: u32,
}

/// A session's attempts in head order (consumer, lane, index) and, within a
/// head, by attempt number: descending gives a head's newest attempt first,
/// ascending is how the timeline reads a whole history. Keyset paged.
#[derive(Debug, Clone, Default)]
pub struct AttemptList {
    /// A storage key.
    pub session: SessionKey,
    pub consumer: Option<String>,
    pub index: Option<u64>,
    /// Strictly past this position, in the list's order.
    pub after: Option<AttemptKey>,
    pub oldest_first: bool,
    pub limit: u32,
}

/// Prune a page of a contract's sessions (by key, after `after`): each head
/// keeps its newest `keep` attempts; a dead-lettered head keeps all.
#[derive(Debug, Clone)]
pub struct AttemptPrune {
    pub contract: String,
    pub after: Option<String>,
    pub sessions: u32,
    pub keep: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AttemptPruned {
    pub pruned: u64,
    /// The last session id looked at when the page was full: where the next call starts.
    pub next: Option<String>,
}

/// Dead letters grouped by consumer and cause (the error with its numbers,
/// ids and UUIDs masked), store-wide or in one contract.
#[derive(Debug, Clone, Default)]
pub struct DeadLetterGroups {
    pub contract: Option<String>,
    /// Dead letters read at most, in key order (0: [`DEAD_LETTER_GROUPS_SCAN`]):
    /// a look at a store with a flood of them stays a bounded read.
    pub scan: u32,
}

/// Dead letters a grouping reads at most; past it the groups say `partial`.
pub const DEAD_LETTER_GROUPS_SCAN: u32 = 10_000;

impl DeadLetterGroups {
    /// The bound this grouping reads up to.
    pub fn scan_limit(&self) -> u32 {
        if self.scan == 0 {
            DEAD_LETTER_GROUPS_SCAN
        } else {
            self.scan
        }
    }
}

/// Mark every group partial when the grouping read as many dead letters as
/// it may: there may be more, so each count is a lower bound.
pub fn mark_partial(mut groups: Vec<DeadLetterGroup>, scan: u32) -> Vec<DeadLetterGroup> {
    let read: u64 = groups.iter().map(|g| g.count).sum();
    if read >= u64::from(scan) {
        for group in &mut groups {
            group.partial = true;
        }
    }
    groups
}

/// One group of dead letters that failed the same way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DeadLetterGroup {
    pub contract: String,
    pub consumer: String,
    /// The normalised error every dead letter of the group ended with.
    pub cause: String,
    pub count: u64,
    pub first_failed_at: Millis,
    pub last_failed_at: Millis,
    /// One of the group's errors, whole.
    pub sample_error: String,
    /// One of the group's dead letters, to open.
    pub sample: HeadKey,
    /// The grouping stopped at its bound: this count is a lower bound.
    #[serde(default)]
    pub partial: bool,
}

/// Groups in the order an operator triages them: largest first, then by name.
pub fn largest_first(mut groups: Vec<DeadLetterGroup>) -> Vec<DeadLetterGroup> {
    groups.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| (&a.contract, &a.consumer, &a.cause).cmp(&(&b.contract, &b.consumer, &b.cause)))
    });
    groups
}

/// Completions and failures per time bucket, from the attempt history:
/// each consumer's throughput (of one contract, or all) since `since`.
#[derive(Debug, Clone)]
pub struct AttemptRates {
    pub contract: Option<String>,
    pub since: Millis,
    pub bucket_ms: i64,
    /// The minutes the upkeep leader keeps (`bucket_ms` a minute), not a
    /// count of every run since `since`: what a read-only look reads.
    pub kept: bool,
}

/// One consumer's attempts that ended in one bucket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AttemptRate {
    pub contract: String,
    pub consumer: String,
    /// The bucket's start (a multiple of its length).
    pub bucket_start: Millis,
    pub completed: u64,
    /// Failed, aborted and lapsed attempts.
    pub failed: u64,
}

/// The cause of an error, for grouping: its first line with numbers, UUIDs
/// and long hex ids masked, so "order 17 failed" and "order 4 failed" group.
pub fn error_cause(error: &str) -> String {
    let line = error.lines().next().unwrap_or_default().trim();
    let mut out = String::with_capacity(line.len().min(240));
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() && out.len() < 240 {
        let c = chars[i];
        if c.is_ascii_hexdigit() && (i == 0 || !chars[i - 1].is_alphanumeric()) {
            let end =
                (i..chars.len()).find(|&j| !(chars[j].is_ascii_hexdigit() || chars[j] == '-')).unwrap_or(chars.len());
            let word: String = chars[i..end].iter().collect();
            if is_uuid(&word) {
                out.push_str("<uuid>");
                i = end;
                continue;
            }
            let bare = end == chars.len() || !chars[end].is_alphanumeric();
            if bare
                && word.len() >= 8
                && !word.contains('-')
                && word.chars().any(|c| c.is_ascii_digit())
                && word.chars().any(|c| c.is_ascii_alphabetic())
            {
                out.push_str("<hex>");
                i = end;
                continue;
            }
        }
        if c.is_ascii_digit() {
            let mut end = i;
            while end < chars.len()
                && (chars[end].is_ascii_digit()
                    || (chars[end] == '.' && chars.get(end + 1).is_some_and(char::is_ascii_digit)))
            {
                end += 1;
            }
            out.push_str("<n>");
            i = end;
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

fn is_uuid(word: &str) -> bool {
    let parts: Vec<&str> = word.split('-').collect();
    parts.len() == 5
        && parts.iter().zip([8, 4, 4, 4, 12]).all(|(p, n)| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_cause_masks_numbers_ids_and_uuids() {
        assert_eq!(error_cause("order 17 failed: timeout after 2.5s"), "order <n> failed: timeout after <n>s");
        assert_eq!(error_cause("order 4 failed: timeout after 30s"), "order <n> failed: timeout after <n>s");
        assert_eq!(
            error_cause("event 0b7d4e5c-7f1a-5d2e-9a3b-1c2d3e4f5a6b not found\ncaused by: io"),
            "event <uuid> not found"
        );
        assert_eq!(error_cause("commit deadbeef42 rejected"), "commit <hex> rejected");
        assert_eq!(error_cause("card declined for order-00037"), "card declined for order-<n>");
        assert_eq!(error_cause("plain words stay"), "plain words stay");
    }

    #[test]
    fn outcome_codes_round_trip() {
        for outcome in AttemptOutcome::ALL {
            assert_eq!(AttemptOutcome::from_code(i64::from(outcome.code())).ok(), Some(outcome));
        }
        assert!(AttemptOutcome::from_code(9).is_err());
    }
}
