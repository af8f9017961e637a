//! Range leases: one claim of a log cursor reads ahead up to `range`
//! consecutive positions; they run in order, each completion leasing the next
//! to the same holder. A lapse is charged to the position the cursor stands
//! on, a clear or a pause drops the rest, and the holder fences a late
//! completion from a range that lapsed.

use a2_store::*;

use crate::store::complete;
use crate::support::*;
use crate::StoreFactory;

/// A claim that may read ahead `range` positions of each log cursor.
pub(crate) async fn claim_range(
    store: &dyn Store,
    session: &str,
    holder: &str,
    consumers: &[StoreConsumer],
    range: u32,
) -> Claimed {
    store.head_claim(HeadClaim { range, ..claim_params(session, holder, consumers) }).await.expect("range claim")
}

/// Complete one position of `holder`'s range, leasing the next when `lease_next`.
pub(crate) async fn step(
    store: &dyn Store,
    session: &str,
    head: &ClaimedHead,
    holder: &str,
    lease_next: bool,
    consumers: &[StoreConsumer],
) -> CompleteOutcome {
    let params = HeadComplete {
        holder: Some(holder.to_owned()),
        lease_next,
        ..complete(session, &head.head, head.attempt, Vec::new(), consumers)
    };
    store.head_complete(params).await.expect("range step")
}

/// `holder` renews its lease of one position.
async fn renew_one(store: &dyn Store, session: &str, holder: &str, head: &ClaimedHead) -> Renewed {
    let held = vec![HeldHead { head: head.head.clone(), attempt: head.attempt }];
    let params = HeadRenew { session: key(session), holder: holder.to_owned(), ttl_ms: TTL, heads: held };
    store.head_renew(params).await.expect("renew")
}

fn holds_next(outcome: &CompleteOutcome) -> bool {
    matches!(outcome, CompleteOutcome::Completed { holds_next: true, .. })
}

async fn cursor(store: &dyn Store, session: &str, consumer: &str) -> HeadInfo {
    let heads = store.head_list(&key(session)).await.expect("heads");
    heads.into_iter().find(|h| h.consumer == consumer).expect("the cursor")
}

async fn attempts(store: &dyn Store, session: &str) -> Vec<(u64, u32, AttemptOutcome, Option<String>)> {
    let mut got: Vec<_> = store
        .attempt_list(attempts_of(session, 1_000))
        .await
        .expect("attempts")
        .into_iter()
        .map(|a| (a.index, a.attempt, a.outcome, a.holder))
        .collect();
    got.sort_by_key(|(index, attempt, _, _)| (*index, *attempt));
    got
}

async fn ready(store: &dyn Store, session: &str, events: usize, consumers: &[StoreConsumer]) {
    for consumer in consumers.iter().filter(|c| c.log.is_some()) {
        store.cursor_wake(CursorWake { session: key(session), consumer: consumer.clone() }).await.expect("wake");
    }
    append_n(store, session, events, consumers).await;
}

/// One claim takes the range's positions in order, each its first attempt,
/// all under the claim's lease; only the position the cursor stands on is
/// leased, and each completion hands the lease to the next. Completing out
/// of order is refused; the last position leaves the cursor unleased.
pub async fn range_lease_runs_positions_in_order(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = [log("c")];
    ready(&*store, "s", 6, &consumers).await;
    let claimed = claim_range(&*store, "s", "a", &consumers, 4).await;
    let got: Vec<(u64, u32, u32)> = claimed.heads.iter().map(|h| (h.head.index, h.attempt, h.failure_count)).collect();
    assert_eq!(got, vec![(1, 1, 0), (2, 1, 0), (3, 1, 0), (4, 1, 0)], "four positions, in order, first attempts");
    let expiry = claimed.heads[0].lease_expires_at;
    assert!(claimed.heads.iter().all(|h| h.lease_expires_at == expiry), "one lease for the range");
    assert!(claimed.heads.iter().all(|h| h.event.index == h.head.index), "each position carries its own event");
    let at = cursor(&*store, "s", "c").await;
    assert_eq!((at.next_index, at.status.lease_holder.as_deref()), (1, Some("a")));
    // Position 3 is not the cursor's yet: its completion is refused and moves nothing.
    assert_eq!(step(&*store, "s", &claimed.heads[2], "a", true, &consumers).await, CompleteOutcome::Superseded);
    assert_eq!(cursor(&*store, "s", "c").await.next_index, 1);
    for (i, head) in claimed.heads.iter().enumerate() {
        let more = i + 1 < claimed.heads.len();
        let outcome = step(&*store, "s", head, "a", more, &consumers).await;
        assert!(matches!(outcome, CompleteOutcome::Completed { .. }), "position {}: {outcome:?}", head.head.index);
        assert_eq!(
            holds_next(&outcome),
            more,
            "position {}: the next is leased while the range goes on",
            head.head.index
        );
        let at = cursor(&*store, "s", "c").await;
        assert_eq!(at.next_index, head.head.index + 1);
        let want = more.then_some("a");
        assert_eq!(at.status.lease_holder.as_deref(), want, "position {}", head.head.index);
        if more {
            assert_eq!(at.status.attempt_count, 1, "the next position starts at its first attempt");
            assert_eq!(at.status.lease_expires_at, Some(expiry), "on the range's lease");
        }
    }
    let ran: Vec<(u64, u32, AttemptOutcome)> =
        attempts(&*store, "s").await.into_iter().map(|(i, n, o, _)| (i, n, o)).collect();
    // The refused early completion shares position 3's attempt key; only the order of the range is asserted.
    let completed: Vec<u64> =
        ran.iter().filter(|(_, _, o)| *o == AttemptOutcome::Completed).map(|(i, ..)| *i).collect();
    assert!(ran.iter().all(|(_, n, _)| *n == 1), "every position ran once: {ran:?}");
    assert!(completed.windows(2).all(|w| w[0] < w[1]) && completed.contains(&4), "in order: {ran:?}");
    // Another holder takes up where the range ended.
    let next = claim_range(&*store, "s", "b", &consumers, 4).await;
    let got: Vec<u64> = next.heads.iter().map(|h| h.head.index).collect();
    assert_eq!(got, vec![5, 6], "the rest of the log, no further than the head");
}

/// A range stops before the first event its consumer does not take, and
/// never goes past `through`, the session head or `range`; other cursors'
/// ranges are their own.
pub async fn range_lease_stops_at_an_untaken_type_and_its_bounds(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = [log("picky").with_types(&["tick"]), log("all")];
    for consumer in &consumers {
        store.cursor_wake(CursorWake { session: key("s"), consumer: consumer.clone() }).await.expect("wake");
    }
    let types = ["tick", "tick", "tock", "tick", "tick", "tick"];
    let events = types.iter().enumerate().map(|(i, t)| event(&format!("e{i}"), t)).collect();
    append(&*store, "s", events, &consumers).await;
    let claimed = claim_range(&*store, "s", "a", &consumers, 32).await;
    let of = |name: &str| -> Vec<u64> {
        claimed.heads.iter().filter(|h| h.head.consumer == name).map(|h| h.head.index).collect()
    };
    assert_eq!(of("picky"), vec![1, 2], "the range stops before the type it does not take");
    assert_eq!(of("all"), vec![1, 2, 3, 4, 5, 6], "the other cursor's range reaches the head");
    let (fresh, _) = open(factory).await;
    ready(&*fresh, "t", 10, &[log("c")]).await;
    let bounded = fresh
        .head_claim(HeadClaim { range: 8, through: Some(5), ..claim_params("t", "a", &[log("c")]) })
        .await
        .expect("claim");
    assert_eq!(bounded.heads.iter().map(|h| h.head.index).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5], "through");
    let single = claim_range(&*fresh, "u", "a", &[log("c")], 1).await;
    assert!(single.heads.is_empty(), "an empty session has no range");
    ready(&*fresh, "u", 3, &[log("c")]).await;
    let single = claim_range(&*fresh, "u", "a", &[log("c")], 1).await;
    assert_eq!(single.heads.iter().map(|h| h.head.index).collect::<Vec<_>>(), vec![1], "range 1 is one position");
}

/// The holder dies in mid-range: the takeover charges one lapse to the
/// position the cursor stood on (attempt 2, one failure) and none to the
/// positions after it, which start at their first attempt; ten lapses make
/// that one position a dead letter, not the range.
pub async fn range_lease_lapse_charges_only_the_current_position(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [log("c")];
    ready(&*store, "s", 6, &consumers).await;
    let first = claim_range(&*store, "s", "a", &consumers, 4).await;
    assert!(holds_next(&step(&*store, "s", &first.heads[0], "a", true, &consumers).await));
    // "a" dies running position 2.
    clock.advance(TTL);
    let taken = claim_range(&*store, "s", "b", &consumers, 4).await;
    let got: Vec<(u64, u32, u32)> = taken.heads.iter().map(|h| (h.head.index, h.attempt, h.failure_count)).collect();
    assert_eq!(got, vec![(2, 2, 1), (3, 1, 0), (4, 1, 0), (5, 1, 0)], "the lapse is position 2's alone");
    let history = attempts(&*store, "s").await;
    let lapsed: Vec<u64> =
        history.iter().filter(|(_, _, o, _)| *o == AttemptOutcome::Lapsed).map(|(i, ..)| *i).collect();
    assert_eq!(lapsed, vec![2], "only the running position lapsed: {history:?}");
    assert!(history.iter().all(|(i, ..)| *i <= 2), "positions that never ran have no attempts: {history:?}");
    // Nine more holders die on position 2, each in its own range.
    for n in 2..=9u32 {
        clock.advance(TTL);
        let claimed = claim_range(&*store, "s", &format!("h{n}"), &consumers, 4).await;
        assert_eq!(claimed.heads.first().map(|h| (h.head.index, h.failure_count)), Some((2, n)), "lapse {n}");
    }
    clock.advance(TTL);
    let last = claim_range(&*store, "s", "z", &consumers, 4).await;
    assert!(last.heads.is_empty(), "the dead position blocks its lane: {last:?}");
    assert_eq!(last.exhausted.iter().map(|h| h.head.index).collect::<Vec<_>>(), vec![2]);
    let letters = store.dead_letter_list(DeadLetterList { limit: 10, ..Default::default() }).await.expect("letters");
    assert_eq!(letters.iter().map(|l| (l.index, l.failure_count)).collect::<Vec<_>>(), vec![(2, 10)]);
}

/// A range that lapsed and was taken over leaves its holder's completions
/// refused, even where the attempt number matches (every later position
/// starts at attempt 1): the holder is fenced too, and nothing moves.
pub async fn late_completion_of_a_lapsed_range_is_refused(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [log("c")];
    ready(&*store, "s", 4, &consumers).await;
    let stale = claim_range(&*store, "s", "a", &consumers, 4).await;
    clock.advance(TTL);
    let taken = claim_range(&*store, "s", "b", &consumers, 4).await;
    assert_eq!(taken.heads[0].attempt, 2);
    assert!(holds_next(&step(&*store, "s", &taken.heads[0], "b", true, &consumers).await));
    // Position 2 is now "b"'s attempt 1, the very fence "a" read for it.
    assert_eq!((stale.heads[1].head.index, stale.heads[1].attempt), (2, 1));
    assert_eq!(step(&*store, "s", &stale.heads[0], "a", true, &consumers).await, CompleteOutcome::Superseded);
    assert_eq!(step(&*store, "s", &stale.heads[1], "a", true, &consumers).await, CompleteOutcome::Superseded);
    let at = cursor(&*store, "s", "c").await;
    let renewed = renew_one(&*store, "s", "a", &stale.heads[1]).await;
    assert_eq!(renewed.superseded, vec![stale.heads[1].head.clone()], "the stale holder cannot renew it either");
    assert_eq!((at.next_index, at.status.lease_holder.as_deref(), at.status.failure_count), (2, Some("b"), 0));
    // "b" goes on as if "a" never spoke.
    let outcome = step(&*store, "s", &taken.heads[1], "b", false, &consumers).await;
    assert!(matches!(outcome, CompleteOutcome::Completed { holds_next: false, .. }), "{outcome:?}");
    assert_eq!(cursor(&*store, "s", "c").await.next_index, 3);
}

/// A clear through the range ends the running position and drops the rest:
/// the holder's next completions are refused, and after new appends the
/// cursor starts past the boundary.
pub async fn clear_mid_range_drops_the_rest(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = [log("c")];
    ready(&*store, "s", 5, &consumers).await;
    let claimed = claim_range(&*store, "s", "a", &consumers, 4).await;
    assert!(holds_next(&step(&*store, "s", &claimed.heads[0], "a", true, &consumers).await));
    let clear = SessionClear { session: key("s"), if_last_index: None, audit: None, settles: None };
    assert_eq!(store.session_clear(clear).await.expect("clear"), Cleared { cleared: true, index: 5 });
    for head in &claimed.heads[1..] {
        let outcome = step(&*store, "s", head, "a", true, &consumers).await;
        assert_eq!(outcome, CompleteOutcome::Superseded, "position {} after the clear", head.head.index);
    }
    let history = attempts(&*store, "s").await;
    let cleared: Vec<u64> =
        history.iter().filter(|(_, _, o, _)| *o == AttemptOutcome::Cleared).map(|(i, ..)| *i).collect();
    assert_eq!(cleared, vec![2], "the running position's attempt ended with the clear: {history:?}");
    assert!(claim_range(&*store, "s", "a", &consumers, 4).await.heads.is_empty(), "nothing left to run");
    append(&*store, "s", vec![event("after", "tick")], &consumers).await;
    let after = claim_range(&*store, "s", "a", &consumers, 4).await;
    assert_eq!(after.heads.iter().map(|h| (h.head.index, h.attempt)).collect::<Vec<_>>(), vec![(6, 1)]);
}

/// A pause in mid-range lets the running position finish, leases nothing
/// after it, and leaves the cursor for a claim after the resume.
pub async fn pause_mid_range_stops_after_the_running_position(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = [log("c")];
    ready(&*store, "s", 5, &consumers).await;
    let claimed = claim_range(&*store, "s", "a", &consumers, 4).await;
    assert!(holds_next(&step(&*store, "s", &claimed.heads[0], "a", true, &consumers).await));
    let pause = ConsumerPause {
        contract: CONTRACT.into(),
        consumer: "c".into(),
        actor: "ops".into(),
        reason: "incident".into(),
        audit: None,
    };
    store.consumer_pause(pause).await.expect("pause");
    let outcome = step(&*store, "s", &claimed.heads[1], "a", true, &consumers).await;
    assert!(
        matches!(outcome, CompleteOutcome::Completed { holds_next: false, .. }),
        "the running one ends: {outcome:?}"
    );
    let at = cursor(&*store, "s", "c").await;
    assert_eq!((at.next_index, at.status.lease_holder.as_deref()), (3, None), "nothing leased past it");
    assert_eq!(step(&*store, "s", &claimed.heads[2], "a", true, &consumers).await, CompleteOutcome::Superseded);
    assert!(claim_range(&*store, "s", "b", &consumers, 4).await.heads.is_empty(), "paused");
    let resume = ConsumerResume { contract: CONTRACT.into(), consumer: "c".into(), audit: None };
    store.consumer_resume(resume).await.expect("resume");
    let resumed = claim_range(&*store, "s", "b", &consumers, 4).await;
    assert_eq!(
        resumed.heads.iter().map(|h| (h.head.index, h.attempt)).collect::<Vec<_>>(),
        vec![(3, 1), (4, 1), (5, 1)]
    );
}

/// A failure in mid-range backs off that position alone and drops the rest;
/// a renewal of the running position carries the range's lease on.
pub async fn a_failure_or_a_renewal_mid_range_keeps_to_its_position(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [log("c")];
    ready(&*store, "s", 5, &consumers).await;
    let claimed = claim_range(&*store, "s", "a", &consumers, 4).await;
    assert!(holds_next(&step(&*store, "s", &claimed.heads[0], "a", true, &consumers).await));
    clock.advance(TTL / 2);
    let renewed = renew_one(&*store, "s", "a", &claimed.heads[1]).await;
    assert_eq!(renewed.renewed, vec![claimed.heads[1].head.clone()]);
    assert!(holds_next(&step(&*store, "s", &claimed.heads[1], "a", true, &consumers).await));
    let at = cursor(&*store, "s", "c").await;
    assert_eq!(at.status.lease_expires_at, Some(renewed.lease_expires_at), "the renewed lease goes on with the range");
    // Past the claim's first lease, still inside the renewed one.
    clock.advance(TTL / 2 + 1);
    assert!(claim_range(&*store, "s", "b", &consumers, 4).await.heads.is_empty(), "the range is still a's");
    let failed = store.head_fail(fail_params("s", &claimed.heads[2].head, 1)).await.expect("fail");
    assert!(matches!(failed, FailOutcome::Failed { failure_count: 1, .. }), "{failed:?}");
    assert_eq!(step(&*store, "s", &claimed.heads[3], "a", true, &consumers).await, CompleteOutcome::Superseded);
    let at = cursor(&*store, "s", "c").await;
    assert_eq!((at.next_index, at.status.lease_holder.as_deref(), at.status.failure_count), (3, None, 1));
    clock.advance(BACKOFF.max_ms);
    let retried = claim_range(&*store, "s", "b", &consumers, 4).await;
    let got: Vec<(u64, u32, u32)> = retried.heads.iter().map(|h| (h.head.index, h.attempt, h.failure_count)).collect();
    assert_eq!(got, vec![(3, 2, 1), (4, 1, 0), (5, 1, 0)], "the failed position retries; the rest start fresh");
}
