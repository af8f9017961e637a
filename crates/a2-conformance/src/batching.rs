//! Group commit's promises: appends that share a transaction or a statement
//! stay atomic each, and each keeps its own outcome — a duplicate, an
//! invalid batch or a conflict fails that append alone, never its neighbours.

use std::sync::Arc;

use a2_store::*;

use crate::store::complete;
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
                .event_append(EventAppend { session: key(&session), events, consumers, origin_index: None })
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

/// Appends to many sessions at once (new ones, and ones with a log and a
/// clear boundary already) that share transactions and statements: payloads
/// and causes come back exactly as given, a new log cursor starts after the
/// session's head before its append (after the boundary when it backfills),
/// and an idempotent re-append among them answers with the stored events.
pub async fn grouped_appends_keep_payloads_and_cursors(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    for s in 0..8 {
        let old = format!("old-{s}");
        append_n(&*store, &old, 2, &[]).await;
        let clear = SessionClear { session: key(&old), if_last_index: Some(2), audit: None, settles: None };
        assert!(store.session_clear(clear).await.expect("clear").cleared);
        append(&*store, &old, vec![event(&format!("{old}-third"), "tick")], &[]).await;
        append(&*store, &format!("again-{s}"), vec![event(&format!("again-{s}-e"), "tick")], &[]).await;
    }
    let consumers = vec![StoreConsumer::log("late", "main"), StoreConsumer::log("audit", "main").backfilling()];
    let payload = |s: usize| {
        serde_json::json!({
            "big": u64::MAX, "low": i64::MIN, "ratio": 0.1, "whole": 1.0, "text": format!("é \u{1F600} \"q\" \\ {s}"),
            "list": [null, true, "x", {"deep": [1, 2.5]}], "none": null,
        })
    };
    // Two waves: fresh appends alone (they share statements), then with re-appends among them (an id
    // already present fails a shared statement, and each append of it runs again alone).
    let mut tasks = Vec::new();
    for wave in ["new", "again"] {
        let mut wave_tasks = Vec::new();
        for s in 0..8usize {
            let sessions = if wave == "new" {
                vec![format!("new-{s}"), format!("old-{s}")]
            } else {
                vec![format!("again-{s}"), format!("late-{s}")]
            };
            for session in sessions {
                let (store, consumers) = (store.clone(), consumers.clone());
                let events = if session.starts_with("again") {
                    vec![event(&format!("{session}-e"), "tick")]
                } else {
                    let cause = Cause {
                        consumer: "up".into(),
                        lane: Some("l".into()),
                        index: 7,
                        attempt: 2,
                        batch_size: Some(3),
                    };
                    vec![
                        NewEvent { payload: payload(s), cause: Some(cause), ..event(&format!("{session}-a"), "tick") },
                        NewEvent {
                            payload: serde_json::json!("just a string"),
                            ..event(&format!("{session}-b"), "tick")
                        },
                    ]
                };
                wave_tasks.push(tokio::spawn(async move {
                    let sent = events.clone();
                    let appended = store
                        .event_append(EventAppend { session: key(&session), events, consumers, origin_index: None })
                        .await
                        .unwrap_or_else(|e| panic!("{session}: {e}"));
                    (session, sent, appended)
                }));
            }
        }
        for task in wave_tasks {
            tasks.push(task.await.expect("appender task"));
        }
    }
    for (session, sent, appended) in tasks {
        let first = if session.starts_with("old") { 4 } else { 1 };
        assert_eq!(appended.duplicate, session.starts_with("again"), "{session}: a re-append is a duplicate");
        let listed = store
            .event_list(EventList { session: key(&session), after: None, before: None, limit: 10, newest_first: false })
            .await
            .expect("list");
        let listed: Vec<&Event> = listed.iter().filter(|e| e.index >= first).collect();
        assert_eq!(listed.len(), sent.len(), "{session}: the appended events are stored");
        for ((stored, sent), returned) in listed.iter().zip(&sent).zip(&appended.events) {
            assert_eq!((stored.index, &stored.id), (returned.index, &returned.id), "{session}: as acknowledged");
            assert_eq!(stored.payload, sent.payload, "{session}: the payload comes back exactly");
            assert_eq!(stored.cause, sent.cause, "{session}: the cause comes back exactly");
        }
        if session.starts_with("again") {
            continue;
        }
        let heads = store.head_list(&key(&session)).await.expect("heads");
        let next = |consumer: &str| heads.iter().find(|h| h.consumer == consumer).map(|h| h.next_index);
        let (late, audit) = if first == 1 { (1, 1) } else { (4, 3) };
        assert_eq!(next("late"), Some(late), "{session}: a new cursor starts after the head before the append");
        assert_eq!(next("audit"), Some(audit), "{session}: a backfilling cursor starts after the clear boundary");
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
                (
                    writer,
                    store
                        .event_append(EventAppend {
                            session: key(&session),
                            events,
                            consumers: vec![],
                            origin_index: None,
                        })
                        .await,
                )
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

/// Completions from many sessions at once, some of them stale: a store that
/// settles them together (one transaction, one statement) still answers
/// each request with its own heads, fenced by its own attempts.
pub async fn concurrent_completions_are_each_fenced(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = vec![log("c"), StoreConsumer::targeted("par")];
    let sessions: Vec<String> = (0..12).map(|s| format!("s{s}")).collect();
    let mut requests = Vec::new();
    for session in &sessions {
        store.cursor_wake(CursorWake { session: key(session), consumer: log("c") }).await.expect("wake");
        let events = (1..=3).map(|i| targeted(&format!("{session}-e{i}"), "tick", &[("par", None)])).collect();
        append(&*store, session, events, &consumers).await;
        let held = claim(&*store, session, "a", &consumers).await.heads;
        let current = |consumer: &str, index: u64| {
            let attempt = held
                .iter()
                .find(|h| h.head.consumer == consumer && h.head.index == index)
                .map(|h| h.attempt)
                .expect("claimed");
            HeldHead { head: HeadRef::new(consumer, (consumer == "c").then_some("main"), index), attempt }
        };
        let stale = HeldHead { attempt: current("par", 2).attempt + 7, ..current("par", 2) };
        let missing = HeldHead { head: HeadRef::new("par", None, 9), attempt: 1 };
        // (what is asked, what must settle)
        requests.push((session.clone(), vec![current("c", 1), stale], vec![current("c", 1).head]));
        requests.push((
            session.clone(),
            vec![current("par", 1), current("par", 3)],
            vec![current("par", 1).head, current("par", 3).head],
        ));
        requests.push((session.clone(), vec![missing], vec![]));
    }
    let mut tasks = Vec::new();
    for (session, heads, want) in requests {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let settled =
                store.head_complete_many(HeadCompleteMany { session: key(&session), heads }).await.expect("complete");
            (session, settled, want)
        }));
    }
    for task in tasks {
        let (session, settled, want) = task.await.expect("completer task");
        assert_eq!(settled, want, "session {session}: its own current heads settle, and only those");
    }
    for session in &sessions {
        let heads = store.head_list(&key(session)).await.expect("heads");
        let rows: Vec<(String, u64)> = heads.iter().map(|h| (h.consumer.clone(), h.next_index)).collect();
        assert_eq!(rows, vec![("c".into(), 2), ("par".into(), 2)], "session {session}: the stale head still runs");
        let recorded = store.attempt_list(attempts_of(session, 100)).await.expect("attempts");
        assert_eq!(recorded.len(), 3, "session {session}: one completed attempt a settled head: {recorded:?}");
        assert!(recorded.iter().all(|a| a.outcome == AttemptOutcome::Completed && a.holder.as_deref() == Some("a")));
    }
}

/// Claims made at once in many sessions, as a process draining them makes
/// them (a store may pick them all in one statement): each takes only its
/// own session's heads, up to its own limit, and each session's claim is
/// decided on its own — a lapse beside fresh sessions is charged once, a
/// log consumer with no cursor yet gets one, a session whose only head is
/// held says until when, and two claims of one holder in one session take
/// different heads.
pub async fn claims_in_many_sessions_at_once_are_each_their_own(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = vec![StoreConsumer::targeted("par"), log("c")];
    let per_event = |session: &str, n: usize| -> Vec<NewEvent> {
        (0..n).map(|i| targeted(&format!("{session}-{i}"), "tick", &[("par", None)])).collect()
    };
    // A head leased by a holder that died (beside a fresh one), and one held by a live holder (their
    // log cursors stand at the head, with nothing to take).
    append(&*store, "lapsed", per_event("lapsed", 2), &consumers[..1]).await;
    let mut dying = claim_params("lapsed", "dead", &consumers[..1]);
    dying.limit = 1;
    assert_eq!(store.head_claim(dying).await.expect("claim").heads.len(), 1);
    clock.advance(TTL);
    append(&*store, "held", per_event("held", 1), &consumers[..1]).await;
    let held = claim(&*store, "held", "live", &consumers[..1]).await;
    assert_eq!(held.heads.len(), 1);
    for session in ["lapsed", "held"] {
        store.cursor_wake(CursorWake { session: key(session), consumer: log("c") }).await.expect("wake");
    }
    // Fresh sessions: per-event heads and the log cursor on the first event, or (every third) no
    // cursor yet: its claim makes it.
    for s in 0..24 {
        let session = format!("fresh-{s:02}");
        let known = if s % 3 == 1 { &consumers[..1] } else { &consumers[..] };
        append(&*store, &session, per_event(&session, 4), known).await;
    }
    let mut sessions: Vec<(String, u32)> = (0..24).map(|s| (format!("fresh-{s:02}"), 2 + (s % 5) as u32)).collect();
    sessions.extend([("lapsed".into(), 8), ("held".into(), 8), ("empty".into(), 8), ("fresh-00".into(), 2)]);
    let claims = sessions.iter().map(|(session, limit)| {
        let store = store.clone();
        let mut params = claim_params(session, "drainer", &consumers);
        params.limit = *limit;
        let session = session.clone();
        async move { (session, store.head_claim(params).await.expect("claim")) }
    });
    let tasks: Vec<_> = claims.map(tokio::spawn).collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await);
    }
    let mut taken = std::collections::HashSet::new();
    let mut fresh_00 = 0;
    for answer in answers {
        let (session, claimed) = answer.expect("claim task");
        for head in &claimed.heads {
            assert_eq!(head.event.session, key(&session).as_str(), "{session} took another session's head");
            assert!(taken.insert((session.clone(), head.head.clone())), "{:?} was claimed twice", head.head);
        }
        let limit = sessions.iter().filter(|(s, _)| *s == session).map(|(_, l)| *l).max().unwrap_or(0);
        assert!(claimed.heads.len() <= limit as usize, "{session} took {} heads, past its limit", claimed.heads.len());
        match session.as_str() {
            "lapsed" => {
                let attempts: Vec<_> =
                    claimed.heads.iter().map(|h| (h.head.index, h.attempt, h.failure_count)).collect();
                assert_eq!(
                    attempts,
                    vec![(1, 2, 1), (2, 1, 0)],
                    "the lapsed head taken over, its lapse charged once, beside the fresh one"
                );
            }
            "held" => {
                assert!(claimed.heads.is_empty(), "a live lease is not taken");
                assert_eq!(claimed.busy_until, Some(held.heads[0].lease_expires_at), "and says until when");
            }
            "empty" => assert!(claimed.heads.is_empty() && claimed.busy_until.is_none()),
            "fresh-00" => fresh_00 += claimed.heads.len(),
            _ => assert!(!claimed.heads.is_empty(), "{session} claimed nothing"),
        }
    }
    // Two claims of 2 in fresh-00 (four per-event heads and its cursor): each took its own.
    assert_eq!(fresh_00, 4, "both claims of fresh-00 took heads, different ones");
    // Every fresh session's log cursor exists now, made by its claim where no wake made it.
    for s in 0..24 {
        let session = format!("fresh-{s:02}");
        let heads = store.head_list(&key(&session)).await.expect("heads");
        assert!(heads.iter().any(|h| h.consumer == "c"), "{session}: the claim made the log cursor");
    }
}

/// Completions that append, made at once in many sessions (a store may
/// settle and append them all in one statement): each is fenced on its own
/// and appends only its own events, in its own session — a stale attempt
/// beside them appends nothing, an id already in one session (an idempotent
/// re-append there) fails no neighbour, and two completions of one session
/// both land, densely indexed.
pub async fn completions_that_append_in_many_sessions_at_once_are_each_their_own(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let consumers = vec![log("c"), StoreConsumer::targeted("par")];
    let sessions: Vec<String> = (0..16).map(|s| format!("s{s:02}")).collect();
    let mut requests = Vec::new();
    for (s, session) in sessions.iter().enumerate() {
        store.cursor_wake(CursorWake { session: key(session), consumer: log("c") }).await.expect("wake");
        let events = (1..=2).map(|i| targeted(&format!("{session}-e{i}"), "tick", &[("par", None)])).collect();
        append(&*store, session, events, &consumers).await;
        let held = claim(&*store, session, "a", &consumers).await.heads;
        let attempt = |consumer: &str, index: u64| {
            held.iter()
                .find(|h| h.head.consumer == consumer && h.head.index == index)
                .map(|h| h.attempt)
                .expect("claimed")
        };
        // First of its session, so a store that groups sessions fences it in the shared statement.
        if s % 4 == 0 {
            let stale = HeadRef::new("par", None, 2);
            let late = complete(
                session,
                &stale,
                attempt("par", 2) + 7,
                vec![event(&format!("{session}-stale"), "tock")],
                &consumers,
            );
            requests.push((session.clone(), late));
        }
        let cursor = HeadRef::new("c", Some("main"), 1);
        // The cursor's run returns a new event, or (every fourth session) the id of an event already
        // in its session: an idempotent re-append, which a shared statement cannot take.
        let returned = if s % 4 == 1 { format!("{session}-e1") } else { format!("{session}-by-c") };
        requests.push((
            session.clone(),
            complete(session, &cursor, attempt("c", 1), vec![event(&returned, "tick")], &consumers),
        ));
        let par = HeadRef::new("par", None, 1);
        requests.push((
            session.clone(),
            complete(session, &par, attempt("par", 1), vec![event(&format!("{session}-by-par"), "tock")], &consumers),
        ));
    }
    // The re-appends go in a second wave: a statement shared with one of them fails whole and its
    // completions are made alone, so the first wave is what a grouping store fences together.
    let (again, first): (Vec<_>, Vec<_>) = requests.into_iter().partition(|(session, params)| {
        params.head.consumer == "c" && session[1..].parse::<usize>().is_ok_and(|s| s % 4 == 1)
    });
    let spawn = |(session, params): (String, HeadComplete)| {
        let store = store.clone();
        let head = params.head.clone();
        let ids: Vec<String> = params.events.iter().map(|e| e.id.clone()).collect();
        tokio::spawn(async move { (session, head, ids, store.head_complete(params).await.expect("complete")) })
    };
    let mut answers = Vec::new();
    for wave in [first, again] {
        let tasks: Vec<_> = wave.into_iter().map(spawn).collect();
        for task in tasks {
            answers.push(task.await.expect("completer task"));
        }
    }
    for (session, head, ids, outcome) in answers {
        let s: usize = session[1..].parse().expect("numbered");
        match (head.index, outcome) {
            (2, outcome) => assert_eq!(outcome, CompleteOutcome::Superseded, "{session}: the stale attempt"),
            (_, CompleteOutcome::Completed { appended, .. }) if head.consumer == "c" && s % 4 == 1 => {
                assert!(appended.is_empty(), "{session}: an id already there is appended once: {appended:?}")
            }
            (_, CompleteOutcome::Completed { appended, .. }) => {
                let got: Vec<(&str, &str)> = appended.iter().map(|e| (e.id.as_str(), e.session.as_str())).collect();
                assert_eq!(
                    got,
                    vec![(ids[0].as_str(), key(&session).as_str())],
                    "{session}: its own event, in its own session"
                );
            }
            (_, outcome) => panic!("{session}: {head} was not completed: {outcome:?}"),
        }
    }
    for (s, session) in sessions.iter().enumerate() {
        let listed = store
            .event_list(EventList { session: key(session), after: None, before: None, limit: 100, newest_first: false })
            .await
            .expect("events");
        let indexes: Vec<u64> = listed.iter().map(|e| e.index).collect();
        let mut ids: Vec<&str> = listed.iter().map(|e| e.id.as_str()).collect();
        ids.sort_unstable();
        let mut want = vec![format!("{session}-by-par"), format!("{session}-e1"), format!("{session}-e2")];
        if s % 4 != 1 {
            want.push(format!("{session}-by-c"));
        }
        want.sort_unstable();
        assert_eq!(ids, want, "{session}: what its completions appended, once, and nothing stale");
        assert_eq!(indexes, (1..=want.len() as u64).collect::<Vec<_>>(), "{session}: dense indexes");
        let heads = store.head_list(&key(session)).await.expect("heads");
        let rows: Vec<(String, u64)> = heads.iter().map(|h| (h.consumer.clone(), h.next_index)).collect();
        assert!(rows.contains(&("c".into(), 2)), "{session}: the cursor moved on: {rows:?}");
        assert!(rows.contains(&("par".into(), 2)), "{session}: the stale head still runs: {rows:?}");
        let recorded = store.attempt_list(attempts_of(session, 100)).await.expect("attempts");
        let completed: Vec<(&str, u64, Vec<String>)> = recorded
            .iter()
            .filter(|a| a.outcome == AttemptOutcome::Completed)
            .map(|a| (a.consumer.as_str(), a.index, a.appended.clone()))
            .collect();
        assert!(
            completed.contains(&("par", 1, vec![format!("{session}-by-par")])),
            "{session}: par's attempt records what it appended: {recorded:?}"
        );
        assert!(
            completed.iter().any(|(c, i, _)| *c == "c" && *i == 1),
            "{session}: the cursor's attempt: {recorded:?}"
        );
    }
}
