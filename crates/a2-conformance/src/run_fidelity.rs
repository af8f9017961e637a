//! What a run sees, as the seeds give it: the session's presence, public
//! session ids in an `abort_on` predicate, and an attempt failed (and
//! retried) when its abort watch could not read the session.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use a2_engine::*;
use a2_store::AttemptOutcome;
use serde_json::json;

use crate::engine::{eventually, open, server, server_with, tick, Pace};
use crate::faulty::Faulty;
use crate::StoreFactory;

/// A run reads who is in its session (`ctx.session.presence()`), as the
/// seeds hand handlers the session's presence: what was set before it ran.
pub async fn run_reads_session_presence(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let read: Arc<Mutex<Option<PresenceMap>>> = Arc::default();
    let into = read.clone();
    let reader = Consumer::builder("reader")
        .types(["tick"])
        .run(move |ctx| {
            let into = into.clone();
            async move {
                let map = ctx.session.presence().await?;
                if let Ok(mut read) = into.lock() {
                    *read = Some(map);
                }
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = server(pace, store, vec![reader]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session
        .set_presence(PresencePatch::new("ann").value("typing", json!(true)))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("the run read presence", || read.lock().map(|r| r.is_some()).unwrap_or(false)).await;
    let map = read.lock().ok().and_then(|r| r.clone()).unwrap_or_default();
    let typing = map.get("ann").and_then(|fields| fields.get("typing")).map(|v| v.value.clone());
    assert_eq!(typing, Some(json!(true)), "the run sees ann typing: {map:?}");
}

/// An `abort_on` predicate sees the session's public id on both the event
/// and the trigger, never the store's key with its contract prefix.
pub async fn abort_on_predicate_sees_public_session_ids(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let sessions: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let (saw, started) = (sessions.clone(), Arc::new(AtomicU32::new(0)));
    let starts = started.clone();
    let worker = Consumer::builder("worker")
        .types(["tick"])
        .abort_on_when("stop", move |event, trigger, _| {
            if let Ok(mut saw) = saw.lock() {
                saw.push((event.session.clone(), trigger.session.clone()));
            }
            true
        })
        .run(move |ctx| {
            let starts = starts.clone();
            async move {
                starts.fetch_add(1, Ordering::SeqCst);
                ctx.cancel.cancelled().await;
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = server(pace, store, vec![worker]);
    let session = server.session("o-7").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("the run started", || started.load(Ordering::SeqCst) == 1).await;
    session.append(vec![AppendInput::new("stop", json!({}))]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("the predicate was asked", || sessions.lock().map(|s| !s.is_empty()).unwrap_or(false)).await;
    let asked = sessions.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(asked[0], ("o-7".to_owned(), "o-7".to_owned()), "public ids, not storage keys: {asked:?}");
}

/// The abort watch cannot read the session while a run goes: as the seeds,
/// the run's token is cancelled and the attempt fails (whatever the run
/// returned), so it is retried, and the retry runs with the store back.
pub async fn abort_monitor_failure_fails_the_attempt(factory: &dyn StoreFactory, pace: Pace) {
    let faulty = Faulty::new(open(factory).await);
    let store: Arc<dyn a2_store::Store> = faulty.clone();
    let reasons: Arc<Mutex<Vec<Option<CancelReason>>>> = Arc::default();
    let (seen, started) = (reasons.clone(), Arc::new(AtomicU32::new(0)));
    let starts = started.clone();
    let worker = Consumer::builder("worker")
        .types(["tick"])
        .abort_on(["stop"])
        .run(move |ctx| {
            let (seen, starts) = (seen.clone(), starts.clone());
            async move {
                if starts.fetch_add(1, Ordering::SeqCst) == 0 {
                    ctx.cancel.cancelled().await;
                }
                if let Ok(mut seen) = seen.lock() {
                    seen.push(ctx.cancel_reason());
                }
                // Returns normally: the monitor's failure alone fails the attempt.
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    // Backoffs long enough that a stalled test task never sees ten failures before it turns the store back.
    let backoff = a2_store::Backoff { base_ms: 200, max_ms: 2_000 };
    let server =
        server_with(pace, store.clone(), vec![worker], |b| b.timings(DrainTimings { backoff, ..pace.timings() }));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("the first attempt runs", || started.load(Ordering::SeqCst) == 1).await;
    faulty.fail_event_lists.store(true, Ordering::SeqCst);
    // Any append makes the watch look again; this one it cannot read.
    session.append(vec![AppendInput::new("tock", json!({}))]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("the first attempt was cancelled", || reasons.lock().map(|r| !r.is_empty()).unwrap_or(false)).await;
    // Retries while the store still fails fail the same way (their watch's first read fails).
    faulty.fail_event_lists.store(false, Ordering::SeqCst);
    let clean = |r: &Vec<Option<CancelReason>>| r.last().is_some_and(Option::is_none);
    eventually("a retry ran with the store back", || reasons.lock().map(|r| clean(&r)).unwrap_or(false)).await;
    let seen = reasons.lock().map(|r| r.clone()).unwrap_or_default();
    let failed = &seen[..seen.len() - 1];
    assert!(failed.iter().all(|r| *r == Some(CancelReason::AbortMonitorFailed)), "{seen:?}");
    // Its failures are recorded before the retry runs, so all are there once it completed.
    let attempts = crate::engine::completed_attempts(&*store, &a2_store::session_key("shop", "s"), "worker", 1).await;
    let (last, failed) = attempts.split_last().unwrap_or_else(|| panic!("no attempts"));
    for attempt in failed {
        assert_eq!(attempt.outcome, AttemptOutcome::Failed, "a failure, not an abort: {attempts:?}");
        assert!(attempt.error.as_deref().is_some_and(|e| e.contains("abort_on monitor")), "{attempts:?}");
    }
    assert_eq!(last.outcome, AttemptOutcome::Completed);
}
