//! Deterministic child ids: a consumer re-run after a crash derives the same
//! ids, so the store's per-session unique ids make its appends no-ops.

use sha1::{Digest, Sha1};
use uuid::Uuid;

use crate::A2Error;

/// Namespace of ids for events a consumer appends through `session.append`.
const APPEND_NAMESPACE: Uuid = Uuid::from_u128(0x6f2c_9a4e_1b7d_4c3a_9e58_0d1f_a2b3_c4d5);
/// Namespace of ids for events a consumer returns from `run`.
const RETURN_NAMESPACE: Uuid = Uuid::from_u128(0x3b8e_5d21_7a94_4f06_8c1e_2f9a_b7c6_d5e4);

/// Namespace of the ids of tasks `session.schedule` puts on the scheduler.
const SCHEDULE_NAMESPACE: Uuid = Uuid::from_u128(0x9d41_7c2e_5f83_4b6a_a1d0_3e7f_c2b8_9a15);
/// Namespace of the ids of scheduled clears.
const SCHEDULE_CLEAR_NAMESPACE: Uuid = Uuid::from_u128(0x52e8_b3a9_0c6d_4f17_8b24_6d9e_f0a3_c7b1);
/// Namespace of the ids of the events a scheduled task appends.
const SCHEDULED_EVENT_NAMESPACE: Uuid = Uuid::from_u128(0xc7a3_1e58_92d4_4b0f_9e6a_5b2c_d8f1_0e47);

/// Namespace of the ids of the watchdog's drain tasks.
const WATCHDOG_NAMESPACE: Uuid = Uuid::from_u128(0x1f6b_84d2_3ac9_4e05_b7d8_42a6_9c0e_5f3b);

/// UUIDv5 (SHA-1) of a namespace and NUL-joined parts.
fn uuid_v5(namespace: Uuid, parts: &[&str]) -> String {
    let mut hasher = Sha1::new();
    hasher.update(namespace.as_bytes());
    hasher.update(parts.join("\0").as_bytes());
    let digest = hasher.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_sha1_bytes(bytes).into_uuid().to_string()
}

/// The id of item `ordinal` of a consumer's append named `name`.
pub fn appended_event_id(trigger_event_id: &str, name: &str, ordinal: usize, consumer: &str) -> String {
    uuid_v5(APPEND_NAMESPACE, &[trigger_event_id, name, &ordinal.to_string(), consumer])
}

/// The id of item `ordinal` of what a consumer's run returned.
pub fn returned_event_id(trigger_event_id: &str, ordinal: usize, consumer: &str) -> String {
    uuid_v5(RETURN_NAMESPACE, &[trigger_event_id, &ordinal.to_string(), consumer])
}

/// What keys a scheduled task: the session, the run that scheduled it (none
/// outside a run), the schedule's name, and the session's clear index when a
/// clear came first (so scheduling again after a clear is a distinct task).
#[derive(Debug, Clone, Copy)]
pub struct ScheduleKey<'a> {
    pub contract: &'a str,
    pub session_id: &'a str,
    pub trigger_event_id: Option<&'a str>,
    pub name: &'a str,
    pub clear_index: u64,
    /// The consumer whose run scheduled it: two consumers of one event never collide.
    pub consumer: Option<&'a str>,
}

/// The id of a scheduled append: a JSON array of its key (unambiguous
/// whatever the parts contain), hashed in its own namespace.
pub fn schedule_id(key: &ScheduleKey<'_>) -> String {
    let mut parts = vec![
        serde_json::json!(key.contract),
        serde_json::json!(key.session_id),
        serde_json::json!(key.trigger_event_id),
        serde_json::json!(key.name),
    ];
    if key.clear_index > 0 {
        parts.push(serde_json::json!(key.clear_index));
    }
    if let Some(consumer) = key.consumer {
        parts.push(serde_json::json!({ "consumer": consumer }));
    }
    uuid_v5(SCHEDULE_NAMESPACE, &[&serde_json::Value::Array(parts).to_string()])
}

/// The id of a scheduled clear: its key, the clear index always, and its guard.
pub fn schedule_clear_id(key: &ScheduleKey<'_>, if_last_index: Option<u64>) -> String {
    let mut parts = vec![
        serde_json::json!(key.contract),
        serde_json::json!(key.session_id),
        serde_json::json!(key.trigger_event_id),
        serde_json::json!(key.clear_index),
        serde_json::json!(key.name),
        serde_json::json!(if_last_index),
    ];
    if let Some(consumer) = key.consumer {
        parts.push(serde_json::json!({ "consumer": consumer }));
    }
    uuid_v5(SCHEDULE_CLEAR_NAMESPACE, &[&serde_json::Value::Array(parts).to_string()])
}

/// The id of the watchdog drain of a session due at `slot`: one task per
/// (session, slot) whichever process arms it.
pub fn watchdog_id(contract: &str, session_id: &str, slot: i64) -> String {
    uuid_v5(WATCHDOG_NAMESPACE, &[contract, session_id, &slot.to_string()])
}

/// The id of item `ordinal` of a scheduled append that named no id of its own.
pub fn scheduled_event_id(schedule_id: &str, ordinal: usize) -> String {
    uuid_v5(SCHEDULED_EVENT_NAMESPACE, &[schedule_id, &ordinal.to_string()])
}

/// Any event id a caller gives: 1–256 characters. A run's appends and
/// returns follow this rule alone: they may carry ids A2 derived.
pub fn validate_event_id(id: &str) -> Result<(), A2Error> {
    if id.is_empty() || id.chars().count() > 256 {
        return Err(A2Error::InvalidEventId { id: id.to_owned(), reason: "must be 1-256 characters".into() });
    }
    Ok(())
}

/// External ids: an event id that is not shaped like the ids A2 derives.
pub fn validate_external_id(id: &str) -> Result<(), A2Error> {
    validate_event_id(id)?;
    if looks_derived(id) {
        return Err(A2Error::InvalidEventId {
            id: id.to_owned(),
            reason: "is shaped like the ids A2 derives for consumers (a UUIDv5); use a random UUID or your own key"
                .into(),
        });
    }
    Ok(())
}

/// The seeds' shape of a derived id: a hyphenated UUID of version 5 and the
/// RFC variant, either case (`xxxxxxxx-xxxx-5xxx-[89ab]xxx-xxxxxxxxxxxx`);
/// other spellings of the same UUID (no hyphens, braces, a URN) are someone's own key.
pub fn looks_derived(id: &str) -> bool {
    let bytes = id.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            14 => *b == b'5',
            19 => matches!(b, b'8' | b'9' | b'a' | b'b' | b'A' | b'B'),
            _ => b.is_ascii_hexdigit(),
        })
}

/// A fresh random id for an external event appended without one.
pub fn random_event_id() -> String {
    Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_hyphenated_v5_shape_looks_derived() {
        let derived = appended_event_id("t", "n", 0, "c");
        assert!(looks_derived(&derived) && looks_derived(&derived.to_uppercase()));
        assert!(!looks_derived(&derived.replace('-', "")), "the simple form is someone's own key");
        assert!(!looks_derived(&format!("{{{derived}}}")));
        assert!(!looks_derived(&random_event_id()), "a v4 id is not derived");
        assert!(validate_event_id(&derived).is_ok() && validate_external_id(&derived).is_err());
        assert!(validate_event_id("").is_err() && validate_event_id(&"x".repeat(257)).is_err());
    }

    #[test]
    fn schedule_ids_are_keyed_on_every_part() {
        let key = ScheduleKey {
            contract: "shop",
            session_id: "o-1",
            trigger_event_id: Some("e1"),
            name: "remind",
            clear_index: 0,
            consumer: Some("mailer"),
        };
        let id = schedule_id(&key);
        assert_eq!(id, schedule_id(&ScheduleKey { ..key }));
        assert!(looks_derived(&id));
        assert_ne!(id, schedule_id(&ScheduleKey { clear_index: 3, ..key }), "a clear makes it a new task");
        assert_ne!(id, schedule_id(&ScheduleKey { consumer: None, ..key }));
        assert_ne!(id, schedule_id(&ScheduleKey { trigger_event_id: None, ..key }));
        assert_ne!(id, schedule_id(&ScheduleKey { name: "other", ..key }));
        assert_ne!(id, schedule_id(&ScheduleKey { session_id: "o-2", ..key }));
        assert_ne!(schedule_clear_id(&key, Some(4)), schedule_clear_id(&key, None));
        assert_ne!(schedule_clear_id(&key, None), id, "clears have their own namespace");
        assert_ne!(scheduled_event_id(&id, 0), scheduled_event_id(&id, 1));
    }

    #[test]
    fn ids_are_stable_v5_and_keyed_on_every_part() {
        let a = appended_event_id("e1", "mail", 0, "mailer");
        assert_eq!(a, appended_event_id("e1", "mail", 0, "mailer"));
        assert_eq!(Uuid::parse_str(&a).map(|u| u.get_version_num()).ok(), Some(5));
        assert_ne!(a, appended_event_id("e1", "mail", 1, "mailer"));
        assert_ne!(a, appended_event_id("e1", "mail", 0, "other"));
        assert_ne!(a, appended_event_id("e2", "mail", 0, "mailer"));
        assert_ne!(returned_event_id("e1", 0, "mailer"), returned_event_id("e1", 0, "other"));
        assert!(validate_external_id(&a).is_err());
        assert!(validate_external_id(&random_event_id()).is_ok());
        assert!(validate_external_id("").is_err());
        assert!(validate_external_id(&"x".repeat(257)).is_err());
    }
}
