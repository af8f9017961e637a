//! Rows into the store's values, the same for every SQL backend.

use a2_store::codec::{kind_from_code, lane_from_column, prefix_range};
use a2_store::rules::{HeadRow, HeadState};
use a2_store::*;

use crate::value::Row;

pub fn head_state(row: &Row) -> Result<HeadState, StoreError> {
    Ok(HeadState {
        status: HeadStatus {
            attempt_count: row.u32("attempt_count")?,
            failure_count: row.u32("failure_count")?,
            last_error: row.opt_text("last_error")?,
            failed_at: row.opt_int("failed_at")?,
            lease_holder: row.opt_text("lease_holder")?,
            lease_expires_at: row.opt_int("lease_expires_at")?,
            next_attempt_at: row.opt_int("next_attempt_at")?,
        },
        attempt_started_at: row.opt_int("attempt_started_at")?,
    })
}

pub fn attempt(row: &Row) -> Result<Attempt, StoreError> {
    let appended: Option<Vec<String>> = row.opt_json("appended")?;
    Ok(Attempt {
        consumer: row.text("consumer")?,
        lane: lane_from_column(row.text("lane")?),
        index: row.u64("idx")?,
        attempt: row.u32("attempt")?,
        holder: row.opt_text("holder")?,
        started_at: row.opt_int("started_at")?,
        ended_at: row.int("ended_at")?,
        outcome: AttemptOutcome::from_code(row.int("outcome")?)?,
        error: row.opt_text("error")?,
        appended: appended.unwrap_or_default(),
    })
}

pub fn head_row(row: &Row) -> Result<HeadRow, StoreError> {
    Ok(HeadRow {
        consumer: row.text("consumer")?,
        kind: kind_from_code(row.int("kind")?),
        lane: lane_from_column(row.text("lane")?),
        index: row.u64("idx")?,
        state: head_state(row)?,
        event_created_at: row.opt_int("event_created_at")?,
    })
}

/// The head a row names, from its `consumer`, `lane` and `idx` columns.
pub fn head_ref(row: &Row) -> Result<HeadRef, StoreError> {
    Ok(HeadRef { consumer: row.text("consumer")?, lane: lane_from_column(row.text("lane")?), index: row.u64("idx")? })
}

/// A head the picking statement leased itself, as `claim_head` would have: its
/// row, with its event's columns prefixed `e_`.
pub(crate) fn leased_head(row: &Row, session: &str, lease_expires_at: Millis) -> Result<ClaimedHead, StoreError> {
    Ok(ClaimedHead {
        head: head_ref(row)?,
        attempt: row.u32("attempt_count")?,
        failure_count: row.u32("failure_count")?,
        lease_expires_at,
        event: event(row, session, "e_")?,
    })
}

/// An event from columns `id, type, payload, idx, created_at, cause`, each
/// with `prefix` (`e_` when joined to a head).
pub fn event(row: &Row, session: &str, prefix: &str) -> Result<Event, StoreError> {
    let col = |name: &str| format!("{prefix}{name}");
    let stored: Option<StoredCause> = row.opt_json(&col("cause"))?;
    let StoredCause { cause, scheduled_by } = stored.unwrap_or_default();
    Ok(Event {
        id: row.text(&col("id"))?,
        event_type: row.text(&col("type"))?,
        payload: row.json(&col("payload"))?,
        index: row.u64(&col("idx"))?,
        session: session.to_owned(),
        created_at: row.int(&col("created_at"))?,
        cause,
        scheduled_by,
    })
}

pub fn summary(row: &Row) -> Result<SessionSummary, StoreError> {
    let key = row.text("session")?;
    let (contract, session_id) = split_session_key(&key);
    Ok(SessionSummary {
        contract: contract.to_owned(),
        session_id: session_id.to_owned(),
        head: row.u64("head")?,
        clear_index: row.u64("clear_index")?,
        created_at: row.int("created_at")?,
        updated_at: row.int("updated_at")?,
        dead_letters: row.u64("dead_letters")?,
        lag: row.u64("lag")?,
    })
}

pub fn snapshot_info(row: &Row) -> Result<SnapshotInfo, StoreError> {
    let state: serde_json::Value = row.json("state")?;
    Ok(SnapshotInfo {
        reducer: row.text("reducer")?,
        index: row.u64("idx")?,
        size_bytes: serde_json::to_vec(&state).map(|v| v.len() as u64).unwrap_or(0),
        state,
        pins: row.json("pins")?,
        created_at: row.int("created_at")?,
    })
}

pub fn dead_letter(row: &Row) -> Result<DeadLetter, StoreError> {
    let key = row.text("session")?;
    let (contract, session_id) = split_session_key(&key);
    let state = head_state(row)?;
    Ok(DeadLetter {
        contract: contract.to_owned(),
        session_id: session_id.to_owned(),
        consumer: row.text("consumer")?,
        lane: lane_from_column(row.text("lane")?),
        index: row.u64("idx")?,
        event_id: row.text("e_id")?,
        event_type: row.text("e_type")?,
        attempt_count: state.status.attempt_count,
        failure_count: state.status.failure_count,
        last_error: state.status.last_error,
        failed_at: state.status.failed_at.unwrap_or_default(),
    })
}

/// One consumer's attempts that ended in one bucket (counted, or as kept).
pub fn attempt_rate(row: &Row) -> Result<AttemptRate, StoreError> {
    Ok(AttemptRate {
        contract: row.text("contract")?,
        consumer: row.text("consumer")?,
        bucket_start: row.int("bucket")?,
        completed: row.u64("completed")?,
        failed: row.u64("failed")?,
    })
}

/// A group of dead letters by cause, with its first dead letter (`session, lane, idx`) as the sample.
pub fn dead_letter_group(row: &Row) -> Result<DeadLetterGroup, StoreError> {
    let consumer = row.text("consumer")?;
    Ok(DeadLetterGroup {
        contract: row.text("contract")?,
        cause: row.text("cause")?,
        count: row.u64("n")?,
        first_failed_at: row.int("first_failed_at")?,
        last_failed_at: row.int("last_failed_at")?,
        sample_error: row.opt_text("sample_error")?.unwrap_or_default(),
        sample: HeadKey {
            session: SessionKey::from_stored(row.text("session")?),
            consumer: consumer.clone(),
            lane: lane_from_column(row.text("lane")?),
            index: row.u64("idx")?,
        },
        consumer,
        partial: false,
    })
}

pub fn consumer_total(row: &Row, lagging: &str) -> Result<ConsumerTotal, StoreError> {
    Ok(ConsumerTotal {
        contract: row.text("contract")?,
        consumer: row.text("consumer")?,
        sessions: row.u64("sessions")?,
        lagging_sessions: row.u64(lagging)?,
        total_lag: row.u64("total_lag")?,
        dead_letters: row.u64("dead_letters")?,
        served: None,
    })
}

pub fn audit_record(row: &Row) -> Result<AuditRecord, StoreError> {
    Ok(AuditRecord {
        id: row.u64("id")?,
        entry: AuditEntry {
            at: row.int("at")?,
            user: row.text("user_name")?,
            host: row.text("host")?,
            db_user: row.opt_text("db_user")?,
            action: row.text("action")?,
            contract: row.opt_text("contract")?,
            session_id: row.opt_text("session_id")?,
            parameters: row.json("parameters")?,
            outcome: row.json("outcome")?,
        },
    })
}

/// Keys of every contract, or of one: `[lo, hi)`.
pub fn contract_range(contract: Option<&str>) -> (String, String) {
    match contract {
        Some(contract) => prefix_range(&session_key(contract, "")),
        None => (String::new(), "\u{10FFFF}".repeat(2)),
    }
}

pub(crate) fn paused_consumer(row: &Row) -> Result<PausedConsumer, StoreError> {
    Ok(PausedConsumer {
        contract: row.text("contract")?,
        consumer: row.text("consumer")?,
        actor: row.text("actor")?,
        reason: row.text("reason")?,
        paused_at: row.int("paused_at")?,
    })
}
