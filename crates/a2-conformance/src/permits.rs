//! Run permits and leases: a head is leased only when it can start at once.
//! A lease that waited for a permit was charged as a failure when its
//! process died (a crash loop turned a backlog into dead letters), and a run
//! waiting in `consume` could hold the very permit its target's head waited for.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use a2_engine::*;
use a2_store::{session_key, AttemptOutcome};

use crate::engine::{eventually, hanging, open, record, recorder, seen, server_with, snapshot, tick, Pace};
use crate::faulty::Faulty;
use crate::StoreFactory;

/// A concurrent consumer's run consumes a log consumer the same server
/// runs, with one run permit: the consumed consumer's heads are not leased
/// by the background drain while they wait for the permit the waiting run
/// holds, so the nested consume runs them and nothing stalls.
pub async fn consume_of_a_served_consumer_never_stalls(factory: &dyn StoreFactory, pace: Pace) {
    let seen = seen();
    let x = recorder(Consumer::builder("x").lane("main").types(["tick"]), "x", &seen);
    let (x_for_a, s) = (x.clone(), seen.clone());
    let a = Consumer::builder("a")
        .types(["tick"])
        .run(move |ctx| {
            let (x, seen) = (x_for_a.clone(), s.clone());
            async move {
                if ctx.event.index == 1 {
                    let through = ctx.session.consume(&x, Some(2)).await?;
                    record(&seen, "a consumed x through", through);
                }
                record(&seen, "a", ctx.event.index);
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = server_with(pace, open(factory).await, vec![a, x], |b| b.max_running(1));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1), tick(2)]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("a@1 consumed x through 2, and both consumers handled both events", || {
        let seen = snapshot(&seen);
        let count = |name: &str| seen.iter().filter(|(n, _)| n == name).count();
        seen.contains(&("a consumed x through".to_owned(), 2)) && count("a") == 2 && count("x") == 2
    })
    .await;
}

/// A process that dies while its runs hang leaves leases only on the heads
/// that started (as many as it had run permits), so only their attempts are
/// charged as lapses; the heads that waited were never leased.
pub async fn lapse_charges_only_started_attempts(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let started = Arc::new(AtomicU32::new(0));
    let crashed = server_with(pace, store.clone(), vec![hanging("work", started.clone())], |b| b.max_running(2));
    let session = crashed.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append((1..=6).map(tick).collect()).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("two runs started", || started.load(Ordering::SeqCst) == 2).await;
    // Time for any further claim a drain would make while its runs hang.
    tokio::time::sleep(pace.settle()).await;
    let key = session_key("shop", "s");
    // Every head leased is a run that started: none waits for a permit under a lease. (On a loaded
    // machine a hung run's lease can lapse and free its permit for the next head, so the count may
    // pass two; the rule holds whatever it is.) Read where no run started between the two looks.
    let (leased, heads, running) = loop {
        let before = started.load(Ordering::SeqCst);
        let heads = store.head_list(&key).await.unwrap_or_else(|e| panic!("{e}"));
        let leased = heads.iter().filter(|h| h.status.lease_holder.is_some() || h.status.attempt_count > 0).count();
        if started.load(Ordering::SeqCst) == before {
            break (leased, heads, before as usize);
        }
    };
    assert!(running >= 2, "two permits, two runs at least");
    assert_eq!(leased, running, "only the heads that can run were leased: {heads:#?}");

    // The process stops (its drains abandon what runs); a new one takes over once the leases lapsed.
    // The runs it started are counted once it has stopped: none starts after that.
    crashed.stop().await;
    let started_in_crashed = started.load(Ordering::SeqCst) as usize;
    drop((crashed, session));
    tokio::time::sleep(pace.timings().claim_ttl * 2).await;
    let done = seen();
    let work = recorder(Consumer::builder("work").types(["tick"]), "work", &done);
    let restart_at = store.clock().now_ms();
    let restarted = server_with(pace, store.clone(), vec![work], |b| b);
    restarted.session("s").unwrap_or_else(|e| panic!("{e}")).drain().await.unwrap_or_else(|e| panic!("{e}"));
    eventually("every event ran after the restart", || snapshot(&done).len() == 6).await;
    // The completions are written after the runs return: wait for all six in the history.
    let attempts = crate::engine::completed_attempts(&*store, &key, "work", 6).await;
    // Only the crashed process's attempts count: on a loaded machine a restarted run can miss its
    // heartbeat and lapse too, which is another lease's story.
    let crashed_lapses: Vec<u64> = attempts
        .iter()
        .filter(|a| a.outcome == AttemptOutcome::Lapsed && a.started_at.is_some_and(|at| at < restart_at))
        .map(|a| a.index)
        .collect();
    assert_eq!(
        crashed_lapses.len(),
        started_in_crashed,
        "a lapse is charged to each run that started, and to no other head: {attempts:#?}"
    );
    let completed = attempts.iter().filter(|a| a.outcome == AttemptOutcome::Completed).count();
    assert_eq!(completed, 6, "every head completed once: {attempts:#?}");
}

/// A run's permit comes back when the run returns, not when its outcome is
/// written: with one permit, the second head starts while the first one's
/// completion is still held up in the store (a commit waiting on the disk).
/// Both outcomes are written, fenced as ever, once the store answers.
pub async fn permit_returns_when_the_run_does(factory: &dyn StoreFactory, pace: Pace) {
    let faulty = Faulty::new(open(factory).await);
    faulty.hold_completions.store(true, Ordering::SeqCst);
    let started = seen();
    let work = recorder(Consumer::builder("work").types(["tick"]), "work", &started);
    let server = server_with(pace, faulty.clone(), vec![work], |b| b.max_running(1));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1), tick(2)]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("the second head started while the first one's completion was held", || snapshot(&started).len() == 2)
        .await;
    let key = session_key("shop", "s");
    let attempts = faulty.inner.attempt_list(a2_store::AttemptList {
        session: key.clone(),
        consumer: None,
        index: None,
        after: None,
        oldest_first: true,
        limit: 10,
    });
    let written = attempts.await.unwrap_or_else(|e| panic!("{e}"));
    assert!(written.is_empty(), "no outcome was written while completions were held: {written:#?}");
    faulty.hold_completions.store(false, Ordering::SeqCst);
    let attempts = crate::engine::completed_attempts(&*faulty.inner, &key, "work", 2).await;
    let completed: Vec<(u64, u32)> =
        attempts.iter().filter(|a| a.outcome == AttemptOutcome::Completed).map(|a| (a.index, a.attempt)).collect();
    assert_eq!(completed, vec![(1, 1), (2, 1)], "each head completed once, on its first attempt");
}
