//! The range property: on random logs and random outcomes per attempt
//! (complete, maybe returning events; fail; the holder dies), running a log
//! cursor with range leases ends exactly where running it one position a
//! claim does: the same cursor, attempts, dead letters and appended events.

use std::collections::HashMap;

use a2_store::*;
use proptest::prelude::*;

use crate::property::Harness;
use crate::ranges::claim_range;
use crate::support::*;
use crate::StoreFactory;

#[derive(Debug, Clone, Copy)]
enum Outcome {
    /// Completes, returning this many events (taken ones, so the log grows).
    Complete(u8),
    Fail,
    /// Its holder dies: the lease lapses.
    Lapse,
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        6 => (0u8..3).prop_map(|n| Outcome::Complete(n.saturating_sub(1))),
        2 => Just(Outcome::Fail),
        1 => Just(Outcome::Lapse),
    ]
}

#[derive(Debug, Clone)]
struct History {
    /// Whether each event of the first append is of a type the cursor takes.
    taken: Vec<bool>,
    /// What each attempt of each of those events does (later attempts complete).
    script: Vec<Vec<Outcome>>,
    range: u32,
}

fn history() -> impl Strategy<Value = History> {
    (1usize..14).prop_flat_map(|n| {
        (
            proptest::collection::vec(prop_oneof![4 => Just(true), 1 => Just(false)], n),
            proptest::collection::vec(proptest::collection::vec(outcome(), 0..12), n),
            2u32..6,
        )
            .prop_map(|(taken, script, range)| History { taken, script, range })
    })
}

pub fn range_leases_match_single_leases_on_random_histories(factory: &dyn StoreFactory) {
    let h = Harness::open(factory);
    // Each case drives two sessions to their end: a quarter of the other properties' cases.
    let cases = (crate::property::cases() / 4).max(16);
    let (store, clock) = (&*h.store, &*h.clock);
    h.check("range", cases, &history(), |case, history| {
        Box::pin(async move { compare(store, clock, case, &history).await })
    });
}

async fn compare(store: &dyn Store, clock: &ManualClock, case: u64, history: &History) -> Result<(), String> {
    let single = drive(store, clock, &format!("r{case}-single"), history, 1).await?;
    let ranged = drive(store, clock, &format!("r{case}-range"), history, history.range).await?;
    if single != ranged {
        return Err(format!("range {} ended elsewhere:\n  single {single:?}\n  ranged {ranged:?}", history.range));
    }
    Ok(())
}

/// Where a session ended: its cursor, attempts, dead letters and events.
#[derive(Debug, PartialEq)]
struct Ended {
    cursor: (u64, u32, u32, bool),
    attempts: Vec<(u64, u32, AttemptOutcome, Vec<String>)>,
    letters: Vec<(u64, u32)>,
    events: Vec<(u64, String, String)>,
}

async fn drive(
    store: &dyn Store,
    clock: &ManualClock,
    session: &str,
    history: &History,
    range: u32,
) -> Result<Ended, String> {
    let consumers = [log("c").with_types(&["tick"])];
    let e = |error: StoreError| format!("{session}: {error}");
    store.cursor_wake(CursorWake { session: key(session), consumer: consumers[0].clone() }).await.map_err(e)?;
    let events = history
        .taken
        .iter()
        .enumerate()
        .map(|(i, taken)| event(&format!("e{i}"), if *taken { "tick" } else { "tock" }))
        .collect();
    append(store, session, events, &consumers).await;
    let plan: HashMap<String, &Vec<Outcome>> =
        history.script.iter().enumerate().map(|(i, outcomes)| (format!("e{i}"), outcomes)).collect();
    for round in 0..400 {
        // Every lease lapses and every backoff passes between claims.
        clock.advance(TTL + BACKOFF.max_ms);
        let holder = format!("h{round}");
        let claimed = claim_range(store, session, &holder, &consumers, range).await;
        if claimed.heads.is_empty() && claimed.exhausted.is_empty() {
            return ended(store, session).await;
        }
        for (i, head) in claimed.heads.iter().enumerate() {
            let scripted = plan.get(&head.event.id).and_then(|o| o.get(head.attempt as usize - 1)).copied();
            match scripted.unwrap_or(Outcome::Complete(0)) {
                Outcome::Complete(returns) => {
                    let returned = (0..returns)
                        .map(|j| event(&format!("ret-{}-{}-{j}", head.event.id, head.attempt), "tick"))
                        .collect();
                    let params = HeadComplete {
                        session: key(session),
                        head: head.head.clone(),
                        attempt: head.attempt,
                        events: returned,
                        consumers: consumers.to_vec(),
                        holder: Some(holder.clone()),
                        lease_next: i + 1 < claimed.heads.len(),
                    };
                    let outcome = store.head_complete(params).await.map_err(e)?;
                    match outcome {
                        CompleteOutcome::Completed { holds_next: true, .. } => continue,
                        CompleteOutcome::Completed { .. } if i + 1 == claimed.heads.len() => break,
                        other => return Err(format!("{session}: {} ended its range: {other:?}", head.head)),
                    }
                }
                Outcome::Fail => {
                    store.head_fail(fail_params(session, &head.head, head.attempt)).await.map_err(e)?;
                    break;
                }
                Outcome::Lapse => break,
            }
        }
    }
    Err(format!("{session}: no end after 400 claims"))
}

async fn ended(store: &dyn Store, session: &str) -> Result<Ended, String> {
    let e = |error: StoreError| format!("{session}: {error}");
    let heads = store.head_list(&key(session)).await.map_err(e)?;
    let cursor = heads.iter().find(|h| h.consumer == "c").ok_or(format!("{session}: no cursor"))?;
    let mut attempts: Vec<_> = store
        .attempt_list(attempts_of(session, 10_000))
        .await
        .map_err(e)?
        .into_iter()
        .map(|a| (a.index, a.attempt, a.outcome, a.appended))
        .collect();
    attempts.sort_by_key(|(index, attempt, _, _)| (*index, *attempt));
    let letters = DeadLetterList { session: Some(key(session)), limit: 100, ..Default::default() };
    let letters =
        store.dead_letter_list(letters).await.map_err(e)?.into_iter().map(|l| (l.index, l.failure_count)).collect();
    let list = EventList { session: key(session), after: None, before: None, limit: 10_000, newest_first: false };
    let events =
        store.event_list(list).await.map_err(e)?.into_iter().map(|ev| (ev.index, ev.id, ev.event_type)).collect();
    Ok(Ended {
        cursor: (cursor.next_index, cursor.status.attempt_count, cursor.status.failure_count, cursor.status.dead()),
        attempts,
        letters,
        events,
    })
}
