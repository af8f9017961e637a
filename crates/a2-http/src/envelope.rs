//! The push envelope, as the seeds' `parsePushBody` takes it: `{ "events":
//! [{ "type", "payload", "id"? }…], "presence": { "participant", "values",
//! "seen"?, "at"? } }`, either half or both. Every refusal is
//! `INVALID_PAYLOAD` and names the place (`events[2].id …`), before the
//! engine sees any of it. As lenient as the seeds: keys it does not know
//! are ignored (a newer client's envelope still lands), and `at` is any
//! finite number of milliseconds in the Date range (a browser's
//! `performance.timeOrigin + now()` is fractional), kept to the millisecond.

use a2_engine::{ids, AppendInput, PresencePatch, Push};
use serde_json::{Map, Value};

use crate::error::WireError;

/// The longest id a client may give an event (the seeds' `MAX_PUSHED_ID`):
/// ids are indexed, and Postgres's index rows have a limit.
pub const MAX_PUSHED_ID: usize = 256;

/// The most events one push may carry: a push is a client's moment, not a
/// bulk load (which goes through the engine's own append).
pub const MAX_PUSHED_EVENTS: usize = 1_000;

/// The most JSON text one pushed event may carry (its payload as sent):
/// one event is a fact, not a file; a bigger thing belongs in object
/// storage. It also bounds what a stalled stream holds (a page of events).
pub const EVENT_WRITE_CHARS: usize = 64 * 1024;

/// Read a push body: the events and the presence patch it carries, or why not.
pub fn parse_push_body(body: &[u8]) -> Result<Push, WireError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| WireError::invalid_payload(format!("the push body is not JSON: {e}")))?;
    let Value::Object(mut envelope) = value else {
        return Err(WireError::invalid_payload(
            "the push body must be a JSON object with `events`, `presence` or both",
        ));
    };
    let events = match envelope.remove("events") {
        None => Vec::new(),
        Some(Value::Array(events)) if events.len() > MAX_PUSHED_EVENTS => {
            return Err(WireError::new(
                axum::http::StatusCode::PAYLOAD_TOO_LARGE,
                "TOO_LARGE",
                format!("a push carries at most {MAX_PUSHED_EVENTS} events, not {}", events.len()),
            ))
        }
        Some(Value::Array(events)) => parse_push_events(events)?,
        Some(_) => return Err(WireError::invalid_payload("events must be an array of events")),
    };
    let presence = match envelope.remove("presence") {
        None | Some(Value::Null) => None,
        Some(Value::Object(patch)) => Some(parse_presence(patch)?),
        Some(_) => {
            return Err(WireError::invalid_payload("presence must be an object with `participant` and `values`"))
        }
    };
    if events.is_empty() && presence.is_none() {
        return Err(WireError::invalid_payload("a push carries at least one event, a presence patch, or both"));
    }
    Ok(Push { events, presence })
}

/// The events half, shared by every transport that takes pushes.
pub fn parse_push_events(events: Vec<Value>) -> Result<Vec<AppendInput>, WireError> {
    events.into_iter().enumerate().map(|(i, event)| parse_event(i, event)).collect()
}

fn parse_event(i: usize, event: Value) -> Result<AppendInput, WireError> {
    let Value::Object(mut event) = event else {
        return Err(WireError::invalid_payload(format!("events[{i}] must be an object with `type` and `payload`")));
    };
    let event_type = match event.remove("type") {
        Some(Value::String(t)) if !t.is_empty() => t,
        _ => return Err(WireError::invalid_payload(format!("events[{i}].type must be a non-empty string"))),
    };
    let id = match event.remove("id") {
        None => None,
        Some(Value::String(id)) => Some(id),
        Some(_) => return Err(WireError::invalid_payload(format!("events[{i}].id must be a string when present"))),
    };
    if let Some(id) = &id {
        if id.is_empty() || id.chars().count() > MAX_PUSHED_ID {
            return Err(WireError::invalid_payload(format!(
                "events[{i}].id must be 1-{MAX_PUSHED_ID} characters when present"
            )));
        }
        if ids::looks_derived(id) {
            return Err(WireError::invalid_payload(format!(
                "events[{i}].id is shaped like the ids A2 derives for consumers (a UUIDv5); use crypto.randomUUID() or your own key"
            )));
        }
    }
    let payload = event.remove("payload").unwrap_or(Value::Null);
    let chars = payload.to_string().chars().count();
    if chars > EVENT_WRITE_CHARS {
        return Err(WireError::invalid_payload(format!(
            "events[{i}].payload is {chars} characters of JSON; one event carries at most {EVENT_WRITE_CHARS}"
        )));
    }
    Ok(AppendInput { event_type, payload, id })
}

fn parse_presence(mut patch: Map<String, Value>) -> Result<PresencePatch, WireError> {
    let participant = match patch.remove("participant") {
        Some(Value::String(p)) => p,
        _ => return Err(WireError::invalid_payload("presence.participant must be a string")),
    };
    let values = match patch.remove("values") {
        Some(Value::Object(values)) => values,
        _ => {
            return Err(WireError::invalid_payload("presence.values must be an object of field → value (null deletes)"))
        }
    };
    let number = |name: &str, value: Option<Value>| -> Result<Option<u64>, WireError> {
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(value) => value.as_u64().map(Some).ok_or_else(|| {
                WireError::invalid_payload(format!("presence.{name} must be a non-negative integer when present"))
            }),
        }
    };
    let seen = number("seen", patch.remove("seen"))?;
    let at = match patch.remove("at") {
        None | Some(Value::Null) => None,
        Some(at) => Some(presence_at(&at)?),
    };
    Ok(PresencePatch { participant, values, seen, at })
}

/// The largest time a Date holds (±8.64e15 ms from the epoch).
const MAX_DATE_MS: f64 = 8_640_000_000_000_000.0;

/// The seeds' `at`: a finite, non-negative number of milliseconds within the
/// Date range, a fraction dropped (the store keeps whole milliseconds).
fn presence_at(at: &Value) -> Result<i64, WireError> {
    match at.as_f64() {
        Some(ms) if ms.is_finite() && (0.0..=MAX_DATE_MS).contains(&ms) => Ok(ms.floor() as i64),
        _ => {
            Err(WireError::invalid_payload("presence.at must be non-negative epoch milliseconds within the Date range"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(body: Value) -> Result<Push, WireError> {
        parse_push_body(body.to_string().as_bytes())
    }

    fn refusal(body: Value) -> String {
        match parse(body) {
            Ok(push) => panic!("accepted {push:?}"),
            Err(error) => {
                assert_eq!(error.code, "INVALID_PAYLOAD");
                error.message
            }
        }
    }

    #[test]
    fn takes_events_presence_or_both() {
        let push = parse(json!({ "events": [{ "type": "a", "payload": { "n": 1 }, "id": "k-1" }] })).unwrap();
        assert_eq!(push.events, vec![AppendInput::new("a", json!({ "n": 1 })).with_id("k-1")]);
        let push =
            parse(json!({ "presence": { "participant": "ann", "values": { "typing": true }, "at": 5 } })).unwrap();
        assert_eq!(push.presence.unwrap().at, Some(5));
        let push =
            parse(json!({ "events": [{ "type": "a" }], "presence": { "participant": "p", "values": {} } })).unwrap();
        assert_eq!(push.events[0].payload, Value::Null);
        assert!(push.presence.is_some());
    }

    #[test]
    fn refuses_malformed_envelopes_naming_the_place() {
        assert!(parse_push_body(b"{").unwrap_err().message.contains("not JSON"));
        assert!(refusal(json!([1])).contains("JSON object"));
        assert!(refusal(json!({})).contains("at least one event"));
        assert!(refusal(json!({ "events": [] })).contains("at least one event"));
        assert!(refusal(json!({ "events": {} })).contains("array"));
        assert!(refusal(json!({ "events": [1] })).contains("events[0] must be an object"));
        assert!(refusal(json!({ "events": [{ "type": "" }] })).contains("events[0].type must be a non-empty string"));
        assert!(refusal(json!({ "events": [{ "type": "a" }, { "type": "b", "id": 7 }] }))
            .contains("events[1].id must be a string"));
        assert!(refusal(json!({ "presence": { "participant": 1, "values": {} } })).contains("participant"));
        assert!(refusal(json!({ "presence": { "participant": "p", "values": [] } })).contains("values"));
        assert!(refusal(json!({ "presence": { "participant": "p", "values": {}, "at": -1 } })).contains("presence.at"));
        assert!(refusal(json!({ "presence": { "participant": "p", "values": {}, "at": "5" } })).contains("presence.at"));
        assert!(
            refusal(json!({ "presence": { "participant": "p", "values": {}, "at": 9e15 } })).contains("presence.at")
        );
        assert!(
            refusal(json!({ "presence": { "participant": "p", "values": {}, "seen": 1.5 } })).contains("presence.seen")
        );
    }

    #[test]
    fn refuses_over_long_ids_and_payloads() {
        let long = "x".repeat(MAX_PUSHED_ID + 1);
        assert!(refusal(json!({ "events": [{ "type": "a", "id": long }] })).contains("1-256 characters"));
        assert!(refusal(json!({ "events": [{ "type": "a", "id": "" }] })).contains("1-256 characters"));
        // Counted in characters, not bytes: 256 two-byte characters are allowed.
        assert!(parse(json!({ "events": [{ "type": "a", "id": "é".repeat(MAX_PUSHED_ID) }] })).is_ok());
        let big = "y".repeat(EVENT_WRITE_CHARS);
        assert!(refusal(json!({ "events": [{ "type": "a", "payload": big }] })).contains("at most"));
    }
}
