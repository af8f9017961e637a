//! Engine scenarios for reading a session: state with the index it
//! reflects and snapshots by policy, history over any range and length,
//! dead letters with their events.

use std::sync::Arc;

use a2_engine::*;
use a2_store::Store;
use serde_json::json;

use crate::engine::{all_events, open, server_with, tick, Pace};
use crate::StoreFactory;

fn snapshotting(pace: Pace, store: Arc<dyn Store>, every: u64, consumers: Vec<Consumer>) -> Server {
    server_with(pace, store, consumers, |b| b.snapshot_every(every))
}

/// `state` answers `{state, index}`; a snapshot is written once a read
/// folded `snapshot_every` events past the last one, not on every read.
pub async fn engine_state_snapshots_every_n_and_reports_its_index(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let server = snapshotting(pace, store.clone(), 4, vec![]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    let key = a2_store::session_key("shop", "s");
    session.append((1..=3).map(tick).collect()).await.unwrap_or_else(|e| panic!("{e}"));
    let read = session.state("count", None).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((read.state, read.index), (json!(3), 3));
    server.snapshots_written().await;
    assert!(store.snapshot_list(&key).await.unwrap_or_else(|e| panic!("{e}")).is_empty(), "3 folded < every 4");
    session.append((4..=5).map(tick).collect()).await.unwrap_or_else(|e| panic!("{e}"));
    let read = session.state("count", None).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((read.state, read.index), (json!(5), 5));
    server.snapshots_written().await;
    let snapshots = store.snapshot_list(&key).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(snapshots.iter().map(|s| s.index).collect::<Vec<_>>(), vec![5], "written once 4 or more were folded");
    session.append(vec![tick(6)]).await.unwrap_or_else(|e| panic!("{e}"));
    let read = session.state("count", Some(2)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((read.state, read.index), (json!(2), 2), "an explicit through reads the past");
    let read = session.state("count", None).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((read.state, read.index), (json!(6), 6), "folded on from the snapshot at 5");
    server.snapshots_written().await;
    let snapshots = store.snapshot_list(&key).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(snapshots.len(), 1, "one event past the snapshot is no reason for another write");
}

/// `history` reads any range (`gte`/`lte`, both inclusive) of any length,
/// page by page; `dead_letters` carries each stuck event's payload and time.
pub async fn engine_history_reads_any_range_of_any_length(factory: &dyn StoreFactory, pace: Pace) {
    let failing = Consumer::builder("failing")
        .lane("main")
        .types(["stop"])
        .run(|_| async { Err::<(), BoxError>("always".into()) })
        .unwrap_or_else(|e| panic!("{e}"));
    let store = open(factory).await;
    let server = snapshotting(pace, store, 100, vec![failing]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    let total = a2_store::MAX_PAGE as u64 + 120;
    session.append((1..=total).map(tick).collect()).await.unwrap_or_else(|e| panic!("{e}"));
    let all = all_events(&session).await;
    assert_eq!(all.len() as u64, total, "no page cap");
    assert!(all.windows(2).all(|w| w[1].index == w[0].index + 1));
    let middle = EventRange { gte: Some(499), lte: Some(502) };
    let some =
        session.history(middle).unwrap_or_else(|e| panic!("{e}")).collect().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(some.iter().map(|e| e.index).collect::<Vec<_>>(), vec![499, 500, 501, 502]);
    let mut tail = session.history(EventRange::after(total - 1)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(tail.next().await.unwrap_or_else(|e| panic!("{e}")).map(|e| e.index), Some(total));
    assert_eq!(tail.next().await.unwrap_or_else(|e| panic!("{e}")), None);
    // The seeds refuse a range whose gte is past its lte (it read as empty before).
    let inverted = session.history(EventRange { gte: Some(5), lte: Some(4) }).map(|_| ());
    assert_eq!(inverted.map_err(|e| e.code()), Err("INVALID_ARGUMENT"), "gte past lte is an error");

    let stuck = session.append(vec![AppendInput::new("stop", json!({ "why": "test" }))]).await;
    let stuck = stuck.unwrap_or_else(|e| panic!("{e}")).remove(0);
    let mut dead = Vec::new();
    // The background drain retries it through its backoff (minutes of paused time, moments of real time).
    for _ in 0..3_000 {
        dead = session.dead_letters().await.unwrap_or_else(|e| panic!("{e}"));
        if !dead.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    assert_eq!(dead.len(), 1, "the failing head was dead-lettered");
    assert_eq!((dead[0].payload.clone(), dead[0].created_at), (json!({ "why": "test" }), stuck.created_at));
    assert_eq!(dead[0].letter.index, stuck.index);
}
