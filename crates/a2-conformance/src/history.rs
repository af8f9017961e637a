//! Attempt history: every way an attempt can end is recorded once, in the
//! transaction of its outcome, read back by head and by session in both
//! directions, kept within its retention, and dead letters group by cause.

use a2_store::*;

use crate::store::{complete, fail_until_dead};
use crate::support::*;
use crate::StoreFactory;

fn list(session: &str, consumer: Option<&str>, index: Option<u64>, oldest_first: bool) -> AttemptList {
    AttemptList {
        session: key(session),
        consumer: consumer.map(str::to_owned),
        index,
        after: None,
        oldest_first,
        limit: 100,
    }
}

async fn attempts(store: &dyn Store, params: AttemptList) -> Vec<Attempt> {
    store.attempt_list(params).await.expect("attempt list")
}

/// `(index, attempt, outcome)` of each attempt, in the list's order.
fn shape(attempts: &[Attempt]) -> Vec<(u64, u32, AttemptOutcome)> {
    attempts.iter().map(|a| (a.index, a.attempt, a.outcome)).collect()
}

/// Claim `consumer`'s one runnable head for `holder`.
async fn claim_one(store: &dyn Store, session: &str, holder: &str, consumer: &StoreConsumer) -> ClaimedHead {
    let mut claimed = claim(store, session, holder, std::slice::from_ref(consumer)).await;
    assert_eq!(claimed.heads.len(), 1, "one head of '{}' to claim: {claimed:?}", consumer.name);
    claimed.heads.remove(0)
}

/// Completed (with what it appended, and in a batch), failed, aborted,
/// lapsed, superseded and cleared: each recorded with its holder, its start
/// at the claim and its end at the outcome, on the store's clock.
pub async fn attempt_history_records_every_outcome(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let (c, t) = (log("c"), StoreConsumer::targeted("t"));
    let consumers = [c.clone(), t.clone()];
    store.cursor_wake(CursorWake { session: key("s"), consumer: c.clone() }).await.expect("wake");
    let events = vec![targeted("s-1", "tick", &[("t", None)]), event("s-2", "tick")];
    append(&*store, "s", events, &consumers).await;

    // Completed with an appended event (one transaction), then a batch completion.
    let started = clock.now_ms();
    let first = claim_one(&*store, "s", "w1", &c).await;
    clock.advance(250);
    let returned = vec![event("s-r1", "tock")];
    let done = store.head_complete(complete("s", &first.head, first.attempt, returned, &consumers)).await;
    assert!(matches!(done, Ok(CompleteOutcome::Completed { .. })), "{done:?}");
    clock.advance(10);
    let batch = claim_one(&*store, "s", "w1", &t).await;
    clock.advance(40);
    let settled = store
        .head_complete_many(HeadCompleteMany {
            session: key("s"),
            heads: vec![HeldHead { head: batch.head.clone(), attempt: batch.attempt }],
        })
        .await
        .expect("complete many");
    assert_eq!(settled, vec![batch.head.clone()]);

    let c1 = attempts(&*store, list("s", Some("c"), Some(1), false)).await;
    assert_eq!(c1.len(), 1, "{c1:?}");
    assert_eq!(c1[0].outcome, AttemptOutcome::Completed);
    assert_eq!((c1[0].started_at, c1[0].ended_at), (Some(started), started + 250));
    assert_eq!(c1[0].holder.as_deref(), Some("w1"));
    assert_eq!(c1[0].appended, vec!["s-r1".to_owned()]);
    assert_eq!(c1[0].error, None);
    let t1 = attempts(&*store, list("s", Some("t"), None, false)).await;
    assert_eq!(shape(&t1), vec![(1, 1, AttemptOutcome::Completed)]);
    assert_eq!((t1[0].started_at, t1[0].ended_at), (Some(started + 260), started + 300));
    assert!(t1[0].appended.is_empty());

    // Failed, then aborted: the error is kept whole.
    clock.advance(100);
    let second = claim_one(&*store, "s", "w1", &c).await;
    assert_eq!(second.head.index, 2);
    clock.advance(5);
    let mut failing = fail_params("s", &second.head, second.attempt);
    failing.error = "card declined\ncaused by: gateway said no".into();
    assert!(matches!(store.head_fail(failing).await, Ok(FailOutcome::Failed { .. })));
    clock.advance(BACKOFF.max_ms);
    let third = claim_one(&*store, "s", "w1", &c).await;
    let aborting = HeadFail { aborted: true, ..fail_params("s", &third.head, third.attempt) };
    assert!(matches!(store.head_fail(aborting).await, Ok(FailOutcome::Failed { .. })));

    // Lapsed: a claim takes the head over after the lease ran out; the old
    // attempt's late completion then supersedes its lapse, and changes nothing.
    clock.advance(BACKOFF.max_ms);
    let fourth = claim_one(&*store, "s", "w1", &c).await;
    clock.advance(TTL + 1);
    let fifth = claim_one(&*store, "s", "w2", &c).await;
    assert_eq!(fifth.attempt, fourth.attempt + 1);
    let lapsed = attempts(&*store, list("s", Some("c"), Some(2), false)).await;
    assert_eq!(lapsed[0].outcome, AttemptOutcome::Lapsed);
    assert_eq!(lapsed[0].holder.as_deref(), Some("w1"));
    assert_eq!(lapsed[0].ended_at, fourth.lease_expires_at, "a lapse ends when its lease did");
    clock.advance(20);
    let late = store.head_complete(complete("s", &fourth.head, fourth.attempt, Vec::new(), &consumers)).await;
    assert_eq!(late.expect("late complete"), CompleteOutcome::Superseded);

    // Cleared: the running fifth attempt ends with the clear.
    clock.advance(20);
    let cleared =
        store.session_clear(SessionClear { session: key("s"), if_last_index: None, audit: None, settles: None }).await;
    assert!(cleared.expect("clear").cleared);

    let c2 = attempts(&*store, list("s", Some("c"), Some(2), false)).await;
    assert_eq!(
        shape(&c2),
        vec![
            (2, 4, AttemptOutcome::Cleared),
            (2, 3, AttemptOutcome::Superseded),
            (2, 2, AttemptOutcome::Aborted),
            (2, 1, AttemptOutcome::Failed),
        ],
        "newest first: {c2:?}"
    );
    assert_eq!(c2[0].holder.as_deref(), Some("w2"));
    assert_eq!(c2[1].holder.as_deref(), Some("w1"), "the superseded attempt keeps what its lapse knew");
    assert_eq!(c2[1].started_at, Some(fourth.lease_expires_at - TTL));
    assert_eq!(c2[3].error.as_deref(), Some("card declined\ncaused by: gateway said no"));
    assert_eq!(c2[2].error.as_deref(), Some(format!("boom at attempt {}", third.attempt).as_str()));

    // The whole session, both ways, keyset paged.
    let newest = attempts(&*store, list("s", None, None, false)).await;
    assert_eq!(newest.len(), 6, "{newest:?}");
    let mut oldest = attempts(&*store, list("s", None, None, true)).await;
    oldest.reverse();
    assert_eq!(oldest, newest);
    let mut paged = Vec::new();
    let mut after = None;
    loop {
        let page =
            attempts(&*store, AttemptList { after: after.clone(), limit: 4, ..list("s", None, None, true) }).await;
        let Some(last) = page.last() else { break };
        after = Some(last.key());
        paged.extend(page);
    }
    paged.reverse();
    assert_eq!(paged, newest);
    assert!(attempts(&*store, list("elsewhere", None, None, false)).await.is_empty());

    // A dead letter's attempts are all there, the last one failed.
    append_n(&*store, "d", 1, std::slice::from_ref(&c)).await;
    let dead = fail_until_dead(&*store, &clock, "d", std::slice::from_ref(&c), "c").await;
    let history = attempts(&*store, list("d", Some("c"), Some(dead.index), false)).await;
    assert_eq!(history.len(), 10);
    assert!(history.iter().all(|a| a.outcome == AttemptOutcome::Failed));
    assert_eq!(history.iter().map(|a| a.attempt).collect::<Vec<_>>(), (1..=10).rev().collect::<Vec<_>>());

    // Throughput: completions and failures (failed, aborted, lapsed) per consumer and bucket.
    let rates = store
        .attempt_rates(AttemptRates { contract: Some(CONTRACT.into()), since: 0, bucket_ms: 60_000, kept: false })
        .await;
    let rates = rates.expect("rates");
    let sum = |consumer: &str, pick: fn(&AttemptRate) -> u64| -> u64 {
        rates.iter().filter(|r| r.consumer == consumer).map(pick).sum()
    };
    assert_eq!((sum("c", |r| r.completed), sum("c", |r| r.failed)), (1, 12), "{rates:?}");
    assert_eq!((sum("t", |r| r.completed), sum("t", |r| r.failed)), (1, 0));
    assert!(rates.iter().all(|r| r.bucket_start % 60_000 == 0 && r.contract == CONTRACT));
    assert!(rates.windows(2).all(|w| w[0].bucket_start <= w[1].bucket_start), "oldest bucket first");
    let recent = AttemptRates { contract: None, since: clock.now_ms() + 1, bucket_ms: 60_000, kept: false };
    assert!(store.attempt_rates(recent).await.expect("rates").is_empty());
    let elsewhere = AttemptRates { contract: Some("elsewhere".into()), since: 0, bucket_ms: 60_000, kept: false };
    assert!(store.attempt_rates(elsewhere).await.expect("rates").is_empty());
}

/// Fail a head `n` times, redriving it whenever it dies.
async fn fail_times(store: &dyn Store, clock: &ManualClock, session: &str, consumer: &StoreConsumer, n: usize) {
    for _ in 0..n {
        clock.advance(BACKOFF.max_ms);
        let mut claimed = claim(store, session, "h", std::slice::from_ref(consumer)).await;
        if claimed.heads.is_empty() {
            let redrive = DeadLetterRedrive {
                session: key(session),
                consumer: consumer.name.clone(),
                index: 1,
                action: RedriveAction::Retry,
                audit: None,
            };
            assert!(store.dead_letter_redrive(redrive).await.expect("redrive"));
            claimed = claim(store, session, "h", std::slice::from_ref(consumer)).await;
        }
        let head = claimed.heads.first().expect("a head to fail");
        store.head_fail(fail_params(session, &head.head, head.attempt)).await.expect("fail");
    }
}

/// Pruning keeps a head's newest attempts and every attempt of a dead
/// letter, walks the contract a page of sessions at a time, and leaves other
/// contracts alone.
pub async fn attempt_history_is_pruned_by_retention(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let c = log("c");
    for session in ["a-live", "b-dead", "c-once"] {
        append_n(&*store, session, 1, std::slice::from_ref(&c)).await;
    }
    fail_times(&*store, &clock, "a-live", &c, 25).await;
    fail_times(&*store, &clock, "b-dead", &c, 30).await;
    fail_times(&*store, &clock, "c-once", &c, 1).await;
    let count = |session: &'static str| {
        let store = store.clone();
        async move { attempts(&*store, list(session, None, None, false)).await }
    };
    assert_eq!(count("a-live").await.len(), 25);
    assert_eq!(count("b-dead").await.len(), 30);

    let mut after = None;
    let mut pruned = 0;
    let mut calls = 0;
    loop {
        let params = AttemptPrune { contract: CONTRACT.into(), after: after.clone(), sessions: 1, keep: 20 };
        let page = store.attempt_prune(params).await.expect("prune");
        pruned += page.pruned;
        calls += 1;
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
        assert!(calls < 10, "the prune walk did not end");
    }
    assert!(calls >= 3, "one session a call: {calls}");
    assert_eq!(pruned, 5);
    let live = count("a-live").await;
    assert_eq!(live.iter().map(|a| a.attempt).collect::<Vec<_>>(), (6..=25).rev().collect::<Vec<_>>());
    assert_eq!(count("b-dead").await.len(), 30, "a dead letter keeps its whole history");
    assert_eq!(count("c-once").await.len(), 1);

    let again = AttemptPrune { contract: CONTRACT.into(), after: None, sessions: 100, keep: 20 };
    assert_eq!(store.attempt_prune(again).await.expect("prune").pruned, 0);
    let other = AttemptPrune { contract: "elsewhere".into(), after: None, sessions: 100, keep: 1 };
    assert_eq!(store.attempt_prune(other).await.expect("prune"), AttemptPruned::default());
}

/// Dead letters that failed the same way (numbers and ids aside) form one
/// group, largest first, with its span and a sample; the list filters by cause.
pub async fn dead_letters_group_by_cause(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let c = log("c");
    let errors = [
        ("s1", "order 17 declined"),
        ("s2", "order 4 declined"),
        ("s3", "timeout after 30s"),
        ("s4", "order 9 declined"),
    ];
    for (session, error) in errors {
        append_n(&*store, session, 1, std::slice::from_ref(&c)).await;
        for _ in 0..10 {
            clock.advance(BACKOFF.max_ms);
            let claimed = claim(&*store, session, "h", std::slice::from_ref(&c)).await;
            let head = claimed.heads.first().expect("a head to fail");
            let fail = HeadFail { error: error.into(), ..fail_params(session, &head.head, head.attempt) };
            store.head_fail(fail).await.expect("fail");
        }
    }
    let groups = store.dead_letter_groups(DeadLetterGroups::default()).await.expect("groups");
    let summary: Vec<(&str, &str, u64)> =
        groups.iter().map(|g| (g.consumer.as_str(), g.cause.as_str(), g.count)).collect();
    assert_eq!(summary, vec![("c", "order <n> declined", 3), ("c", "timeout after <n>s", 1)]);
    assert!(groups.iter().all(|g| !g.partial), "every dead letter was read");
    // A bound read: the first three dead letters in key order (s1, s2, s3), said to be partial.
    let bounded = store.dead_letter_groups(DeadLetterGroups { scan: 3, ..Default::default() }).await.expect("groups");
    let summary: Vec<(&str, u64, bool)> = bounded.iter().map(|g| (g.cause.as_str(), g.count, g.partial)).collect();
    assert_eq!(summary, vec![("order <n> declined", 2, true), ("timeout after <n>s", 1, true)]);
    let declined = &groups[0];
    assert_eq!(declined.contract, CONTRACT);
    assert!(declined.first_failed_at < declined.last_failed_at);
    assert!(declined.sample_error.ends_with("declined"), "{declined:?}");
    assert_eq!(
        declined.sample,
        HeadKey { session: key("s1"), consumer: "c".into(), lane: Some("main".into()), index: 1 }
    );

    let members = DeadLetterList { cause: Some(declined.cause.clone()), limit: 10, ..Default::default() };
    let members = store.dead_letter_list(members).await.expect("list");
    let sessions: Vec<&str> = members.iter().map(|d| d.session_id.as_str()).collect();
    assert_eq!(sessions, vec!["s1", "s2", "s4"]);
    let elsewhere = DeadLetterGroups { contract: Some("elsewhere".into()), ..Default::default() };
    assert!(store.dead_letter_groups(elsewhere).await.expect("groups").is_empty());

    // A redriven dead letter leaves its group.
    let redrive = DeadLetterRedrive {
        session: key("s3"),
        consumer: "c".into(),
        index: 1,
        action: RedriveAction::Skip,
        audit: None,
    };
    assert!(store.dead_letter_redrive(redrive).await.expect("redrive"));
    let groups = store.dead_letter_groups(DeadLetterGroups::default()).await.expect("groups");
    assert_eq!(groups.len(), 1);
}
