//! Leases held and lost: a heartbeat keeps a long run leased, a holder that
//! cannot renew stops its own run, and the attempt history a test reads
//! once completions are written.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2_engine::*;
use a2_store::Store;

use crate::engine::{contract, eventually, open, server, tick, Pace};
use crate::StoreFactory;

/// A run longer than the lease keeps it by heartbeat: no second attempt.
pub async fn engine_heartbeat_keeps_a_long_run_leased(factory: &dyn StoreFactory, pace: Pace) {
    let timings = pace.timings();
    let long = timings.claim_ttl * 3;
    let (runs, finished) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let (r, f) = (runs.clone(), finished.clone());
    let slow = Consumer::builder("slow")
        .run(move |_| {
            let (runs, finished) = (r.clone(), f.clone());
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(long).await;
                finished.fetch_add(1, Ordering::SeqCst);
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let store = open(factory).await;
    let first = server(pace, store.clone(), vec![slow.clone()]);
    let second = server(pace, store.clone(), vec![slow]);
    first.session("s").unwrap_or_else(|e| panic!("{e}")).append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("the run starts", || runs.load(Ordering::SeqCst) == 1).await;
    // Past two lease lengths, another holder still finds the head busy.
    tokio::time::sleep(timings.claim_ttl * 2).await;
    let other = second.session("s").unwrap_or_else(|e| panic!("{e}")).drain().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(other.outcome, DrainOutcome::Busy, "renewed, the lease is still live");
    assert_eq!(finished.load(Ordering::SeqCst), 0, "the run is still going");
    let key = a2_store::session_key("shop", "s");
    eventually("the run finished", || finished.load(Ordering::SeqCst) == 1).await;
    let attempts = completed_attempts(&*store, &key, "slow", 1).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1, "one attempt, never taken over");
    assert_eq!(attempts.len(), 1, "one attempt in the history, completed: {attempts:#?}");
}

/// The attempt history of `consumer` in session `key` once `completed` of its attempts completed.
pub(crate) async fn completed_attempts(
    store: &dyn Store,
    key: &a2_store::SessionKey,
    consumer: &str,
    completed: usize,
) -> Vec<a2_store::Attempt> {
    for _ in 0..2_000 {
        let list = a2_store::AttemptList {
            session: key.clone(),
            consumer: Some(consumer.to_owned()),
            index: None,
            after: None,
            oldest_first: true,
            limit: 100,
        };
        let attempts = store.attempt_list(list).await.unwrap_or_else(|e| panic!("{e}"));
        if attempts.iter().filter(|a| a.outcome == a2_store::AttemptOutcome::Completed).count() >= completed {
            return attempts;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {completed} completed attempts of {consumer}");
}

/// Drops a timestamp when a run's future is dropped: proof it was stopped.
struct DropClock(Arc<Mutex<Option<tokio::time::Instant>>>);

impl Drop for DropClock {
    fn drop(&mut self) {
        if let Ok(mut at) = self.0.lock() {
            *at = Some(tokio::time::Instant::now());
        }
    }
}

/// A holder that cannot renew stops its own run when its local lease estimate lapses.
pub async fn engine_a_lapsed_lease_stops_its_run(factory: &dyn StoreFactory, pace: Pace) {
    let ttl = pace.timings().claim_ttl;
    // Renewing less often than the lease lasts: every lease lapses.
    let timings = DrainTimings { claim_heartbeat: ttl * 4, ..pace.timings() };
    let dropped = Arc::new(Mutex::new(None));
    let started = Arc::new(Mutex::new(None));
    let (d, s) = (dropped.clone(), started.clone());
    let stuck = Consumer::builder("stuck")
        .lane("main")
        .run(move |_| {
            let (dropped, started) = (d.clone(), s.clone());
            async move {
                let _clock = DropClock(dropped);
                if let Ok(mut at) = started.lock() {
                    at.get_or_insert_with(tokio::time::Instant::now);
                }
                tokio::time::sleep(ttl * 3).await;
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = Server::builder(contract(), open(factory).await)
        .consumer(stuck)
        .timings(timings)
        .run_in_background(false)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    let drained = session.drain().await.unwrap_or_else(|e| panic!("{e}"));
    // The abort lands when the runtime next polls the run's task.
    eventually("the run's future was dropped", || dropped.lock().map(|d| d.is_some()).unwrap_or(false)).await;
    let (start, stop) = (started.lock().ok().and_then(|s| *s), dropped.lock().ok().and_then(|d| *d));
    let (Some(start), Some(stop)) = (start, stop) else { panic!("the run started and was stopped") };
    let ran = stop.duration_since(start);
    assert!(ran >= ttl.mul_f32(0.9) && ran < ttl * 2, "stopped when its lease lapsed ({ran:?} into a {ttl:?} lease)");
    assert_eq!(drained.processed, 0, "the lapsed attempt completed nothing");
}
