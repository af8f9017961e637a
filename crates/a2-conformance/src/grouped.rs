//! Log completions grouped across sessions: a store may settle and append
//! many sessions' completions in one statement, but each keeps its own fence,
//! its own outcome and its own session's dense indexes — under concurrency
//! with external appends, and when one of them cannot be taken.

use std::time::Duration;

use a2_store::*;

use crate::store::complete;
use crate::support::*;
use crate::StoreFactory;

/// Every session's cursor claimed by one holder, its current attempt.
async fn claim_cursors(store: &dyn Store, sessions: &[String], consumers: &[StoreConsumer]) -> Vec<(HeadRef, u32)> {
    let mut held = Vec::new();
    for session in sessions {
        let claimed = claim(store, session, "a", consumers).await;
        let cursor = claimed.heads.iter().find(|h| h.head.consumer == "c").expect("the cursor is claimed");
        held.push((cursor.head.clone(), cursor.attempt));
    }
    held
}

/// One completion among many returns a partial duplicate (an id already in
/// its session beside a new one): it alone is refused, typed, writing
/// nothing; a whole re-append is idempotent; every neighbour completes and
/// appends its own event in its own session.
pub async fn a_conflicting_completion_fails_alone(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = vec![log("c")];
    let sessions: Vec<String> = (0..12).map(|s| format!("s{s:02}")).collect();
    for session in &sessions {
        store.cursor_wake(CursorWake { session: key(session), consumer: log("c") }).await.expect("wake");
        append(&*store, session, vec![event(&format!("{session}-e1"), "tick")], &consumers).await;
    }
    let held = claim_cursors(&*store, &sessions, &consumers).await;
    let returned = |s: usize, session: &str| match s {
        3 => vec![event(&format!("{session}-e1"), "tick"), event(&format!("{session}-new"), "tock")],
        5 => vec![event(&format!("{session}-e1"), "tick")],
        _ => vec![event(&format!("{session}-by-c"), "tock")],
    };
    let tasks: Vec<_> = sessions
        .iter()
        .zip(&held)
        .enumerate()
        .map(|(s, (session, (head, attempt)))| {
            let (store, session) = (store.clone(), session.clone());
            let params = complete(&session, head, *attempt, returned(s, &session), &consumers);
            tokio::spawn(async move { (s, session, store.head_complete(params).await) })
        })
        .collect();
    for task in tasks {
        let (s, session, outcome) = task.await.expect("completer task");
        match (s, outcome) {
            (3, Err(StoreError::PartialDuplicateBatch { ids, .. })) => {
                assert!(ids.contains(&format!("{session}-e1")), "{session}: the id already there is named: {ids}")
            }
            (3, other) => panic!("{session}: a partial duplicate must be refused, got {other:?}"),
            (5, Ok(CompleteOutcome::Completed { appended, .. })) => {
                assert!(appended.is_empty(), "{session}: a whole re-append appends nothing: {appended:?}")
            }
            (_, Ok(CompleteOutcome::Completed { appended, .. })) => {
                let got: Vec<(&str, &str)> = appended.iter().map(|e| (e.id.as_str(), e.session.as_str())).collect();
                let want = format!("{session}-by-c");
                assert_eq!(got, vec![(want.as_str(), key(&session).as_str())], "{session}: its own event");
            }
            (_, other) => panic!("{session}: a neighbour of the conflict must complete, got {other:?}"),
        }
    }
    for (s, session) in sessions.iter().enumerate() {
        let listed = store
            .event_list(EventList { session: key(session), after: None, before: None, limit: 100, newest_first: false })
            .await
            .expect("events");
        let ids: Vec<&str> = listed.iter().map(|e| e.id.as_str()).collect();
        let first = format!("{session}-e1");
        let mut want = vec![first.as_str()];
        let own = format!("{session}-by-c");
        if s != 3 && s != 5 {
            want.push(own.as_str());
        }
        assert_eq!(ids, want, "{session}: what its completion appended, once");
        let heads = store.head_list(&key(session)).await.expect("heads");
        let cursor = heads.iter().find(|h| h.consumer == "c").expect("the cursor");
        // The refused completion wrote nothing: its attempt still holds position 1.
        let want_next = if s == 3 { 1 } else { 2 };
        assert_eq!(cursor.next_index, want_next, "{session}: where the cursor stands");
    }
}

/// Many rounds of completions that append, in many sessions at once and in
/// opposite orders, beside external appends to the same sessions: every call
/// answers (none waits on another for good), each completion lands once, and
/// every session's log stays dense.
pub async fn grouped_log_completions_never_deadlock(factory: &dyn StoreFactory) {
    const SESSIONS: usize = 24;
    const ROUNDS: usize = 6;
    let (store, _) = open(factory).await;
    let consumers = vec![log("c")];
    let sessions: Vec<String> = (0..SESSIONS).map(|s| format!("s{s:02}")).collect();
    for session in &sessions {
        store.cursor_wake(CursorWake { session: key(session), consumer: log("c") }).await.expect("wake");
        let events = (1..=ROUNDS).map(|i| event(&format!("{session}-e{i}"), "tick")).collect();
        append(&*store, session, events, &consumers).await;
    }
    for round in 0..ROUNDS {
        let held = claim_cursors(&*store, &sessions, &consumers).await;
        let mut order: Vec<usize> = (0..SESSIONS).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        let mut tasks = Vec::new();
        for &s in &order {
            let (store, session) = (store.clone(), sessions[s].clone());
            let (head, attempt) = held[s].clone();
            assert_eq!(head.index, round as u64 + 1, "{session}: the cursor stands on this round's event");
            let returned = vec![event(&format!("{session}-r{round}"), "tock")];
            let params = complete(&session, &head, attempt, returned, &consumers);
            tasks.push(tokio::spawn(async move {
                match store.head_complete(params).await.expect("a grouped completion") {
                    CompleteOutcome::Completed { appended, .. } => assert_eq!(appended.len(), 1, "{session}"),
                    CompleteOutcome::Superseded => panic!("{session}: the current attempt was refused"),
                }
            }));
        }
        // External appends to the same sessions, in the other order, while the completions flush.
        for &s in order.iter().rev() {
            let store = store.clone();
            let session = sessions[s].clone();
            let consumers = consumers.clone();
            tasks.push(tokio::spawn(async move {
                let events = vec![event(&format!("{session}-x{round}"), "tock")];
                let params = EventAppend { session: key(&session), events, consumers, origin_index: None };
                store.event_append(params).await.expect("an external append");
            }));
        }
        let all = async {
            for task in tasks {
                task.await.expect("round task");
            }
        };
        tokio::time::timeout(Duration::from_secs(60), all)
            .await
            .unwrap_or_else(|_| panic!("round {round}: completions and appends waited on each other for a minute"));
    }
    for session in &sessions {
        let listed = store
            .event_list(EventList { session: key(session), after: None, before: None, limit: 500, newest_first: false })
            .await
            .expect("events");
        let indexes: Vec<u64> = listed.iter().map(|e| e.index).collect();
        assert_eq!(indexes, (1..=(3 * ROUNDS) as u64).collect::<Vec<_>>(), "{session}: dense, nothing lost");
        let heads = store.head_list(&key(session)).await.expect("heads");
        let cursor = heads.iter().find(|h| h.consumer == "c").expect("the cursor");
        assert_eq!(cursor.next_index, ROUNDS as u64 + 1, "{session}: one move a completion");
    }
}
