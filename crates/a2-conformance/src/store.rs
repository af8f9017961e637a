//! Store-level scenarios: the facts every backend must show, on manual time.
//! The inspection reads and the audit log are in `inspection`.

use std::collections::{BTreeMap, HashSet};

use a2_store::*;
use serde_json::json;

use crate::support::*;
use crate::StoreFactory;

pub use crate::fidelity::*;
pub use crate::grouping::*;
pub use crate::history::*;
pub use crate::inspection::*;
pub use crate::operations::*;

pub(crate) fn complete(
    session: &str,
    head: &HeadRef,
    attempt: u32,
    events: Vec<NewEvent>,
    consumers: &[StoreConsumer],
) -> HeadComplete {
    HeadComplete { session: key(session), head: head.clone(), attempt, events, consumers: consumers.to_vec() }
}

pub(crate) async fn complete_ok(store: &dyn Store, session: &str, claimed: &ClaimedHead, consumers: &[StoreConsumer]) {
    let outcome = store.head_complete(complete(session, &claimed.head, claimed.attempt, Vec::new(), consumers)).await;
    assert!(matches!(outcome, Ok(CompleteOutcome::Completed { .. })), "complete {}: {outcome:?}", claimed.head);
}

/// Fail the one claimable head of `consumer` until it is dead, claiming for
/// that consumer alone so no other head is left leased.
pub(crate) async fn fail_until_dead(
    store: &dyn Store,
    clock: &ManualClock,
    session: &str,
    consumers: &[StoreConsumer],
    consumer: &str,
) -> HeadRef {
    let only: Vec<StoreConsumer> = consumers.iter().filter(|c| c.name == consumer).cloned().collect();
    for _ in 0..10 {
        clock.advance(BACKOFF.max_ms);
        let claimed = claim(store, session, "h", &only).await;
        let head = claimed.heads.first().expect("a head to fail");
        if let FailOutcome::DeadLettered { .. } =
            store.head_fail(fail_params(session, &head.head, head.attempt)).await.expect("fail")
        {
            return head.head.clone();
        }
    }
    panic!("consumer '{consumer}' did not dead-letter after 10 failures");
}

pub async fn gap_free_indexes_under_concurrent_appenders(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let mut tasks = Vec::new();
    for writer in 0..32 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for n in 0..8 {
                let id = format!("w{writer}-n{n}");
                store
                    .event_append(EventAppend {
                        session: key("s"),
                        events: vec![event(&id, "tick")],
                        consumers: vec![],
                    })
                    .await
                    .expect("concurrent append");
            }
        }));
    }
    for task in tasks {
        task.await.expect("appender task");
    }
    let events = store
        .event_list(EventList { session: key("s"), after: None, before: None, limit: 500, newest_first: false })
        .await
        .expect("list");
    let indexes: Vec<u64> = events.iter().map(|e| e.index).collect();
    assert_eq!(indexes, (1..=256).collect::<Vec<u64>>(), "indexes are dense and gap-free");
    let mut per_writer: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for e in &events {
        let (writer, n) = e.id.split_once("-n").expect("id shape");
        per_writer.entry(writer.to_owned()).or_default().push(n.parse().expect("ordinal"));
    }
    assert_eq!(per_writer.len(), 32);
    for (writer, ns) in per_writer {
        assert_eq!(ns, (0..8).collect::<Vec<u32>>(), "writer {writer}'s appends keep their order");
    }
}

pub async fn idempotent_reappend_by_id(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    assert_eq!(append(&*store, "s", vec![event("a", "tick"), event("b", "tick")], &[]).await, 2);
    let again = store
        .event_append(EventAppend {
            session: key("s"),
            events: vec![event("a", "tick"), event("b", "tick")],
            consumers: vec![],
        })
        .await
        .expect("re-append");
    assert!(again.duplicate);
    assert_eq!(again.head, 2);
    assert_eq!(again.events.iter().map(|e| e.index).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(append(&*store, "s", vec![event("c", "tick")], &[]).await, 3);
}

pub async fn partial_duplicate_batch_is_refused_whole(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    append(&*store, "s", vec![event("a", "tick")], &[]).await;
    let mixed = store
        .event_append(EventAppend {
            session: key("s"),
            events: vec![event("a", "tick"), event("b", "tick")],
            consumers: vec![],
        })
        .await;
    let error = mixed.expect_err("a mixed batch is refused");
    assert_eq!(error.code(), "PARTIAL_DUPLICATE_BATCH");
    let repeated = store
        .event_append(EventAppend {
            session: key("s"),
            events: vec![event("c", "tick"), event("c", "tick")],
            consumers: vec![],
        })
        .await;
    assert_eq!(repeated.expect_err("an id twice in a batch").code(), "PARTIAL_DUPLICATE_BATCH");
    let summary = store.session_get(&key("s")).await.expect("get").expect("exists");
    assert_eq!(summary.head, 1, "nothing of a refused batch was written");
}

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
    assert_eq!(heads[0].attempt_count, 2);
    assert_eq!(heads[0].lease_holder.as_deref(), Some("b"));
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

pub async fn backoff_delays_double_from_base_and_cap(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [StoreConsumer::targeted("par")];
    append(&*store, "s", vec![targeted("a", "tick", &[("par", None)])], &consumers).await;
    let backoff = Backoff { base_ms: 1_000, max_ms: 10_000 };
    let mut delays = Vec::new();
    for _ in 0..6 {
        let claimed = claim(&*store, "s", "h", &consumers).await;
        let head = claimed.heads.first().expect("runnable after its backoff");
        let now = clock.now_ms();
        let mut params = fail_params("s", &head.head, head.attempt);
        params.backoff = backoff;
        let FailOutcome::Failed { retry_at, .. } = store.head_fail(params).await.expect("fail") else {
            panic!("expected a retry");
        };
        delays.push(retry_at - now);
        clock.advance(retry_at - now - 1);
        let early = claim(&*store, "s", "h", &consumers).await;
        assert!(early.heads.is_empty(), "not runnable before its retry time");
        assert_eq!(early.retry_at, Some(retry_at));
        clock.advance(1);
    }
    assert_eq!(delays, vec![1_000, 2_000, 4_000, 8_000, 10_000, 10_000]);
}

pub async fn ten_failed_attempts_make_a_dead_letter(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [StoreConsumer::targeted("par")];
    append(&*store, "s", vec![targeted("a", "tick", &[("par", None)])], &consumers).await;
    for attempt in 1..=10u32 {
        let claimed = claim(&*store, "s", "h", &consumers).await;
        let head = &claimed.heads[0];
        assert_eq!(head.attempt, attempt);
        let outcome = store.head_fail(fail_params("s", &head.head, head.attempt)).await.expect("fail");
        if attempt < 10 {
            assert!(matches!(outcome, FailOutcome::Failed { failure_count, .. } if failure_count == attempt));
            clock.advance(BACKOFF.max_ms);
        } else {
            assert_eq!(outcome, FailOutcome::DeadLettered { failure_count: 10 });
        }
    }
    clock.advance(BACKOFF.max_ms);
    assert!(claim(&*store, "s", "h", &consumers).await.heads.is_empty(), "a dead head is never claimed");
    let letters =
        store.dead_letter_list(DeadLetterList { limit: 10, ..Default::default() }).await.expect("dead letters");
    assert_eq!(letters.len(), 1);
    let letter = &letters[0];
    assert_eq!(
        (letter.consumer.as_str(), letter.index, letter.failure_count, letter.attempt_count),
        ("par", 1, 10, 10)
    );
    assert_eq!(letter.event_id, "a");
    assert_eq!(letter.last_error.as_deref(), Some("boom at attempt 10"));
}

pub async fn lapsed_attempts_count_and_exhaust_on_takeover(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [StoreConsumer::targeted("par")];
    append(&*store, "s", vec![targeted("a", "tick", &[("par", None)])], &consumers).await;
    for attempt in 1..=10u32 {
        let claimed = claim(&*store, "s", &format!("crashing-{attempt}"), &consumers).await;
        assert_eq!(claimed.heads.len(), 1, "attempt {attempt} runs");
        assert_eq!(claimed.heads[0].failure_count, attempt - 1, "each lapse was counted by the takeover");
        clock.advance(TTL);
    }
    let last = claim(&*store, "s", "h", &consumers).await;
    assert!(last.heads.is_empty());
    assert_eq!(last.exhausted.len(), 1, "the takeover reports the exhausted head instead of running it");
    assert_eq!(last.exhausted[0].failure_count, 10);
    let letters =
        store.dead_letter_list(DeadLetterList { limit: 10, ..Default::default() }).await.expect("dead letters");
    assert_eq!(letters.len(), 1);
    assert!(letters[0].last_error.as_deref().is_some_and(|e| e.contains("lapsed")));
}

pub async fn dead_head_blocks_its_lane_but_not_other_lanes_or_consumers(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [log("cursor"), log("other"), StoreConsumer::targeted("laned")];
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("cursor") }).await.expect("wake");
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("other") }).await.expect("wake");
    let events = vec![
        targeted("a", "tick", &[("laned", Some("x"))]),
        targeted("b", "tick", &[("laned", Some("x"))]),
        targeted("c", "tick", &[("laned", Some("y"))]),
    ];
    append(&*store, "s", events, &consumers).await;
    // Kill the cursor at 1 and lane x at 1.
    for _ in 0..10 {
        let claimed = claim(&*store, "s", "h", &consumers).await;
        for head in &claimed.heads {
            let dies = head.head.consumer == "cursor" || head.head.lane.as_deref() == Some("x");
            if dies {
                store.head_fail(fail_params("s", &head.head, head.attempt)).await.expect("fail");
            } else {
                complete_ok(&*store, "s", head, &consumers).await;
            }
        }
        clock.advance(BACKOFF.max_ms);
    }
    let heads = store.head_list(&key("s")).await.expect("heads");
    let find = |consumer: &str, lane: &str| {
        heads.iter().find(|h| h.consumer == consumer && h.lane.as_deref() == Some(lane)).cloned()
    };
    let cursor = find("cursor", "main").expect("cursor row");
    assert!(cursor.dead() && cursor.next_index == 1 && cursor.lag == 3, "the dead cursor holds its place: {cursor:?}");
    let other = find("other", "main").expect("other row");
    assert_eq!((other.next_index, other.lag), (4, 0), "another consumer went on");
    let x = find("laned", "x").expect("lane x");
    assert!(x.dead() && x.next_index == 1 && x.lag == 2, "lane x waits behind its dead head: {x:?}");
    assert!(find("laned", "y").is_none(), "lane y finished");
    assert!(claim(&*store, "s", "h", &consumers).await.heads.is_empty());
}

pub async fn redrive_retry_gives_a_fresh_budget(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [log("c")];
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("c") }).await.expect("wake");
    append_n(&*store, "s", 2, &consumers).await;
    let dead = fail_until_dead(&*store, &clock, "s", &consumers, "c").await;
    let retried = store
        .dead_letter_redrive(DeadLetterRedrive {
            session: key("s"),
            consumer: "c".into(),
            index: dead.index,
            action: RedriveAction::Retry,
            audit: None,
        })
        .await
        .expect("redrive");
    assert!(retried);
    let again = claim(&*store, "s", "h", &consumers).await;
    assert_eq!(again.heads.len(), 1, "runnable at once");
    assert_eq!(again.heads[0].head, dead);
    assert_eq!(again.heads[0].failure_count, 0, "a fresh failure budget");
    assert_eq!(again.heads[0].attempt, 11, "the fencing token keeps counting");
    store.head_fail(fail_params("s", &dead, 11)).await.expect("fail once more");
    let letters = store.dead_letter_list(DeadLetterList { limit: 10, ..Default::default() }).await.expect("list");
    assert!(letters.is_empty(), "one failure after a retry is not a dead letter");
}

pub async fn redrive_skip_advances_exactly_once(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [log("c")];
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("c") }).await.expect("wake");
    append_n(&*store, "s", 3, &consumers).await;
    let dead = fail_until_dead(&*store, &clock, "s", &consumers, "c").await;
    let skip = DeadLetterRedrive {
        session: key("s"),
        consumer: "c".into(),
        index: dead.index,
        action: RedriveAction::Skip,
        audit: None,
    };
    assert!(store.dead_letter_redrive(skip.clone()).await.expect("skip"));
    assert!(!store.dead_letter_redrive(skip).await.expect("skip again"), "a second skip finds nothing dead");
    let claimed = claim(&*store, "s", "h", &consumers).await;
    assert_eq!(claimed.heads.iter().map(|h| h.head.index).collect::<Vec<_>>(), vec![2], "moved on by exactly one");
}

pub async fn redrive_of_a_live_head_reports_false(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = [log("c")];
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("c") }).await.expect("wake");
    append_n(&*store, "s", 1, &consumers).await;
    let held = claim(&*store, "s", "h", &consumers).await.heads.remove(0);
    for action in [RedriveAction::Retry, RedriveAction::Skip] {
        let redriven = store
            .dead_letter_redrive(DeadLetterRedrive {
                session: key("s"),
                consumer: "c".into(),
                index: 1,
                action,
                audit: None,
            })
            .await
            .expect("redrive");
        assert!(!redriven);
    }
    let missing = DeadLetterRedrive {
        session: key("nope"),
        consumer: "c".into(),
        index: 1,
        action: RedriveAction::Retry,
        audit: None,
    };
    assert!(!store.dead_letter_redrive(missing).await.expect("redrive of nothing"));
    complete_ok(&*store, "s", &held, &consumers).await;
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

pub async fn complete_appends_returned_events_atomically(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = [log("c"), StoreConsumer::targeted("par")];
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("c") }).await.expect("wake");
    append(&*store, "s", vec![event("a", "tick"), event("b", "tick")], &consumers).await;
    let held = claim(&*store, "s", "h", &consumers).await.heads.remove(0);
    let cause = Cause { consumer: "c".into(), lane: Some("main".into()), index: 1, attempt: held.attempt };
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
    let CompleteOutcome::Completed { session_head, appended } = done else { panic!("completed") };
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
        matches!(&done, Ok(CompleteOutcome::Completed { session_head: 3, appended }) if appended.is_empty()),
        "an idempotent re-append: {done:?}"
    );
}

pub async fn clear_with_matching_and_mismatching_guard(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [log("c"), StoreConsumer::targeted("par")];
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("c") }).await.expect("wake");
    append(
        &*store,
        "s",
        vec![targeted("a", "tick", &[("par", None)]), targeted("b", "tick", &[("par", None)])],
        &consumers,
    )
    .await;
    fail_until_dead(&*store, &clock, "s", &consumers, "par").await;
    store
        .snapshot_put(SnapshotPut { session: key("s"), reducer: "count".into(), index: 2, state: json!(2), pin: None })
        .await
        .expect("snapshot");
    let held = claim(&*store, "s", "h", &consumers).await.heads;
    let missed = store
        .session_clear(SessionClear { session: key("s"), if_last_index: Some(1), audit: None })
        .await
        .expect("clear");
    assert_eq!(missed, Cleared { cleared: false, index: 2 });
    assert_eq!(store.session_get(&key("s")).await.expect("get").map(|s| s.clear_index), Some(0));
    let cleared = store
        .session_clear(SessionClear { session: key("s"), if_last_index: Some(2), audit: None })
        .await
        .expect("clear");
    assert_eq!(cleared, Cleared { cleared: true, index: 2 });
    let summary = store.session_get(&key("s")).await.expect("get").expect("exists");
    assert_eq!((summary.head, summary.clear_index, summary.dead_letters, summary.lag), (2, 2, 0, 0));
    let events = store
        .event_list(EventList { session: key("s"), after: None, before: None, limit: 10, newest_first: false })
        .await
        .expect("list");
    assert!(events.is_empty(), "events at or below the boundary are gone for reads");
    assert!(store.snapshot_list(&key("s")).await.expect("snapshots").is_empty());
    assert!(store.dead_letter_list(DeadLetterList { limit: 10, ..Default::default() }).await.expect("dl").is_empty());
    for head in held {
        let outcome =
            store.head_complete(complete("s", &head.head, head.attempt, vec![], &consumers)).await.expect("complete");
        assert_eq!(outcome, CompleteOutcome::Superseded, "running attempts on cleared heads are superseded");
    }
    assert_eq!(
        append(&*store, "s", vec![event("c", "tick")], &consumers).await,
        3,
        "indexes continue after the boundary"
    );
    let claimed = claim(&*store, "s", "h2", &consumers).await;
    assert_eq!(
        claimed.heads.iter().map(|h| (h.head.consumer.as_str(), h.head.index)).collect::<Vec<_>>(),
        vec![("c", 3)]
    );
    let unguarded =
        store.session_clear(SessionClear { session: key("s"), if_last_index: None, audit: None }).await.expect("clear");
    assert_eq!(unguarded, Cleared { cleared: true, index: 3 });
}

pub async fn snapshot_pins_are_kept_while_their_head_runs(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = [log("c")];
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("c") }).await.expect("wake");
    append_n(&*store, "s", 4, &consumers).await;
    let held = claim(&*store, "s", "h", &consumers).await.heads.remove(0);
    let put = |index: u64, pin: Option<HeadRef>| SnapshotPut {
        session: key("s"),
        reducer: "count".into(),
        index,
        state: json!(index),
        pin,
    };
    store.snapshot_put(put(1, Some(held.head.clone()))).await.expect("pinned snapshot");
    store.snapshot_put(put(3, None)).await.expect("snapshot");
    store.snapshot_put(put(4, None)).await.expect("snapshot");
    let indexes = |list: Vec<SnapshotInfo>| list.iter().map(|s| s.index).collect::<Vec<_>>();
    assert_eq!(
        indexes(store.snapshot_list(&key("s")).await.expect("list")),
        vec![4, 1],
        "the pinned one stays, the unpinned older one goes"
    );
    let at_two =
        store.snapshot_get(SnapshotGet { session: key("s"), reducer: "count".into(), at_most: 2 }).await.expect("get");
    assert_eq!(at_two.map(|s| (s.index, s.pins)), Some((1, vec![held.head.clone()])));
    complete_ok(&*store, "s", &held, &consumers).await;
    append_n(&*store, "s2", 0, &[]).await;
    append(&*store, "s", vec![event("e5", "tick")], &consumers).await;
    store.snapshot_put(put(5, None)).await.expect("snapshot");
    assert_eq!(indexes(store.snapshot_list(&key("s")).await.expect("list")), vec![5], "its head done, the pin lets go");
}

pub async fn two_contracts_with_one_session_id_never_collide(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let a = session_key("alpha", "same");
    let b = session_key("beta", "same");
    store
        .event_append(EventAppend { session: a.clone(), events: vec![event("x", "tick")], consumers: vec![] })
        .await
        .expect("a");
    let appended = store
        .event_append(EventAppend {
            session: b.clone(),
            events: vec![event("x", "tick"), event("y", "tick")],
            consumers: vec![],
        })
        .await
        .expect("b");
    assert!(!appended.duplicate, "the same id in another contract is another event");
    assert_eq!(appended.head, 2);
    assert_eq!(store.session_get(&a).await.expect("a").map(|s| s.head), Some(1));
    let contracts = store.contract_list().await.expect("contracts");
    assert_eq!(contracts, vec!["alpha".to_owned(), "beta".to_owned()]);
    let alpha = store
        .session_list(SessionList { contract: "alpha".into(), id_prefix: None, after: None, limit: 10 })
        .await
        .expect("list");
    assert_eq!(alpha.len(), 1);
    // A contract whose name is a prefix of another's lists only its own.
    store
        .event_append(EventAppend {
            session: session_key("alph", "other"),
            events: vec![event("z", "tick")],
            consumers: vec![],
        })
        .await
        .expect("alph");
    let alph = store
        .session_list(SessionList { contract: "alph".into(), id_prefix: None, after: None, limit: 10 })
        .await
        .expect("list");
    assert_eq!(alph.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(), vec!["other"]);
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
