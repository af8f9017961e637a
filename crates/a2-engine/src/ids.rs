//! Deterministic child ids: a consumer re-run after a crash derives the same
//! ids, so the store's per-session unique ids make its appends no-ops.

use sha1::{Digest, Sha1};
use uuid::Uuid;

use crate::A2Error;

/// Namespace of ids for events a consumer appends through `session.append`.
const APPEND_NAMESPACE: Uuid = Uuid::from_u128(0x6f2c_9a4e_1b7d_4c3a_9e58_0d1f_a2b3_c4d5);
/// Namespace of ids for events a consumer returns from `run`.
const RETURN_NAMESPACE: Uuid = Uuid::from_u128(0x3b8e_5d21_7a94_4f06_8c1e_2f9a_b7c6_d5e4);

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
