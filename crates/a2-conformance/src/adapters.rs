//! A scheduler of the app's own (the seeds' custom adapter: a cloud task
//! queue, a cron service) on a real server: it keeps the tasks it is given
//! and hands them back through the server's delivery calls, which take the
//! ordinary append, clear and drain paths; `append_dispatch` arms it instead
//! of draining; any error it throws while arming is `SCHEDULER_SEND_FAILED`.

use std::sync::{Arc, Mutex};

use a2_engine::*;
use a2_store::{TaskSchedule, TaskWork};

use crate::engine::{all_events, eventually, open, recorder, seen, server_with, snapshot, tick, Pace};
use crate::scheduling::tasks;
use crate::StoreFactory;

/// A delay long enough that nothing in a scenario reaches it.
const LATER: &str = "1h";

/// The in-test adapter: tasks kept in memory by id (scheduling an id again
/// replaces it, as a queue keyed by task id does), delivered when told.
#[derive(Debug, Default)]
pub struct HeldScheduler {
    tasks: Mutex<Vec<TaskSchedule>>,
    /// While set, `schedule` throws this (an error of the adapter's own).
    refusal: Mutex<Option<String>>,
}

impl HeldScheduler {
    /// Every task it holds now, in the order first given.
    pub fn held(&self) -> Vec<TaskSchedule> {
        self.tasks.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// The tasks it holds of one kind (`append`, `clear`, `drain`).
    pub fn held_of(&self, kind: &str) -> Vec<TaskSchedule> {
        self.held().into_iter().filter(|t| t.work.kind() == kind).collect()
    }

    pub fn refuse(&self, reason: Option<&str>) {
        if let Ok(mut refusal) = self.refusal.lock() {
            *refusal = reason.map(str::to_owned);
        }
    }

    /// Deliver every held task to `server` through its delivery calls, as an
    /// adapter does when its queue fires; each delivered task is let go.
    pub async fn deliver_all(&self, server: &Server) -> Result<usize, A2Error> {
        let due = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        for task in &due {
            match task.work {
                TaskWork::Append { .. } => server.deliver_scheduled_append(task).await?,
                TaskWork::Clear { .. } => {
                    server.deliver_scheduled_clear(task).await?;
                }
                TaskWork::Drain => {
                    server.deliver_scheduled_drain(task).await?;
                }
            }
        }
        Ok(due.len())
    }
}

impl Scheduler for HeldScheduler {
    fn schedule(&self, task: TaskSchedule) -> SchedulerFuture<'_> {
        Box::pin(async move {
            if let Some(reason) = self.refusal.lock().ok().and_then(|r| r.clone()) {
                return Err(A2Error::InvalidArgument { message: reason });
            }
            // Kept as a queue keeps it: serialized, and read back when it fires.
            let kept = serde_json::to_string(&task).map_err(|e| A2Error::InvalidArgument { message: e.to_string() })?;
            let task: TaskSchedule =
                serde_json::from_str(&kept).map_err(|e| A2Error::InvalidArgument { message: e.to_string() })?;
            let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
            match tasks.iter_mut().find(|t| t.id == task.id) {
                Some(kept) => *kept = task,
                None => tasks.push(task),
            }
            Ok(())
        })
    }
}

/// `session.schedule` on a server with an adapter of its own: the task goes
/// to the adapter, not the store; delivered through the server, its events go
/// through the append path (the log consumer runs them), marked with the
/// task and appended once however often it is delivered; a clear task clears
/// through its guard; a task given to the wrong call is refused.
pub async fn custom_scheduler_task_is_delivered_through_the_append_path(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let held = Arc::new(HeldScheduler::default());
    let seen = seen();
    let log = recorder(Consumer::builder("log").lane("main").backfill(), "log", &seen);
    let adapter: Arc<dyn Scheduler> = held.clone();
    let server = server_with(pace, store.clone(), vec![log], |b| b.scheduler(adapter));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    let id =
        session.schedule("ping", Timing::delay(LATER), vec![tick(1), tick(2)]).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(tasks(&store).await.len(), 0, "the adapter holds the task, not the store");
    let appends = held.held_of("append");
    assert_eq!(appends.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), [id.as_str()]);
    assert!(all_events(&session).await.is_empty(), "nothing is appended before the adapter delivers");

    // The queue fires twice (adapters deliver at least once): one append.
    server.deliver_scheduled_append(&appends[0]).await.unwrap_or_else(|e| panic!("{e}"));
    server.deliver_scheduled_append(&appends[0]).await.unwrap_or_else(|e| panic!("{e}"));
    let events = all_events(&session).await;
    assert_eq!(
        events.iter().map(|e| e.id.clone()).collect::<Vec<_>>(),
        [ids::scheduled_event_id(&id, 0), ids::scheduled_event_id(&id, 1)],
        "each event once, with the ids derived from the task"
    );
    let marks: Vec<_> =
        events.iter().map(|e| e.scheduled_by.as_ref().map(|b| (b.task.clone(), b.name.clone()))).collect();
    assert_eq!(marks, [Some((id.clone(), "ping".to_owned())), Some((id.clone(), "ping".to_owned()))]);
    eventually("the log consumer ran the delivered events", || snapshot(&seen).len() == 2).await;

    let clear = session.schedule_clear("end", Timing::delay(LATER), Some(2)).await.unwrap_or_else(|e| panic!("{e}"));
    let clears = held.held_of("clear");
    assert_eq!(clears.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), [clear.as_str()]);
    let wrong = server.deliver_scheduled_append(&clears[0]).await.err().map(|e| e.code());
    assert_eq!(wrong, Some("INVALID_ARGUMENT"), "a clear task is not an append");
    let cleared = server.deliver_scheduled_clear(&clears[0]).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(cleared.cleared, "cleared through its guard");
    // A second delivery changes nothing: the session is already clear through its guard.
    server.deliver_scheduled_clear(&clears[0]).await.unwrap_or_else(|e| panic!("{e}"));
    let bounds = store.session_bounds(&a2_store::session_key("shop", "s")).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((bounds.head, bounds.clear_index), (2, 2));
    assert_eq!(tasks(&store).await.len(), 0, "nothing went to the store's scheduler");
}

/// The seeds refuse a task of another contract at delivery: a task another
/// contract's server scheduled (with the same adapter, as one queue serves
/// many) is refused by this contract's server, whatever its kind, naming
/// both contracts, and nothing is written to either session.
pub async fn scheduled_task_for_another_contract_is_refused(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let held = Arc::new(HeldScheduler::default());
    let adapter: Arc<dyn Scheduler> = held.clone();
    let shop = server_with(pace, store.clone(), Vec::new(), |b| b.scheduler(adapter.clone()));
    let other = Contract::new("ledger")
        .and_then(|c| c.event_with("tick", |_| Ok(())))
        .unwrap_or_else(|e| panic!("contract: {e}"));
    let ledger = Server::builder(other, store.clone())
        .timings(pace.timings())
        .scheduler(adapter)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let theirs = ledger.session("s").unwrap_or_else(|e| panic!("{e}"));
    theirs.schedule("ping", Timing::delay(LATER), vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    theirs.schedule_clear("end", Timing::delay(LATER), None).await.unwrap_or_else(|e| panic!("{e}"));
    let (append, clear) = (held.held_of("append"), held.held_of("clear"));
    assert_eq!((append.len(), clear.len()), (1, 1));
    let refused = shop.deliver_scheduled_append(&append[0]).await.err();
    assert_eq!(refused.as_ref().map(A2Error::code), Some("INVALID_ARGUMENT"));
    let message = refused.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("'ledger'") && message.contains("'shop'"), "names both contracts: {message}");
    assert_eq!(shop.deliver_scheduled_clear(&clear[0]).await.err().map(|e| e.code()), Some("INVALID_ARGUMENT"));
    let mut drain = clear[0].clone();
    drain.work = TaskWork::Drain;
    assert_eq!(shop.deliver_scheduled_drain(&drain).await.err().map(|e| e.code()), Some("INVALID_ARGUMENT"));
    for contract in ["shop", "ledger"] {
        let bounds =
            store.session_bounds(&a2_store::session_key(contract, "s")).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((bounds.head, bounds.clear_index), (0, 0), "nothing written to {contract}'s session");
    }
    // Its own server takes it.
    ledger.deliver_scheduled_append(&append[0]).await.unwrap_or_else(|e| panic!("{e}"));
    let bounds = store.session_bounds(&a2_store::session_key("ledger", "s")).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(bounds.head, 1);
}

/// Whatever an adapter throws while arming (here its own refusal, not a
/// store's error) reaches the caller of `session.schedule` as
/// `SCHEDULER_SEND_FAILED`, naming the task and the adapter's reason.
pub async fn schedule_marks_any_scheduler_error_as_scheduler_send_failed(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let held = Arc::new(HeldScheduler::default());
    let adapter: Arc<dyn Scheduler> = held.clone();
    let server = server_with(pace, store.clone(), Vec::new(), |b| b.scheduler(adapter));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    held.refuse(Some("the queue is over quota"));
    let failed = session.schedule("ping", Timing::delay(LATER), vec![tick(1)]).await.err();
    assert_eq!(failed.as_ref().map(A2Error::code), Some("SCHEDULER_SEND_FAILED"));
    assert!(failed.as_ref().is_some_and(A2Error::is_retryable), "a send failure may succeed later");
    let message = failed.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("over quota"), "the adapter's reason is kept: {message}");
    let cleared = session.schedule_clear("end", Timing::delay(LATER), None).await.err().map(|e| e.code());
    assert_eq!(cleared, Some("SCHEDULER_SEND_FAILED"));
    assert!(held.held().is_empty());
    held.refuse(None);
    session.schedule("ping", Timing::delay(LATER), vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(held.held_of("append").len(), 1, "taken once the adapter takes tasks again");
}

/// `append_dispatch` writes the events and arms a drain task due now on the
/// adapter instead of draining here: the consumer does not run until the
/// adapter delivers that task, and then runs each event once.
pub async fn append_dispatch_arms_the_scheduler_instead_of_draining(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let held = Arc::new(HeldScheduler::default());
    let seen = seen();
    let worker = recorder(Consumer::builder("worker").types(["tick"]), "worker", &seen);
    let adapter: Arc<dyn Scheduler> = held.clone();
    // Nothing in the background (no rescuer's first look): only the delivery may drain.
    let server = server_with(pace, store.clone(), vec![worker], |b| b.scheduler(adapter).run_in_background(false));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    let before = store.clock().now_ms();
    let appended = session.append_dispatch(vec![tick(1), tick(2)]).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(appended.iter().map(|e| e.index).collect::<Vec<_>>(), [1, 2], "the events are written");
    let drains = held.held_of("drain");
    assert_eq!(drains.len(), 1, "one drain task armed: {drains:?}");
    assert_eq!(drains[0].session, a2_store::session_key("shop", "s"));
    assert!(drains[0].due_at <= store.clock().now_ms() && drains[0].due_at > before - 1_000, "due now");
    tokio::time::sleep(pace.settle()).await;
    assert!(snapshot(&seen).is_empty(), "nothing drained here: {:?}", snapshot(&seen));
    assert!(held.deliver_all(&server).await.unwrap_or_else(|e| panic!("{e}")) >= 1);
    eventually("the delivered drain ran both events", || snapshot(&seen).len() == 2).await;
    let mut ran = snapshot(&seen);
    ran.sort();
    assert_eq!(ran, [("worker".to_owned(), 1), ("worker".to_owned(), 2)]);
}

/// Without a scheduler of its own a server refuses `append_dispatch` with
/// the seeds' words, before anything is written.
pub async fn append_dispatch_without_a_scheduler_is_refused(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let server = server_with(pace, store.clone(), Vec::new(), |b| b);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    let refused = session.append_dispatch(vec![tick(1)]).await.err();
    assert_eq!(refused.as_ref().map(A2Error::code), Some("INVALID_ARGUMENT"));
    let message = refused.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("append.dispatch requires a configured scheduler adapter"), "{message}");
    assert!(all_events(&session).await.is_empty(), "nothing was written");
    assert_eq!(tasks(&store).await.len(), 0);
}
