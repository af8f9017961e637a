//! What each operator call takes: one struct a call, named for the entity
//! it reads or changes, so the CLI, the Studio and the tests say the same thing.

use std::fmt;
use std::str::FromStr;

use a2_store::{Millis, RedriveAction};

use crate::OperatorError;

/// One session of one contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRef {
    pub contract: String,
    pub session: String,
}

impl SessionRef {
    pub fn new(contract: impl Into<String>, session: impl Into<String>) -> Self {
        Self { contract: contract.into(), session: session.into() }
    }

    /// The storage key, the session id checked first.
    pub fn key(&self) -> Result<String, OperatorError> {
        crate::key(&self.contract, &self.session)
    }
}

/// A contract's sessions by id, with filters.
#[derive(Debug, Clone, Default)]
pub struct SessionQuery {
    pub contract: String,
    pub id_prefix: Option<String>,
    pub has_dead_letters: bool,
    pub lagging: bool,
    pub after: Option<String>,
    pub limit: u32,
}

/// Where a page of sessions by activity ends: the last one's update time and
/// id. Written `<millis>:<session>` wherever it crosses as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityCursor {
    pub at: Millis,
    pub session: String,
}

impl fmt::Display for ActivityCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.at, self.session)
    }
}

impl FromStr for ActivityCursor {
    type Err = OperatorError;

    fn from_str(text: &str) -> Result<Self, OperatorError> {
        let bad = || OperatorError::invalid(format!("{text:?} is not a page cursor (<millis>:<session>)"));
        let (at, session) = text.split_once(':').ok_or_else(bad)?;
        Ok(Self { at: at.parse().map_err(|_| bad())?, session: session.to_owned() })
    }
}

/// A contract's sessions, most recently active first.
#[derive(Debug, Clone, Default)]
pub struct ActivityQuery {
    pub contract: String,
    pub before: Option<ActivityCursor>,
    pub limit: u32,
}

/// A page of a session's events.
#[derive(Debug, Clone)]
pub struct EventQuery {
    pub session: SessionRef,
    pub after: Option<u64>,
    pub before: Option<u64>,
    pub newest_first: bool,
    pub limit: u32,
}

/// Consumer totals no older than `max_age_ms`, of one contract or all.
#[derive(Debug, Clone, Default)]
pub struct TotalsQuery {
    pub contract: Option<String>,
    pub max_age_ms: i64,
}

/// Retry or skip one dead letter.
#[derive(Debug, Clone)]
pub struct Redrive {
    pub session: SessionRef,
    pub consumer: String,
    pub index: u64,
    pub action: RedriveAction,
}

/// Clear a session through its head, only if the head is still `if_last_index` when given.
#[derive(Debug, Clone)]
pub struct ClearSession {
    pub session: SessionRef,
    pub if_last_index: Option<u64>,
}

/// A string-lane consumer of a session, moved through `through` (`None`: the head).
#[derive(Debug, Clone)]
pub struct ConsumeTarget {
    pub session: SessionRef,
    pub consumer: String,
    pub through: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_activity_cursor_reads_back_what_it_writes() {
        let cursor = ActivityCursor { at: 1_700_000_000_123, session: "order:with:colons".into() };
        assert_eq!(cursor.to_string().parse::<ActivityCursor>().ok(), Some(cursor));
        for bad in ["", "no-colon", "later:order-1"] {
            assert_eq!(bad.parse::<ActivityCursor>().map_err(|e| e.code()), Err("INVALID_INPUT"), "{bad:?}");
        }
    }
}

/// A session's attempts, optionally of one consumer or one index.
#[derive(Debug, Clone)]
pub struct AttemptQuery {
    pub session: SessionRef,
    pub consumer: Option<String>,
    pub index: Option<u64>,
    pub after: Option<a2_store::AttemptKey>,
    pub oldest_first: bool,
    pub limit: u32,
}
