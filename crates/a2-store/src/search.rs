//! Finding events by what they hold: a contract's sessions searched a
//! bounded chunk at a time (so no call holds a long query), and one
//! session's events filtered. Payload matching is JSON containment, as
//! Postgres `@>` means it; every backend answers the same.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Event, StoreError};

/// Sessions of a contract with events that match, `scan` sessions a call.
#[derive(Debug, Clone, Default)]
pub struct SessionSearch {
    pub contract: String,
    pub filter: EventMatch,
    /// Keyset: go on with the sessions after this id.
    pub after: Option<String>,
    /// Sessions looked at in this call.
    pub scan: u32,
}

/// What an event must be to match; an empty match takes every event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventMatch {
    /// Contained in the payload: every key given, with that value, at any depth.
    pub payload: Option<Value>,
    pub event_type: Option<String>,
    pub event_id: Option<String>,
}

/// A session with matching events: how many, and the first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMatch {
    pub session_id: String,
    pub matches: u64,
    pub first: Event,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionSearchPage {
    pub found: Vec<SessionMatch>,
    /// Sessions looked at in this call.
    pub scanned: u64,
    /// Where the next call goes on from; `None` when the contract's end was reached.
    pub scanned_through: Option<String>,
}

/// One session's events that match, oldest first, `scan` events looked at a call.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    pub session: crate::SessionKey,
    pub filter: EventMatch,
    /// Keyset: events after this index.
    pub after: Option<u64>,
    pub scan: u32,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EventFilterPage {
    pub events: Vec<Event>,
    /// The last index looked at; `None` when the session's end was reached.
    pub scanned_through: Option<u64>,
}

/// The most sessions or events a search call looks at, whatever is asked.
pub const MAX_SCAN: u32 = 5_000;

/// A requested scan size, clamped to `1..=MAX_SCAN`.
pub fn scan_size(scan: u32) -> u32 {
    scan.clamp(1, MAX_SCAN)
}

impl EventMatch {
    /// Whether `event` matches, by the same rules every backend's SQL follows.
    pub fn accepts(&self, event: &Event) -> bool {
        self.event_type.as_ref().is_none_or(|t| *t == event.event_type)
            && self.event_id.as_ref().is_none_or(|i| *i == event.id)
            && self.payload.as_ref().is_none_or(|p| contains(&event.payload, p))
    }

    /// A payload pattern must be a JSON object: `{"customer": "c-7"}`.
    pub fn check(&self) -> Result<(), StoreError> {
        match &self.payload {
            None | Some(Value::Object(_)) => Ok(()),
            Some(other) => Err(StoreError::invalid(format!(
                "a payload search is a JSON object of what the payload contains, like {{\"customer\": \"c-7\"}}: not {other}"
            ))),
        }
    }
}

/// JSON containment as Postgres `jsonb @>` has it: an object contains every
/// key of the pattern with a contained value; an array contains every
/// element of the pattern's array in some element of its own; scalars are equal.
pub fn contains(value: &Value, pattern: &Value) -> bool {
    match (value, pattern) {
        (Value::Object(have), Value::Object(want)) => {
            want.iter().all(|(k, w)| have.get(k).is_some_and(|h| contains(h, w)))
        }
        (Value::Array(have), Value::Array(want)) => want.iter().all(|w| have.iter().any(|h| contains(h, w))),
        (Value::Array(have), scalar) if !scalar.is_object() && !scalar.is_array() => have.contains(scalar),
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (a, b) => a == b,
    }
}

/// A payload pattern as `(path, value)` leaves (`$."a"."b"` and a scalar), for
/// a backend that matches with `json_extract`. Arrays have no such form.
pub fn containment_leaves(pattern: &Value) -> Result<Vec<(String, Value)>, StoreError> {
    fn walk(value: &Value, path: String, out: &mut Vec<(String, Value)>) -> Result<(), StoreError> {
        match value {
            Value::Object(map) => {
                for (key, inner) in map {
                    let quoted = key.replace('\\', "\\\\").replace('"', "\\\"");
                    walk(inner, format!("{path}.\"{quoted}\""), out)?;
                }
                Ok(())
            }
            Value::Array(_) => Err(StoreError::invalid(format!(
                "a payload search with an array (at {path}) needs a Postgres store; on SQLite search by the array's scalar keys"
            ))),
            scalar => {
                out.push((path, scalar.clone()));
                Ok(())
            }
        }
    }
    let mut out = Vec::new();
    walk(pattern, "$".to_owned(), &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn containment_follows_postgres() {
        let doc = json!({ "customer": "c-7", "amount": 12, "tags": ["a", "b"], "ship": { "to": "NL", "by": 2 } });
        for (pattern, expected) in [
            (json!({}), true),
            (json!({ "customer": "c-7" }), true),
            (json!({ "customer": "c-8" }), false),
            (json!({ "amount": 12.0 }), true),
            (json!({ "ship": { "to": "NL" } }), true),
            (json!({ "ship": { "to": "DE" } }), false),
            (json!({ "tags": ["b"] }), true),
            (json!({ "tags": ["c"] }), false),
            (json!({ "missing": null }), false),
        ] {
            assert_eq!(contains(&doc, &pattern), expected, "{pattern}");
        }
    }

    #[test]
    fn leaves_quote_their_keys_and_refuse_arrays() {
        let leaves = containment_leaves(&json!({ "a": { "b.c": 1 }, "d\"": "x" })).unwrap_or_default();
        assert_eq!(leaves, vec![("$.\"a\".\"b.c\"".to_owned(), json!(1)), ("$.\"d\\\"\"".to_owned(), json!("x"))]);
        assert!(containment_leaves(&json!({ "tags": ["a"] })).is_err());
    }
}
