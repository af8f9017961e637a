//! The drain watchdog as the seeds arm it, on a real server and the
//! store-backed scheduler: armed durably by an external append, by a claim
//! that finds the heads busy, and settled only once the drain it delivers
//! has claimed, on any server that runs the consumers.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use a2_engine::*;
use a2_store::{ScheduledTask, Store, TaskSchedule, TaskWork};

use crate::engine::{eventually, hanging, open, recorder, seen, server_with, snapshot, tick, Pace};
use crate::scheduling::{eventually_tasks, tasks};
use crate::StoreFactory;

async fn drain_tasks(store: &Arc<dyn Store>) -> Vec<ScheduledTask> {
    tasks(store).await.into_iter().filter(|t| t.work == TaskWork::Drain).collect()
}

/// The seeds' slot: a due time rounded up to the second.
fn slot(due: i64) -> i64 {
    due.div_euclid(1_000) * 1_000 + if due.rem_euclid(1_000) > 0 { 1_000 } else { 0 }
}

/// No rescuer within a scenario: only a watchdog may find stranded work.
fn no_rescue(pace: Pace) -> DrainTimings {
    DrainTimings { rescue_every: Duration::from_secs(3_600), ..pace.timings() }
}

/// A due watchdog task, delivered by a server that does not drain in the
/// background: the delivery drains the session itself, and the task is
/// settled only once that drain has claimed: when the delivery returns, the
/// head is leased to it and its run has started.
pub async fn watchdog_task_settles_only_after_its_drain_claimed(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    // The writer makes the worker's head and drains nothing; it has no scheduler, so it arms nothing.
    let idle = Arc::new(AtomicU32::new(0));
    let writer = server_with(pace, store.clone(), vec![hanging("worker", idle)], |b| b.run_in_background(false));
    let session = writer.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    let key = a2_store::session_key("shop", "s");
    let watchdog = TaskSchedule {
        session: key.clone(),
        id: "watchdog-of-s".into(),
        name: "a2.watchdog".into(),
        due_at: 0,
        work: TaskWork::Drain,
        trigger: None,
    };
    assert!(store.task_schedule(watchdog).await.unwrap_or_else(|e| panic!("{e}")));
    let started = Arc::new(AtomicU32::new(0));
    let quiet =
        server_with(pace, store.clone(), vec![hanging("worker", started.clone())], |b| b.run_in_background(false));
    assert_eq!(quiet.deliver_due().await.unwrap_or_else(|e| panic!("{e}")), 1, "delivered by a quiet server");
    let heads = store.head_list(&key).await.unwrap_or_else(|e| panic!("{e}"));
    let worker = heads.iter().find(|h| h.consumer == "worker").unwrap_or_else(|| panic!("{heads:?}"));
    assert!(worker.status.lease_holder.is_some(), "leased before the task was settled: {worker:?}");
    assert!(drain_tasks(&store).await.is_empty(), "settled once the drain claimed");
    eventually("the drain's run started", || started.load(Ordering::SeqCst) == 1).await;
    quiet.shutdown();
}

/// An external append on a server with a scheduler leaves a durable watchdog
/// before it answers: a drain task of the session at the claim window's end
/// (now + lease + grace, slotted), kept in the store for any server.
pub async fn external_append_arms_the_watchdog(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let scheduler: Arc<dyn Scheduler> = Arc::new(StoreScheduler::new(store.clone()));
    let seen = seen();
    let worker = recorder(Consumer::builder("worker").types(["tick"]), "worker", &seen);
    let server =
        server_with(pace, store.clone(), vec![worker], |b| b.run_in_background(false).scheduler(scheduler.clone()));
    let before = store.clock().now_ms();
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    let after = store.clock().now_ms();
    let armed = drain_tasks(&store).await;
    assert_eq!(armed.len(), 1, "armed before the append answered: {armed:?}");
    let window = pace.timings().claim_ttl + pace.timings().watchdog_grace;
    let window = i64::try_from(window.as_millis()).unwrap_or(i64::MAX);
    assert_eq!(armed[0].session_id, "s");
    assert!(
        (slot(before + window)..=slot(after + window)).contains(&armed[0].due_at),
        "due at the claim window's end: {} not in {}..={}",
        armed[0].due_at,
        slot(before + window),
        slot(after + window)
    );
    assert!(snapshot(&seen).is_empty(), "nothing drained here");
}

/// A process claims a head and dies with it leased. A second server's
/// drain finds the head busy and arms a durable watchdog past the dead
/// holder's lease; a third server, with no rescuer, delivers that watchdog
/// when it falls due and runs the head.
pub async fn busy_claim_leaves_a_durable_watchdog(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let started = Arc::new(AtomicU32::new(0));
    // The dying process arms nothing: only the busy claim can leave the arm.
    let dying = server_with(pace, store.clone(), vec![hanging("worker", started.clone())], |b| {
        b.timings(DrainTimings { watchdog: false, ..no_rescue(pace) })
    });
    dying.session("s").unwrap_or_else(|e| panic!("{e}")).append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("the dying process's run started", || started.load(Ordering::SeqCst) == 1).await;
    let key = a2_store::session_key("shop", "s");
    let heads = store.head_list(&key).await.unwrap_or_else(|e| panic!("{e}"));
    let expires = heads.iter().find_map(|h| h.status.lease_expires_at).unwrap_or_else(|| panic!("{heads:?}"));
    dying.shutdown();
    drop(dying);
    assert!(drain_tasks(&store).await.is_empty(), "nothing armed yet");

    let scheduler: Arc<dyn Scheduler> = Arc::new(StoreScheduler::new(store.clone()));
    let late = Arc::new(AtomicU32::new(0));
    let looker = server_with(pace, store.clone(), vec![hanging("worker", late.clone())], |b| {
        b.run_in_background(false).timings(no_rescue(pace)).scheduler(scheduler.clone())
    });
    let result = looker.session("s").unwrap_or_else(|e| panic!("{e}")).drain().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(result.outcome, DrainOutcome::Busy, "{result:?}");
    // Past the dead holder's lease as last seen (a beat before its shutdown may only have moved it later).
    let grace = i64::try_from(pace.timings().watchdog_grace.as_millis()).unwrap_or(i64::MAX);
    let due = slot(expires + grace);
    let kept = eventually_tasks(&store, |t| t.iter().any(|t| t.work == TaskWork::Drain && t.due_at >= due)).await;
    let armed = kept.iter().find(|t| t.work == TaskWork::Drain).unwrap_or_else(|| panic!("{kept:?}"));
    assert_eq!(armed.session_id, "s");
    drop(looker);

    // A survivor with nothing in the background: only delivering the watchdog can run the head.
    let seen = seen();
    let survivor = server_with(
        pace,
        store.clone(),
        vec![recorder(Consumer::builder("worker").types(["tick"]), "worker", &seen)],
        |b| b.run_in_background(false),
    );
    let mut delivered = 0;
    for _ in 0..2_000 {
        delivered = survivor.deliver_due().await.unwrap_or_else(|e| panic!("{e}"));
        if delivered > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(delivered, 1, "the watchdog was delivered when due");
    eventually("the survivor ran the dead process's head", || snapshot(&seen) == [("worker".to_owned(), 1)]).await;
    assert_eq!(late.load(Ordering::SeqCst), 0, "the busy looker ran nothing");
    drop(survivor);
}
