//! The presence plane at the store: last writer wins per field by the
//! sender's stamp, a delete's tombstone holds off older writes, and expiry
//! runs on the store's clock, whatever the stamps say.

use a2_store::*;
use serde_json::{json, Value};

use crate::support::*;

const TTL: i64 = 60_000;

fn set(session: &str, participant: &str, values: &[(&str, Option<Value>)], at: Millis) -> PresenceSet {
    PresenceSet {
        session: key(session),
        participant: participant.to_owned(),
        values: values.iter().map(|(f, v)| ((*f).to_owned(), v.clone())).collect(),
        seen: 7,
        at,
        ttl_ms: TTL,
    }
}

/// The live values of a session as (participant, field, value, at), tombstones left out.
async fn live(store: &dyn Store, session: &str) -> Vec<(String, String, Value, Millis)> {
    let cells = store.presence_read(&key(session)).await.unwrap_or_else(|e| panic!("presence read: {e}"));
    cells.into_iter().filter_map(|c| Some((c.participant, c.field, c.value?, c.at))).collect()
}

fn cell(participant: &str, field: &str, value: Value, at: Millis) -> (String, String, Value, Millis) {
    (participant.to_owned(), field.to_owned(), value, at)
}

async fn write(store: &dyn Store, params: PresenceSet) -> Vec<String> {
    store.presence_set(params).await.unwrap_or_else(|e| panic!("presence set: {e}"))
}

pub async fn presence_last_writer_wins_per_field(factory: &dyn crate::StoreFactory) {
    let (store, clock) = open(factory).await;
    let store = store.as_ref();
    let a = json!({ "x": 1, "y": 1 });
    assert_eq!(write(store, set("s", "ann", &[("cursor", Some(a.clone()))], 200)).await, ["cursor"]);
    assert_eq!(write(store, set("s", "ann", &[("typing", Some(json!(true)))], 50)).await, ["typing"]);
    // An older stamp loses field by field: the other field of the same patch still lands.
    let both = [("cursor", Some(json!({ "x": 0, "y": 0 }))), ("typing", Some(json!(true)))];
    assert_eq!(write(store, set("s", "ann", &both, 100)).await, ["typing"], "the cursor's newer stamp keeps it");
    let changed = write(store, set("s", "ann", &[("cursor", Some(json!({ "x": 0, "y": 0 })))], 199)).await;
    assert!(changed.is_empty(), "an older write changes nothing: {changed:?}");
    assert_eq!(write(store, set("s", "ann", &[("typing", Some(json!(false)))], 300)).await, ["typing"]);
    // A tie goes to the incoming write.
    let b = json!({ "x": 2, "y": 2 });
    assert_eq!(write(store, set("s", "ann", &[("cursor", Some(b.clone()))], 200)).await, ["cursor"]);
    assert_eq!(
        live(store, "s").await,
        [cell("ann", "cursor", b.clone(), 200), cell("ann", "typing", json!(false), 300)]
    );
    // Participants and sessions are apart.
    write(store, set("s", "bob", &[("cursor", Some(a.clone()))], 1)).await;
    write(store, set("t", "ann", &[("cursor", Some(a.clone()))], 1)).await;
    assert_eq!(live(store, "s").await.len(), 3);
    assert_eq!(live(store, "t").await, [cell("ann", "cursor", a.clone(), 1)]);

    // A delete leaves a tombstone with its stamp: a later-arriving older write cannot revive the value.
    assert_eq!(write(store, set("s", "ann", &[("cursor", None)], 400)).await, ["cursor"]);
    assert!(write(store, set("s", "ann", &[("cursor", Some(a.clone()))], 350)).await.is_empty());
    let cells = store.presence_read(&key("s")).await.unwrap_or_else(|e| panic!("{e}"));
    let tombstone = cells.iter().find(|c| c.participant == "ann" && c.field == "cursor");
    assert_eq!(tombstone.map(|c| (c.value.clone(), c.at)), Some((None, 400)), "the read shows the tombstone, stamped");
    assert!(!live(store, "s").await.iter().any(|c| c.0 == "ann" && c.1 == "cursor"));
    // Once the tombstone expired, any write lands again.
    clock.advance(TTL);
    assert_eq!(write(store, set("s", "ann", &[("cursor", Some(a.clone()))], 350)).await, ["cursor"]);
    assert_eq!(live(store, "s").await, [cell("ann", "cursor", a, 350)]);
}

pub async fn presence_expires_after_ttl(factory: &dyn crate::StoreFactory) {
    let (store, clock) = open(factory).await;
    let store = store.as_ref();
    // Stamps far in the past and the future: expiry counts on the store's clock, not the sender's.
    write(store, set("s", "ann", &[("cursor", Some(json!({ "x": 1, "y": 1 })))], 1)).await;
    write(store, set("s", "bob", &[("typing", Some(json!(true)))], 8_000_000_000_000_000)).await;
    clock.advance(TTL / 2);
    write(store, set("s", "ann", &[("typing", Some(json!(true)))], 2)).await;
    clock.advance(TTL / 2 - 1);
    assert_eq!(live(store, "s").await.len(), 3, "nothing expired a millisecond before its TTL");
    let sessions = store.presence_sessions().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sessions, [(CONTRACT.to_owned(), 1)]);
    clock.advance(1);
    // Each field expires on its own: ann's later typing outlives her cursor.
    assert_eq!(live(store, "s").await, [cell("ann", "typing", json!(true), 2)]);
    clock.advance(TTL / 2);
    assert!(live(store, "s").await.is_empty());
    assert!(store.presence_sessions().await.unwrap_or_else(|e| panic!("{e}")).is_empty());
    // Pruning deletes what expired, a bounded batch at a time.
    assert_eq!(store.presence_prune(PresencePrune { limit: 2 }).await.unwrap_or_else(|e| panic!("{e}")), 2);
    assert_eq!(store.presence_prune(PresencePrune { limit: 100 }).await.unwrap_or_else(|e| panic!("{e}")), 1);
    assert_eq!(store.presence_prune(PresencePrune { limit: 100 }).await.unwrap_or_else(|e| panic!("{e}")), 0);
    // Presence is never an append: the session has no log.
    let bounds = store.session_bounds(&key("s")).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(bounds.head, 0);
}
