//! Engine scenarios for work a dead process left: a background server finds
//! and finishes it without a new append, and any external append heals it.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use a2_engine::*;
use a2_store::HeadClaim;

use crate::engine::{eventually, open, quiet_server, recorder, seen, server, server_with, snapshot, tick, Pace};
use crate::StoreFactory;

fn log_recorder(seen: &crate::engine::Seen) -> Consumer {
    recorder(Consumer::builder("rec").lane("main").types(["tick"]).backfill(), "rec", seen)
}

async fn append(server: &Server, session: &str, events: Vec<AppendInput>) {
    let session = server.session(session).unwrap_or_else(|e| panic!("{e}"));
    session.append(events).await.unwrap_or_else(|e| panic!("append: {e}"));
}

/// One session whose head a dead holder claimed (its lease lapses), one
/// whose events nobody claimed: a background server started afterwards
/// finishes both, and nobody appends anything.
pub async fn stranded_work_heals_without_append(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let seen = seen();
    let dead = quiet_server(pace, store.clone(), vec![log_recorder(&seen)]);
    append(&dead, "held", vec![tick(1), tick(2)]).await;
    append(&dead, "unclaimed", vec![tick(1)]).await;
    let consumer = dead.consumer("rec").map(|c| vec![store_consumer(&c)]).unwrap_or_default();
    let claim = HeadClaim {
        session: a2_store::session_key("shop", "held"),
        holder: "a-process-that-died".into(),
        ttl_ms: 500,
        consumers: consumer,
        through: None,
        exclude: Vec::new(),
        max_failures: MAX_FAILURES,
        limit: 10,
        range: 1,
    };
    let claimed = store.head_claim(claim).await.unwrap_or_else(|e| panic!("claim: {e}"));
    assert_eq!(claimed.heads.len(), 1, "the dead holder took the cursor at 1");
    drop(dead);
    let live = server(pace, store.clone(), vec![log_recorder(&seen)]);
    eventually("the rescuer finished both sessions", || snapshot(&seen).len() == 3).await;
    tokio::time::sleep(pace.settle()).await;
    let mut all = snapshot(&seen);
    all.sort();
    assert_eq!(all, vec![("rec".to_owned(), 1), ("rec".to_owned(), 1), ("rec".to_owned(), 2)]);
    drop(live);
}

fn store_consumer(consumer: &Consumer) -> a2_store::StoreConsumer {
    a2_store::StoreConsumer {
        name: consumer.name().to_owned(),
        log: Some(a2_store::LogSpec { lane: "main".into(), types: Some(vec!["tick".into()]), backfill: true }),
    }
}

/// A failure's retry falls due while no process runs: the next server to
/// start runs it, with no append to wake it.
pub async fn due_retry_runs_after_restart(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let attempts = Arc::new(AtomicU32::new(0));
    let flaky = |attempts: Arc<AtomicU32>| {
        Consumer::builder("flaky")
            .lane("main")
            .backfill()
            .run(move |ctx| {
                let attempts = attempts.clone();
                async move {
                    attempts.fetch_add(1, Ordering::SeqCst);
                    if ctx.attempt == 1 {
                        return Err::<(), BoxError>("the first attempt fails".into());
                    }
                    Ok(())
                }
            })
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let first = quiet_server(pace, store.clone(), vec![flaky(attempts.clone())]);
    append(&first, "s", vec![tick(1)]).await;
    let session = first.session("s").unwrap_or_else(|e| panic!("{e}"));
    let drained = session.drain().await.unwrap_or_else(|e| panic!("drain: {e}"));
    assert_eq!(drained.outcome, DrainOutcome::Stalled, "the failure waits out its backoff");
    drop(first);
    let restarted = server(pace, store.clone(), vec![flaky(attempts.clone())]);
    eventually("the restarted server ran the due retry", || attempts.load(Ordering::SeqCst) == 2).await;
    tokio::time::sleep(pace.settle()).await;
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    let heads = store.head_list(&a2_store::session_key("shop", "s")).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(heads.iter().all(|h| h.lag == 0), "nothing left pending: {heads:#?}");
    drop(restarted);
}

/// Re-sending an event that is already stored (a client retrying after a
/// timeout) still heals the session: work a dead process left there runs.
pub async fn duplicate_append_heals_pending_work(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let seen = seen();
    let mut timings = pace.timings();
    // Only the append may heal here: the rescuer looks once, at start, on an empty store.
    timings.rescue_every = Duration::from_secs(3_600);
    let live = server_with(pace, store.clone(), vec![log_recorder(&seen)], |b| b.timings(timings));
    tokio::time::sleep(pace.settle()).await;
    let dead = quiet_server(pace, store.clone(), vec![log_recorder(&seen)]);
    append(&dead, "s", vec![tick(1).with_id("order-1")]).await;
    drop(dead);
    tokio::time::sleep(pace.settle()).await;
    assert!(snapshot(&seen).is_empty(), "nobody drained the first append");
    let session = live.session("s").unwrap_or_else(|e| panic!("{e}"));
    let again = session.append(vec![tick(1).with_id("order-1")]).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.iter().map(|e| e.index).collect::<Vec<_>>(), vec![1], "the duplicate is not stored twice");
    eventually("the duplicate append healed the session", || snapshot(&seen).len() == 1).await;
    tokio::time::sleep(pace.settle()).await;
    assert_eq!(snapshot(&seen), vec![("rec".to_owned(), 1)]);
}
