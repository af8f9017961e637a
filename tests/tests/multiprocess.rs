//! Four worker processes drain 50 sessions × 200 events on one Postgres, and
//! again through a PgBouncer in transaction mode, for an ordered (string-lane)
//! consumer and a concurrent one: every head completed exactly once, every
//! lane in index order, nothing lost. And two processes share one SQLite file
//! without "database is locked" surfacing.

mod common;

use std::time::{Duration, Instant};

use common::Shared;

async fn drain_in_processes(shared: Shared, processes: usize, sessions: usize, events: usize) {
    let store = shared.open().await;
    let ids = a2_e2e::session_ids("m", sessions);
    let seeding = a2_e2e::server(store.clone(), Duration::ZERO, Duration::from_secs(30));
    a2_e2e::seed(&seeding, &ids, events).await.unwrap_or_else(|e| panic!("seeding: {e}"));
    let started = Instant::now();
    let count = sessions.to_string();
    let mut workers: Vec<_> = (0..processes)
        .map(|_| shared.worker(&["drain", "--prefix", "m", "--sessions", &count, "--ttl-ms", "30000"]))
        .collect();
    for worker in &mut workers {
        let status = worker.wait().unwrap_or_else(|e| panic!("waiting for a worker: {e}"));
        assert!(status.success(), "a worker failed: {status}");
    }
    let elapsed = started.elapsed();
    let mut handled = 0;
    for session in &ids {
        let verdict = a2_e2e::verify(&*store, session).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(verdict.faults.is_empty(), "{:#?}", verdict.faults);
        assert_eq!((verdict.work, verdict.dead_lettered), (events, 0));
        handled += verdict.handled;
    }
    assert_eq!(handled, sessions * events * 2);
    println!(
        "{}: {processes} processes drained {handled} heads in {elapsed:?} ({:.0} heads/s)",
        shared.url,
        handled as f64 / elapsed.as_secs_f64()
    );
    shared.remove().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_processes_drain_every_head_exactly_once_on_postgres() {
    drain_in_processes(Shared::postgres("multi"), 4, 50, 200).await;
}

/// The same drain with every process, the seeding one too, going through a
/// PgBouncer in transaction mode: consecutive transactions of one pool
/// connection land on whichever server connection is free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_processes_drain_every_head_exactly_once_through_a_pooler() {
    drain_in_processes(Shared::postgres_pooled("pooled"), 4, 20, 100).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_one_sqlite_file() {
    drain_in_processes(Shared::sqlite("multi"), 2, 10, 50).await;
}
