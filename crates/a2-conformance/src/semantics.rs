//! Engine scenarios for the seeds' semantics that crashes and odd callers
//! meet: lanes a function leaves out, runs whose trigger is cleared, consume
//! cycles, and a store that fails or hangs while heads run.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use a2_engine::*;
use a2_store::Store;
use serde_json::json;
use tokio::sync::{Barrier, Notify};

use crate::engine::{
    all_events, eventually, open, quiet_server, record, recorder, seen, server_with, snapshot, tick, Pace, Seen,
};
use crate::faulty::Faulty;
use crate::StoreFactory;

fn codes() -> Arc<Mutex<Vec<String>>> {
    Arc::new(Mutex::new(Vec::new()))
}

fn push(codes: &Mutex<Vec<String>>, code: &str) {
    if let Ok(mut v) = codes.lock() {
        v.push(code.to_owned());
    }
}

fn taken(codes: &Mutex<Vec<String>>) -> Vec<String> {
    codes.lock().map(|v| v.clone()).unwrap_or_default()
}

/// A lane function that returns no lane runs that event concurrently (two
/// such events meet at a barrier, so they ran at once); an empty lane is
/// refused at append and nothing is written.
pub async fn lane_fn_none_runs_concurrently(factory: &dyn StoreFactory, pace: Pace) {
    let seen = seen();
    let barrier = Arc::new(Barrier::new(2));
    let (s, b) = (seen.clone(), barrier.clone());
    let laned = Consumer::builder("laned")
        .types(["tick"])
        .lane_fn(|_, e| e.payload["lane"].as_str().map(str::to_owned))
        .run(move |ctx| {
            let (seen, barrier) = (s.clone(), b.clone());
            async move {
                if ctx.event.payload["lane"].is_null() {
                    tokio::time::timeout(Duration::from_secs(60), barrier.wait())
                        .await
                        .map_err(|_| "the other laneless event never ran alongside")?;
                }
                record(&seen, "laned", ctx.event.index);
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = crate::engine::server(pace, open(factory).await, vec![laned]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    let events = vec![
        AppendInput::new("tick", json!({ "n": 1, "lane": "a" })),
        AppendInput::new("tick", json!({ "n": 2 })),
        AppendInput::new("tick", json!({ "n": 3 })),
    ];
    session.append(events).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("all three ran", || snapshot(&seen).len() == 3).await;
    // The history, not the heads (a completed head is gone): three attempts, each completed at once.
    let key = a2_store::session_key("shop", "s");
    let attempts = crate::engine::completed_attempts(&**server.store(), &key, "laned", 3).await;
    assert_eq!(attempts.len(), 3, "no attempt failed or lapsed: {attempts:#?}");
    let empty = session.append(vec![AppendInput::new("tick", json!({ "n": 4, "lane": "" }))]).await;
    assert_eq!(empty.map(|_| ()).map_err(|e| e.code()), Err("INVALID_ARGUMENT"));
    assert_eq!(all_events(&session).await.len(), 3, "the refused event was not written");
}

/// A run whose trigger was cleared while it ran can neither append nor read
/// state: `SESSION_CLEARED`.
pub async fn cleared_trigger_cannot_append(factory: &dyn StoreFactory, pace: Pace) {
    let codes = codes();
    let (started, go) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (c, s, g) = (codes.clone(), started.clone(), go.clone());
    let consumer = Consumer::builder("clearee")
        .lane("main")
        .types(["tick"])
        .run(move |ctx| {
            let (codes, started, go) = (c.clone(), s.clone(), g.clone());
            async move {
                started.notify_one();
                go.notified().await;
                let appended = ctx.session.append("note", vec![AppendInput::new("tock", json!({}))]).await;
                push(&codes, appended.map(|_| "appended").unwrap_or_else(|e| e.code()));
                let state = ctx.session.state("count", None).await;
                push(&codes, state.map(|_| "read").unwrap_or_else(|e| e.code()));
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = crate::engine::server(pace, open(factory).await, vec![consumer]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    started.notified().await;
    let cleared = session.clear(None).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(cleared.cleared);
    go.notify_one();
    eventually("the run tried both", || taken(&codes).len() == 2).await;
    assert_eq!(taken(&codes), vec!["SESSION_CLEARED", "SESSION_CLEARED"]);
    tokio::time::sleep(pace.settle()).await;
    assert!(all_events(&session).await.is_empty(), "nothing was appended");
}

/// `ctx.session.clear()` through the run's own trigger ends the attempt:
/// its token is cancelled, it can append no more, what it returns is not
/// appended, and it is not retried. The audit log names the run that cleared.
pub async fn run_clearing_its_session_ends_its_attempt(factory: &dyn StoreFactory, pace: Pace) {
    let codes = codes();
    let runs = Arc::new(AtomicU32::new(0));
    let (c, r) = (codes.clone(), runs.clone());
    let consumer = Consumer::builder("clearer")
        .lane("main")
        .types(["tick"])
        .run(move |ctx| {
            let (codes, runs) = (c.clone(), r.clone());
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                let cleared = ctx.session.clear(None).await?;
                push(&codes, if cleared.cleared { "cleared" } else { "not cleared" });
                push(&codes, if ctx.cancel.is_cancelled() { "cancelled" } else { "still running" });
                let appended = ctx.session.append("after", vec![AppendInput::new("tock", json!({}))]).await;
                push(&codes, appended.map(|_| "appended").unwrap_or_else(|e| e.code()));
                Ok::<_, BoxError>(AppendInput::new("tock", json!({ "returned": true })))
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let store = open(factory).await;
    let server = crate::engine::server(pace, store.clone(), vec![consumer]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("the run cleared its session", || taken(&codes).len() == 3).await;
    // The clear records the run that made it, in its own transaction.
    let audit = store
        .audit_list(a2_store::AuditList { before: None, limit: 10, action: None })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let clears: Vec<_> = audit.iter().filter(|r| r.entry.action == "run.clear").collect();
    assert_eq!(clears.len(), 1, "one audited clear: {audit:#?}");
    let entry = &clears[0].entry;
    assert_eq!((entry.contract.as_deref(), entry.session_id.as_deref()), (Some("shop"), Some("s")));
    let cause = &entry.parameters["cause"];
    assert_eq!(
        (&cause["consumer"], &cause["lane"], &cause["index"], &cause["attempt"]),
        (&json!("clearer"), &json!("main"), &json!(1), &json!(1))
    );
    assert_eq!(entry.outcome, json!({ "cleared": true, "index": 1 }));
    tokio::time::sleep(pace.settle()).await;
    assert_eq!(taken(&codes), vec!["cleared", "cancelled", "SESSION_CLEARED"]);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the ended attempt is not retried");
    assert!(all_events(&session).await.is_empty(), "what it returned was dropped");
}

/// `a` consumes `b` from its run while `b`'s run consumes `a`: the second
/// wait would never end, so it is refused with `CONSUME_CYCLE`, and both
/// finish, on a server that may run one head at a time.
pub async fn consume_cycle_is_refused(factory: &dyn StoreFactory, pace: Pace) {
    let codes = codes();
    let slot_a: Arc<OnceLock<Consumer>> = Arc::new(OnceLock::new());
    let slot_b: Arc<OnceLock<Consumer>> = Arc::new(OnceLock::new());
    let (sb, c) = (slot_b.clone(), codes.clone());
    let a = Consumer::builder("a")
        .lane("main")
        .types(["tick"])
        .run(move |ctx| {
            let (slot_b, codes) = (sb.clone(), c.clone());
            async move {
                let b = slot_b.get().cloned().ok_or("b is defined")?;
                let consumed = ctx.session.consume(&b, None).await;
                push(&codes, consumed.map(|_| "a consumed b").unwrap_or_else(|e| e.code()));
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let (sa, c) = (slot_a.clone(), codes.clone());
    let b = Consumer::builder("b")
        .lane("main")
        .types(["tick"])
        .backfill()
        .run(move |ctx| {
            let (slot_a, codes) = (sa.clone(), c.clone());
            async move {
                let a = slot_a.get().cloned().ok_or("a is defined")?;
                let consumed = ctx.session.consume(&a, None).await;
                push(&codes, consumed.map(|_| "b consumed a").unwrap_or_else(|e| e.code()));
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let _ = slot_a.set(a.clone());
    let _ = slot_b.set(b);
    // One run permit, held by a's run while it waits: b's nested heads must run without one.
    let server = server_with(pace, open(factory).await, vec![a], |b| b.max_running(1));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("both runs ended", || taken(&codes).len() == 2).await;
    assert_eq!(taken(&codes), vec!["CONSUME_CYCLE", "a consumed b"]);
    tokio::time::sleep(pace.settle()).await;
    let drained = session.drain().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(drained.outcome, DrainOutcome::Settled, "nothing waits forever");
}

/// A consumer whose runs count their start, wait for `release`, and record when they end.
fn waiting(
    builder: ConsumerBuilder,
    name: &'static str,
    seen: &Seen,
    started: &Arc<AtomicU32>,
    release: &Arc<Notify>,
) -> Consumer {
    let (seen, started, release) = (seen.clone(), started.clone(), release.clone());
    builder
        .run(move |ctx| {
            let (seen, started, release) = (seen.clone(), started.clone(), release.clone());
            async move {
                started.fetch_add(1, Ordering::SeqCst);
                release.notified().await;
                record(&seen, name, ctx.event.index);
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A session with many more heads than a claim's batch, drained with one
/// run permit: the drain refills its batch when half of it has ended, so
/// claims come a few heads at a time, not one after every completed head
/// (as when a claim took only as many heads as there were free permits).
pub async fn a_long_session_is_claimed_in_batches(factory: &dyn StoreFactory, pace: Pace) {
    let faulty = Faulty::new(open(factory).await);
    let seen = seen();
    let par = recorder(Consumer::builder("par").types(["tick"]), "par", &seen);
    let timings = DrainTimings { claim_batch: 16, ..pace.timings() };
    // Sixteen run permits: a head is leased only with a permit (see `permits`), so
    // one permit would mean one head a claim, by design.
    let server =
        server_with(pace, faulty.clone(), vec![par], |b| b.run_in_background(false).max_running(16).timings(timings));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append((1..=120).map(tick).collect()).await.unwrap_or_else(|e| panic!("{e}"));
    let drained = session.drain().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(drained.processed, 120, "every head ran");
    assert_eq!(snapshot(&seen).len(), 120);
    let claims = faulty.claims.load(Ordering::SeqCst);
    assert!(claims <= 120 / 8 + 4, "{claims} claims for 120 heads in batches of 16: refills, not one a head");
}

/// A claim that fails while heads run, or a `drain()` whose caller goes
/// away, does not kill the running heads: they finish and are recorded.
pub async fn claim_error_lets_running_heads_finish(factory: &dyn StoreFactory, pace: Pace) {
    let faulty = Faulty::new(open(factory).await);
    let seen = seen();
    let (log_started, par_started) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let (log_release, par_release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let log = waiting(Consumer::builder("log").lane("main").types(["tick"]), "log", &seen, &log_started, &log_release);
    let par = waiting(Consumer::builder("par").types(["tick"]), "par", &seen, &par_started, &par_release);
    // One position a claim, so the log head's completion is what makes the
    // drain claim again (a range would run tick 2 on the lease it holds).
    let timings = DrainTimings { log_range: 1, ..pace.timings() };
    let server = server_with(pace, faulty.clone(), vec![log, par], |b| b.run_in_background(false).timings(timings));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1), tick(2)]).await.unwrap_or_else(|e| panic!("{e}"));
    let drain = tokio::spawn({
        let session = session.clone();
        async move { session.drain().await }
    });
    eventually("the first heads run", || {
        log_started.load(Ordering::SeqCst) == 1 && par_started.load(Ordering::SeqCst) == 2
    })
    .await;
    // The log head's completion makes the drain claim again: that claim fails.
    faulty.fail_claim.store(true, Ordering::SeqCst);
    log_release.notify_one();
    eventually("the log head finished", || snapshot(&seen).len() == 1).await;
    par_release.notify_waiters();
    let result = drain.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(result.map(|_| ()).map_err(|e| e.code()), Err("STORE_UNAVAILABLE"), "the claim's error is reported");
    let mut handled = snapshot(&seen);
    handled.sort();
    assert_eq!(
        handled,
        vec![("log".to_owned(), 1), ("par".to_owned(), 1), ("par".to_owned(), 2)],
        "the running heads finished"
    );
    faulty.fail_claim.store(false, Ordering::SeqCst);

    // Dropping a drain's future leaves its heads running to the end.
    let other = server.session("dropped").unwrap_or_else(|e| panic!("{e}"));
    other.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    let before = par_started.load(Ordering::SeqCst);
    let dropped = tokio::spawn({
        let other = other.clone();
        async move { other.drain().await }
    });
    eventually("the head runs", || par_started.load(Ordering::SeqCst) > before).await;
    dropped.abort();
    let _ = dropped.await;
    par_release.notify_waiters();
    log_release.notify_waiters();
    eventually("the abandoned drain's head finished", || {
        snapshot(&seen).iter().filter(|(n, _)| n == "par").count() == 3
    })
    .await;
    tokio::time::sleep(pace.settle()).await;
    let heads = faulty.head_list(&a2_store::session_key("shop", "dropped")).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        heads.iter().filter(|h| h.consumer == "par").all(|h| h.lag == 0),
        "its completion was recorded: {heads:#?}"
    );
}

/// Self-fencing does not wait on the store: with renewals hanging, a run
/// is stopped when its lease lapses, and a hanging claim gives up.
pub async fn fencing_holds_when_store_hangs(factory: &dyn StoreFactory, pace: Pace) {
    let faulty = Faulty::new(open(factory).await);
    let dropped = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicU32::new(0));
    let (d, s) = (dropped.clone(), started.clone());
    let long = Consumer::builder("long")
        .lane("main")
        .types(["tick"])
        .run(move |_| {
            let (dropped, started) = (d.clone(), s.clone());
            async move {
                struct SetOnDrop(Arc<AtomicBool>);
                impl Drop for SetOnDrop {
                    fn drop(&mut self) {
                        self.0.store(true, Ordering::SeqCst);
                    }
                }
                let _guard = SetOnDrop(dropped);
                started.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(86_400)).await;
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let timings = pace.timings();
    let server = quiet_server(pace, faulty.clone(), vec![long]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    faulty.hang_renew.store(true, Ordering::SeqCst);
    let began = tokio::time::Instant::now();
    let drained = session.drain().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(started.load(Ordering::SeqCst), 1);
    assert!(began.elapsed() < timings.claim_ttl * 2, "it did not wait on the hanging renewal: {:?}", began.elapsed());
    // A lapsed run gets its grace (`cancel_grace`) to return, then is stopped where it awaits.
    eventually("the run was stopped after its lease lapsed", || dropped.load(Ordering::SeqCst)).await;
    assert!(
        began.elapsed() < timings.claim_ttl * 2 + timings.cancel_grace,
        "stopped within its grace: {:?}",
        began.elapsed()
    );
    assert_ne!(drained.outcome, DrainOutcome::Settled, "the lapsed head is still to be done");
    faulty.hang_renew.store(false, Ordering::SeqCst);
    faulty.hang_claim.store(true, Ordering::SeqCst);
    let began = tokio::time::Instant::now();
    let hung = session.drain().await;
    assert_eq!(hung.map(|_| ()).map_err(|e| e.code()), Err("STORE_UNAVAILABLE"), "a hanging claim gives up");
    assert!(began.elapsed() <= timings.claim_ttl * 2);
}

/// An `abort_on` event appended by another process (here: another server,
/// whose in-process notices this one never hears) cancels a running attempt,
/// and a predicate decides which events of that type count.
pub async fn abort_on_sees_other_process(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let codes = codes();
    let started = Arc::new(AtomicU32::new(0));
    let (c, s) = (codes.clone(), started.clone());
    let watcher = Consumer::builder("watcher")
        .lane("main")
        .types(["tick"])
        .abort_on_when("stop", |event, trigger, attempt| attempt >= 1 && event.payload["of"] == trigger.payload["n"])
        .run(move |ctx| {
            let (codes, started) = (c.clone(), s.clone());
            async move {
                started.fetch_add(1, Ordering::SeqCst);
                tokio::select! {
                    () = ctx.cancel.cancelled() => push(&codes, "cancelled"),
                    () = tokio::time::sleep(Duration::from_secs(3_600)) => push(&codes, "ran out"),
                }
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let here = crate::engine::server(pace, store.clone(), vec![watcher]);
    let elsewhere = quiet_server(pace, store.clone(), vec![]);
    here.session("s").unwrap_or_else(|e| panic!("{e}")).append(vec![tick(7)]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("the attempt runs", || started.load(Ordering::SeqCst) == 1).await;
    let other = elsewhere.session("s").unwrap_or_else(|e| panic!("{e}"));
    other.append(vec![AppendInput::new("stop", json!({ "of": 8 }))]).await.unwrap_or_else(|e| panic!("{e}"));
    tokio::time::sleep(pace.settle()).await;
    assert!(taken(&codes).is_empty(), "a stop for another event does not cancel it");
    other.append(vec![AppendInput::new("stop", json!({ "of": 7 }))]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("the other process's stop cancelled it", || taken(&codes) == vec!["cancelled".to_owned()]).await;
}
