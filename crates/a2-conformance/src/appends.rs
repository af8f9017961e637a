//! Appends: gap-free indexes under concurrency, atomic batches, idempotent ids, and sessions of two contracts kept apart.

use std::collections::BTreeMap;

use a2_store::*;

use crate::support::*;
use crate::StoreFactory;

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
                        origin_index: None,
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
            origin_index: None,
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
            origin_index: None,
        })
        .await;
    let error = mixed.expect_err("a mixed batch is refused");
    assert_eq!(error.code(), "PARTIAL_DUPLICATE_BATCH");
    let repeated = store
        .event_append(EventAppend {
            session: key("s"),
            events: vec![event("c", "tick"), event("c", "tick")],
            consumers: vec![],
            origin_index: None,
        })
        .await;
    assert_eq!(repeated.expect_err("an id twice in a batch").code(), "PARTIAL_DUPLICATE_BATCH");
    let summary = store.session_get(&key("s")).await.expect("get").expect("exists");
    assert_eq!(summary.head, 1, "nothing of a refused batch was written");
}

pub async fn two_contracts_with_one_session_id_never_collide(factory: &dyn StoreFactory) {
    let (store, _) = open(factory).await;
    let a = session_key("alpha", "same");
    let b = session_key("beta", "same");
    store
        .event_append(EventAppend {
            session: a.clone(),
            events: vec![event("x", "tick")],
            consumers: vec![],
            origin_index: None,
        })
        .await
        .expect("a");
    let appended = store
        .event_append(EventAppend {
            session: b.clone(),
            events: vec![event("x", "tick"), event("y", "tick")],
            consumers: vec![],
            origin_index: None,
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
            origin_index: None,
        })
        .await
        .expect("alph");
    let alph = store
        .session_list(SessionList { contract: "alph".into(), id_prefix: None, after: None, limit: 10 })
        .await
        .expect("list");
    assert_eq!(alph.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(), vec!["other"]);
}
