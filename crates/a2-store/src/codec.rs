//! How SQL backends lay the store's values into columns, shared so both
//! read each other's conventions the same way.

use crate::{HeadKind, HeadRef, StoreError};

/// The lane column: `''` stands for no lane (a concurrent head); real lanes are never empty.
pub fn lane_column(lane: Option<&str>) -> &str {
    lane.unwrap_or("")
}

pub fn lane_from_column(lane: String) -> Option<String> {
    (!lane.is_empty()).then_some(lane)
}

pub fn kind_code(kind: HeadKind) -> i16 {
    match kind {
        HeadKind::Log => 0,
        HeadKind::Lane => 1,
        HeadKind::Concurrent => 2,
    }
}

pub fn kind_from_code(code: i64) -> HeadKind {
    match code {
        0 => HeadKind::Log,
        1 => HeadKind::Lane,
        _ => HeadKind::Concurrent,
    }
}

/// The kind of a per-event head from its lane.
pub fn target_kind(lane: Option<&str>) -> HeadKind {
    if lane.is_some() {
        HeadKind::Lane
    } else {
        HeadKind::Concurrent
    }
}

/// Indexes and counts are non-negative and far below 2^63.
pub fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

pub fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

pub fn to_u32(value: i64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

pub fn pins_to_json(pins: &[HeadRef]) -> Result<String, StoreError> {
    serde_json::to_string(pins).map_err(|e| StoreError::invalid(format!("snapshot pins: {e}")))
}

pub fn pins_from_json(text: &str) -> Result<Vec<HeadRef>, StoreError> {
    serde_json::from_str(text)
        .map_err(|e| StoreError::Schema { message: format!("stored snapshot pins are not valid: {e}") })
}

/// The bounds of a key-prefix range scan: `[prefix, prefix + U+10FFFF)` in
/// byte order, so `%` and `_` in ids are plain characters.
pub fn prefix_range(prefix: &str) -> (String, String) {
    (prefix.to_owned(), format!("{prefix}\u{10FFFF}"))
}
