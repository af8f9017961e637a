//! Claims and leases: who may take a head, when a lease lets another holder in, renewals, and which heads a claim takes.

use std::collections::{BTreeMap, HashSet};

use a2_store::*;

use crate::store::*;
use crate::support::*;
use crate::StoreFactory;

pub async fn claim_is_exclusive_among_four_holders(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = vec![StoreConsumer::targeted("par")];
    let events = (0..40).map(|i| targeted(&format!("e{i}"), "tick", &[("par", None)])).collect();
    append(&*store, "s", events, &consumers).await;
    let mut tasks = Vec::new();
    for holder in 0..4 {
        let store = store.clone();
        let consumers = consumers.clone();
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            for _ in 0..5 {
                let mut params = claim_params("s", &format!("holder-{holder}"), &consumers);
                params.limit = 3;
                let claimed = store.head_claim(params).await.expect("claim");
                mine.extend(claimed.heads.into_iter().map(|h| h.head.index));
            }
            mine
        }));
    }
    let mut seen = HashSet::new();
    let mut total = 0;
    for task in tasks {
        for index in task.await.expect("holder task") {
            assert!(seen.insert(index), "head {index} was claimed by two holders");
            total += 1;
        }
    }
    assert_eq!(total, 40, "all heads were claimed exactly once");
}

pub async fn lease_expiry_lets_another_holder_claim_with_next_attempt(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [log("c")];
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("c") }).await.expect("wake");
    append_n(&*store, "s", 1, &consumers).await;
    let first = claim(&*store, "s", "a", &consumers).await;
    assert_eq!(first.heads.len(), 1);
    assert_eq!(first.heads[0].attempt, 1);
    let busy = claim(&*store, "s", "b", &consumers).await;
    assert!(busy.heads.is_empty());
    assert_eq!(busy.busy_until, Some(first.heads[0].lease_expires_at));
    clock.advance(TTL);
    let second = claim(&*store, "s", "b", &consumers).await;
    assert_eq!(second.heads.len(), 1, "an expired lease can be taken over");
    assert_eq!(second.heads[0].attempt, 2);
    assert_eq!(second.heads[0].head, first.heads[0].head);
}

pub async fn superseded_attempt_changes_nothing(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [log("c")];
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("c") }).await.expect("wake");
    append_n(&*store, "s", 2, &consumers).await;
    let old = claim(&*store, "s", "a", &consumers).await.heads.remove(0);
    clock.advance(TTL);
    let new = claim(&*store, "s", "b", &consumers).await.heads.remove(0);
    assert_eq!(new.attempt, old.attempt + 1);
    let stale_complete = store
        .head_complete(complete("s", &old.head, old.attempt, vec![event("from-zombie", "tick")], &consumers))
        .await
        .expect("complete");
    assert_eq!(stale_complete, CompleteOutcome::Superseded);
    let stale_fail = store.head_fail(fail_params("s", &old.head, old.attempt)).await.expect("fail");
    assert_eq!(stale_fail, FailOutcome::Superseded);
    let heads = store.head_list(&key("s")).await.expect("heads");
    assert_eq!(heads[0].next_index, 1);
    assert_eq!(heads[0].status.attempt_count, 2);
    assert_eq!(heads[0].status.lease_holder.as_deref(), Some("b"));
    assert_eq!(
        store.session_get(&key("s")).await.expect("get").map(|s| s.head),
        Some(2),
        "the zombie appended nothing"
    );
    complete_ok(&*store, "s", &new, &consumers).await;
}

pub async fn renewal_reports_superseded_heads(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [StoreConsumer::targeted("par")];
    append(
        &*store,
        "s",
        vec![targeted("a", "tick", &[("par", None)]), targeted("b", "tick", &[("par", None)])],
        &consumers,
    )
    .await;
    let held = claim(&*store, "s", "a", &consumers).await.heads;
    assert_eq!(held.len(), 2);
    clock.advance(TTL);
    let mut takeover = claim_params("s", "b", &consumers);
    takeover.limit = 1;
    let taken = store.head_claim(takeover).await.expect("claim").heads.remove(0);
    let renewed = store
        .head_renew(HeadRenew {
            session: key("s"),
            holder: "a".into(),
            ttl_ms: TTL,
            heads: held.iter().map(|h| HeldHead { head: h.head.clone(), attempt: h.attempt }).collect(),
        })
        .await
        .expect("renew");
    assert_eq!(renewed.superseded, vec![taken.head.clone()]);
    let kept: Vec<HeadRef> = held.iter().map(|h| h.head.clone()).filter(|h| *h != taken.head).collect();
    assert_eq!(renewed.renewed, kept, "a lapsed lease nobody took is still the holder's to renew");
}

pub async fn backfill_starts_at_one_and_others_at_the_head(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    append_n(&*store, "s", 3, &[]).await;
    let consumers = [log("late"), log("history").backfilling()];
    let claimed = claim(&*store, "s", "h", &consumers).await;
    let firsts: BTreeMap<String, u64> = claimed.heads.iter().map(|h| (h.head.consumer.clone(), h.head.index)).collect();
    assert_eq!(firsts.get("history"), Some(&1), "a backfilling consumer starts at 1");
    assert_eq!(firsts.get("late"), None, "a new consumer starts at the head");
    append_n(&*store, "t", 0, &[]).await;
    let woken = store.cursor_wake(CursorWake { session: key("s"), consumer: log("late") }).await.expect("wake");
    assert_eq!((woken.session_head, woken.next), (3, None));
    append(&*store, "s", vec![event("new", "tick")], &consumers).await;
    let claimed = claim(&*store, "s", "h2", &consumers).await;
    assert_eq!(
        claimed.heads.iter().map(|h| (h.head.consumer.as_str(), h.head.index)).collect::<Vec<_>>(),
        vec![("late", 4)]
    );
    // A consumer known before a session exists takes its first event.
    append(&*store, "fresh", vec![event("f1", "tick")], &consumers).await;
    let claimed = claim(&*store, "fresh", "h", &consumers).await;
    assert_eq!(claimed.heads.len(), 2);
}

pub async fn log_consumer_skips_types_it_does_not_take(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let picky = StoreConsumer::log("picky", "main").with_types(&["wanted"]);
    let consumers = [picky.clone()];
    store.cursor_wake(CursorWake { session: key("s"), consumer: picky.clone() }).await.expect("wake");
    append(&*store, "s", vec![event("a", "other"), event("b", "wanted"), event("c", "other")], &consumers).await;
    let claimed = claim(&*store, "s", "h", &consumers).await;
    assert_eq!(claimed.heads.iter().map(|h| h.head.index).collect::<Vec<_>>(), vec![2]);
    complete_ok(&*store, "s", &claimed.heads[0], &consumers).await;
    assert!(claim(&*store, "s", "h", &consumers).await.heads.is_empty());
    let woken = store.cursor_wake(CursorWake { session: key("s"), consumer: picky }).await.expect("wake");
    assert_eq!(woken.next, None, "caught up: nothing left it takes");
}

pub async fn lane_function_heads_run_one_at_a_time_in_order(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = [StoreConsumer::targeted("laned")];
    let events = ["x", "y", "x", "y", "x"]
        .iter()
        .enumerate()
        .map(|(i, lane)| targeted(&format!("e{i}"), "tick", &[("laned", Some(lane))]))
        .collect();
    append(&*store, "s", events, &consumers).await;
    let mut order: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    loop {
        let claimed = claim(&*store, "s", "h", &consumers).await;
        if claimed.heads.is_empty() {
            break;
        }
        let lanes: Vec<_> = claimed.heads.iter().map(|h| h.head.lane.clone()).collect();
        let distinct: HashSet<_> = lanes.iter().collect();
        assert_eq!(distinct.len(), lanes.len(), "one head per lane at a time");
        for head in &claimed.heads {
            order.entry(head.head.lane.clone().unwrap_or_default()).or_default().push(head.head.index);
            complete_ok(&*store, "s", head, &consumers).await;
        }
    }
    assert_eq!(order.get("x"), Some(&vec![1, 3, 5]));
    assert_eq!(order.get("y"), Some(&vec![2, 4]));
}

pub async fn concurrent_heads_are_claimed_together(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = [StoreConsumer::targeted("par")];
    let events = (0..5).map(|i| targeted(&format!("e{i}"), "tick", &[("par", None)])).collect();
    append(&*store, "s", events, &consumers).await;
    let claimed = claim(&*store, "s", "h", &consumers).await;
    assert_eq!(claimed.heads.iter().map(|h| h.head.index).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5]);
    let mut limited = claim_params("t", "h", &consumers);
    append(&*store, "t", (0..5).map(|i| targeted(&format!("t{i}"), "tick", &[("par", None)])).collect(), &consumers)
        .await;
    limited.limit = 2;
    assert_eq!(store.head_claim(limited).await.expect("claim").heads.len(), 2, "the limit caps a batch");
}

/// One claim over every kind of candidate at once: fresh per-event heads, a
/// lapsed one (taken over, its lapse recorded), one the holder gave up
/// (excluded), a lane's next head, and a log cursor on an event its consumer
/// does not take (skipped, never run). A backend that leases the simple
/// candidates in one statement must agree with the shared rules on the rest.
pub async fn one_claim_takes_fresh_and_lapsed_heads_and_skips_excluded(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let ledger = StoreConsumer::log("c", "main").with_types(&["pay"]);
    let consumers = vec![ledger.clone(), StoreConsumer::targeted("par"), StoreConsumer::targeted("lane")];
    store.cursor_wake(CursorWake { session: key("s"), consumer: ledger }).await.expect("wake");
    let events = (1..=4).map(|i| targeted(&format!("e{i}"), "tick", &[("par", None), ("lane", Some("l"))])).collect();
    append(&*store, "s", events, &consumers).await;
    let mut first = claim_params("s", "w1", &consumers[1..2]);
    first.limit = 1;
    let taken = store.head_claim(first).await.expect("first claim").heads;
    assert_eq!(taken.iter().map(|h| (h.head.index, h.attempt)).collect::<Vec<_>>(), vec![(1, 1)]);
    clock.advance(TTL + 1);
    let mut params = claim_params("s", "w2", &consumers);
    params.exclude = vec![HeadRef::new("par", None, 3)];
    let claimed = store.head_claim(params).await.expect("the mixed claim");
    let got: Vec<(String, u64, u32, u32)> =
        claimed.heads.iter().map(|h| (h.head.consumer.clone(), h.head.index, h.attempt, h.failure_count)).collect();
    let want = vec![
        ("lane".to_owned(), 1, 1, 0),
        ("par".to_owned(), 1, 2, 1),
        ("par".to_owned(), 2, 1, 0),
        ("par".to_owned(), 4, 1, 0),
    ];
    assert_eq!(got, want, "the lapsed head taken over, the fresh ones leased, the excluded one left");
    assert!(claimed.heads.iter().all(|h| h.lease_expires_at == clock.now_ms() + TTL), "each leased to w2 for a TTL");
    assert!(claimed.heads.iter().all(|h| h.event.index == h.head.index && h.event.event_type == "tick"));
    let cursor = store.head_list(&key("s")).await.expect("heads");
    let cursor = cursor.iter().find(|h| h.consumer == "c").expect("the ledger's cursor");
    assert_eq!(cursor.next_index, 5, "the cursor skipped the events its consumer does not take");
    let lapse = AttemptList {
        session: key("s"),
        consumer: Some("par".into()),
        index: Some(1),
        after: None,
        oldest_first: true,
        limit: 10,
    };
    let history = store.attempt_list(lapse).await.expect("attempts");
    let outcomes: Vec<(u32, AttemptOutcome)> = history.iter().map(|a| (a.attempt, a.outcome)).collect();
    assert_eq!(outcomes, vec![(1, AttemptOutcome::Lapsed)], "the takeover records the lapse");
    let again = claim(&*store, "s", "w2", &consumers).await;
    let rest: Vec<(String, u64)> = again.heads.iter().map(|h| (h.head.consumer.clone(), h.head.index)).collect();
    assert_eq!(rest, vec![("par".to_owned(), 3)], "without the exclusion the held-back head is taken; the lane waits");
}

/// Without log consumers a claim leases fresh heads in one statement of its
/// own (Postgres); a lapsed lease it meets is still charged once, by the
/// rules, in the same call, and the heads come back in index order whatever
/// took them. A claim bounded by `limit` counts both kinds.
pub async fn a_lapse_beside_fresh_heads_is_charged_once(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [StoreConsumer::targeted("par")];
    let events = (1..=3).map(|i| targeted(&format!("e{i}"), "tick", &[("par", None)])).collect();
    append(&*store, "s", events, &consumers).await;
    let mut first = claim_params("s", "w1", &consumers);
    first.limit = 1;
    let taken = store.head_claim(first).await.expect("first claim").heads;
    assert_eq!(taken.iter().map(|h| (h.head.index, h.attempt)).collect::<Vec<_>>(), vec![(1, 1)]);
    clock.advance(TTL + 1);
    let mut two = claim_params("s", "w2", &consumers);
    two.limit = 2;
    let claimed = store.head_claim(two).await.expect("the bounded claim");
    let got: Vec<(u64, u32, u32)> = claimed.heads.iter().map(|h| (h.head.index, h.attempt, h.failure_count)).collect();
    assert_eq!(got, vec![(1, 2, 1), (2, 1, 0)], "the lapsed head taken over beside one fresh head, in index order");
    assert_eq!(claimed.session_head, 3);
    let rest = claim(&*store, "s", "w2", &consumers).await;
    assert_eq!(rest.heads.iter().map(|h| (h.head.index, h.attempt)).collect::<Vec<_>>(), vec![(3, 1)]);
    let none = claim(&*store, "s", "w3", &consumers).await;
    assert!(none.heads.is_empty(), "everything is leased: {none:?}");
    assert_eq!(none.busy_until, Some(clock.now_ms() + TTL), "the claim that took nothing says until when");
    let history = AttemptList {
        session: key("s"),
        consumer: Some("par".into()),
        index: None,
        after: None,
        oldest_first: true,
        limit: 10,
    };
    let history = store.attempt_list(history).await.expect("attempts");
    let outcomes: Vec<(u64, u32, AttemptOutcome)> = history.iter().map(|a| (a.index, a.attempt, a.outcome)).collect();
    assert_eq!(outcomes, vec![(1, 1, AttemptOutcome::Lapsed)], "the lapse is recorded once");
}

/// A log consumer that has no cursor in a session yet (added after its
/// events) gets one from the claim that first names it, and its first event
/// is leased in that claim beside the other consumers' fresh heads, not
/// after them: a claim that could lease fresh heads alone must not starve it.
pub async fn a_new_log_consumer_gets_its_cursor_beside_fresh_heads(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let par = StoreConsumer::targeted("par");
    let events = (1..=2).map(|i| targeted(&format!("e{i}"), "tick", &[("par", None)])).collect();
    append(&*store, "s", events, std::slice::from_ref(&par)).await;
    let late = StoreConsumer::log("late", "main").backfilling();
    // A claim the fresh heads alone could fill still makes the cursor and leases its first event.
    let mut two = claim_params("s", "w", &[par.clone(), late.clone()]);
    two.limit = 2;
    let claimed = store.head_claim(two).await.expect("the bounded claim");
    let got: Vec<(String, u64, u32)> =
        claimed.heads.iter().map(|h| (h.head.consumer.clone(), h.head.index, h.attempt)).collect();
    let want = vec![("late".to_owned(), 1, 1), ("par".to_owned(), 1, 1)];
    assert_eq!(got, want, "the new cursor's first event is leased with the fresh heads, in index order");
    let rest = claim(&*store, "s", "w", &[par, late]).await;
    let got: Vec<(String, u64)> = rest.heads.iter().map(|h| (h.head.consumer.clone(), h.head.index)).collect();
    assert_eq!(got, vec![("par".to_owned(), 2)], "the rest; the cursor waits for its leased event");
}

pub async fn claim_through_bounds_the_heads(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = [StoreConsumer::targeted("par")];
    let events = (0..5).map(|i| targeted(&format!("e{i}"), "tick", &[("par", None)])).collect();
    append(&*store, "s", events, &consumers).await;
    let mut params = claim_params("s", "h", &consumers);
    params.through = Some(2);
    params.exclude = vec![HeadRef::new("par", None, 1)];
    let claimed = store.head_claim(params).await.expect("claim");
    assert_eq!(claimed.heads.iter().map(|h| h.head.index).collect::<Vec<_>>(), vec![2]);
}
