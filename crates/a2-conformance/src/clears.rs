//! Clears and snapshots: the clear guard, and snapshot pins kept while their head runs.

use a2_store::*;
use serde_json::json;

use crate::store::*;
use crate::support::*;
use crate::StoreFactory;

pub async fn clear_with_matching_and_mismatching_guard(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [log("c"), StoreConsumer::targeted("par")];
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("c") }).await.expect("wake");
    append(
        &*store,
        "s",
        vec![targeted("a", "tick", &[("par", None)]), targeted("b", "tick", &[("par", None)])],
        &consumers,
    )
    .await;
    fail_until_dead(&*store, &clock, "s", &consumers, "par").await;
    store
        .snapshot_put(SnapshotPut { session: key("s"), reducer: "count".into(), index: 2, state: json!(2), pin: None })
        .await
        .expect("snapshot");
    let held = claim(&*store, "s", "h", &consumers).await.heads;
    let missed = store
        .session_clear(SessionClear { session: key("s"), if_last_index: Some(1), audit: None, settles: None })
        .await
        .expect("clear");
    assert_eq!(missed, Cleared { cleared: false, index: 2 });
    assert_eq!(store.session_get(&key("s")).await.expect("get").map(|s| s.clear_index), Some(0));
    let cleared = store
        .session_clear(SessionClear { session: key("s"), if_last_index: Some(2), audit: None, settles: None })
        .await
        .expect("clear");
    assert_eq!(cleared, Cleared { cleared: true, index: 2 });
    let summary = store.session_get(&key("s")).await.expect("get").expect("exists");
    assert_eq!((summary.head, summary.clear_index, summary.dead_letters, summary.lag), (2, 2, 0, 0));
    let events = store
        .event_list(EventList { session: key("s"), after: None, before: None, limit: 10, newest_first: false })
        .await
        .expect("list");
    assert!(events.is_empty(), "events at or below the boundary are gone for reads");
    assert!(store.snapshot_list(&key("s")).await.expect("snapshots").is_empty());
    assert!(store.dead_letter_list(DeadLetterList { limit: 10, ..Default::default() }).await.expect("dl").is_empty());
    for head in held {
        let outcome =
            store.head_complete(complete("s", &head.head, head.attempt, vec![], &consumers)).await.expect("complete");
        assert_eq!(outcome, CompleteOutcome::Superseded, "running attempts on cleared heads are superseded");
    }
    assert_eq!(
        append(&*store, "s", vec![event("c", "tick")], &consumers).await,
        3,
        "indexes continue after the boundary"
    );
    let claimed = claim(&*store, "s", "h2", &consumers).await;
    assert_eq!(
        claimed.heads.iter().map(|h| (h.head.consumer.as_str(), h.head.index)).collect::<Vec<_>>(),
        vec![("c", 3)]
    );
    let unguarded = store
        .session_clear(SessionClear { session: key("s"), if_last_index: None, audit: None, settles: None })
        .await
        .expect("clear");
    assert_eq!(unguarded, Cleared { cleared: true, index: 3 });
}

pub async fn snapshot_pins_are_kept_while_their_head_runs(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = [log("c")];
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("c") }).await.expect("wake");
    append_n(&*store, "s", 4, &consumers).await;
    let held = claim(&*store, "s", "h", &consumers).await.heads.remove(0);
    let put = |index: u64, pin: Option<HeadRef>| SnapshotPut {
        session: key("s"),
        reducer: "count".into(),
        index,
        state: json!(index),
        pin,
    };
    store.snapshot_put(put(1, Some(held.head.clone()))).await.expect("pinned snapshot");
    store.snapshot_put(put(3, None)).await.expect("snapshot");
    store.snapshot_put(put(4, None)).await.expect("snapshot");
    let indexes = |list: Vec<SnapshotInfo>| list.iter().map(|s| s.index).collect::<Vec<_>>();
    assert_eq!(
        indexes(store.snapshot_list(&key("s")).await.expect("list")),
        vec![4, 1],
        "the pinned one stays, the unpinned older one goes"
    );
    let at_two =
        store.snapshot_get(SnapshotGet { session: key("s"), reducer: "count".into(), at_most: 2 }).await.expect("get");
    assert_eq!(at_two.map(|s| (s.index, s.pins)), Some((1, vec![held.head.clone()])));
    complete_ok(&*store, "s", &held, &consumers).await;
    append_n(&*store, "s2", 0, &[]).await;
    append(&*store, "s", vec![event("e5", "tick")], &consumers).await;
    store.snapshot_put(put(5, None)).await.expect("snapshot");
    assert_eq!(indexes(store.snapshot_list(&key("s")).await.expect("list")), vec![5], "its head done, the pin lets go");
}

/// A run's append names its trigger (`origin_index`); once the session was
/// cleared through it, the store refuses the append in the append's own
/// transaction (`SESSION_CLEARED`) and writes nothing, so a clear committed
/// between a run's check and its append cannot let it append past the boundary.
pub async fn cleared_trigger_append_is_refused_atomically(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = [log("c")];
    append(&*store, "s", vec![event("a", "tick"), event("b", "tick")], &consumers).await;
    let cleared =
        store.session_clear(SessionClear { session: key("s"), if_last_index: None, audit: None, settles: None }).await;
    assert_eq!(cleared.expect("clear").index, 2);
    let from = |origin: u64, id: &str| EventAppend {
        session: key("s"),
        events: vec![event(id, "tick")],
        consumers: consumers.to_vec(),
        origin_index: Some(origin),
    };
    let refused = store.event_append(from(2, "late")).await;
    assert_eq!(refused.map(|_| ()).map_err(|e| e.code()), Err("SESSION_CLEARED"), "the cleared run's append");
    let bounds = store.session_bounds(&key("s")).await.expect("bounds");
    assert_eq!((bounds.head, bounds.clear_index), (2, 2), "nothing was written");
    let after = store.event_append(from(3, "next")).await.expect("a run past the boundary appends");
    assert_eq!(after.head, 3);
    let plain = EventAppend { origin_index: None, ..from(0, "external") };
    assert_eq!(store.event_append(plain).await.expect("an external append").head, 4);
}
