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

/// External ids: 1–256 characters, and never shaped like the ids A2 derives.
pub fn validate_external_id(id: &str) -> Result<(), A2Error> {
    let reason = if id.is_empty() || id.chars().count() > 256 {
        "must be 1-256 characters"
    } else if Uuid::try_parse(id).is_ok_and(|u| u.get_version_num() == 5) {
        "is shaped like the ids A2 derives for consumers (a UUIDv5); use a random UUID or your own key"
    } else {
        return Ok(());
    };
    Err(A2Error::InvalidEventId { id: id.to_owned(), reason: reason.to_owned() })
}

/// A fresh random id for an external event appended without one.
pub fn random_event_id() -> String {
    Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

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
