//! Finding sessions by what their events hold, and filtering one session's
//! events; the bounded store calls under them are walked by the caller, so
//! progress can be shown and a search stopped between two calls.

use a2_store::{EventFilter, EventFilterPage, EventMatch, SessionSearch, SessionSearchPage};
use serde_json::{json, Value};

use crate::{Operator, OperatorError, Result, SessionRef};

/// One call of a contract-wide search.
#[derive(Debug, Clone, Default)]
pub struct SearchQuery {
    pub contract: String,
    pub filter: EventMatch,
    /// The previous call's `scanned_through`.
    pub after: Option<String>,
    /// Sessions looked at in this call.
    pub scan: u32,
}

/// The most keys a payload path may have (`$.a.b.c` has three).
pub const MAX_PATH_KEYS: usize = 32;

/// A payload path condition, `$.customer = "c-7"` or `$.ship.to = "NL"`, as the
/// containment pattern it means (`{"ship": {"to": "NL"}}`). The value is JSON;
/// a bare word is taken as a string.
pub fn path_pattern(text: &str) -> Result<Value> {
    let usage = || {
        OperatorError::invalid(format!(
            "a payload path is `$.key.key = value`, like $.customer = \"c-7\": not {text:?}"
        ))
    };
    let (path, value) = text.split_once('=').ok_or_else(usage)?;
    let keys: Vec<&str> = path.trim().strip_prefix('$').ok_or_else(usage)?.split('.').skip(1).map(str::trim).collect();
    if keys.is_empty() || keys.iter().any(|k| k.is_empty()) || !path.trim().starts_with("$.") {
        return Err(usage());
    }
    // Each key nests the pattern once more, and matching and dropping it
    // recurse: a path of thousands of keys would overflow the stack.
    if keys.len() > MAX_PATH_KEYS {
        return Err(OperatorError::invalid(format!(
            "a payload path has at most {MAX_PATH_KEYS} keys; this one has {}",
            keys.len()
        )));
    }
    let value = value.trim();
    let mut pattern = serde_json::from_str(value).unwrap_or_else(|_| json!(value));
    for key in keys.iter().rev() {
        pattern = json!({ *key: pattern });
    }
    Ok(pattern)
}

impl Operator {
    pub async fn session_search(&self, query: SearchQuery) -> Result<SessionSearchPage> {
        if query.contract.is_empty() {
            return Err(OperatorError::invalid("a search needs the contract whose sessions it looks in"));
        }
        let params =
            SessionSearch { contract: query.contract, filter: query.filter, after: query.after, scan: query.scan };
        Ok(self.store().session_search(params).await?)
    }

    /// How many sessions a contract has, for a search's progress.
    pub async fn session_count(&self, contract: &str) -> Result<u64> {
        Ok(self.store().session_count(contract).await?)
    }

    /// A chunk of one session's events that match, with ids (not keys) in `session`.
    pub async fn event_filter(
        &self,
        target: &SessionRef,
        filter: EventMatch,
        after: Option<u64>,
        scan: u32,
    ) -> Result<EventFilterPage> {
        let mut page = self.store().event_filter(EventFilter { session: target.key()?, filter, after, scan }).await?;
        if after.is_none() && page.scanned_through.is_none() {
            // The whole session was looked at: nothing found may mean no such session.
            self.exists_if_empty(&page.events, target).await?;
        }
        for event in &mut page.events {
            event.session.clone_from(&target.session);
        }
        Ok(page)
    }

    /// Index event payloads on Postgres so payload searches are answered
    /// from the index (appends then also write it); `true` when made now.
    pub async fn payload_index(&self) -> Result<bool> {
        self.writable("index.payloads")?;
        let Some(opened) = self.attached.opened.as_ref().filter(|o| o.has_payload_index()) else {
            return Err(OperatorError::invalid(
                "a payload index is a Postgres feature: a SQLite search scans, a chunk of sessions a call",
            ));
        };
        let made = opened.payload_index_create().await?;
        let mut entry = self.wide_entry("index.payloads", None, json!({}));
        entry.outcome = json!({ "created": made });
        self.store().audit_append(entry).await?;
        Ok(made)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_condition_is_a_containment_pattern() {
        let cases = [
            ("$.customer = \"c-7\"", json!({ "customer": "c-7" })),
            ("$.ship.to = NL", json!({ "ship": { "to": "NL" } })),
            (" $.amount=12 ", json!({ "amount": 12 })),
            ("$.paid = true", json!({ "paid": true })),
        ];
        for (text, expected) in cases {
            assert_eq!(path_pattern(text).unwrap_or_default(), expected, "{text}");
        }
        for bad in ["customer = 1", "$. = 1", "$.a..b = 1", "$.a"] {
            assert!(path_pattern(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_payload_path_is_bounded_in_depth() {
        let path = |keys: usize| format!("${} = 1", ".k".repeat(keys));
        assert!(path_pattern(&path(MAX_PATH_KEYS)).is_ok());
        for keys in [MAX_PATH_KEYS + 1, 100_000] {
            let error = path_pattern(&path(keys)).expect_err("too deep");
            assert!(error.to_string().contains(&format!("at most {MAX_PATH_KEYS} keys")), "{error}");
        }
    }
}
