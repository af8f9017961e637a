//! The seeds' clock on a real server: `session.schedule` from inside and
//! outside a run, delivery through the ordinary append and clear paths,
//! and the store-backed scheduler shared by many servers.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2_engine::*;
use a2_store::{EventAppend, NewEvent, ScheduledBy, ScheduledTask, TaskClaim, TaskList, TaskWork};
use serde_json::json;

use crate::engine::{all_events, eventually, hanging, open, recorder, seen, server, server_with, snapshot, tick, Pace};
use crate::StoreFactory;

/// A delay long enough that nothing in a scenario reaches it.
const LATER: &str = "1h";

/// A delay that passes within a scenario, on either pace.
fn soon(pace: Pace) -> (Timing, Duration) {
    match pace {
        Pace::Paused => (Timing::delay("30s"), Duration::from_secs(30)),
        Pace::Realtime => (Timing::delay("300ms"), Duration::from_millis(300)),
    }
}

/// Every task the store keeps (a scenario's handful).
pub(crate) async fn tasks(store: &Arc<dyn a2_store::Store>) -> Vec<ScheduledTask> {
    let list = TaskList { limit: 100, ..TaskList::default() };
    store.task_list(list).await.unwrap_or_else(|e| panic!("task list: {e}"))
}

/// A run that schedules and then fails is retried; the retry schedules the
/// same task (same id, same due time from the trigger), so one task is kept.
pub async fn schedule_from_a_retried_run_is_one_task(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let attempts = Arc::new(AtomicU32::new(0));
    let retried = Arc::new(AtomicU32::new(0));
    let ids: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let (a, r, i) = (attempts.clone(), retried.clone(), ids.clone());
    let reminder = Consumer::builder("reminder")
        .types(["order.placed"])
        .run(move |ctx| {
            let (attempts, retried, ids) = (a.clone(), r.clone(), i.clone());
            async move {
                let id = ctx.session.schedule("remind", Timing::delay(LATER), vec![tick(7)]).await?;
                if let Ok(mut ids) = ids.lock() {
                    ids.push(id);
                }
                if attempts.fetch_add(1, Ordering::SeqCst) == 0 {
                    return Err::<(), BoxError>("first attempt fails after scheduling".into());
                }
                // Scheduled by the retry alone: its delay still counts from the trigger.
                ctx.session.schedule("late", Timing::delay(LATER), vec![tick(8)]).await?;
                retried.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = server(pace, store.clone(), vec![reminder]);
    let session = server.session("o-1").unwrap_or_else(|e| panic!("{e}"));
    let order = AppendInput::new("order.placed", json!({ "customer": "ann", "amount": 5 }));
    let appended = session.append(vec![order]).await.unwrap_or_else(|e| panic!("{e}"));
    // Counted once the retry's own task is kept, not as the retry begins (it had not scheduled yet).
    eventually("the retry scheduled its own task", || retried.load(Ordering::SeqCst) >= 1).await;
    let ids = ids.lock().map(|v| v.clone()).unwrap_or_default();
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[0], ids[1], "the retried run derived the same task id");
    let kept = tasks(&store).await;
    assert_eq!(kept.len(), 2, "one task per name, not one per attempt: {kept:?}");
    let late = kept.iter().find(|t| t.name == "late").unwrap_or_else(|| panic!("the retry's task: {kept:?}"));
    assert_eq!(
        late.due_at,
        appended[0].created_at + 3_600_000,
        "a retry's delay counts from the trigger, not the retry"
    );
    let task = kept.iter().find(|t| t.name == "remind").unwrap_or_else(|| panic!("the task: {kept:?}"));
    assert_eq!(task.id, ids[0]);
    assert_eq!(task.due_at, appended[0].created_at + 3_600_000, "due an hour after the trigger, whatever the attempt");
    assert_eq!((task.name.as_str(), task.session_id.as_str()), ("remind", "o-1"));
    let trigger = task.trigger.as_ref().unwrap_or_else(|| panic!("a run's task names its trigger"));
    assert_eq!(
        (trigger.event_id.as_str(), trigger.index, trigger.consumer.as_deref()),
        (appended[0].id.as_str(), 1, Some("reminder"))
    );
    let TaskWork::Append { events } = &task.work else { panic!("an append task: {task:?}") };
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].id, ids::scheduled_event_id(&task.id, 0), "the event's id derives from the task's");
    assert_eq!(events[0].payload, json!({ "n": 7 }));
}

/// The seeds' validation, before anything is kept: a name, a delay in the
/// grammar, at least one event, events the contract knows, no id twice.
pub async fn schedule_refuses_bad_input_before_anything_is_kept(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let server = server(pace, store.clone(), Vec::new());
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    let code = |r: Result<String, A2Error>| r.err().map(|e| e.code());
    assert_eq!(code(session.schedule("", Timing::delay("1s"), vec![tick(1)]).await), Some("INVALID_ARGUMENT"));
    for delay in ["30", "0s", "-1s", "01s", "1.s", "1w", "s", "1 s", "1e3ms"] {
        assert_eq!(
            code(session.schedule("x", Timing::delay(delay), vec![tick(1)]).await),
            Some("INVALID_ARGUMENT"),
            "{delay}"
        );
    }
    assert_eq!(code(session.schedule("x", Timing::delay("1s"), Vec::new()).await), Some("INVALID_ARGUMENT"));
    let unknown = AppendInput::new("nope", json!({}));
    assert_eq!(code(session.schedule("x", Timing::delay("1s"), vec![unknown]).await), Some("UNKNOWN_EVENT_TYPE"));
    assert_eq!(code(session.schedule("x", Timing::At(i64::MAX), vec![tick(1)]).await), Some("INVALID_ARGUMENT"));
    let bad = AppendInput::new("order.placed", json!({ "customer": 1 }));
    assert_eq!(code(session.schedule("x", Timing::delay("1s"), vec![bad]).await), Some("INVALID_PAYLOAD"));
    let twice = vec![tick(1).with_id("k-1"), tick(2).with_id("k-1")];
    assert_eq!(code(session.schedule("x", Timing::delay("1s"), twice).await), Some("PARTIAL_DUPLICATE_BATCH"));
    assert!(tasks(&store).await.is_empty(), "nothing refused was kept");
    for delay in ["1.5s", "250ms", "2m", "1h", "1d"] {
        let id = session.schedule(delay, Timing::delay(delay), vec![tick(1)]).await;
        assert!(id.is_ok(), "{delay}: {id:?}");
    }
    let at = session.schedule("at", Timing::At(42), vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    let kept = tasks(&store).await;
    assert_eq!(kept.iter().find(|t| t.id == at).map(|t| t.due_at), Some(42));
    // The store stamps `created_at` as it inserts, a moment after the engine read its clock for the delay.
    let delay = kept.iter().find(|t| t.name == "1.5s").map(|t| t.due_at - t.created_at);
    assert!(delay.is_some_and(|d| (1_400..=1_500).contains(&d)), "1.5s is 1,500 ms: {delay:?}");
}

/// A task is delivered when due, through the append path (the consumers run
/// its events), and only once: a delivery a dead server had half done (its
/// events appended, the task still held) is redelivered and absorbed.
pub async fn scheduled_append_is_delivered_once_when_due(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    // A server died mid-delivery: it claimed a due task and appended its events, and never settled it.
    let quiet = server_with(pace, store.clone(), Vec::new(), |b| b.run_in_background(false));
    let half = quiet.session("s").unwrap_or_else(|e| panic!("{e}"));
    let half = half.schedule("half", Timing::At(0), vec![tick(3)]).await.unwrap_or_else(|e| panic!("{e}"));
    let claim = TaskClaim { contract: "shop".into(), holder: "dead".into(), ttl_ms: 3_000, limit: 10, only: None };
    let claimed = store.task_claim(claim).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(claimed.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), [half.as_str()]);
    let half_event = ids::scheduled_event_id(&half, 0);
    let event = NewEvent {
        id: half_event.clone(),
        event_type: "tick".into(),
        payload: json!({ "n": 3 }),
        cause: None,
        scheduled_by: Some(ScheduledBy { task: half.clone(), name: "half".into() }),
        targets: Vec::new(),
    };
    let append = EventAppend {
        session: a2_store::session_key("shop", "s"),
        events: vec![event],
        consumers: Vec::new(),
        origin_index: None,
    };
    store.event_append(append).await.unwrap_or_else(|e| panic!("{e}"));
    drop(quiet);

    let seen = seen();
    let server =
        server(pace, store.clone(), vec![recorder(Consumer::builder("log").lane("main").backfill(), "log", &seen)]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    let (timing, _) = soon(pace);
    let id = session.schedule("ping", timing.clone(), vec![tick(1), tick(2)]).await.unwrap_or_else(|e| panic!("{e}"));
    let again = session.schedule("ping", timing, vec![tick(1), tick(2)]).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(id, again, "the same name outside a run is the same task");
    assert_eq!(all_events(&session).await.len(), 1, "nothing before it is due");
    eventually_async_tasks_empty(&store).await;
    eventually("the log consumer ran every event", || snapshot(&seen).len() == 3).await;
    let events = all_events(&session).await;
    assert_eq!(
        events.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(),
        [half_event, ids::scheduled_event_id(&id, 0), ids::scheduled_event_id(&id, 1)],
        "each appended once"
    );
    // Each event names the task that appended it, so a reader links it to its timer once the task is gone.
    let marks: Vec<_> = events.iter().map(|e| e.scheduled_by.clone().map(|b| (b.task, b.name))).collect();
    let ping = Some((id.clone(), "ping".to_owned()));
    assert_eq!(marks, [Some((half.clone(), "half".to_owned())), ping.clone(), ping]);
    assert_eq!(server.deliver_due().await.unwrap_or_else(|e| panic!("{e}")), 0);
}

async fn eventually_async_tasks_empty(store: &Arc<dyn a2_store::Store>) {
    for _ in 0..2_000 {
        if tasks(store).await.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("tasks left undelivered: {:?}", tasks(store).await);
}

/// A run schedules an append; the session is cleared through its trigger
/// before it is due: the delivery is an acknowledged no-op, not an error
/// retried forever, and nothing is appended past the clear.
pub async fn scheduled_append_after_clear_is_a_no_op(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let scheduled = Arc::new(AtomicU32::new(0));
    let s = scheduled.clone();
    let (timing, delay) = soon(pace);
    let reminder = Consumer::builder("reminder")
        .types(["order.placed"])
        .run(move |ctx| {
            let (scheduled, timing) = (s.clone(), timing.clone());
            async move {
                ctx.session.schedule("remind", timing, vec![tick(9)]).await?;
                scheduled.fetch_add(1, Ordering::SeqCst);
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = server(pace, store.clone(), vec![reminder]);
    let session = server.session("o-1").unwrap_or_else(|e| panic!("{e}"));
    let order = AppendInput::new("order.placed", json!({ "customer": "ann", "amount": 5 }));
    session.append(vec![order]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("the run scheduled its task", || scheduled.load(Ordering::SeqCst) == 1).await;
    assert_eq!(tasks(&store).await.len(), 1);
    let cleared = session.clear(None).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(cleared.cleared);
    tokio::time::sleep(delay).await;
    eventually_async_tasks_empty(&store).await;
    assert!(all_events(&session).await.is_empty(), "nothing was appended past the clear");
    let bounds = store.session_bounds(&a2_store::session_key("shop", "o-1")).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(bounds.head, 1, "the delivery appended nothing");
}

/// Scheduled clears: delivered through `clear`, only when the head is still
/// the guard's index; a stale guard is an acknowledged no-op.
pub async fn scheduled_clear_respects_if_last_index(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let server = server(pace, store.clone(), Vec::new());
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1), tick(2)]).await.unwrap_or_else(|e| panic!("{e}"));
    let (timing, delay) = soon(pace);
    let stale = session.schedule_clear("stale", Timing::At(0), Some(1)).await.unwrap_or_else(|e| panic!("{e}"));
    // Delivered here or by the background, whichever claims it first: either way once.
    server.deliver_due().await.unwrap_or_else(|e| panic!("{e}"));
    eventually_async_tasks_empty(&store).await;
    let key = a2_store::session_key("shop", "s");
    let bounds = store.session_bounds(&key).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((bounds.head, bounds.clear_index), (2, 0), "a guard of 1 on a head of 2 clears nothing");
    let fresh = session.schedule_clear("fresh", timing, Some(2)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(stale, fresh);
    let same = session.schedule_clear("fresh", soon(pace).0, Some(2)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fresh, same, "the same clear scheduled twice is one task");
    let kept = tasks(&store).await;
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].work, TaskWork::Clear { if_last_index: Some(2) });
    tokio::time::sleep(delay).await;
    eventually_async_tasks_empty(&store).await;
    let bounds = store.session_bounds(&key).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((bounds.head, bounds.clear_index), (2, 2), "cleared through its guard");
}

/// Three servers of the contract on one store serve twenty due tasks: every
/// task is delivered, each event is in the log once, and no task is left.
pub async fn due_tasks_are_served_once_by_many_servers(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let seen = seen();
    let servers: Vec<Server> = (0..3)
        .map(|_| {
            let log = recorder(Consumer::builder("log").lane("main"), "log", &seen);
            server(pace, store.clone(), vec![log])
        })
        .collect();
    let (timing, delay) = soon(pace);
    for n in 0..20u64 {
        let session = servers[(n % 3) as usize].session(&format!("s-{}", n % 4)).unwrap_or_else(|e| panic!("{e}"));
        session.schedule(&format!("t-{n}"), timing.clone(), vec![tick(n)]).await.unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(tasks(&store).await.len(), 20);
    tokio::time::sleep(delay).await;
    eventually_async_tasks_empty(&store).await;
    eventually("the log consumer ran every delivered event", || snapshot(&seen).len() == 20).await;
    let mut delivered = Vec::new();
    for n in 0..4 {
        let session = servers[0].session(&format!("s-{n}")).unwrap_or_else(|e| panic!("{e}"));
        delivered.extend(all_events(&session).await.into_iter().map(|e| e.payload["n"].as_u64().unwrap_or(99)));
    }
    delivered.sort_unstable();
    assert_eq!(delivered, (0..20).collect::<Vec<_>>(), "each task's event once");
}

/// A process claims a head and dies (its run never returns, its leases
/// lapse). Another server of the contract, whose rescuer is an hour away,
/// retries the head when the dead process's watchdog falls due: the drain
/// task its claim armed at the lease's expiry plus grace.
pub async fn watchdog_retries_work_of_a_dead_process(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let scheduler: Arc<dyn Scheduler> = Arc::new(StoreScheduler::new(store.clone()));
    let started = Arc::new(AtomicU32::new(0));
    let hangs = hanging("worker", started.clone());
    let no_rescue =
        |b: ServerBuilder| b.timings(DrainTimings { rescue_every: Duration::from_secs(3_600), ..pace.timings() });
    let dying = server_with(pace, store.clone(), vec![hangs], |b| no_rescue(b).scheduler(scheduler.clone()));
    let session = dying.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("the dying process's run started", || started.load(Ordering::SeqCst) == 1).await;
    let armed = eventually_tasks(&store, |t| t.iter().any(|t| t.work == TaskWork::Drain)).await;
    let watchdog = armed.iter().find(|t| t.work == TaskWork::Drain).cloned().unwrap_or_else(|| panic!("{armed:?}"));
    assert_eq!(watchdog.due_at % 1_000, 0, "slotted to the second");
    dying.shutdown();
    drop(dying);

    let seen = seen();
    let survivor = server_with(
        pace,
        store.clone(),
        vec![recorder(Consumer::builder("worker").types(["tick"]), "worker", &seen)],
        no_rescue,
    );
    // The survivor's rescuer looked once, at its start, while the lease was live: only the watchdog is left.
    eventually("the survivor ran the dead process's head", || snapshot(&seen) == [("worker".to_owned(), 1)]).await;
    eventually_async_tasks_empty(&store).await;
    drop(survivor);
}

/// The store's tasks once `done` holds of them (arms are spawned off their callers' paths).
pub(crate) async fn eventually_tasks(
    store: &Arc<dyn a2_store::Store>,
    done: impl Fn(&[ScheduledTask]) -> bool,
) -> Vec<ScheduledTask> {
    for _ in 0..2_000 {
        let now = tasks(store).await;
        if done(&now) {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("tasks never became what was waited for: {:?}", tasks(store).await);
}
