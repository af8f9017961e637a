//! Inspection reads and the audit log: what the Studio and the CLI read, on every backend.

use std::sync::Arc;

use a2_store::*;
use serde_json::json;

use crate::store::{complete_ok, fail_until_dead};
use crate::support::*;
use crate::StoreFactory;

pub async fn inspection_session_pages_and_summary(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    for i in 0..7 {
        append_n(&*store, &format!("order-{i}"), i + 1, &[]).await;
    }
    append_n(&*store, "zzz", 1, &[]).await;
    let page = |after: Option<String>, prefix: Option<&str>| SessionList {
        contract: CONTRACT.into(),
        id_prefix: prefix.map(str::to_owned),
        after,
        limit: 3,
    };
    let first = store.session_list(page(None, Some("order-"))).await.expect("page 1");
    assert_eq!(first.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(), vec!["order-0", "order-1", "order-2"]);
    let second =
        store.session_list(page(first.last().map(|s| s.session_id.clone()), Some("order-"))).await.expect("page 2");
    assert_eq!(second.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(), vec!["order-3", "order-4", "order-5"]);
    let third =
        store.session_list(page(second.last().map(|s| s.session_id.clone()), Some("order-"))).await.expect("page 3");
    assert_eq!(third.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(), vec!["order-6"]);
    let all = store
        .session_list(SessionList { contract: CONTRACT.into(), id_prefix: None, after: None, limit: 100 })
        .await
        .expect("all");
    assert_eq!(all.len(), 8);
    let summary = store.session_get(&key("order-4")).await.expect("get").expect("exists");
    assert_eq!(
        (summary.contract.as_str(), summary.session_id.as_str(), summary.head, summary.clear_index),
        (CONTRACT, "order-4", 5, 0)
    );
    assert!(store.session_get(&key("missing")).await.expect("get").is_none());
    let huge = store
        .session_list(SessionList { contract: CONTRACT.into(), id_prefix: None, after: None, limit: 100_000 })
        .await
        .expect("clamped");
    assert!(huge.len() <= MAX_PAGE as usize);
}

pub async fn inspection_events_page(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    append_n(&*store, "s", 10, &[]).await;
    let list = |after, before, newest_first| EventList { session: key("s"), after, before, limit: 3, newest_first };
    let indexes = |events: Vec<Event>| events.iter().map(|e| e.index).collect::<Vec<_>>();
    assert_eq!(indexes(store.event_list(list(None, None, false)).await.expect("first")), vec![1, 2, 3]);
    assert_eq!(indexes(store.event_list(list(Some(3), None, false)).await.expect("after")), vec![4, 5, 6]);
    assert_eq!(indexes(store.event_list(list(None, None, true)).await.expect("newest")), vec![10, 9, 8]);
    assert_eq!(indexes(store.event_list(list(None, Some(8), true)).await.expect("before")), vec![7, 6, 5]);
    assert_eq!(indexes(store.event_list(list(Some(2), Some(5), false)).await.expect("between")), vec![3, 4]);
    let one = store.event_list(list(Some(4), Some(6), false)).await.expect("one");
    assert_eq!(one[0].id, "s-e4");
    assert_eq!(one[0].event_type, "tick");
    assert_eq!(one[0].payload, json!({ "id": "s-e4" }));
    assert_eq!(one[0].session, key("s").as_str());
    assert!(one[0].cause.is_none());
}

pub async fn inspection_heads_of_a_session_with_lag(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [log("c"), StoreConsumer::targeted("laned"), StoreConsumer::targeted("par")];
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("c") }).await.expect("wake");
    let created = clock.now_ms();
    let events = vec![
        targeted("a", "tick", &[("laned", Some("x")), ("par", None)]),
        targeted("b", "tick", &[("laned", Some("x")), ("par", None)]),
        targeted("c", "tick", &[("laned", Some("y"))]),
    ];
    append(&*store, "s", events, &consumers).await;
    clock.advance(500);
    let mut params = claim_params("s", "holder-1", &consumers);
    params.limit = 1;
    let held = store.head_claim(params).await.expect("claim").heads.remove(0);
    assert_eq!(held.head.consumer, "c");
    let heads = store.head_list(&key("s")).await.expect("heads");
    let rows: Vec<(String, HeadKind, Option<String>, u64, u64)> =
        heads.iter().map(|h| (h.consumer.clone(), h.kind, h.lane.clone(), h.next_index, h.lag)).collect();
    assert_eq!(
        rows,
        vec![
            ("c".into(), HeadKind::Log, Some("main".into()), 1, 3),
            ("laned".into(), HeadKind::Lane, Some("x".into()), 1, 2),
            ("laned".into(), HeadKind::Lane, Some("y".into()), 3, 1),
            ("par".into(), HeadKind::Concurrent, None, 1, 1),
            ("par".into(), HeadKind::Concurrent, None, 2, 1),
        ]
    );
    let cursor = &heads[0];
    assert_eq!(cursor.session_head, 3);
    assert_eq!(cursor.oldest_pending_at, Some(created));
    assert_eq!(cursor.status.lease_holder.as_deref(), Some("holder-1"));
    assert_eq!(cursor.status.lease_expires_at, Some(created + 500 + TTL));
    assert_eq!(cursor.status.attempt_count, 1);
    complete_ok(&*store, "s", &held, &consumers).await;
    let heads = store.head_list(&key("s")).await.expect("heads");
    assert_eq!(
        (heads[0].next_index, heads[0].lag, heads[0].status.attempt_count, heads[0].status.lease_holder.clone()),
        (2, 2, 0, None)
    );
}

pub async fn inspection_heads_and_dead_letters_store_wide(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [StoreConsumer::targeted("par"), StoreConsumer::targeted("other")];
    for s in ["a", "b", "c"] {
        let events = vec![
            targeted(&format!("{s}1"), "tick", &[("par", None), ("other", None)]),
            targeted(&format!("{s}2"), "tock", &[("par", None)]),
        ];
        append(&*store, s, events, &consumers).await;
    }
    // Every "par" head dies; "other" heads stay pending.
    let par = [StoreConsumer::targeted("par")];
    for _ in 0..10 {
        for s in ["a", "b", "c"] {
            for head in claim(&*store, s, "h", &par).await.heads {
                store.head_fail(fail_params(s, &head.head, head.attempt)).await.expect("fail");
            }
        }
        clock.advance(BACKOFF.max_ms);
    }
    let mut all = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .dead_letter_list(DeadLetterList { after: after.clone(), limit: 4, ..Default::default() })
            .await
            .expect("dead-letter page");
        if page.is_empty() {
            break;
        }
        after = page.last().map(DeadLetter::key);
        all.extend(page);
    }
    let got: Vec<(String, u64, String)> =
        all.iter().map(|d| (d.session_id.clone(), d.index, d.event_type.clone())).collect();
    let want: Vec<(String, u64, String)> = ["a", "b", "c"]
        .iter()
        .flat_map(|s| [((*s).to_owned(), 1, "tick".to_owned()), ((*s).to_owned(), 2, "tock".to_owned())])
        .collect();
    assert_eq!(got, want, "keyset pages cover every dead letter once, in order");
    assert!(all.iter().all(|d| d.consumer == "par" && d.failure_count == 10 && d.contract == CONTRACT));
    let only_b = store
        .dead_letter_list(DeadLetterList { session: Some(key("b")), limit: 10, ..Default::default() })
        .await
        .expect("b");
    assert_eq!(only_b.len(), 2);
    let none = store
        .dead_letter_list(DeadLetterList { consumer: Some("other".into()), limit: 10, ..Default::default() })
        .await
        .expect("other");
    assert!(none.is_empty());
    let other_contract = store
        .dead_letter_list(DeadLetterList { contract: Some("elsewhere".into()), limit: 10, ..Default::default() })
        .await
        .expect("contract");
    assert!(other_contract.is_empty());
    let mut heads = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .head_scan(HeadScan { consumer: Some("other".into()), after: after.clone(), limit: 2 })
            .await
            .expect("head page");
        let Some(last) = page.last() else { break };
        after = Some(HeadKey {
            session: key(&last.session_id),
            consumer: last.consumer.clone(),
            lane: last.lane.clone(),
            index: last.next_index,
        });
        heads.extend(page);
    }
    assert_eq!(
        heads.iter().map(|h| (h.session_id.as_str(), h.next_index)).collect::<Vec<_>>(),
        vec![("a", 1), ("b", 1), ("c", 1)]
    );
}

pub async fn inspection_consumer_totals(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [log("c"), StoreConsumer::targeted("par")];
    for s in ["a", "b"] {
        store.cursor_wake(CursorWake { session: key(s), consumer: log("c") }).await.expect("wake");
    }
    append(&*store, "a", vec![targeted("a1", "tick", &[("par", None)]), event("a2", "tick")], &consumers).await;
    append(&*store, "b", vec![event("b1", "tick")], &consumers).await;
    // Drain b's cursor fully; a stays behind.
    let held = claim(&*store, "b", "h", &consumers).await.heads;
    for head in held {
        complete_ok(&*store, "b", &head, &consumers).await;
    }
    fail_until_dead(&*store, &clock, "a", &consumers, "par").await;
    let totals = store.consumer_totals(Some(CONTRACT)).await.expect("totals");
    let c = totals.iter().find(|t| t.consumer == "c").expect("c");
    let par = totals.iter().find(|t| t.consumer == "par").expect("par");
    assert_eq!((c.sessions, c.lagging_sessions, c.total_lag, c.dead_letters), (2, 1, 2, 0));
    assert_eq!((par.sessions, par.lagging_sessions, par.total_lag, par.dead_letters), (1, 1, 1, 1));
    assert!(store.consumer_totals(Some("elsewhere")).await.expect("none").is_empty());
    assert_eq!(store.consumer_totals(None).await.expect("all").len(), 2);
}

pub async fn inspection_snapshots(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    append_n(&*store, "s", 3, &[]).await;
    let state = json!({ "count": 3, "big": "12345678901234567890" });
    store
        .snapshot_put(SnapshotPut {
            session: key("s"),
            reducer: "totals".into(),
            index: 3,
            state: state.clone(),
            pin: None,
        })
        .await
        .expect("put");
    store
        .snapshot_put(SnapshotPut {
            session: key("s"),
            reducer: "other".into(),
            index: 2,
            state: json!([1]),
            pin: None,
        })
        .await
        .expect("put");
    let list = store.snapshot_list(&key("s")).await.expect("list");
    assert_eq!(
        list.iter().map(|s| (s.reducer.as_str(), s.index)).collect::<Vec<_>>(),
        vec![("totals", 3), ("other", 2)]
    );
    assert_eq!(list[0].state, state);
    assert_eq!(list[0].size_bytes, serde_json::to_vec(&state).map(|v| v.len() as u64).unwrap_or(0));
    let got =
        store.snapshot_get(SnapshotGet { session: key("s"), reducer: "totals".into(), at_most: 2 }).await.expect("get");
    assert!(got.is_none(), "no snapshot at or below 2 for this reducer");
}

pub async fn hostile_session_ids_round_trip(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let ids = ["it's \"quoted\"", "100%_done", "back\\slash", "🦀 crab", "a%", "_"];
    for id in ids {
        store
            .event_append(EventAppend {
                session: session_key(CONTRACT, id),
                events: vec![event("x", "tick")],
                consumers: vec![],
                origin_index: None,
            })
            .await
            .expect(id);
    }
    let listed = store
        .session_list(SessionList { contract: CONTRACT.into(), id_prefix: None, after: None, limit: 100 })
        .await
        .expect("list");
    let mut want: Vec<&str> = ids.to_vec();
    want.sort();
    assert_eq!(listed.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(), want);
    let prefixed = store
        .session_list(SessionList { contract: CONTRACT.into(), id_prefix: Some("a%".into()), after: None, limit: 100 })
        .await
        .expect("prefix");
    assert_eq!(prefixed.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(), vec!["a%"], "% is not a wildcard");
    let underscore = store
        .session_list(SessionList { contract: CONTRACT.into(), id_prefix: Some("_".into()), after: None, limit: 100 })
        .await
        .expect("prefix");
    assert_eq!(underscore.len(), 1, "_ is not a wildcard");
    let bad = store
        .event_append(EventAppend {
            session: session_key(CONTRACT, "a\u{1f}b"),
            events: vec![event("x", "tick")],
            consumers: vec![],
            origin_index: None,
        })
        .await;
    assert_eq!(bad.expect_err("separator in id").code(), "INVALID_INPUT");
    let big = json!({ "blob": "x".repeat(1 << 20) });
    let mut large = event("large", "tick");
    large.payload = big.clone();
    store
        .event_append(EventAppend { session: key("large"), events: vec![large], consumers: vec![], origin_index: None })
        .await
        .expect("1 MB payload");
    let back = store
        .event_list(EventList { session: key("large"), after: None, before: None, limit: 1, newest_first: false })
        .await
        .expect("read");
    assert_eq!(back[0].payload, big);
    let _ = Arc::strong_count(&store);
}

pub async fn audit_log_keeps_actions_newest_first(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let entry = |n: u64| AuditEntry {
        at: clock.now_ms() + i64::try_from(n).unwrap_or(0),
        user: "ops".into(),
        host: "box-1".into(),
        // The database role beside the OS user, or none (memory, SQLite).
        db_user: (n != 3).then(|| "a2_reader".into()),
        action: if n.is_multiple_of(2) { "redrive.skip".into() } else { "clear".into() },
        contract: Some(CONTRACT.into()),
        session_id: (n != 2).then(|| format!("s{n}")),
        parameters: json!({ "n": n, "big": "12345678901234567890", "nested": { "ok": true } }),
        outcome: json!({ "redriven": n.is_multiple_of(2) }),
    };
    let mut ids = Vec::new();
    for n in 1..=3 {
        ids.push(store.audit_append(entry(n)).await.expect("audit append"));
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids grow: {ids:?}");
    let all = store.audit_list(AuditList { before: None, limit: 10, action: None }).await.expect("audit list");
    assert_eq!(all.iter().map(|r| r.id).collect::<Vec<_>>(), ids.iter().rev().copied().collect::<Vec<_>>());
    assert_eq!(all[2].entry, entry(1), "an entry reads back as written");
    assert_eq!(all[0].entry, entry(3), "an entry without a database role reads back without one");
    assert_eq!(all[1].entry.session_id, None);
    let older = store.audit_list(AuditList { before: Some(ids[2]), limit: 1, action: None }).await.expect("keyset");
    assert_eq!(older.iter().map(|r| r.id).collect::<Vec<_>>(), vec![ids[1]]);
    let of = |action: &str, before: Option<u64>| AuditList { before, limit: 10, action: Some(action.into()) };
    let clears = store.audit_list(of("clear", None)).await.expect("by action");
    assert_eq!(clears.iter().map(|r| r.id).collect::<Vec<_>>(), vec![ids[2], ids[0]], "only that action's entries");
    let older_clears = store.audit_list(of("clear", Some(ids[2]))).await.expect("by action, keyset");
    assert_eq!(older_clears.iter().map(|r| r.id).collect::<Vec<_>>(), vec![ids[0]]);
    assert!(store.audit_list(of("demo.seed", None)).await.expect("none").is_empty());
}

pub async fn redrive_and_clear_record_their_audit_entry_with_the_outcome(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = [StoreConsumer::targeted("par")];
    append(&*store, "s", vec![targeted("a", "tick", &[("par", None)])], &consumers).await;
    let dead = fail_until_dead(&*store, &clock, "s", &consumers, "par").await;
    let entry = |action: &str| audit_entry(action, clock.now_ms());
    let redrive = |audit| DeadLetterRedrive {
        session: key("s"),
        consumer: "par".into(),
        index: dead.index,
        action: RedriveAction::Skip,
        audit,
    };
    assert!(store.dead_letter_redrive(redrive(Some(entry("redrive.skip")))).await.expect("redrive"));
    assert!(!store.dead_letter_redrive(redrive(Some(entry("redrive.skip")))).await.expect("again"));
    let missed = store
        .session_clear(SessionClear {
            session: key("s"),
            if_last_index: Some(9),
            audit: Some(entry("clear")),
            settles: None,
        })
        .await
        .expect("clear");
    assert!(!missed.cleared);
    let log = store.audit_list(AuditList { before: None, limit: 10, action: None }).await.expect("audit");
    let outcomes: Vec<(String, serde_json::Value)> =
        log.iter().map(|r| (r.entry.action.clone(), r.entry.outcome.clone())).collect();
    assert_eq!(
        outcomes,
        vec![
            ("clear".to_owned(), json!({ "cleared": false, "index": 1 })),
            ("redrive.skip".to_owned(), json!({ "redriven": false })),
            ("redrive.skip".to_owned(), json!({ "redriven": true })),
        ],
        "every attempt is recorded, with what it did"
    );
}

pub async fn inspection_sessions_by_last_activity(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    for s in ["s1", "s2", "s3"] {
        append_n(&*store, s, 1, &[]).await;
        clock.advance(1_000);
    }
    append(&*store, "s1", vec![event("late", "tick")], &[]).await;
    store
        .event_append(EventAppend {
            session: session_key("other", "x"),
            events: vec![event("o", "tick")],
            consumers: vec![],
            origin_index: None,
        })
        .await
        .expect("another contract");
    let page = |before: Option<(Millis, String)>| SessionsByActivity { contract: CONTRACT.into(), before, limit: 2 };
    let first = store.session_list_by_activity(page(None)).await.expect("first page");
    assert_eq!(first.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(), vec!["s1", "s3"]);
    let last = first.last().map(|s| (s.updated_at, s.session_id.clone()));
    let second = store.session_list_by_activity(page(last)).await.expect("second page");
    assert_eq!(
        second.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(),
        vec!["s2"],
        "keyset pages, no repeats"
    );
}

pub async fn consumer_totals_are_kept_until_refreshed(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    assert_eq!(store.consumer_totals_snapshot(None).await.expect("none yet"), None, "nothing computed yet");
    let consumers = [log("c")];
    store.cursor_wake(CursorWake { session: key("s"), consumer: log("c") }).await.expect("wake");
    append_n(&*store, "s", 2, &consumers).await;
    store
        .event_append(EventAppend {
            session: session_key("other", "x"),
            events: vec![event("o", "tick")],
            consumers: vec![log("c")],
            origin_index: None,
        })
        .await
        .expect("another contract");
    let refreshed = store.consumer_totals_refresh(TotalsRefresh::default()).await.expect("refresh").snapshot;
    assert_eq!(refreshed.totals, store.consumer_totals(None).await.expect("live"));
    assert_eq!(refreshed.computed_at, clock.now_ms());
    let kept = store.consumer_totals_snapshot(Some(CONTRACT)).await.expect("kept").expect("some");
    assert_eq!(kept.totals, store.consumer_totals(Some(CONTRACT)).await.expect("live"));
    append_n(&*store, "t", 3, &consumers).await;
    clock.advance(5_000);
    let stale = store.consumer_totals_snapshot(Some(CONTRACT)).await.expect("kept").expect("some");
    assert_eq!(stale, kept, "kept totals change only when refreshed");
    let fresh = store.consumer_totals_refresh(TotalsRefresh::default()).await.expect("refresh").snapshot;
    assert!(fresh.computed_at > kept.computed_at);
    assert_ne!(store.consumer_totals_snapshot(Some(CONTRACT)).await.expect("kept"), Some(kept));
}

/// Consumer totals summed a chunk of sessions at a time (a store so large
/// that one statement would outlast a reader's timeout) equal the whole
/// computed at once: `chunked` and `whole` are two stores over one database,
/// the first aggregating two sessions a statement.
pub async fn consumer_totals_in_chunks_match_the_whole(whole: Arc<dyn Store>, chunked: Arc<dyn Store>) {
    let consumers = [log("c"), StoreConsumer::targeted("par")];
    for contract in [CONTRACT, "other"] {
        for s in 0..7 {
            let session = session_key(contract, &format!("s{s}"));
            whole.cursor_wake(CursorWake { session: session.clone(), consumer: log("c") }).await.expect("wake");
            let events =
                (0..=s % 3).map(|n| targeted(&format!("{contract}-{s}-{n}"), "tick", &[("par", None)])).collect();
            let params =
                EventAppend { session: session.clone(), events, consumers: consumers.to_vec(), origin_index: None };
            whole.event_append(params).await.expect("append");
            if s % 2 == 0 {
                // Half the sessions drained: no lag there.
                let claim = HeadClaim { session: session.clone(), ..claim_params("x", "h", &consumers) };
                let held = whole.head_claim(claim).await.expect("claim").heads;
                let heads = held.into_iter().map(|h| HeldHead { head: h.head, attempt: h.attempt }).collect();
                whole.head_complete_many(HeadCompleteMany { session, heads }).await.expect("complete");
            }
        }
    }
    let want_all = whole.consumer_totals(None).await.expect("whole");
    assert_eq!(want_all.len(), 4);
    for contract in [Some(CONTRACT), Some("other"), None] {
        let want = whole.consumer_totals(contract).await.expect("whole");
        assert!(!want.is_empty() && want.iter().any(|t| t.total_lag > 0), "{contract:?}: something to sum");
        assert_eq!(chunked.consumer_totals(contract).await.expect("chunked"), want, "{contract:?}");
    }
    let full = TotalsRefresh { full: true, ..TotalsRefresh::default() };
    assert_eq!(chunked.consumer_totals_refresh(full).await.expect("refresh").snapshot.totals, want_all);
}
