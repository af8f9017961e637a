//! The presence plane through the engine: a patch checked whole before any
//! of it is written, and the two-plane feed (one snapshot, then changes
//! interleaved with events; a stale write never repaints the past).

use std::time::Duration;

use a2_engine::*;
use serde_json::{json, Value};

use crate::engine::{contract, open, server, server_with, tick, Pace};
use crate::StoreFactory;

fn cursor(x: i64) -> Value {
    json!({ "x": x, "y": 0 })
}

async fn next(feed: &mut PresenceFeed) -> FeedItem {
    match tokio::time::timeout(Duration::from_secs(20), feed.next()).await {
        Ok(item) => item.unwrap_or_else(|e| panic!("feed: {e}")),
        Err(_) => panic!("the feed yielded nothing within 20 s"),
    }
}

async fn next_event(feed: &mut PresenceFeed) -> u64 {
    match next(feed).await {
        FeedItem::Event(e) => e.index,
        other => panic!("expected an event, got {other:?}"),
    }
}

async fn next_change(feed: &mut PresenceFeed) -> (String, String, Option<Value>, i64) {
    match next(feed).await {
        FeedItem::Presence(c) => (c.participant, c.field, c.value, c.at),
        other => panic!("expected a presence change, got {other:?}"),
    }
}

fn change(participant: &str, field: &str, value: Option<Value>, at: i64) -> (String, String, Option<Value>, i64) {
    (participant.to_owned(), field.to_owned(), value, at)
}

async fn set(session: &Session, patch: PresencePatch) {
    session.set_presence(patch).await.unwrap_or_else(|e| panic!("set presence: {e}"));
}

pub async fn presence_patch_is_checked_whole(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let server = server(pace, store.clone(), Vec::new());
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    let code = |r: Result<(), A2Error>| r.err().map(|e| e.code());

    // A good field beside a bad one: nothing of the patch is written.
    let bad = PresencePatch::new("ann").value("typing", json!(true)).value("cursor", json!("top left"));
    assert_eq!(code(session.set_presence(bad).await), Some("INVALID_PAYLOAD"));
    let unknown = PresencePatch::new("ann").value("typing", json!(true)).value("mood", json!("calm"));
    assert_eq!(code(session.set_presence(unknown).await), Some("UNKNOWN_PRESENCE_FIELD"));
    let unknown_delete = PresencePatch::new("ann").value("mood", Value::Null);
    assert_eq!(code(session.set_presence(unknown_delete).await), Some("UNKNOWN_PRESENCE_FIELD"));
    for participant in ["", "*", "a2.scheduler"] {
        let refused = PresencePatch::new(participant).value("typing", json!(true));
        assert_eq!(code(session.set_presence(refused).await), Some("INVALID_ARGUMENT"), "participant {participant:?}");
    }
    for at in [-1, 8_640_000_000_000_001] {
        let refused = PresencePatch::new("ann").value("typing", json!(true)).at(at);
        assert_eq!(code(session.set_presence(refused).await), Some("INVALID_ARGUMENT"), "at {at}");
    }
    assert!(session.presence().await.unwrap_or_else(|e| panic!("{e}")).is_empty(), "nothing refused was written");

    // A good patch lands whole; `null` deletes; none of it is an event.
    set(&session, PresencePatch::new("ann").value("typing", json!(true)).value("cursor", cursor(1)).at(10)).await;
    set(&session, PresencePatch::new("ann").value("typing", Value::Null).at(11)).await;
    let map = session.presence().await.unwrap_or_else(|e| panic!("{e}"));
    let ann = map.get("ann").map(|fields| fields.keys().cloned().collect::<Vec<_>>());
    assert_eq!(ann, Some(vec!["cursor".to_owned()]));
    assert_eq!(map["ann"]["cursor"].value, cursor(1));
    assert_eq!(map["ann"]["cursor"].seen, 0, "outside a run, seen defaults to 0");
    let history = session.history(EventRange::all()).unwrap_or_else(|e| panic!("{e}"));
    assert!(history.collect().await.unwrap_or_else(|e| panic!("{e}")).is_empty(), "presence is never an append");

    // A contract without presence fields: refused at construction and at call.
    let plain = Contract::new("plain").and_then(|c| c.event_with("tick", |_| Ok(()))).unwrap_or_else(|e| panic!("{e}"));
    let built = Server::builder(plain.clone(), store.clone()).presence_ttl(Duration::from_secs(5)).build();
    assert_eq!(built.err().map(|e| e.code()), Some("INVALID_ARGUMENT"));
    let zero = Server::builder(contract(), store.clone()).presence_ttl(Duration::ZERO).build();
    assert_eq!(zero.err().map(|e| e.code()), Some("INVALID_ARGUMENT"));
    let plain = Server::builder(plain, store).run_in_background(false).build().unwrap_or_else(|e| panic!("{e}"));
    let plain = plain.session("s").unwrap_or_else(|e| panic!("{e}"));
    let refused = plain.set_presence(PresencePatch::new("ann").value("typing", json!(true))).await;
    assert_eq!(code(refused), Some("PRESENCE_NOT_SUPPORTED"));
}

pub async fn stream_with_presence_starts_with_a_snapshot_then_interleaves(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let server = server(pace, store, Vec::new());
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    set(&session, PresencePatch::new("ann").value("cursor", cursor(1)).at(100).seen(3)).await;
    session.append(vec![tick(1), tick(2)]).await.unwrap_or_else(|e| panic!("{e}"));

    let mut feed = session.stream_with_presence(1);
    let FeedItem::Snapshot(snapshot) = next(&mut feed).await else { panic!("the feed starts with a snapshot") };
    assert_eq!(snapshot.len(), 1);
    assert_eq!((snapshot["ann"]["cursor"].value.clone(), snapshot["ann"]["cursor"].seen), (cursor(1), 3));
    assert_eq!(next_event(&mut feed).await, 2, "then the events after start_after");

    set(&session, PresencePatch::new("bob").value("typing", json!(true)).at(200)).await;
    assert_eq!(next_change(&mut feed).await, change("bob", "typing", Some(json!(true)), 200));
    session.append(vec![tick(3)]).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(next_event(&mut feed).await, 3);
    set(&session, PresencePatch::new("ann").value("cursor", cursor(2)).at(300)).await;
    assert_eq!(next_change(&mut feed).await, change("ann", "cursor", Some(cursor(2)), 300));
    // A delete keeps its sender's stamp.
    set(&session, PresencePatch::new("ann").value("cursor", Value::Null).at(400)).await;
    assert_eq!(next_change(&mut feed).await, change("ann", "cursor", None, 400));
    session.append(vec![tick(4)]).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(next_event(&mut feed).await, 4, "one change a field, nothing painted twice");
}

pub async fn stale_presence_patch_never_repaints_the_past(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let server = server(pace, store, Vec::new());
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    let mut feed = session.stream_with_presence(0);
    assert!(matches!(next(&mut feed).await, FeedItem::Snapshot(map) if map.is_empty()));

    set(&session, PresencePatch::new("ann").value("cursor", cursor(2)).at(200)).await;
    assert_eq!(next_change(&mut feed).await, change("ann", "cursor", Some(cursor(2)), 200));
    // Two senders race: the older write arrives last and is not painted; the next change is someone else's.
    set(&session, PresencePatch::new("ann").value("cursor", cursor(1)).at(100)).await;
    set(&session, PresencePatch::new("bob").value("typing", json!(true)).at(210)).await;
    assert_eq!(
        next_change(&mut feed).await,
        change("bob", "typing", Some(json!(true)), 210),
        "the stale write painted nothing"
    );
    // Nor after a delete: the tombstone outranks an older write.
    set(&session, PresencePatch::new("ann").value("cursor", Value::Null).at(300)).await;
    assert_eq!(next_change(&mut feed).await, change("ann", "cursor", None, 300));
    set(&session, PresencePatch::new("ann").value("cursor", cursor(9)).at(250)).await;
    set(&session, PresencePatch::new("bob").value("typing", json!(false)).at(310)).await;
    assert_eq!(
        next_change(&mut feed).await,
        change("bob", "typing", Some(json!(false)), 310),
        "the deleted value did not come back"
    );
    session.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(next_event(&mut feed).await, 1);
    assert!(!session.presence().await.unwrap_or_else(|e| panic!("{e}")).contains_key("ann"));
    // A newer write paints again.
    set(&session, PresencePatch::new("ann").value("cursor", cursor(3)).at(301)).await;
    assert_eq!(next_change(&mut feed).await, change("ann", "cursor", Some(cursor(3)), 301));

    // A value nobody refreshes is painted gone while watched (at the poll
    // ceiling, no write needed), stamped as last painted, not by the observer.
    let brief = server_with(pace, open(factory).await, Vec::new(), |b| b.presence_ttl(Duration::from_millis(300)));
    let session = brief.session("s").unwrap_or_else(|e| panic!("{e}"));
    let mut feed = session.stream_with_presence(0);
    assert!(matches!(next(&mut feed).await, FeedItem::Snapshot(map) if map.is_empty()));
    set(&session, PresencePatch::new("ann").value("typing", json!(true)).at(500).seen(2)).await;
    assert_eq!(next_change(&mut feed).await, change("ann", "typing", Some(json!(true)), 500));
    assert_eq!(next_change(&mut feed).await, change("ann", "typing", None, 500), "expired, with the sender's stamp");
}

/// A client that joins a session with a backlog of events sees presence
/// written meanwhile between pages of the backlog, as the seeds interleave
/// the two planes, not only once every held event has been sent.
pub async fn presence_patch_interleaves_while_event_backlog_drains(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let server = server_with(pace, store, Vec::new(), |b| b.run_in_background(false));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append((1..=30).map(tick).collect()).await.unwrap_or_else(|e| panic!("{e}"));
    let mut feed = session.stream_with_presence(0).page_size(10);
    assert_eq!(next(&mut feed).await, FeedItem::Snapshot(PresenceMap::new()));
    set(&session, PresencePatch::new("ann").value("typing", json!(true)).at(5)).await;
    let mut order = Vec::new();
    while order.len() < 31 {
        match next(&mut feed).await {
            FeedItem::Event(event) => order.push(format!("event {}", event.index)),
            FeedItem::Presence(change) => order.push(format!("presence {}", change.participant)),
            FeedItem::Snapshot(map) => panic!("a second snapshot: {map:?}"),
        }
    }
    let at = order.iter().position(|item| item == "presence ann").unwrap_or(usize::MAX);
    assert_eq!(at, 10, "painted after the first page of ten events, not after all thirty: {order:?}");
}
