//! Completions: fenced by the attempt, appending atomically what a run returned, settled in batches.

use a2_store::*;

use crate::store::*;
use crate::support::*;
use crate::StoreFactory;

pub async fn complete_appends_returned_events_atomically(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = [log("c"), StoreConsumer::targeted("par")];
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("c") }).await.expect("wake");
    append(&*store, "s", vec![event("a", "tick"), event("b", "tick")], &consumers).await;
    let held = claim(&*store, "s", "h", &consumers).await.heads.remove(0);
    let cause =
        Cause { consumer: "c".into(), lane: Some("main".into()), index: 1, attempt: held.attempt, batch_size: None };
    let mut returned = targeted("r1", "tock", &[("par", None)]);
    returned.cause = Some(cause.clone());
    let duplicate = event("a", "tick");
    let refused = store
        .head_complete(complete("s", &held.head, held.attempt, vec![returned.clone(), duplicate], &consumers))
        .await;
    assert_eq!(refused.expect_err("a partial duplicate").code(), "PARTIAL_DUPLICATE_BATCH");
    let heads = store.head_list(&key("s")).await.expect("heads");
    assert_eq!(
        heads.iter().find(|h| h.consumer == "c").map(|h| h.next_index),
        Some(1),
        "the refused completion left the head"
    );
    let done = store
        .head_complete(complete("s", &held.head, held.attempt, vec![returned], &consumers))
        .await
        .expect("complete");
    let CompleteOutcome::Completed { session_head, appended, .. } = done else { panic!("completed") };
    assert_eq!(session_head, 3);
    assert_eq!(appended.len(), 1);
    assert_eq!(appended[0].cause.as_ref(), Some(&cause));
    let next = claim(&*store, "s", "h", &consumers).await;
    let mut got: Vec<(String, u64)> = next.heads.iter().map(|h| (h.head.consumer.clone(), h.head.index)).collect();
    got.sort();
    assert_eq!(got, vec![("c".into(), 2), ("par".into(), 3)]);
}

/// A completion that appends, on a per-event head and on a cursor: its
/// attempt is recorded completed with the ids it appended; the same attempt
/// completing again (its head already settled) appends nothing and is
/// recorded superseded; a re-run that returns the same ids after a takeover
/// is an idempotent re-append, not a second copy.
pub async fn a_completion_that_appends_records_what_it_appended(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [log("c"), StoreConsumer::targeted("par")];
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("c") }).await.expect("wake");
    append(&*store, "s", vec![targeted("a", "tick", &[("par", None)])], &consumers).await;
    let held = claim(&*store, "s", "h", &consumers).await.heads;
    assert_eq!(held.len(), 2, "the cursor and the per-event head");
    clock.advance(7);
    let mut head = 1;
    for (n, claimed) in held.iter().enumerate() {
        let returned = vec![event(&format!("r{n}"), "tock")];
        let done = store.head_complete(complete("s", &claimed.head, claimed.attempt, returned, &consumers)).await;
        head += 1;
        assert!(matches!(done, Ok(CompleteOutcome::Completed { session_head, .. }) if session_head == head));
        let late = vec![event(&format!("late{n}"), "tock")];
        let again = store.head_complete(complete("s", &claimed.head, claimed.attempt, late, &consumers)).await;
        assert_eq!(again.expect("a late completion"), CompleteOutcome::Superseded, "{}", claimed.head.consumer);
        let list = AttemptList {
            session: key("s"),
            consumer: Some(claimed.head.consumer.clone()),
            index: Some(1),
            after: None,
            oldest_first: true,
            limit: 10,
        };
        let history = store.attempt_list(list).await.expect("attempts");
        let got: Vec<_> = history.iter().map(|a| (a.outcome, a.holder.clone(), a.appended.clone())).collect();
        assert_eq!(
            got,
            vec![(AttemptOutcome::Completed, Some("h".to_owned()), vec![format!("r{n}")])],
            "{}: completed with what it appended; the late outcome of the same attempt keeps it",
            claimed.head.consumer
        );
        assert_eq!(history[0].started_at, Some(claimed.lease_expires_at - TTL));
    }
    let summary = store.session_get(&key("s")).await.expect("get").expect("exists");
    assert_eq!(summary.head, 3, "the late completions appended nothing");
    // A run returning ids already in the session (a re-run's deterministic ids): nothing appended twice.
    let next = claim(&*store, "s", "h", &consumers).await.heads;
    let cursor = next.iter().find(|h| h.head.consumer == "c").expect("the cursor on r0");
    let rerun = vec![event("r0", "tock"), event("r1", "tock")];
    let done = store.head_complete(complete("s", &cursor.head, cursor.attempt, rerun, &consumers)).await;
    assert!(
        matches!(&done, Ok(CompleteOutcome::Completed { session_head: 3, appended, .. }) if appended.is_empty()),
        "an idempotent re-append: {done:?}"
    );
}

pub async fn complete_many_settles_current_attempts_only(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = [log("c"), StoreConsumer::targeted("par")];
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("c") }).await.expect("wake");
    let events = (1..=3).map(|i| targeted(&format!("e{i}"), "tick", &[("par", None)])).collect();
    append(&*store, "s", events, &consumers).await;
    let held = claim(&*store, "s", "a", &consumers).await.heads;
    assert_eq!(held.len(), 4);
    let attempt_of = |consumer: &str, index: u64| {
        held.iter().find(|h| h.head.consumer == consumer && h.head.index == index).map(|h| h.attempt).expect("claimed")
    };
    let many = |heads: Vec<HeldHead>| HeadCompleteMany { session: key("s"), heads };
    let batch = vec![
        HeldHead { head: HeadRef::new("c", Some("main"), 1), attempt: attempt_of("c", 1) },
        HeldHead { head: HeadRef::new("par", None, 1), attempt: attempt_of("par", 1) },
        HeldHead { head: HeadRef::new("par", None, 2), attempt: attempt_of("par", 2) + 7 },
        HeldHead { head: HeadRef::new("par", None, 3), attempt: attempt_of("par", 3) },
        HeldHead { head: HeadRef::new("par", None, 9), attempt: 1 },
    ];
    let mut settled = store.head_complete_many(many(batch.clone())).await.expect("complete many");
    settled.sort();
    let mut want = vec![HeadRef::new("c", Some("main"), 1), HeadRef::new("par", None, 1), HeadRef::new("par", None, 3)];
    want.sort();
    assert_eq!(settled, want, "only current attempts settle");
    assert!(
        store.head_complete_many(many(batch)).await.expect("again").is_empty(),
        "a second settle finds nothing current"
    );
    assert!(store.head_complete_many(many(vec![])).await.expect("empty").is_empty());
    let heads = store.head_list(&key("s")).await.expect("heads");
    let rows: Vec<(String, u64)> = heads.iter().map(|h| (h.consumer.clone(), h.next_index)).collect();
    assert_eq!(rows, vec![("c".into(), 2), ("par".into(), 2)], "the cursor moved on, settled heads are gone");
}
