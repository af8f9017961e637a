//! What a session handle and a run's context do as the seeds say: state
//! reads that answer the latest unless pinned, a snapshot cache that never
//! fails a read, one id rule for a run's appends and returns, `abort_on`
//! seen before a run starts, a consume wait that can be cancelled, and the
//! small rules each a line.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use a2_engine::*;
use a2_store::{session_key, AttemptList, AttemptOutcome, RedriveAction, SnapshotGet, SnapshotPut, Store};
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::engine::{eventually, open, quiet_server, server_with, tick, Pace};
use crate::faulty::Faulty;
use crate::StoreFactory;

fn code<T>(result: Result<T, A2Error>) -> Result<(), &'static str> {
    result.map(|_| ()).map_err(|e| e.code())
}

/// The session's whole log once it holds `at_least` events (or after about
/// 100 s, whatever it holds then: the caller's assertion says what is missing).
async fn log_of_at_least(session: &Session, at_least: usize) -> Vec<a2_store::Event> {
    let read = || async { session.history(EventRange::all()).unwrap_or_else(|e| panic!("{e}")).collect().await };
    for _ in 0..2_000 {
        let events = read().await.unwrap_or_else(|e| panic!("{e}"));
        if events.len() >= at_least {
            return events;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    read().await.unwrap_or_else(|e| panic!("{e}"))
}

/// A run's `state(reducer, None)` reads the latest state (what it or others
/// appended since its trigger included) and pins nothing; only an explicit
/// `through` reads the past and pins that snapshot for the running head.
pub async fn consumer_state_reads_latest_by_default(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let observed: Arc<Mutex<Vec<(Value, u64)>>> = Arc::new(Mutex::new(Vec::new()));
    let o = observed.clone();
    let reader = Consumer::builder("reader")
        .lane("main")
        .types(["stop"])
        .run(move |ctx| {
            let observed = o.clone();
            async move {
                let latest = ctx.session.state("count", None).await?;
                let pinned = ctx.session.state("count", Some(ctx.event.index)).await?;
                if let Ok(mut o) = observed.lock() {
                    o.push((latest.state, latest.index));
                    o.push((pinned.state, pinned.index));
                }
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = server_with(pace, store.clone(), vec![reader], |b| b.snapshot_every(1));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    let batch = vec![tick(1), tick(2), tick(3), AppendInput::new("stop", json!({})), tick(5)];
    session.append(batch).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("the reader read", || observed.lock().map(|o| o.len() == 2).unwrap_or(false)).await;
    let seen = observed.lock().map(|o| o.clone()).unwrap_or_default();
    assert_eq!(seen[0], (json!(4), 5), "no through: the latest state, past the trigger");
    assert_eq!(seen[1], (json!(3), 4), "through the trigger when asked");
    server.snapshots_written().await;
    let snapshots = store.snapshot_list(&session_key("shop", "s")).await.unwrap_or_else(|e| panic!("{e}"));
    let pins = |index: u64| snapshots.iter().find(|s| s.index == index).map(|s| s.pins.len()).unwrap_or(0);
    assert_eq!((pins(5), pins(4)), (0, 1), "only the explicit read pinned its snapshot: {snapshots:#?}");
}

/// A snapshot store that fails neither fails a state read nor a run's: the
/// read folds from the log, and the write-back is given up.
pub async fn snapshot_failure_never_fails_a_state_read(factory: &dyn StoreFactory, pace: Pace) {
    let faulty = Faulty::new(open(factory).await);
    let states = Arc::new(Mutex::new(Vec::new()));
    let s = states.clone();
    let reader = Consumer::builder("reader")
        .lane("main")
        .types(["stop"])
        .run(move |ctx| {
            let states = s.clone();
            async move {
                let state = ctx.session.state("count", Some(ctx.event.index)).await?;
                if let Ok(mut v) = states.lock() {
                    v.push(state.state);
                }
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = server_with(pace, faulty.clone(), vec![reader], |b| b.snapshot_every(1));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append((1..=4).map(tick).collect()).await.unwrap_or_else(|e| panic!("{e}"));
    faulty.fail_snapshots.store(true, Ordering::SeqCst);
    let read = session.state("count", None).await.unwrap_or_else(|e| panic!("a failing cache failed the read: {e}"));
    assert_eq!((read.state, read.index), (json!(4), 4));
    session.append(vec![AppendInput::new("stop", json!({}))]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("the run read its state", || states.lock().map(|v| v.len() == 1).unwrap_or(false)).await;
    assert_eq!(states.lock().map(|v| v[0].clone()).unwrap_or_default(), json!(4), "the run read it from the log");
    faulty.fail_snapshots.store(false, Ordering::SeqCst);
    let read = session.state("count", None).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(read.state, json!(4));
}

/// The seeds' state cache: a read of a session that has not moved since
/// this process folded it reads neither a snapshot nor the log; one that
/// moved folds only what is new; a clear made elsewhere is noticed; and
/// concurrent reads take turns, so the second finds the first one's fold.
pub async fn state_reads_answer_from_memory_until_the_log_moves(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let faulty = Faulty::new(store.clone());
    let server = quiet_server(pace, faulty.clone(), vec![]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append((1..=3).map(tick).collect()).await.unwrap_or_else(|e| panic!("{e}"));
    let state = |s: Session, through: Option<u64>| async move {
        let read = s.state("count", through).await.unwrap_or_else(|e| panic!("{e}"));
        (read.state, read.index)
    };
    let reads = || (faulty.event_lists.load(Ordering::SeqCst), faulty.snapshot_gets.load(Ordering::SeqCst));
    assert_eq!(state(session.clone(), None).await, (json!(3), 3));
    let before = reads();
    assert_eq!(state(session.clone(), None).await, (json!(3), 3));
    assert_eq!(reads(), before, "an unmoved session is answered from memory");
    session.append(vec![tick(4)]).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(state(session.clone(), None).await, (json!(4), 4));
    assert_eq!(reads(), (before.0 + 1, before.1), "one page of what is new, folded on from memory");
    assert_eq!(state(session.clone(), Some(2)).await, (json!(2), 2), "an older index is not served the newer state");

    // Another process clears and appends: the clear index says the cache is stale.
    let elsewhere = quiet_server(pace, store.clone(), vec![]);
    let other = elsewhere.session("s").unwrap_or_else(|e| panic!("{e}"));
    other.clear(None).await.unwrap_or_else(|e| panic!("{e}"));
    other.append(vec![tick(5)]).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(state(session.clone(), None).await, (json!(1), 5), "folded from the clear, not from memory");

    // A fresh process, two reads at once: one of them reads the snapshot and the log.
    other.append((6..=8).map(tick).collect()).await.unwrap_or_else(|e| panic!("{e}"));
    let fresh = quiet_server(pace, faulty.clone(), vec![]);
    let fresh = fresh.session("s").unwrap_or_else(|e| panic!("{e}"));
    let before = reads();
    let both = tokio::join!(state(fresh.clone(), None), state(fresh.clone(), None));
    assert_eq!(both, ((json!(4), 8), (json!(4), 8)));
    assert_eq!(reads().1 - before.1, 1, "the second read found the first one's fold");
}

/// A read answers before its snapshot is written (the seeds' write-back is
/// off the read's path): a store whose snapshot writes never return holds
/// up no read, however many writes pile up; once writes go through again,
/// the next read that folds far enough writes its snapshot.
pub async fn snapshot_write_back_never_holds_up_a_read(factory: &dyn StoreFactory, pace: Pace) {
    let faulty = Faulty::new(open(factory).await);
    let server = server_with(pace, faulty.clone(), vec![], |b| b.snapshot_every(1));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    faulty.hang_snapshot_puts.store(true, Ordering::SeqCst);
    for n in 1..=40u64 {
        session.append(vec![tick(n)]).await.unwrap_or_else(|e| panic!("{e}"));
        let read = tokio::time::timeout(std::time::Duration::from_secs(30), session.state("count", None)).await;
        let read = read.unwrap_or_else(|_| panic!("read {n} waited for a snapshot write that never returns"));
        let read = read.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((read.state, read.index), (json!(n), n));
    }
    // The writes the reads started get their turn now, and hang.
    tokio::time::sleep(pace.settle()).await;
    assert_eq!(faulty.snapshot_puts.load(Ordering::SeqCst), 0, "no write got through");
    faulty.hang_snapshot_puts.store(false, Ordering::SeqCst);
    // The hung writes keep their slots; a fresh server's first fold writes.
    let fresh = server_with(pace, faulty.clone(), vec![], |b| b.snapshot_every(1));
    let read = fresh.session("s").unwrap_or_else(|e| panic!("{e}")).state("count", None).await;
    assert_eq!(read.map(|r| r.index).ok(), Some(40));
    fresh.snapshots_written().await;
    assert_eq!(faulty.snapshot_puts.load(Ordering::SeqCst), 1, "the next fold wrote its snapshot");
}

/// A snapshot that fails the reducer's state check is refolded, and the read
/// that folds past it writes a good one in its place (the seeds' `repairsHead`).
pub async fn rejected_snapshot_is_repaired(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let server = server_with(pace, store.clone(), vec![], |b| b.snapshot_every(100));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append((1..=5).map(tick).collect()).await.unwrap_or_else(|e| panic!("{e}"));
    let key = session_key("shop", "s");
    let garbage = SnapshotPut { session: key.clone(), reducer: "count".into(), index: 3, state: json!("x"), pin: None };
    store.snapshot_put(garbage).await.unwrap_or_else(|e| panic!("{e}"));
    let read = session.state("count", None).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((read.state, read.index), (json!(5), 5), "the rejected snapshot is refolded");
    let at_three = SnapshotGet { session: key, reducer: "count".into(), at_most: 3 };
    server.snapshots_written().await;
    let repaired = store.snapshot_get(at_three).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(repaired.map(|s| (s.index, s.state)), Some((3, json!(3))), "the read repaired the snapshot at 3");
}

/// A run's appends and its returned events follow one id rule: any id of
/// 1-256 characters, one shaped like A2's derived ids included (the seeds
/// refuse those only on the push route); an empty id is refused for both.
pub async fn returned_event_ids_follow_the_append_rule(factory: &dyn StoreFactory, pace: Pace) {
    let derived_appended = ids::appended_event_id("elsewhere", "copy", 0, "other");
    let derived_returned = ids::returned_event_id("elsewhere", 0, "other");
    let refused = Arc::new(Mutex::new(Vec::new()));
    let (a, r, f) = (derived_appended.clone(), derived_returned.clone(), refused.clone());
    let echo = Consumer::builder("echo")
        .lane("main")
        .types(["stop"])
        .run(move |ctx| {
            let (appended, returned, refused) = (a.clone(), r.clone(), f.clone());
            async move {
                let empty = ctx.session.append("bad", vec![AppendInput::new("tock", json!({})).with_id("")]).await;
                if let Ok(mut v) = refused.lock() {
                    v.push(code(empty));
                }
                ctx.session.append("copy", vec![AppendInput::new("tock", json!({})).with_id(appended)]).await?;
                Ok::<_, BoxError>(AppendInput::new("tock", json!({})).with_id(returned))
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = server_with(pace, open(factory).await, vec![echo], |b| b);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![AppendInput::new("stop", json!({}))]).await.unwrap_or_else(|e| panic!("{e}"));
    let ids: Vec<String> = log_of_at_least(&session, 3).await.into_iter().map(|e| e.id).collect();
    assert!(ids.contains(&derived_appended), "a run's append kept its derived-looking id: {ids:?}");
    assert!(ids.contains(&derived_returned), "a run's return kept its derived-looking id: {ids:?}");
    assert_eq!(refused.lock().map(|v| v[0]).unwrap_or(Ok(())), Err("INVALID_EVENT_ID"), "an empty id is refused");
}

/// A run whose `abort_on` event is already in the log when it starts sees
/// its token cancelled from its first line.
pub async fn abort_on_event_already_logged_cancels_before_start(factory: &dyn StoreFactory, pace: Pace) {
    let saw = Arc::new(Mutex::new(Vec::new()));
    let s = saw.clone();
    let worker = Consumer::builder("worker")
        .lane("main")
        .types(["tick"])
        .abort_on(["stop"])
        .run(move |ctx| {
            let saw = s.clone();
            async move {
                if let Ok(mut v) = saw.lock() {
                    v.push(ctx.cancel.is_cancelled());
                }
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = quiet_server(pace, open(factory).await, vec![worker]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1), AppendInput::new("stop", json!({}))]).await.unwrap_or_else(|e| panic!("{e}"));
    session.drain().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(saw.lock().map(|v| v.clone()).unwrap_or_default(), vec![true], "cancelled before the run began");
}

/// Cancelling a consume's wait (or dropping its future) stops the wait
/// only: the head it started runs to its end and moves the cursor.
pub async fn consume_cancel_stops_the_wait_only(factory: &dyn StoreFactory, pace: Pace) {
    let (started, finished) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let release = Arc::new(Notify::new());
    let (s, f, r) = (started.clone(), finished.clone(), release.clone());
    let slow = Consumer::builder("slow")
        .lane("main")
        .types(["tick"])
        .run(move |_| {
            let (started, finished, release) = (s.clone(), f.clone(), r.clone());
            async move {
                started.fetch_add(1, Ordering::SeqCst);
                release.notified().await;
                finished.fetch_add(1, Ordering::SeqCst);
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let store = open(factory).await;
    let server = quiet_server(pace, store.clone(), vec![slow.clone()]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1), tick(2)]).await.unwrap_or_else(|e| panic!("{e}"));

    let token = tokio_util::sync::CancellationToken::new();
    let waiting = tokio::spawn({
        let (session, slow, token) = (session.clone(), slow.clone(), token.clone());
        async move { session.consume_until_cancelled(&slow, Some(1), token).await }
    });
    eventually("the first head runs", || started.load(Ordering::SeqCst) == 1).await;
    token.cancel();
    let cancelled = waiting.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(code(cancelled), Err("CANCELLED"));
    assert_eq!(finished.load(Ordering::SeqCst), 0, "the run was not stopped by the wait's end");
    release.notify_one();
    eventually("the first head finished", || finished.load(Ordering::SeqCst) == 1).await;

    // Dropping a consume's future is the same: the head it started runs on.
    let dropped = tokio::spawn({
        let (session, slow) = (session.clone(), slow.clone());
        async move { session.consume(&slow, Some(2)).await }
    });
    eventually("the second head runs", || started.load(Ordering::SeqCst) == 2).await;
    dropped.abort();
    let _ = dropped.await;
    release.notify_one();
    eventually("the second head finished", || finished.load(Ordering::SeqCst) == 2).await;
    // The completion is written after the run returns: wait for the cursor.
    let key = session_key("shop", "s");
    let mut heads = Vec::new();
    for _ in 0..2_000 {
        heads = store.head_list(&key).await.unwrap_or_else(|e| panic!("{e}"));
        if heads.iter().all(|h| h.next_index == 3) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(heads.iter().all(|h| h.next_index == 3), "the cursor moved past both: {heads:#?}");
}

/// The small rules, a line each: an empty append, a redrive with no
/// consumer, a lane function that sees only the ids callers gave, and one
/// that panics.
pub async fn small_rules_of_the_seeds_hold(factory: &dyn StoreFactory, pace: Pace) {
    let given = Arc::new(Mutex::new(Vec::new()));
    let panicked = Arc::new(AtomicBool::new(false));
    let (g, p) = (given.clone(), panicked.clone());
    let laned = Consumer::builder("laned")
        .types(["tick"])
        .lane_fn(move |_, event| {
            if event.payload["panic"].as_bool() == Some(true) {
                p.store(true, Ordering::SeqCst);
                panic!("this lane function panics on purpose");
            }
            if let Ok(mut v) = g.lock() {
                v.push(event.id.clone());
            }
            Some("one".into())
        })
        .run(|_| async { Ok::<(), BoxError>(()) })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = quiet_server(pace, open(factory).await, vec![laned]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(code(session.append(vec![]).await), Err("INVALID_ARGUMENT"), "an empty append is refused");
    assert_eq!(code(session.redrive("", 1, RedriveAction::Retry).await), Err("INVALID_ARGUMENT"));
    let appended = session.append(vec![tick(1), tick(2).with_id("mine")]).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        appended.iter().all(|e| e.session == session.id()),
        "appended events carry the session's own id, not the storage key: {appended:?}"
    );
    assert_eq!(
        given.lock().map(|v| v.clone()).unwrap_or_default(),
        vec![None, Some("mine".to_owned())],
        "the lane function sees an id only when the caller gave one"
    );
    let bad = session.append(vec![AppendInput::new("tick", json!({ "panic": true }))]).await;
    assert!(panicked.load(Ordering::SeqCst));
    assert_eq!(code(bad), Err("INVALID_CONSUMER"), "a panicking lane function is an error, not an unwind");
    assert_eq!(
        session.history(EventRange::all()).unwrap_or_else(|e| panic!("{e}")).collect().await.map(|v| v.len()),
        Ok(2),
        "the refused append wrote nothing"
    );
}

/// `dead_letters` returns every dead head, however many (it stopped at one
/// page of 500); read by page, each page continues where the last stopped.
pub async fn dead_letters_lists_every_letter(factory: &dyn StoreFactory, pace: Pace) {
    let failing = Consumer::builder("failing")
        .types(["tick"])
        .run(|_| async { Err::<(), BoxError>("always".into()) })
        .unwrap_or_else(|e| panic!("{e}"));
    let timings = DrainTimings { backoff: a2_store::Backoff { base_ms: 1, max_ms: 2 }, ..pace.timings() };
    let server = server_with(pace, open(factory).await, vec![failing], |b| b.run_in_background(false).timings(timings));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append((1..=5).map(tick).collect()).await.unwrap_or_else(|e| panic!("{e}"));
    for _ in 0..200 {
        let drained = session.drain().await.unwrap_or_else(|e| panic!("{e}"));
        if drained.outcome == DrainOutcome::Settled {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let all = session.dead_letters().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(all.iter().map(|d| d.letter.index).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5], "every dead head");
    let mut pages = session.dead_letter_pages(2);
    let mut sizes = Vec::new();
    let mut seen = Vec::new();
    // Bounded, so paging that never moves on fails here instead of looping.
    for _ in 0..10 {
        let page = pages.next_page().await.unwrap_or_else(|e| panic!("{e}"));
        if page.is_empty() {
            break;
        }
        sizes.push(page.len());
        seen.extend(page.into_iter().map(|d| (d.letter.index, d.payload["n"].as_u64())));
    }
    assert_eq!(sizes, vec![2, 2, 1], "pages of two, each after the last");
    assert_eq!(seen, (1..=5).map(|n| (n, Some(n))).collect::<Vec<_>>(), "each with its event's payload");
}

/// A run whose lease lapses sees why (`CLAIM_EXPIRED`) and is given its
/// grace to clean up across an await before it is stopped; the attempt it
/// ends with is charged as a lapse, not run twice at once by this holder.
pub async fn lapsed_run_sees_claim_expired_and_may_clean_up(factory: &dyn StoreFactory, pace: Pace) {
    let ttl = pace.timings().claim_ttl;
    // Renewing less often than the lease lasts: every lease lapses.
    let timings = DrainTimings { claim_heartbeat: ttl * 4, ..pace.timings() };
    let seen: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    // Gives up with the loss itself: it surrenders.
    let careful = Consumer::builder("careful")
        .lane("main")
        .types(["tick"])
        .run(move |ctx| {
            let seen = s.clone();
            async move {
                ctx.cancel.cancelled().await;
                let reason = ctx.cancel_reason().map_or("none", CancelReason::code).to_owned();
                // Cleaning up takes an await: within the grace, it gets to finish.
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                if let Ok(mut v) = seen.lock() {
                    v.push(reason);
                }
                match ctx.cancel_error() {
                    Some(lost) => Err::<(), BoxError>(lost.into()),
                    None => Ok(()),
                }
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    // Fails on its own account after the loss: that is written, as the run's failure.
    let sloppy = Consumer::builder("sloppy")
        .lane("other")
        .types(["tock"])
        .run(|ctx| async move {
            ctx.cancel.cancelled().await;
            Err::<(), BoxError>("sloppy: the upstream call failed".into())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let store = open(factory).await;
    let server =
        server_with(pace, store.clone(), vec![careful, sloppy], |b| b.run_in_background(false).timings(timings));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1), AppendInput::new("tock", json!({}))]).await.unwrap_or_else(|e| panic!("{e}"));
    let drained = session.drain().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(drained.processed, 0, "the lapsed attempts completed nothing");
    eventually("the run cleaned up", || seen.lock().map(|v| !v.is_empty()).unwrap_or(false)).await;
    assert_eq!(seen.lock().map(|v| v.clone()).unwrap_or_default(), vec!["CLAIM_EXPIRED".to_owned()]);
    let attempts = |store: Arc<dyn Store>, consumer: &'static str, index: u64| async move {
        let list = AttemptList {
            session: session_key("shop", "s"),
            consumer: Some(consumer.into()),
            index: Some(index),
            after: None,
            oldest_first: true,
            limit: 10,
        };
        let found = store.attempt_list(list).await.unwrap_or_else(|e| panic!("{e}"));
        found.iter().map(|a| (a.attempt, a.outcome, a.error.clone())).collect::<Vec<_>>()
    };
    // The run's own failure is written by its holder, error and all.
    let mut sloppy = Vec::new();
    for _ in 0..2_000 {
        sloppy = attempts(store.clone(), "sloppy", 2).await;
        if !sloppy.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(sloppy.iter().map(|a| a.1).collect::<Vec<_>>(), vec![AttemptOutcome::Aborted], "{sloppy:?}");
    assert!(sloppy[0].2.as_deref().is_some_and(|e| e.contains("upstream call failed")), "{sloppy:?}");
    // The surrendered one: its holder wrote nothing; the next claim counts the lapse.
    tokio::time::sleep(pace.settle()).await;
    assert_eq!(
        attempts(store.clone(), "careful", 1).await,
        vec![],
        "a surrendered attempt writes no failure of its own"
    );
    tokio::time::sleep(ttl * 2).await;
    session.drain().await.unwrap_or_else(|e| panic!("{e}"));
    let careful = attempts(store, "careful", 1).await;
    assert_eq!(
        careful.iter().map(|a| (a.0, a.1)).collect::<Vec<_>>(),
        vec![(1, AttemptOutcome::Lapsed)],
        "the takeover recorded the lapse"
    );
}

/// `consume` of a consumer this server runs kicks its background drain when
/// the cursor is behind the session's head (the seeds' `own && woken.cursor.head
/// !== null`), even when the consume itself has nothing to wait for.
pub async fn consume_of_own_consumer_kicks_its_drain(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let handled = Arc::new(AtomicU32::new(0));
    let h = handled.clone();
    let own = Consumer::builder("own")
        .lane("main")
        .types(["tick"])
        .backfill()
        .run(move |_| {
            let handled = h.clone();
            async move {
                handled.fetch_add(1, Ordering::SeqCst);
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    // The rescuer looks once at start and then not for a day: only the kick can drain.
    let timings = DrainTimings { rescue_every: std::time::Duration::from_secs(86_400), ..pace.timings() };
    let server = server_with(pace, store.clone(), vec![own.clone()], |b| b.timings(timings));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    tokio::time::sleep(pace.settle()).await;
    // Another process appends: this one hears nothing of it.
    let elsewhere = quiet_server(pace, store.clone(), vec![]);
    let other = elsewhere.session("s").unwrap_or_else(|e| panic!("{e}"));
    other.append(vec![tick(1), tick(2), tick(3)]).await.unwrap_or_else(|e| panic!("{e}"));
    tokio::time::sleep(pace.settle()).await;
    assert_eq!(handled.load(Ordering::SeqCst), 0, "nothing drained the session yet");
    let through = session.consume(&own, Some(0)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(through, 0, "nothing to wait for through 0");
    eventually("the kicked drain ran all three", || handled.load(Ordering::SeqCst) == 3).await;
}

/// Re-appending an id that existed before a clear dedupes: the event is
/// still known by its id (the log keeps ids below the boundary), so the
/// append is an idempotent no-op that returns the stored event.
pub async fn reappend_of_an_id_cleared_away_dedupes(factory: &dyn StoreFactory, pace: Pace) {
    let server = quiet_server(pace, open(factory).await, vec![]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1).with_id("kept-id")]).await.unwrap_or_else(|e| panic!("{e}"));
    session.clear(None).await.unwrap_or_else(|e| panic!("{e}"));
    let again = session.append(vec![tick(1).with_id("kept-id")]).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.iter().map(|e| (e.id.as_str(), e.index)).collect::<Vec<_>>(), vec![("kept-id", 1)]);
    let history = session.history(EventRange::all()).unwrap_or_else(|e| panic!("{e}")).collect().await;
    assert_eq!(history.map(|v| v.len()), Ok(0), "nothing was appended past the boundary");
}

/// An event a run appends or returns under a derived id carries its batch's
/// size in its cause (the seeds' `batchSize`); one named by the run does not.
pub async fn returned_batch_cause_carries_batch_size(factory: &dyn StoreFactory, pace: Pace) {
    let batcher = Consumer::builder("batcher")
        .lane("main")
        .types(["stop"])
        .run(|ctx| async move {
            let tock = || AppendInput::new("tock", json!({}));
            ctx.session.append("pair", vec![tock(), tock()]).await?;
            ctx.session.append("named", vec![tock().with_id("given-1")]).await?;
            Ok::<_, BoxError>(vec![tock(), tock(), tock()])
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = server_with(pace, open(factory).await, vec![batcher], |b| b);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![AppendInput::new("stop", json!({}))]).await.unwrap_or_else(|e| panic!("{e}"));
    let events = log_of_at_least(&session, 7).await;
    let sizes: Vec<(String, Option<u32>)> =
        events.iter().skip(1).map(|e| (e.id.clone(), e.cause.as_ref().and_then(|c| c.batch_size))).collect();
    assert_eq!(sizes.len(), 6, "two appended, one named, three returned: {sizes:?}");
    let of = |size: Option<u32>| sizes.iter().filter(|(_, s)| *s == size).count();
    assert_eq!((of(Some(2)), of(None), of(Some(3))), (2, 1, 3), "{sizes:?}");
    assert!(sizes.iter().any(|(id, s)| id == "given-1" && s.is_none()), "the named event has no batch size: {sizes:?}");
    assert!(events.iter().skip(1).all(|e| e.cause.is_some()), "every event the run wrote has a cause");
}
