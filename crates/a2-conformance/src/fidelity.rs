//! Store-level scenarios for what crashes, restarts and concurrency must not
//! break: a log consumer never runs a type it does not take, and work a dead
//! process left behind can be found without a new append.

use a2_store::*;

use crate::store::complete_ok;
use crate::support::*;
use crate::StoreFactory;

fn types_of(claimed: &Claimed) -> Vec<(u64, String)> {
    claimed.heads.iter().map(|h| (h.head.index, h.event.event_type.clone())).collect()
}

/// The interleavings that once handed an `audit` event to a consumer that
/// takes only `work`: its run appends an untaken event inline, completes onto
/// it while other holders claim, is taken over after a lapse, and a deploy
/// narrows its types while an attempt on an event it no longer takes is held.
pub async fn log_consumer_never_runs_an_untaken_type(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let ordered = StoreConsumer::log("ordered", "main").with_types(&["work"]).backfilling();
    let consumers = [ordered.clone()];
    append(&*store, "s", vec![event("w1", "work"), event("w2", "work")], &consumers).await;

    // A holds index 1; its run appends an audit event inline (index 3).
    let a = claim(&*store, "s", "A", &consumers).await;
    assert_eq!(types_of(&a), vec![(1, "work".to_owned())]);
    let mut inline = event("audit-of-1", "audit");
    inline.cause =
        Some(Cause { consumer: "ordered".into(), lane: Some("main".into()), index: 1, attempt: 1, batch_size: None });
    assert_eq!(append(&*store, "s", vec![inline], &consumers).await, 3);
    let b = claim(&*store, "s", "B", &consumers).await;
    assert!(b.heads.is_empty() && b.busy_until.is_some(), "A's live lease keeps B out: {b:?}");
    complete_ok(&*store, "s", &a.heads[0], &consumers).await;

    // B takes index 2, lapses; C takes it over; B's late completion changes nothing.
    let b = claim(&*store, "s", "B", &consumers).await;
    assert_eq!(types_of(&b), vec![(2, "work".to_owned())]);
    clock.advance(TTL + 1);
    append(&*store, "s", vec![event("w4", "work")], &consumers).await;
    let c = claim(&*store, "s", "C", &consumers).await;
    assert_eq!(c.heads.iter().map(|h| (h.head.index, h.attempt)).collect::<Vec<_>>(), vec![(2, 2)]);
    let late = HeadComplete {
        session: key("s"),
        head: b.heads[0].head.clone(),
        attempt: b.heads[0].attempt,
        events: Vec::new(),
        consumers: consumers.to_vec(),
        holder: None,
        lease_next: false,
    };
    assert_eq!(store.head_complete(late).await.expect("late complete"), CompleteOutcome::Superseded);
    // C settles through the batched path: the cursor lands on the untaken audit event (3).
    let held = vec![HeldHead { head: c.heads[0].head.clone(), attempt: c.heads[0].attempt }];
    let settled = store.head_complete_many(HeadCompleteMany { session: key("s"), heads: held }).await.expect("settle");
    assert_eq!(settled.len(), 1);
    let d = claim(&*store, "s", "D", &consumers).await;
    assert_eq!(types_of(&d), vec![(4, "work".to_owned())], "the audit event at 3 is skipped, never run");

    // A deploy once took audits too: E (old code) holds the audit event at 5 and dies.
    let wide = StoreConsumer::log("ordered", "main").with_types(&["work", "audit"]).backfilling();
    complete_ok(&*store, "s", &d.heads[0], &consumers).await;
    append(&*store, "s", vec![event("a5", "audit"), event("w6", "work")], &consumers).await;
    let e = claim(&*store, "s", "E", std::slice::from_ref(&wide)).await;
    assert_eq!(types_of(&e), vec![(5, "audit".to_owned())]);
    clock.advance(TTL + 1);
    // F runs the new code: the lapsed attempt on an audit event is dropped, not taken over.
    let f = claim(&*store, "s", "F", &consumers).await;
    assert_eq!(types_of(&f), vec![(6, "work".to_owned())], "F must skip the held-then-lapsed audit event");
    assert_eq!(f.heads[0].attempt, 1, "the dropped attempt on 5 is not charged to 6");
    assert!(f.exhausted.is_empty());
    complete_ok(&*store, "s", &f.heads[0], &consumers).await;
    let woken = store.cursor_wake(CursorWake { session: key("s"), consumer: ordered }).await.expect("wake");
    assert_eq!((woken.next, woken.status.failure_count), (None, 0), "caught up, with no failure charged: {woken:?}");
}

/// A head that threw, then lapsed on its retry: the takeover counts the
/// lapse but keeps the error the consumer threw.
pub async fn lapse_keeps_last_error(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [StoreConsumer::targeted("par")];
    append(&*store, "s", vec![targeted("a", "tick", &[("par", None)])], &consumers).await;
    let first = claim(&*store, "s", "h1", &consumers).await;
    let head = first.heads[0].head.clone();
    store.head_fail(fail_params("s", &head, first.heads[0].attempt)).await.expect("fail");
    clock.advance(BACKOFF.max_ms);
    let second = claim(&*store, "s", "h2", &consumers).await;
    assert_eq!(second.heads[0].attempt, 2);
    clock.advance(TTL + 1);
    let third = claim(&*store, "s", "h3", &consumers).await;
    assert_eq!((third.heads[0].attempt, third.heads[0].failure_count), (3, 2), "the lapse was counted");
    let heads = store.head_list(&key("s")).await.expect("heads");
    assert_eq!(
        heads[0].status.last_error.as_deref(),
        Some("boom at attempt 1"),
        "the thrown error is kept: {heads:#?}"
    );
}

/// A head whose every failure was a lapse is dead-lettered on takeover with
/// no `last_error`: nothing threw, and none is invented.
pub async fn lapse_only_failures_leave_last_error_null(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [StoreConsumer::targeted("par")];
    append(&*store, "s", vec![targeted("a", "tick", &[("par", None)])], &consumers).await;
    for holder in 0..10 {
        let claimed = claim(&*store, "s", &format!("h{holder}"), &consumers).await;
        assert_eq!(claimed.heads.len(), 1, "lapse {holder} leaves the head to claim: {claimed:?}");
        clock.advance(TTL + 1);
    }
    let last = claim(&*store, "s", "h10", &consumers).await;
    assert!(last.heads.is_empty() && last.exhausted.len() == 1, "the tenth lapse dead-letters it: {last:?}");
    let letters = store.dead_letter_list(DeadLetterList { limit: 10, ..DeadLetterList::default() }).await;
    let letters = letters.expect("dead letters");
    assert_eq!(letters.len(), 1);
    assert_eq!((letters[0].failure_count, letters[0].last_error.as_deref()), (10, None), "{letters:#?}");
}

/// Walk every session of the contract with `session_list_runnable`, `limit` at a time.
async fn runnable(store: &dyn Store, consumers: &[&str], limit: u32) -> Vec<String> {
    let mut found = Vec::new();
    let mut after = None;
    loop {
        let params = SessionsRunnable {
            contract: CONTRACT.into(),
            consumers: consumers.iter().map(|c| (*c).to_owned()).collect(),
            after,
            limit,
        };
        let page = store.session_list_runnable(params).await.expect("runnable sessions");
        found.extend(page.session_ids);
        match page.scanned_through {
            Some(through) => after = Some(through),
            None => return found,
        }
    }
}

/// The rescuer's walk finds exactly the sessions with work no live claim
/// holds: a cursor behind the head, a pending per-event head, a lapsed
/// lease, a due retry; not a caught-up cursor, a live lease, a retry still
/// waiting, a dead head, or a lane head behind a dead one.
pub async fn session_list_runnable_finds_work_no_live_claim_holds(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let cursor = [log("cursor")];
    let par = [StoreConsumer::targeted("par")];
    let laned = [StoreConsumer::targeted("laned")];
    // First, since failing ten times takes ten backoffs of time.
    append(&*store, "dead", vec![targeted("d1", "tick", &[("laned", Some("x"))])], &laned).await;
    append(&*store, "dead", vec![targeted("d2", "tick", &[("laned", Some("x"))])], &laned).await;
    crate::store::fail_until_dead(&*store, &clock, "dead", &laned, "laned").await;
    append(&*store, "behind", vec![event("b1", "tick")], &cursor).await;
    append(&*store, "caught-up", vec![event("c1", "tick")], &cursor).await;
    let caught = claim(&*store, "caught-up", "h", &cursor).await;
    crate::store::complete_ok(&*store, "caught-up", &caught.heads[0], &cursor).await;
    append(&*store, "pending", vec![targeted("p1", "tick", &[("par", None)])], &par).await;
    append(&*store, "leased", vec![targeted("l1", "tick", &[("par", None)])], &par).await;
    claim(&*store, "leased", "h", &par).await;
    append(&*store, "waiting", vec![targeted("w1", "tick", &[("par", None)])], &par).await;
    let waiting = claim(&*store, "waiting", "h", &par).await;
    store.head_fail(fail_params("waiting", &waiting.heads[0].head, 1)).await.expect("fail");
    append(&*store, "other", vec![targeted("o1", "tick", &[("someone-else", None)])], &[]).await;
    let consumers = ["cursor", "par", "laned"];
    for limit in [1, 2, 500] {
        assert_eq!(runnable(&*store, &consumers, limit).await, vec!["behind", "pending"], "pages of {limit}");
    }
    clock.advance(TTL + 1);
    let later = runnable(&*store, &consumers, 3).await;
    assert_eq!(later, vec!["behind", "leased", "pending", "waiting"], "the lease lapsed and the retry fell due");
    assert_eq!(store.session_bounds(&key("dead")).await.expect("bounds"), SessionBounds { head: 2, clear_index: 0 });
    assert_eq!(store.session_bounds(&key("nowhere")).await.expect("bounds"), SessionBounds::default());
}
