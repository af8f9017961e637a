//! Small builders the scenarios share.

use std::sync::Arc;

use a2_store::{
    session_key, AttemptList, Backoff, Claimed, EventAppend, HeadClaim, HeadFail, HeadRef, ManualClock, NewEvent,
    SessionKey, Store, StoreConsumer, Target,
};
use serde_json::json;

use crate::StoreFactory;

pub const CONTRACT: &str = "conf";
pub const TTL: i64 = 30_000;
pub const BACKOFF: Backoff = Backoff { base_ms: 1_000, max_ms: 60_000 };

pub fn key(session: &str) -> SessionKey {
    session_key(CONTRACT, session)
}

pub fn event(id: &str, event_type: &str) -> NewEvent {
    NewEvent {
        id: id.to_owned(),
        event_type: event_type.to_owned(),
        payload: json!({ "id": id }),
        cause: None,
        scheduled_by: None,
        targets: Vec::new(),
    }
}

pub fn targeted(id: &str, event_type: &str, targets: &[(&str, Option<&str>)]) -> NewEvent {
    let mut e = event(id, event_type);
    e.targets = targets
        .iter()
        .map(|(consumer, lane)| Target { consumer: (*consumer).to_owned(), lane: lane.map(str::to_owned) })
        .collect();
    e
}

pub async fn open(factory: &dyn StoreFactory) -> (Arc<dyn Store>, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::default());
    let store = factory.open(clock.clone()).await;
    (store, clock)
}

pub async fn append(store: &dyn Store, session: &str, events: Vec<NewEvent>, consumers: &[StoreConsumer]) -> u64 {
    store
        .event_append(EventAppend { session: key(session), events, consumers: consumers.to_vec(), origin_index: None })
        .await
        .expect("append")
        .head
}

pub async fn append_n(store: &dyn Store, session: &str, n: usize, consumers: &[StoreConsumer]) -> u64 {
    let events = (0..n).map(|i| event(&format!("{session}-e{i}"), "tick")).collect();
    append(store, session, events, consumers).await
}

pub fn claim_params(session: &str, holder: &str, consumers: &[StoreConsumer]) -> HeadClaim {
    HeadClaim {
        session: key(session),
        holder: holder.to_owned(),
        ttl_ms: TTL,
        consumers: consumers.to_vec(),
        through: None,
        exclude: Vec::new(),
        max_failures: 10,
        limit: 100,
        range: 1,
    }
}

pub async fn claim(store: &dyn Store, session: &str, holder: &str, consumers: &[StoreConsumer]) -> Claimed {
    store.head_claim(claim_params(session, holder, consumers)).await.expect("claim")
}

pub fn fail_params(session: &str, head: &HeadRef, attempt: u32) -> HeadFail {
    HeadFail {
        session: key(session),
        head: head.clone(),
        attempt,
        error: format!("boom at attempt {attempt}"),
        aborted: false,
        max_failures: 10,
        backoff: BACKOFF,
    }
}

/// A session's attempt history, oldest first, up to `limit` attempts.
pub fn attempts_of(session: &str, limit: u32) -> AttemptList {
    AttemptList { session: key(session), consumer: None, index: None, after: None, oldest_first: true, limit }
}

pub fn log(name: &str) -> StoreConsumer {
    StoreConsumer::log(name, "main")
}

/// An operator's audit entry for `action` on session `s` of the test contract, at `at`.
pub fn audit_entry(action: &str, at: i64) -> a2_store::AuditEntry {
    a2_store::AuditEntry {
        at,
        user: "ops".into(),
        host: "box".into(),
        db_user: None,
        action: action.into(),
        contract: Some(CONTRACT.into()),
        session_id: Some("s".into()),
        parameters: json!({}),
        outcome: json!(null),
    }
}
