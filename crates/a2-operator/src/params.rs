//! What each operator call takes: one struct a call, named for the entity
//! it reads or changes, so the CLI, the Studio and the tests say the same
//! thing. The Studio's commands take these as they are (their TypeScript is
//! generated from them), and the operator checks them once: a limit past a
//! page, index 0, an empty name.

use std::fmt;
use std::str::FromStr;

use a2_store::{AttemptKey, Millis, RedriveAction, MAX_PAGE};
use serde::{Deserialize, Serialize};

use crate::OperatorError;

/// One session of one contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SessionRef {
    pub contract: String,
    pub session: String,
}

impl SessionRef {
    pub fn new(contract: impl Into<String>, session: impl Into<String>) -> Self {
        Self { contract: contract.into(), session: session.into() }
    }

    /// The storage key, the session id checked first.
    pub fn key(&self) -> Result<a2_store::SessionKey, OperatorError> {
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

impl EventQuery {
    pub fn session_ref(&self) -> SessionRef {
        SessionRef::new(&self.contract, &self.session)
    }
}

/// A page's size as asked: 0 is the default page of 100; past [`MAX_PAGE`]
/// is refused, not cut short, so a caller never mistakes a cut page for the end.
pub fn page_limit(limit: u32) -> Result<u32, OperatorError> {
    match limit {
        0 => Ok(100),
        1..=MAX_PAGE => Ok(limit),
        _ => Err(OperatorError::invalid(format!("a page holds at most {MAX_PAGE} rows, not {limit}"))),
    }
}

/// An index as asked: indexes start at 1.
pub fn event_index(index: u64, what: &str) -> Result<u64, OperatorError> {
    if index == 0 {
        return Err(OperatorError::invalid(format!("{what}: indexes start at 1")));
    }
    Ok(index)
}

/// An optional name as asked: empty means none (a filter left blank).
pub fn non_empty(name: Option<String>) -> Option<String> {
    name.filter(|n| !n.is_empty())
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct EventQuery {
    pub contract: String,
    pub session: String,
    pub after: Option<u64>,
    pub before: Option<u64>,
    pub newest_first: bool,
    pub limit: u32,
}

/// Consumer totals no older than `max_age_ms`, of one contract or all.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TotalsQuery {
    pub contract: Option<String>,
    /// On a read-write connection, kept totals older than this are
    /// recomputed (and kept). A read-only one reads the kept ones whatever
    /// their age, never scanning the store, unless `live`.
    pub max_age_ms: u32,
    /// Compute them now, even read-only: a pass over every cursor of the store.
    #[serde(default)]
    pub live: bool,
    /// Read-write only: recompute the kept totals by a full pass over every
    /// cursor (the repair path; a refresh otherwise folds in what changed).
    #[serde(default)]
    pub recompute: bool,
}

/// One dead letter: a consumer's head at `index` in a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DeadLetterRef {
    pub contract: String,
    pub session: String,
    pub consumer: String,
    pub index: u64,
}

impl DeadLetterRef {
    pub fn session_ref(&self) -> SessionRef {
        SessionRef::new(&self.contract, &self.session)
    }
}

/// Retry or skip one dead letter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Redrive {
    pub target: DeadLetterRef,
    pub action: RedriveAction,
}

/// Clear a session through its head, only if the head is still `if_last_index` when given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ClearSession {
    pub contract: String,
    pub session: String,
    /// The head the operator saw: nothing is cleared if it moved since.
    pub if_last_index: Option<u64>,
}

/// A string-lane consumer of a session, moved through `through` (`None`: the head).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ConsumeTarget {
    pub contract: String,
    pub session: String,
    pub consumer: String,
    pub through: Option<u64>,
}

impl ConsumeTarget {
    pub fn session_ref(&self) -> SessionRef {
        SessionRef::new(&self.contract, &self.session)
    }
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

/// A session's attempts: newest first (a head's history, with `consumer`
/// and `index`) or oldest first (the session's timeline). An empty consumer
/// name means every consumer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AttemptQuery {
    pub contract: String,
    pub session: String,
    pub consumer: Option<String>,
    pub index: Option<u64>,
    pub after: Option<AttemptKey>,
    pub oldest_first: bool,
    pub limit: u32,
}

impl AttemptQuery {
    pub fn session_ref(&self) -> SessionRef {
        SessionRef::new(&self.contract, &self.session)
    }
}
