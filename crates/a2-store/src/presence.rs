//! The presence plane: who is in a session and what they show (a cursor,
//! "typing…"), kept per (participant, field) beside the log, never in it.
//! Last writer wins by the sender's stamp; the store anchors expiry on its
//! own clock, so a sender's skewed clock can neither pin nor kill a value.
//! A delete leaves a tombstone (no value) with the delete's stamp until it
//! expires, so an older write arriving late cannot bring the value back.

use serde_json::Value;

use crate::types::{Millis, SessionKey};

/// One (participant, field) cell as kept: `value: None` is a tombstone.
#[derive(Debug, Clone, PartialEq)]
pub struct PresenceCell {
    pub participant: String,
    pub field: String,
    pub value: Option<Value>,
    /// The log index the writer had seen when it wrote.
    pub seen: u64,
    /// The sender's stamp: what orders writes to the cell.
    pub at: Millis,
    /// The store's clock plus the time to live, at the write.
    pub expires_at: Millis,
}

/// Write a participant's fields, checked by the engine: each field's value,
/// or `None` to delete it. A field whose kept stamp is newer than `at` (and
/// not expired) keeps its value; a tie goes to this write.
#[derive(Debug, Clone)]
pub struct PresenceSet {
    pub session: SessionKey,
    pub participant: String,
    pub values: Vec<(String, Option<Value>)>,
    pub seen: u64,
    pub at: Millis,
    pub ttl_ms: i64,
}

/// Delete every expired cell and tombstone, store-wide; how many went.
#[derive(Debug, Clone, Copy, Default)]
pub struct PresencePrune {
    pub limit: u32,
}

/// Whether `kept` gives way to a write stamped `at` at `now`: an expired cell
/// always does, a live one to a stamp no older than its own.
pub fn presence_write_wins(kept: &PresenceCell, at: Millis, now: Millis) -> bool {
    kept.expires_at <= now || kept.at <= at
}
