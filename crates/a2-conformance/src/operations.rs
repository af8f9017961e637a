//! The operations console's store facts: an acknowledgement moves a cursor
//! in one transaction whatever the distance, and a paused consumer is
//! claimed by nobody until it is resumed.

use a2_store::*;
use serde_json::{json, Value};

use crate::store::{complete_ok, fail_until_dead};
use crate::support::*;
use crate::StoreFactory;

fn advance(session: &str, consumer: &str, through: Option<u64>, audit: Option<AuditEntry>) -> CursorAdvance {
    CursorAdvance { session: key(session), consumer: log(consumer), through, audit }
}

async fn cursor_next(store: &dyn Store, session: &str, consumer: &str) -> Option<u64> {
    let woken = store.cursor_wake(CursorWake { session: key(session), consumer: log(consumer) }).await;
    woken.expect("wake").next
}

/// Acknowledging a thousand events is one store call: the cursor jumps, its
/// audit record says so, a live attempt or a dead letter stops it whole, and
/// an attempt it overtook after its lease lapsed cannot complete.
pub async fn cursor_advance_is_one_transaction(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [log("c")];
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("c") }).await.expect("wake");
    append_n(&*store, "s", 1_000, &consumers).await;

    let moved = store.cursor_advance(advance("s", "c", Some(600), Some(audit_entry("consume.ack", 1)))).await;
    assert_eq!(moved.expect("advance"), CursorAdvanced::Moved { from: 1, next: 601 });
    assert_eq!(cursor_next(&*store, "s", "c").await, Some(601));
    let audit = store.audit_list(AuditList { before: None, limit: 10, action: None }).await.expect("audit");
    assert_eq!(audit.len(), 1, "one record for the whole move: {audit:?}");
    assert_eq!(audit[0].entry.outcome, json!({ "outcome": "moved", "from": 1, "next": 601 }));

    // A live attempt holds the cursor's event: nothing moves.
    let held = claim(&*store, "s", "worker", &consumers).await.heads.remove(0);
    assert_eq!(held.head.index, 601);
    let refused = store.cursor_advance(advance("s", "c", Some(700), None)).await.expect("advance");
    assert!(matches!(&refused, CursorAdvanced::Held { index: 601, holder, .. } if holder == "worker"), "{refused:?}");
    assert_eq!(cursor_next(&*store, "s", "c").await, Some(601));

    // Its lease lapses: the acknowledgement overtakes it, and its completion is fenced out.
    clock.advance(TTL + 1);
    let moved = store.cursor_advance(advance("s", "c", Some(700), None)).await.expect("advance");
    assert_eq!(moved, CursorAdvanced::Moved { from: 601, next: 701 });
    let late = HeadComplete {
        session: key("s"),
        head: held.head.clone(),
        attempt: held.attempt,
        events: Vec::new(),
        consumers: consumers.to_vec(),
        holder: None,
        lease_next: false,
    };
    let late = store.head_complete(late).await.expect("complete");
    assert!(!matches!(late, CompleteOutcome::Completed { .. }), "an overtaken attempt completed: {late:?}");
    assert_eq!(cursor_next(&*store, "s", "c").await, Some(701));

    // Past the head is the head; an index behind the cursor moves nothing.
    let moved = store.cursor_advance(advance("s", "c", Some(5_000), None)).await.expect("advance");
    assert_eq!(moved, CursorAdvanced::Moved { from: 701, next: 1_001 });
    assert_eq!(cursor_next(&*store, "s", "c").await, None, "caught up with the head");
    let again = store.cursor_advance(advance("s", "c", Some(10), None)).await.expect("advance");
    assert_eq!(again, CursorAdvanced::Moved { from: 1_001, next: 1_001 });

    // A dead letter stops it whole.
    append_n(&*store, "e", 3, &consumers).await;
    let dead = fail_until_dead(&*store, &clock, "e", &consumers, "c").await;
    let stopped = store.cursor_advance(advance("e", "c", None, None)).await.expect("advance");
    assert!(
        matches!(&stopped, CursorAdvanced::DeadLettered { index, last_error: Some(_) } if *index == dead.index),
        "{stopped:?}"
    );
    assert_eq!(cursor_next(&*store, "e", "c").await, Some(dead.index));

    let missing = store.cursor_advance(advance("nobody", "c", None, None)).await;
    assert!(matches!(missing, Err(StoreError::NotFound { .. })), "{missing:?}");
    let not_a_log = CursorAdvance { consumer: StoreConsumer::targeted("t"), ..advance("s", "c", None, None) };
    assert!(matches!(store.cursor_advance(not_a_log).await, Err(StoreError::Invalid { .. })));
}

/// A paused consumer's heads are claimed by no holder, reported by no
/// runnable-session walk, and its cursor says so; other consumers and the
/// same name in another contract run on; an attempt already running finishes.
pub async fn paused_consumer_is_not_claimed(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [log("c"), log("d")];
    for consumer in &consumers {
        store.cursor_wake(CursorWake { session: key("s"), consumer: consumer.clone() }).await.expect("wake");
    }
    append_n(&*store, "s", 2, &consumers).await;
    let running = claim(&*store, "s", "early", &consumers[..1]).await.heads.remove(0);

    let pause = |actor: &str, reason: &str, contract: &str| ConsumerPause {
        contract: contract.into(),
        consumer: "c".into(),
        actor: actor.into(),
        reason: reason.into(),
        audit: Some(audit_entry("consumer.pause", 1)),
    };
    clock.advance(5);
    let paused_at = clock.now_ms();
    let paused = store.consumer_pause(pause("ana", "bad deploy", CONTRACT)).await.expect("pause");
    let expected = PausedConsumer {
        contract: CONTRACT.into(),
        consumer: "c".into(),
        actor: "ana".into(),
        reason: "bad deploy".into(),
        paused_at,
    };
    assert_eq!(paused, expected);
    clock.advance(5);
    let again = store.consumer_pause(pause("bo", "again", CONTRACT)).await.expect("pause again");
    assert_eq!(again, expected, "a second pause keeps the first");
    store.consumer_pause(pause("cy", "elsewhere", "other")).await.expect("pause in another contract");
    assert_eq!(store.consumer_pause_list(Some(CONTRACT)).await.expect("list"), vec![expected.clone()]);
    assert_eq!(store.consumer_pause_list(None).await.expect("list all").len(), 2);

    // The attempt that was running when the pause came finishes.
    complete_ok(&*store, "s", &running, &consumers).await;
    let claimed = claim(&*store, "s", "late", &consumers).await;
    let names: Vec<&str> = claimed.heads.iter().map(|h| h.head.consumer.as_str()).collect();
    assert_eq!(names, vec!["d"], "only the unpaused consumer is claimed");
    assert_eq!(claimed.busy_until, None);
    assert_eq!(claimed.retry_at, None, "paused work is not waiting to be retried");
    let woken = store.cursor_wake(CursorWake { session: key("s"), consumer: log("c") }).await.expect("wake");
    assert!(woken.paused);
    assert_eq!(woken.next, Some(2), "its work is kept, waiting");

    let walk =
        |names: Vec<String>| SessionsRunnable { contract: CONTRACT.into(), consumers: names, after: None, limit: 50 };
    let page = store.session_list_runnable(walk(vec!["c".into()])).await.expect("walk");
    assert!(page.session_ids.is_empty(), "a paused consumer's work is nobody's to rescue: {page:?}");

    // The same name in another contract is its own consumer.
    let audit = store.audit_list(AuditList { before: None, limit: 10, action: None }).await.expect("audit");
    assert_eq!(audit.len(), 3, "each pause is recorded with its outcome");
    assert_eq!(audit[2].entry.outcome["actor"], json!("ana"));
}

/// Resuming lifts the pause at once: the work it held is claimable and found
/// by the runnable-session walk, so a background server heals it unasked.
pub async fn resume_heals_paused_work(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = [log("c")];
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("c") }).await.expect("wake");
    let params = ConsumerPause {
        contract: CONTRACT.into(),
        consumer: "c".into(),
        actor: "ana".into(),
        reason: "hold".into(),
        audit: None,
    };
    store.consumer_pause(params).await.expect("pause");
    append_n(&*store, "s", 3, &consumers).await;
    assert!(claim(&*store, "s", "h", &consumers).await.heads.is_empty());

    let resume = |audit| ConsumerResume { contract: CONTRACT.into(), consumer: "c".into(), audit };
    assert!(store.consumer_resume(resume(Some(audit_entry("consumer.resume", 1)))).await.expect("resume"));
    assert!(!store.consumer_resume(resume(None)).await.expect("resume again"), "nothing left to resume");
    assert!(store.consumer_pause_list(None).await.expect("list").is_empty());
    let audit = store.audit_list(AuditList { before: None, limit: 10, action: None }).await.expect("audit");
    assert_eq!(audit[0].entry.outcome, json!({ "resumed": true }));

    let walk = SessionsRunnable { contract: CONTRACT.into(), consumers: vec!["c".into()], after: None, limit: 50 };
    let page = store.session_list_runnable(walk).await.expect("walk");
    assert_eq!(page.session_ids, vec!["s".to_owned()], "the walk finds the held work again");
    let claimed = claim(&*store, "s", "h", &consumers).await;
    assert_eq!(claimed.heads.iter().map(|h| h.head.index).collect::<Vec<_>>(), vec![1]);
    assert!(!cursor_paused(&*store).await);
}

async fn cursor_paused(store: &dyn Store) -> bool {
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("c") }).await.expect("wake").paused
}

/// Everything the Studio reads of a session, with the store's own key left out.
async fn session_reads(store: &dyn Store, session: &str) -> (Value, Vec<Event>, Vec<HeadInfo>, Vec<SnapshotInfo>) {
    let summary = store.session_get(&key(session)).await.expect("session").expect("the session exists");
    let list = EventList { session: key(session), after: None, before: None, limit: 500, newest_first: false };
    let mut events = store.event_list(list).await.expect("events");
    for event in &mut events {
        event.session.clear();
    }
    let mut heads = store.head_list(&key(session)).await.expect("heads");
    for head in &mut heads {
        head.session_id.clear();
    }
    let snapshots = store.snapshot_list(&key(session)).await.expect("snapshots");
    let mut summary = json!(summary);
    summary["session"] = json!(null);
    (summary, events, heads, snapshots)
}

/// The import a copy of `session` under `to` would make, from the reads alone.
pub(crate) async fn copy_of(store: &dyn Store, session: &str, to: &str) -> SessionImport {
    let (summary, events, heads, snapshots) = session_reads(store, session).await;
    let number = |field: &str| summary[field].as_u64().expect("a number");
    let snapshot = |s: &SnapshotInfo| Snapshot {
        reducer: s.reducer.clone(),
        index: s.index,
        state: s.state.clone(),
        pins: s.pins.clone(),
        created_at: s.created_at,
    };
    SessionImport {
        session: key(to),
        head: number("head"),
        clear_index: number("clear_index"),
        created_at: summary["created_at"].as_i64().expect("created_at"),
        updated_at: summary["updated_at"].as_i64().expect("updated_at"),
        events,
        heads: heads.iter().map(ImportedHead::from).collect(),
        snapshots: snapshots.iter().map(snapshot).collect(),
        audit: None,
    }
}

/// A session copied through its reads into another id reads back the same:
/// events (ids, payloads, causes, times), cursors, pending and dead heads
/// with their errors, snapshots; the clear boundary is kept. A second copy
/// onto the same id is refused.
pub async fn session_import_copies_a_session_whole(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [log("c"), log("d")];
    for consumer in &consumers {
        store.cursor_wake(CursorWake { session: key("src"), consumer: consumer.clone() }).await.expect("wake");
    }
    append_n(&*store, "src", 6, &consumers).await;
    store
        .session_clear(SessionClear { session: key("src"), if_last_index: Some(6), audit: None, settles: None })
        .await
        .expect("clear");
    let targets = vec![targeted("t1", "tick", &[("job", None)]), targeted("t2", "tock", &[("seq", Some("a"))])];
    append(&*store, "src", targets, &consumers).await;
    let dead = fail_until_dead(&*store, &clock, "src", &consumers, "d").await;
    let put =
        SnapshotPut { session: key("src"), reducer: "count".into(), index: 8, state: json!({ "n": 2 }), pin: None };
    store.snapshot_put(put).await.expect("snapshot");

    let copy = copy_of(&*store, "src", "copy").await;
    assert_eq!((copy.clear_index, copy.head, copy.events.len()), (6, 8, 2), "cleared through 6, two events after");
    store.session_import(copy.clone()).await.expect("import");
    let (source, copied) = (session_reads(&*store, "src").await, session_reads(&*store, "copy").await);
    assert_eq!(source.0, copied.0, "the summary");
    assert_eq!(source.1, copied.1, "the events");
    assert_eq!(source.2, copied.2, "the heads");
    assert_eq!(source.3, copied.3, "the snapshots");
    let dead_copies = store
        .dead_letter_list(DeadLetterList {
            contract: Some(CONTRACT.into()),
            session: Some(key("copy")),
            consumer: None,
            cause: None,
            after: None,
            limit: 50,
        })
        .await
        .expect("dead letters");
    assert_eq!(dead_copies.iter().map(|d| (d.consumer.as_str(), d.index)).collect::<Vec<_>>(), vec![("d", dead.index)]);

    // The copy works on: its dead letter can be redriven, its cursor claimed.
    let redrive = DeadLetterRedrive {
        session: key("copy"),
        consumer: "d".into(),
        index: dead.index,
        action: RedriveAction::Skip,
        audit: None,
    };
    assert!(store.dead_letter_redrive(redrive).await.expect("redrive"));
    let claimed = claim(&*store, "copy", "h", &consumers[..1]).await;
    assert_eq!(claimed.heads.iter().map(|h| h.head.index).collect::<Vec<_>>(), vec![7]);

    let again = store.session_import(copy).await;
    assert!(matches!(again, Err(StoreError::Invalid { .. })), "a second copy onto the same id: {again:?}");
}

/// An import that does not hold together is refused whole, naming the fault,
/// and leaves no trace of the session.
pub async fn a_bad_import_writes_nothing(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = [log("c")];
    append_n(&*store, "src", 3, &consumers).await;
    let good = copy_of(&*store, "src", "bad").await;
    let mut gap = good.clone();
    gap.events.remove(1);
    let mut repeated = good.clone();
    repeated.events[2].id = repeated.events[0].id.clone();
    let mut stray_head = good.clone();
    stray_head.heads.push(ImportedHead { index: 9, ..stray_head.heads[0].clone() });
    let mut late_snapshot = good.clone();
    late_snapshot.snapshots.push(Snapshot {
        reducer: "r".into(),
        index: 4,
        state: json!(1),
        pins: Vec::new(),
        created_at: 1,
    });
    for (what, bad) in
        [("a gap", gap), ("a repeated id", repeated), ("a stray head", stray_head), ("a late snapshot", late_snapshot)]
    {
        let refused = store.session_import(bad).await;
        assert!(matches!(refused, Err(StoreError::Invalid { .. })), "{what}: {refused:?}");
        assert_eq!(store.session_get(&key("bad")).await.expect("read"), None, "{what} left a session behind");
    }
    store.session_import(good).await.expect("the good copy still imports");
}

fn order(id: &str, event_type: &str, customer: &str, to: &str) -> NewEvent {
    NewEvent { payload: json!({ "customer": customer, "ship": { "to": to }, "id": id }), ..event(id, event_type) }
}

/// Walk a whole search a chunk at a time, as the Studio does.
async fn search_all(store: &dyn Store, filter: EventMatch, scan: u32) -> (Vec<SessionMatch>, Vec<u64>) {
    let (mut found, mut chunks, mut after) = (Vec::new(), Vec::new(), None);
    loop {
        let params = SessionSearch { contract: CONTRACT.into(), filter: filter.clone(), after, scan };
        let page = store.session_search(params).await.expect("search");
        found.extend(page.found);
        chunks.push(page.scanned);
        after = page.scanned_through;
        if after.is_none() {
            return (found, chunks);
        }
    }
}

/// A payload search walks a contract's sessions a bounded chunk at a time and
/// finds, in each, how many events match and the first: by JSON containment
/// (nested objects too), type and id; never another contract's, never a
/// cleared event.
pub async fn payload_search_walks_sessions_in_chunks(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    for i in 0..7 {
        let customer = format!("c-{}", i % 3);
        let events = (0..3)
            .map(|k| {
                order(
                    &format!("s{i}-{k}"),
                    if k == 1 { "tock" } else { "tick" },
                    &customer,
                    if k == 2 { "NL" } else { "DE" },
                )
            })
            .collect();
        append(&*store, &format!("s{i}"), events, &[]).await;
    }
    let elsewhere = EventAppend {
        session: session_key("other", "s1"),
        events: vec![order("x", "tick", "c-1", "NL")],
        consumers: Vec::new(),
        origin_index: None,
    };
    store.event_append(elsewhere).await.expect("append elsewhere");

    assert_eq!(store.session_count(CONTRACT).await.expect("count"), 7);
    assert_eq!(store.session_count("other").await.expect("count"), 1);
    let by_customer = EventMatch { payload: Some(json!({ "customer": "c-1" })), ..EventMatch::default() };
    let (found, chunks) = search_all(&*store, by_customer.clone(), 3).await;
    assert_eq!(chunks, vec![3, 3, 1], "three sessions a call, and the rest");
    let summary: Vec<(&str, u64, u64)> =
        found.iter().map(|m| (m.session_id.as_str(), m.matches, m.first.index)).collect();
    assert_eq!(summary, vec![("s1", 3, 1), ("s4", 3, 1)]);
    assert_eq!(found[0].first.id, "s1-0");
    assert_eq!(found[0].first.payload["customer"], json!("c-1"));

    let nested = EventMatch {
        payload: Some(json!({ "ship": { "to": "NL" } })),
        event_type: Some("tick".into()),
        ..EventMatch::default()
    };
    let (found, _) = search_all(&*store, nested, 100).await;
    assert_eq!(found.len(), 7, "every session has one tick shipped to NL");
    assert!(found.iter().all(|m| m.matches == 1 && m.first.index == 3), "{found:?}");
    let by_id = EventMatch { event_id: Some("s5-1".into()), ..EventMatch::default() };
    let (found, _) = search_all(&*store, by_id, 100).await;
    assert_eq!(
        found.iter().map(|m| (m.session_id.as_str(), m.first.event_type.as_str())).collect::<Vec<_>>(),
        vec![("s5", "tock")]
    );

    store
        .session_clear(SessionClear { session: key("s4"), if_last_index: None, audit: None, settles: None })
        .await
        .expect("clear");
    let (found, _) = search_all(&*store, by_customer, 2).await;
    assert_eq!(
        found.iter().map(|m| m.session_id.as_str()).collect::<Vec<_>>(),
        vec!["s1"],
        "cleared events are not found"
    );

    for bad in [json!(["c-1"]), json!("c-1")] {
        let params = SessionSearch {
            contract: CONTRACT.into(),
            filter: EventMatch { payload: Some(bad.clone()), ..EventMatch::default() },
            after: None,
            scan: 10,
        };
        assert!(matches!(store.session_search(params).await, Err(StoreError::Invalid { .. })), "{bad}");
    }
}

/// One session's events filtered by type and payload, a bounded number of
/// events looked at a call, oldest first.
pub async fn event_filter_pages_through_a_session(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let events = (0..9)
        .map(|k| order(&format!("e{k}"), if k % 3 == 0 { "tock" } else { "tick" }, &format!("c-{}", k % 2), "NL"))
        .collect();
    append(&*store, "s", events, &[]).await;
    let filter = EventMatch {
        payload: Some(json!({ "customer": "c-0" })),
        event_type: Some("tick".into()),
        ..EventMatch::default()
    };
    let (mut indexes, mut after, mut calls) = (Vec::new(), None, 0);
    loop {
        calls += 1;
        let page = store
            .event_filter(EventFilter { session: key("s"), filter: filter.clone(), after, scan: 4 })
            .await
            .expect("filter");
        indexes.extend(page.events.iter().map(|e| e.index));
        after = page.scanned_through;
        if after.is_none() {
            break;
        }
    }
    // Events k = 2, 4, 8 are ticks of c-0 (k = 0 and 6 are tocks): indexes 3, 5, 9.
    assert_eq!(indexes, vec![3, 5, 9]);
    assert_eq!(calls, 3, "nine events, four looked at a call");
    let none =
        store.event_filter(EventFilter { session: key("nobody"), filter, after: None, scan: 4 }).await.expect("filter");
    assert_eq!(none, EventFilterPage::default());
}
