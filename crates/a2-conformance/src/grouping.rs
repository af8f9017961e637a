//! Group commit's promises: appends that share a transaction or a statement
//! stay atomic each, and each keeps its own outcome — a duplicate, an
//! invalid batch or a conflict fails that append alone, never its neighbours.

use std::sync::Arc;

use a2_store::*;

use crate::support::*;
use crate::StoreFactory;

/// Appends of 1 to 4 events each (with targets and a log cursor), from many
/// tasks at once, many sessions and several appends a session: every append
/// lands whole, contiguous, in its session's dense index order.
pub async fn concurrent_appends_are_each_atomic(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = vec![StoreConsumer::log("ledger", "main"), StoreConsumer::targeted("charger")];
    let mut tasks = Vec::new();
    for writer in 0..48 {
        let (store, consumers) = (store.clone(), consumers.clone());
        tasks.push(tokio::spawn(async move {
            let session = format!("s{}", writer % 12);
            let size = 1 + writer % 4;
            let events = (0..size)
                .map(|n| targeted(&format!("w{writer}-e{n}"), "tick", &[("charger", None)]))
                .collect::<Vec<_>>();
            let appended = store
                .event_append(EventAppend { session: key(&session), events, consumers })
                .await
                .expect("a concurrent append");
            (session, writer, size, appended)
        }));
    }
    let mut by_session: std::collections::BTreeMap<String, Vec<(u64, u64)>> = Default::default();
    for task in tasks {
        let (session, writer, size, appended) = task.await.expect("appender task");
        assert_eq!(appended.events.len(), size, "writer {writer}: every event of its append");
        let indexes: Vec<u64> = appended.events.iter().map(|e| e.index).collect();
        let first = indexes[0];
        assert_eq!(
            indexes,
            (first..first + size as u64).collect::<Vec<_>>(),
            "writer {writer}'s events are contiguous"
        );
        assert!(appended.head >= first + size as u64 - 1);
        by_session.entry(session).or_default().push((first, size as u64));
    }
    for (session, mut spans) in by_session {
        spans.sort_unstable();
        let mut next = 1;
        for (first, size) in &spans {
            assert_eq!(*first, next, "session {session}: appends tile the log without gaps or overlaps");
            next += size;
        }
        let listed = store
            .event_list(EventList {
                session: key(&session),
                after: None,
                before: None,
                limit: 500,
                newest_first: false,
            })
            .await
            .expect("list");
        assert_eq!(listed.len() as u64, next - 1, "session {session}: the store holds what was acknowledged");
        let heads = store.head_list(&key(&session)).await.expect("heads");
        let targeted = heads.iter().filter(|h| h.consumer == "charger").count() as u64;
        assert_eq!(targeted, next - 1, "session {session}: a head for every targeted event");
        assert!(heads.iter().any(|h| h.consumer == "ledger"), "session {session}: the log cursor exists");
    }
}

/// While many good appends run, some fail on their own: a partial
/// duplicate and an id repeated in one batch. Each fails alone, with its own
/// error; every neighbour lands.
pub async fn a_failing_append_does_not_fail_its_batch(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    append(&*store, "taken", vec![event("a", "tick")], &[]).await;
    let store: Arc<dyn Store> = store;
    for round in 0..4 {
        let mut tasks = Vec::new();
        for writer in 0..24 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let (session, events) = match writer {
                    // An id already in the session beside a new one: refused whole.
                    5 => ("taken".to_owned(), vec![event("a", "tick"), event(&format!("r{round}-new"), "tick")]),
                    // One id twice in a batch: refused.
                    11 => (format!("dup-{round}"), vec![event("x", "tick"), event("x", "tick")]),
                    _ => (format!("ok-{writer}"), vec![event(&format!("r{round}-w{writer}"), "tick")]),
                };
                (writer, store.event_append(EventAppend { session: key(&session), events, consumers: vec![] }).await)
            }));
        }
        for task in tasks {
            let (writer, outcome) = task.await.expect("appender task");
            match writer {
                5 | 11 => {
                    let error = outcome.expect_err("a bad append fails");
                    assert_eq!(error.code(), "PARTIAL_DUPLICATE_BATCH", "writer {writer}: {error}");
                }
                _ => {
                    let appended = outcome.unwrap_or_else(|e| panic!("writer {writer}'s good append failed: {e}"));
                    assert_eq!(appended.head, round + 1, "writer {writer}: its own session's next index");
                }
            }
        }
    }
    let taken = store.session_get(&key("taken")).await.expect("get").expect("exists");
    assert_eq!(taken.head, 1, "nothing of a refused append was written");
    for round in 0..4 {
        assert!(store.session_get(&key(&format!("dup-{round}"))).await.expect("get").is_none_or(|s| s.head == 0));
    }
    for writer in (0..24).filter(|w| ![5, 11].contains(w)) {
        let summary = store.session_get(&key(&format!("ok-{writer}"))).await.expect("get").expect("exists");
        assert_eq!(summary.head, 4, "ok-{writer}: all four rounds landed");
    }
}
