//! The scheduler's tasks at the store seam: kept once per id, claimed only
//! when due and by one holder at a time, settled only by their holder,
//! listed by due time, cancelled or made due now with an audit entry.

use a2_store::*;

use crate::support::*;
use crate::StoreFactory;

fn append_task(id: &str, session: &str, due_at: Millis) -> TaskSchedule {
    TaskSchedule {
        session: key(session),
        id: id.into(),
        name: "remind".into(),
        due_at,
        work: TaskWork::Append {
            events: vec![ScheduledEvent {
                id: format!("{id}-e0"),
                event_type: "a".into(),
                payload: serde_json::json!({ "n": 1 }),
            }],
        },
        trigger: Some(TaskTrigger { event_id: "t1".into(), index: 1, consumer: Some("c".into()) }),
    }
}

fn claim_params(holder: &str) -> TaskClaim {
    TaskClaim { contract: CONTRACT.into(), holder: holder.into(), ttl_ms: TTL, limit: 10, only: None }
}

/// A task is kept once per id, with what it was given; a claim takes it
/// only when due, leases it to one holder until the lease lapses, and a
/// delivery settles it only while its holder holds it.
pub async fn scheduled_tasks_are_kept_once_and_claimed_when_due(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let now = clock.now_ms();
    assert!(store.task_schedule(append_task("t-a", "s", now + 100_000)).await.expect("schedule"));
    let mut again = append_task("t-a", "s", now + 1);
    again.name = "other".into();
    assert!(!store.task_schedule(again).await.expect("schedule again"), "an id already kept is one task");
    assert!(store.task_schedule(append_task("t-b", "s2", now + 2_000)).await.expect("schedule"));
    let bad = TaskSchedule { session: SessionKey::from_stored("no-separator"), ..append_task("t-c", "s", now) };
    assert!(store.task_schedule(bad).await.is_err(), "a task needs a valid session key");

    let listed = store.task_list(TaskList { limit: 10, ..TaskList::default() }).await.expect("list");
    assert_eq!(listed.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["t-b", "t-a"], "by due time");
    let a = &listed[1];
    assert_eq!(
        (a.name.as_str(), a.due_at, a.session_id.as_str(), a.contract.as_str()),
        ("remind", now + 100_000, "s", CONTRACT)
    );
    assert_eq!(a.work, append_task("t-a", "s", 0).work, "the events round-trip whole");
    assert_eq!(a.trigger, append_task("t-a", "s", 0).trigger);
    assert_eq!((a.attempts, a.created_at, a.lease_holder.as_deref()), (0, now, None));
    let one_session = TaskList { session: Some(key("s2")), limit: 10, ..TaskList::default() };
    assert_eq!(store.task_list(one_session).await.expect("list").len(), 1);
    let after = TaskList { after: Some((now + 2_000, "t-b".into())), limit: 10, ..TaskList::default() };
    assert_eq!(store.task_list(after).await.expect("list")[0].id, "t-a", "keyset pages");
    let elsewhere = TaskList { contract: Some("other".into()), limit: 10, ..TaskList::default() };
    assert!(store.task_list(elsewhere).await.expect("list").is_empty());

    assert!(store.task_claim(claim_params("p1")).await.expect("claim").is_empty(), "nothing is due yet");
    clock.advance(2_000);
    let claimed = store.task_claim(claim_params("p1")).await.expect("claim");
    assert_eq!(claimed.iter().map(|t| (t.id.as_str(), t.attempts)).collect::<Vec<_>>(), [("t-b", 1)]);
    assert_eq!(claimed[0].lease_holder.as_deref(), Some("p1"));
    assert!(store.task_claim(claim_params("p2")).await.expect("claim").is_empty(), "a live lease holds it");
    let other_contract = TaskClaim { contract: "other".into(), ..claim_params("p2") };
    assert!(store.task_claim(other_contract).await.expect("claim").is_empty());

    clock.advance(TTL);
    let taken_over = store.task_claim(claim_params("p2")).await.expect("claim");
    assert_eq!(taken_over.iter().map(|t| (t.id.as_str(), t.attempts)).collect::<Vec<_>>(), [("t-b", 2)]);
    let delivered =
        |holder: &str| TaskFinish { id: "t-b".into(), holder: holder.into(), outcome: TaskOutcome::Delivered };
    assert!(!store.task_finish(delivered("p1")).await.expect("finish"), "a lapsed holder settles nothing");
    assert!(store.task_finish(delivered("p2")).await.expect("finish"));
    assert!(!store.task_finish(delivered("p2")).await.expect("finish"), "delivered once");
    let left = store.task_list(TaskList { limit: 10, ..TaskList::default() }).await.expect("list");
    assert_eq!(left.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["t-a"]);
}

/// A failed delivery is put back with its error and due again later; an
/// operator can make a task due now or cancel it, each audited.
pub async fn failed_delivery_is_retried_and_operators_can_hasten_or_cancel(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let now = clock.now_ms();
    store.task_schedule(append_task("t-a", "s", now)).await.expect("schedule");
    store.task_schedule(append_task("t-b", "s", now + 60_000)).await.expect("schedule");
    let only_b = TaskClaim { only: Some("t-b".into()), ..claim_params("p1") };
    assert!(store.task_claim(only_b).await.expect("claim").is_empty(), "only t-b, which is not due");
    let only_a = TaskClaim { only: Some("t-a".into()), ..claim_params("p1") };
    let claimed = store.task_claim(only_a).await.expect("claim");
    assert_eq!(claimed.len(), 1);
    let failed = TaskOutcome::Failed { error: "store unavailable".into(), retry_at: now + 1_000 };
    assert!(store
        .task_finish(TaskFinish { id: "t-a".into(), holder: "p1".into(), outcome: failed })
        .await
        .expect("finish"));
    let listed = store.task_list(TaskList { limit: 10, ..TaskList::default() }).await.expect("list");
    let a = &listed[0];
    assert_eq!(
        (a.id.as_str(), a.due_at, a.last_error.as_deref(), a.lease_holder.as_deref()),
        ("t-a", now + 1_000, Some("store unavailable"), None)
    );
    assert!(store.task_claim(claim_params("p1")).await.expect("claim").is_empty(), "not before its retry");
    clock.advance(1_000);
    assert_eq!(store.task_claim(claim_params("p1")).await.expect("claim")[0].attempts, 2);

    let change = |id: &str, action: &str| TaskChange { id: id.into(), audit: Some(audit_entry(action, 1)) };
    let hastened = store.task_hasten(change("t-b", "timer.deliver")).await.expect("hasten").expect("a task");
    assert_eq!(hastened.due_at, clock.now_ms());
    assert!(store.task_hasten(change("t-none", "timer.deliver")).await.expect("hasten").is_none());
    // Being delivered: hastening keeps the delivery's lease, and it cannot be cancelled half delivered.
    let held = TaskClaim { only: Some("t-b".into()), ..claim_params("p3") };
    assert_eq!(store.task_claim(held).await.expect("claim").len(), 1);
    let again = store.task_hasten(TaskChange { id: "t-b".into(), audit: None }).await.expect("hasten").expect("a task");
    assert_eq!(again.lease_holder.as_deref(), Some("p3"), "a live delivery keeps its lease");
    assert!(store.task_claim(claim_params("p4")).await.expect("claim").iter().all(|t| t.id != "t-b"), "not taken over");
    assert!(store.task_cancel(TaskChange { id: "t-b".into(), audit: None }).await.expect("cancel").is_none());
    let release = TaskOutcome::Failed { error: "stopped".into(), retry_at: clock.now_ms() + 60_000 };
    assert!(store
        .task_finish(TaskFinish { id: "t-b".into(), holder: "p3".into(), outcome: release })
        .await
        .expect("finish"));
    let cancelled = store.task_cancel(change("t-b", "timer.cancel")).await.expect("cancel").expect("a task");
    assert_eq!(cancelled.id, "t-b");
    assert!(store.task_cancel(change("t-b", "timer.cancel")).await.expect("cancel").is_none(), "cancelled once");
    let audit = store.audit_list(AuditList { before: None, limit: 10, action: None }).await.expect("audit");
    let actions: Vec<_> = audit.iter().map(|r| (r.entry.action.as_str(), r.entry.outcome.clone())).collect();
    assert_eq!(
        actions,
        [
            ("timer.cancel", serde_json::json!({ "cancelled": true })),
            ("timer.deliver", serde_json::json!({ "due_now": true }))
        ],
        "one entry for each change that found its task, none for the misses"
    );
}

/// A scheduled clear is settled in the clear's own transaction: its holder
/// clears and deletes the task at once; a holder whose lease was taken over
/// clears nothing (a second clear would wipe what was appended since).
pub async fn a_scheduled_clear_is_settled_in_its_own_transaction(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    append_n(&*store, "s", 2, &[]).await;
    let task =
        TaskSchedule { work: TaskWork::Clear { if_last_index: None }, ..append_task("t-clear", "s", clock.now_ms()) };
    store.task_schedule(task).await.expect("schedule");
    assert_eq!(store.task_claim(claim_params("p1")).await.expect("claim").len(), 1);
    clock.advance(TTL);
    assert_eq!(store.task_claim(claim_params("p2")).await.expect("claim").len(), 1, "p1's lease lapsed: p2 has it");
    let clear = |holder: &str| SessionClear {
        session: key("s"),
        if_last_index: None,
        audit: None,
        settles: Some(TaskHeld { id: "t-clear".into(), holder: holder.into() }),
    };
    let stale = store.session_clear(clear("p1")).await.expect("clear");
    assert_eq!(stale, Cleared { cleared: false, index: 2 }, "the stale holder clears nothing");
    assert_eq!(store.session_bounds(&key("s")).await.expect("bounds").clear_index, 0);
    assert_eq!(
        store.task_list(TaskList { limit: 10, ..TaskList::default() }).await.expect("list").len(),
        1,
        "the task is kept"
    );
    let done = store.session_clear(clear("p2")).await.expect("clear");
    assert_eq!(done, Cleared { cleared: true, index: 2 });
    assert!(
        store.task_list(TaskList { limit: 10, ..TaskList::default() }).await.expect("list").is_empty(),
        "settled with the clear"
    );
    append(&*store, "s", vec![event("s-late", "tick")], &[]).await;
    let again = store.session_clear(clear("p2")).await.expect("clear");
    assert_eq!(again, Cleared { cleared: false, index: 3 }, "delivered again, it clears nothing that came after");
}
