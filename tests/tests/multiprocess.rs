//! Four worker processes drain 50 sessions × 200 events on one Postgres,
//! for an ordered (string-lane) consumer and a concurrent one: every head
//! completed exactly once, every lane in index order, nothing lost.

mod common;

use std::time::{Duration, Instant};

use common::Shared;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_processes_drain_every_head_exactly_once_on_postgres() {
    let shared = Shared::postgres("multi");
    let store = shared.open().await;
    let sessions = a2_e2e::session_ids("m", 50);
    let seeding = a2_e2e::server(store.clone(), Duration::ZERO, Duration::from_secs(30));
    a2_e2e::seed(&seeding, &sessions, 200).await.unwrap_or_else(|e| panic!("seeding: {e}"));
    let started = Instant::now();
    let mut workers: Vec<_> = (0..4).map(|_| shared.worker(&["drain", "--prefix", "m", "--sessions", "50", "--ttl-ms", "30000"])).collect();
    for worker in &mut workers {
        let status = worker.wait().unwrap_or_else(|e| panic!("waiting for a worker: {e}"));
        assert!(status.success(), "a worker failed: {status}");
    }
    let elapsed = started.elapsed();
    let mut handled = 0;
    for session in &sessions {
        let verdict = a2_e2e::verify(&*store, session).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(verdict.faults.is_empty(), "{:#?}", verdict.faults);
        assert_eq!((verdict.work, verdict.dead_lettered), (200, 0));
        handled += verdict.handled;
    }
    assert_eq!(handled, 50 * 200 * 2);
    println!("4 processes drained {handled} heads in {elapsed:?} ({:.0} heads/s)", handled as f64 / elapsed.as_secs_f64());
    shared.remove().await;
}
