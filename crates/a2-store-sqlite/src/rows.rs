//! Decoding rows into the store's values.

use a2_store::codec::{kind_from_code, lane_from_column, to_u32, to_u64};
use a2_store::rules::{HeadRow, HeadState};
use a2_store::{Cause, Event, StoreError};
use sqlx::sqlite::SqliteRow;
use sqlx::Row;

use crate::db_error;

pub fn get<'r, T: sqlx::Decode<'r, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite>>(
    row: &'r SqliteRow,
    column: &str,
) -> Result<T, StoreError> {
    row.try_get(column).map_err(db_error)
}

pub fn head_state(row: &SqliteRow) -> Result<HeadState, StoreError> {
    Ok(HeadState {
        attempt_count: to_u32(get(row, "attempt_count")?),
        failure_count: to_u32(get(row, "failure_count")?),
        last_error: get(row, "last_error")?,
        failed_at: get(row, "failed_at")?,
        lease_holder: get(row, "lease_holder")?,
        lease_expires_at: get(row, "lease_expires_at")?,
        next_attempt_at: get(row, "next_attempt_at")?,
    })
}

pub fn head_row(row: &SqliteRow) -> Result<HeadRow, StoreError> {
    Ok(HeadRow {
        consumer: get(row, "consumer")?,
        kind: kind_from_code(get(row, "kind")?),
        lane: lane_from_column(get(row, "lane")?),
        index: to_u64(get(row, "idx")?),
        state: head_state(row)?,
        event_created_at: get(row, "event_created_at")?,
    })
}

fn json<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T, StoreError> {
    serde_json::from_str(text)
        .map_err(|e| StoreError::Schema { message: format!("stored {what} is not valid JSON: {e}") })
}

/// An event from columns `id, type, payload, idx, created_at, cause` (prefixed `e_` when joined).
pub fn event(row: &SqliteRow, session: &str, prefix: &str) -> Result<Event, StoreError> {
    let col = |name: &str| format!("{prefix}{name}");
    let payload: String = get(row, &col("payload"))?;
    let cause: Option<String> = get(row, &col("cause"))?;
    Ok(Event {
        id: get(row, &col("id"))?,
        event_type: get(row, &col("type"))?,
        payload: json(&payload, "payload")?,
        index: to_u64(get(row, &col("idx"))?),
        session: session.to_owned(),
        created_at: get(row, &col("created_at"))?,
        cause: cause.as_deref().map(|c| json::<Cause>(c, "cause")).transpose()?,
    })
}
