//! One upkeep leader a contract: the lease is held by one owner at a time,
//! several servers refresh the kept totals through one of them, and when that
//! one dies another leads within a lease's length.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use a2_engine::*;
use a2_store::*;

use crate::engine::{server_with, tick, Pace};
use crate::faulty::Faulty;
use crate::support::open;
use crate::StoreFactory;

/// The lease is kept by its owner, refused to others while it lasts, taken
/// over once expired (its generation bumped) and let go by its owner alone.
pub async fn upkeep_lease_is_held_by_one_owner_at_a_time(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let lease = |owner: &str| UpkeepLease { scope: "shop".into(), owner: owner.into(), ttl_ms: 1_000 };
    let take = |owner: &'static str| {
        let store = store.clone();
        async move { store.upkeep_lease(lease(owner)).await.unwrap_or_else(|e| panic!("{e}")) }
    };
    assert_eq!(take("a").await, Some(1));
    assert_eq!(take("b").await, None, "held by a");
    clock.advance(900);
    assert_eq!(take("a").await, Some(1), "its owner renews it");
    clock.advance(900);
    assert_eq!(take("b").await, None, "renewed, so still a's");
    clock.advance(101);
    assert_eq!(take("b").await, Some(2), "expired: taken over");
    assert_eq!(take("a").await, None);
    let leaders = store.upkeep_leaders().await.unwrap_or_else(|e| panic!("{e}"));
    let seen: Vec<(&str, &str, u64, Millis)> =
        leaders.iter().map(|l| (l.scope.as_str(), l.owner.as_str(), l.generation, l.expires_at)).collect();
    assert_eq!(seen, vec![("shop", "b", 2, clock.now_ms() + 1_000)]);
    let release = |owner: &str| UpkeepRelease { scope: "shop".into(), owner: owner.into() };
    assert!(!store.upkeep_release(release("a")).await.unwrap_or_else(|e| panic!("{e}")), "only its owner lets it go");
    assert!(store.upkeep_release(release("b")).await.unwrap_or_else(|e| panic!("{e}")));
    assert_eq!(take("a").await, Some(3), "let go: the next taker has it at once");
    let other = UpkeepLease { scope: "other".into(), owner: "c".into(), ttl_ms: 1_000 };
    assert_eq!(store.upkeep_lease(other).await.unwrap_or_else(|e| panic!("{e}")), Some(1), "scopes are apart");
    let bad = UpkeepLease { scope: "shop".into(), owner: String::new(), ttl_ms: 1_000 };
    assert_eq!(store.upkeep_lease(bad).await.map_err(|e| e.code()), Err("INVALID_INPUT"));
}

/// Three servers of one contract on one store, each through a counting
/// wrapper of its own, working in the background.
async fn three_servers(factory: &dyn StoreFactory, pace: Pace) -> (Arc<dyn Store>, Vec<(Server, Arc<Faulty>)>) {
    let store = crate::engine::open(factory).await;
    let timings = DrainTimings {
        totals_refresh: Duration::from_millis(500),
        server_beat: Duration::from_secs(1),
        ..pace.timings()
    };
    let mut servers = Vec::new();
    for n in 0..3u64 {
        let counted = Faulty::new(store.clone());
        let worker = Consumer::builder("worker").types(["tick"]).run(|_| async { Ok::<(), BoxError>(()) });
        let worker = worker.unwrap_or_else(|e| panic!("{e}"));
        let server = server_with(pace, counted.clone(), vec![worker], |b| b.timings(timings.clone()));
        // Each drains once, so each starts its refresher.
        let session = server.session(&format!("s-{n}")).unwrap_or_else(|e| panic!("{e}"));
        session.append(vec![tick(n)]).await.unwrap_or_else(|e| panic!("{e}"));
        servers.push((server, counted));
    }
    (store, servers)
}

fn refreshes(servers: &[(Server, Arc<Faulty>)]) -> Vec<u32> {
    servers.iter().map(|(_, counted)| counted.totals_computed.load(Ordering::SeqCst)).collect()
}

/// However many servers run, one of them refreshes the kept totals.
pub async fn one_upkeep_leader_at_a_time(factory: &dyn StoreFactory, pace: Pace) {
    let (_store, servers) = three_servers(factory, pace).await;
    tokio::time::sleep(Duration::from_secs(8)).await;
    let counts = refreshes(&servers);
    assert_eq!(counts.iter().filter(|n| **n > 0).count(), 1, "one server refreshed: {counts:?}");
    assert!(counts.iter().sum::<u32>() >= 3, "and it kept refreshing: {counts:?}");
    for (server, _) in &servers {
        server.stop().await;
    }
}

/// The leader dies (its renewals and its release fail, then it stops): once
/// its lease expires another server takes it, with the next generation, and
/// the totals go on being refreshed, by that one alone.
pub async fn upkeep_leadership_moves_when_the_leader_dies(factory: &dyn StoreFactory, pace: Pace) {
    let (store, servers) = three_servers(factory, pace).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    let before = refreshes(&servers);
    let Some(dead) = before.iter().position(|n| *n > 0) else { panic!("nobody led: {before:?}") };
    let leader = store.upkeep_leaders().await.unwrap_or_else(|e| panic!("{e}"));
    let first = leader.first().map(|l| l.generation).unwrap_or_else(|| panic!("a lease is kept"));
    servers[dead].1.fail_upkeep.store(true, Ordering::SeqCst);
    servers[dead].0.stop().await;
    let at_death = refreshes(&servers);
    tokio::time::sleep(Duration::from_secs(8)).await;
    let after = refreshes(&servers);
    let took_over: Vec<usize> = (0..3).filter(|n| *n != dead && after[*n] > at_death[*n]).collect();
    assert_eq!(took_over.len(), 1, "one other server leads now: {at_death:?} → {after:?}");
    assert_eq!(after[dead], at_death[dead], "the dead one refreshes no more");
    let leader = store.upkeep_leaders().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(leader.first().map(|l| l.generation), Some(first + 1), "taken over once: {leader:?}");
    for (n, (server, _)) in servers.iter().enumerate() {
        if n != dead {
            server.stop().await;
        }
    }
}
