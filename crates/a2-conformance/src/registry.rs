//! The process registry: servers beat, go stale, are removed on a clean
//! shutdown and pruned a day on; the catalog of consumers is what the kept
//! servers declare, so an idle consumer is listed and an unserved one told.

use std::sync::Arc;
use std::time::Duration;

use a2_engine::*;
use a2_store::*;

use crate::engine::{server_with, tick, Pace};
use crate::support::open;
use crate::StoreFactory;

fn info(contract: &str, max_running: u32) -> ServerInfo {
    ServerInfo {
        contract: contract.to_owned(),
        host: "worker-1".into(),
        pid: 4242,
        version: "test".into(),
        consumers: vec![DeclaredConsumer {
            name: "mailer".into(),
            kind: HeadKind::Log,
            lane: Some("main".into()),
            types: vec!["order.placed".into()],
        }],
        max_running,
        beat_ms: 10_000,
        started_at: 1,
        holder_prefix: "p".into(),
        totals_refresh_ms: 0,
    }
}

async fn kept(store: &dyn Store, contract: Option<&str>) -> Vec<ServerRecord> {
    store.server_list(ServerList { contract: contract.map(str::to_owned) }).await.unwrap_or_else(|e| panic!("{e}"))
}

/// A beat registers or refreshes a server's row on the store's clock; one
/// that missed three beats is kept but no longer live; a clean shutdown
/// removes its row; any beat prunes rows a day old; a beat without an id is refused.
pub async fn servers_register_and_expire(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let t0 = clock.now_ms();
    let beat = |id: &str, info: ServerInfo| ServerBeat { id: id.to_owned(), info };
    store.server_beat(beat("a", info("shop", 4))).await.unwrap_or_else(|e| panic!("{e}"));
    clock.advance(1_000);
    store.server_beat(beat("b", info("other", 4))).await.unwrap_or_else(|e| panic!("{e}"));
    let all = kept(&*store, None).await;
    let seen: Vec<(&str, &str, Millis)> =
        all.iter().map(|s| (s.id.as_str(), s.info.contract.as_str(), s.last_seen)).collect();
    assert_eq!(seen, vec![("b", "other", t0 + 1_000), ("a", "shop", t0)], "by contract");
    assert_eq!(kept(&*store, Some("shop")).await.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), vec!["a"]);
    assert_eq!(all[1].info, info("shop", 4), "what it declared, whole");

    clock.advance(5_000);
    store.server_beat(beat("a", info("shop", 8))).await.unwrap_or_else(|e| panic!("{e}"));
    let a = kept(&*store, Some("shop")).await.remove(0);
    assert_eq!((a.last_seen, a.info.max_running), (t0 + 6_000, 8), "a beat refreshes the row");
    assert!(a.is_live(clock.now_ms()));

    clock.advance(30_001);
    store.server_beat(beat("b", info("other", 4))).await.unwrap_or_else(|e| panic!("{e}"));
    let now = clock.now_ms();
    let live: Vec<(String, bool)> = kept(&*store, None).await.iter().map(|s| (s.id.clone(), s.is_live(now))).collect();
    assert_eq!(live, vec![("b".into(), true), ("a".into(), false)], "three missed beats: kept, not live");

    assert!(store.server_remove("b").await.unwrap_or_else(|e| panic!("{e}")), "a clean shutdown removes its row");
    assert!(!store.server_remove("b").await.unwrap_or_else(|e| panic!("{e}")));
    assert_eq!(kept(&*store, None).await.len(), 1);

    clock.advance(SERVER_KEPT_MS);
    store.server_beat(beat("c", info("shop", 1))).await.unwrap_or_else(|e| panic!("{e}"));
    let ids: Vec<String> = kept(&*store, None).await.into_iter().map(|s| s.id).collect();
    assert_eq!(ids, vec!["c".to_owned()], "a row a day old is pruned by the next beat");

    let refused = store.server_beat(beat("", info("shop", 1))).await;
    assert_eq!(refused.map_err(|e| e.code()), Err("INVALID_INPUT"));
}

/// Polls the registry until `done` holds (or about 100 s have passed).
async fn registry_until(
    store: &Arc<dyn Store>,
    what: &str,
    done: impl Fn(&[ServerRecord]) -> bool,
) -> Vec<ServerRecord> {
    for _ in 0..2_000 {
        let servers = kept(&**store, None).await;
        if done(&servers) {
            return servers;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting until {what}");
}

/// A running server registers what it serves, so its catalog lists a
/// consumer that never had a head; its runs are leased under its holder
/// prefix; a clean shutdown takes it out of the registry.
pub async fn consumer_catalog_lists_idle_consumers(factory: &dyn StoreFactory, pace: Pace) {
    let store = crate::engine::open(factory).await;
    let done = |_ctx| async { Ok::<(), BoxError>(()) };
    let busy = Consumer::builder("busy").types(["tick"]).run(done).unwrap_or_else(|e| panic!("{e}"));
    let idle = Consumer::builder("idle").lane("main").types(["stop"]).run(done).unwrap_or_else(|e| panic!("{e}"));
    let server = server_with(pace, store.clone(), vec![busy, idle], |b| b.app_version("shop-app 1.2"));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    let servers = registry_until(&store, "the server registered", |s| s.len() == 1).await;
    let record = &servers[0];
    assert_eq!((record.info.contract.as_str(), record.info.pid), ("shop", std::process::id()));
    assert!(record.info.version.starts_with("shop-app 1.2"), "{}", record.info.version);
    let declared: Vec<(&str, HeadKind, Option<&str>)> =
        record.info.consumers.iter().map(|c| (c.name.as_str(), c.kind, c.lane.as_deref())).collect();
    assert_eq!(declared, vec![("busy", HeadKind::Concurrent, None), ("idle", HeadKind::Log, Some("main"))]);

    let catalog = consumer_catalog(&servers, store.clock().now_ms());
    let listed: Vec<(&str, u32)> = catalog.iter().map(|c| (c.consumer.name.as_str(), c.served_by)).collect();
    assert_eq!(listed, vec![("busy", 1), ("idle", 1)], "the idle consumer is listed and served");

    // Its runs were leased as this server: the attempt history names the holder.
    let key = session_key("shop", "s");
    let mut holders = Vec::new();
    for _ in 0..2_000 {
        let list = AttemptList {
            session: key.clone(),
            consumer: Some("busy".into()),
            index: None,
            after: None,
            oldest_first: true,
            limit: 10,
        };
        holders = store
            .attempt_list(list)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .into_iter()
            .filter_map(|a| a.holder)
            .collect();
        if !holders.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !holders.is_empty() && holders.iter().all(|h| h.starts_with(&record.info.holder_prefix)),
        "holders {holders:?} under {}",
        record.info.holder_prefix
    );

    server.shutdown();
    registry_until(&store, "the server's row was removed", <[ServerRecord]>::is_empty).await;
}

/// A process's page lists the heads its holders lease now, and no others:
/// by holder prefix, live leases only, at most the limit.
pub async fn heads_leased_are_listed_by_process(factory: &dyn StoreFactory) {
    use crate::support::{append, claim, targeted};
    let (store, clock) = open(factory).await;
    let consumers = [StoreConsumer::targeted("worker")];
    let events = |session: &str, n: usize| {
        (1..=n).map(|i| targeted(&format!("{session}-e{i}"), "tick", &[("worker", None)])).collect::<Vec<_>>()
    };
    append(&*store, "s1", events("s1", 3), &consumers).await;
    append(&*store, "s2", events("s2", 2), &consumers).await;
    let held = claim(&*store, "s1", "p1/drain-a", &consumers).await;
    assert_eq!(held.heads.len(), 3);
    claim(&*store, "s2", "p2/drain-b", &consumers).await;
    let leased = |prefix: &str, limit: u32| {
        let store = store.clone();
        let params = HeadsLeased { holder_prefix: prefix.to_owned(), limit };
        async move { store.head_list_leased(params).await.unwrap_or_else(|e| panic!("{e}")) }
    };
    let p1 = leased("p1/", 10).await;
    let seen: Vec<(&str, &str, u64, u32, &str)> = p1
        .iter()
        .map(|h| (h.session_id.as_str(), h.consumer.as_str(), h.index, h.attempt, h.holder.as_str()))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("s1", "worker", 1, 1, "p1/drain-a"),
            ("s1", "worker", 2, 1, "p1/drain-a"),
            ("s1", "worker", 3, 1, "p1/drain-a")
        ]
    );
    assert!(p1.iter().all(|h| h.contract == crate::support::CONTRACT && h.lease_expires_at > clock.now_ms()));
    assert_eq!(leased("p2/", 10).await.len(), 2, "the other process's own");
    assert_eq!(leased("p1/", 2).await.len(), 2, "at most the limit");
    assert!(leased("p3/", 10).await.is_empty());
    clock.advance(crate::support::TTL + 1);
    assert!(leased("p1/", 10).await.is_empty(), "a lapsed lease is held by no one");
}
