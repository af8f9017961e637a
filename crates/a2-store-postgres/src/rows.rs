//! Decoding rows into the store's values.

use a2_store::codec::{kind_from_code, lane_from_column, to_u32, to_u64};
use a2_store::rules::{HeadRow, HeadState};
use a2_store::{Cause, Event, StoreError};
use serde_json::Value;
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use sqlx::Row;

use crate::db_error;

pub fn get<'r, T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>>(
    row: &'r PgRow,
    column: &str,
) -> Result<T, StoreError> {
    row.try_get(column).map_err(db_error)
}

pub fn head_state(row: &PgRow) -> Result<HeadState, StoreError> {
    Ok(HeadState {
        attempt_count: to_u32(i64::from(get::<i32>(row, "attempt_count")?)),
        failure_count: to_u32(i64::from(get::<i32>(row, "failure_count")?)),
        last_error: get(row, "last_error")?,
        failed_at: get(row, "failed_at")?,
        lease_holder: get(row, "lease_holder")?,
        lease_expires_at: get(row, "lease_expires_at")?,
        next_attempt_at: get(row, "next_attempt_at")?,
    })
}

pub fn kind(row: &PgRow) -> Result<i64, StoreError> {
    Ok(i64::from(get::<i16>(row, "kind")?))
}

pub fn head_row(row: &PgRow) -> Result<HeadRow, StoreError> {
    Ok(HeadRow {
        consumer: get(row, "consumer")?,
        kind: kind_from_code(kind(row)?),
        lane: lane_from_column(get(row, "lane")?),
        index: to_u64(get(row, "idx")?),
        state: head_state(row)?,
        event_created_at: get(row, "event_created_at")?,
    })
}

pub fn json<T: serde::de::DeserializeOwned>(row: &PgRow, column: &str) -> Result<T, StoreError> {
    let Json(value) = get::<Json<Value>>(row, column)?;
    serde_json::from_value(value)
        .map_err(|e| StoreError::Schema { message: format!("stored {column} is not what A2 wrote: {e}") })
}

/// An event from columns `id, type, payload, idx, created_at, cause` (prefixed when joined).
pub fn event(row: &PgRow, session: &str, prefix: &str) -> Result<Event, StoreError> {
    let col = |name: &str| format!("{prefix}{name}");
    let cause: Option<Json<Cause>> = get(row, &col("cause"))?;
    Ok(Event {
        id: get(row, &col("id"))?,
        event_type: get(row, &col("type"))?,
        payload: get::<Json<Value>>(row, &col("payload"))?.0,
        index: to_u64(get(row, &col("idx"))?),
        session: session.to_owned(),
        created_at: get(row, &col("created_at"))?,
        cause: cause.map(|c| c.0),
    })
}
