//! Failures: backoff, dead letters after ten, lapses counted, what a dead head blocks, and redrive.

use a2_store::*;

use crate::store::*;
use crate::support::*;
use crate::StoreFactory;

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
    // The seeds leave it empty when every failure was a lapse (an error was invented here before).
    assert_eq!(letters[0].last_error, None);
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
