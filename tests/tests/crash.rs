//! A worker process running consumers is SIGKILLed mid-run 20 times and
//! restarted; afterwards every event is handled or dead-lettered, no head
//! completed twice and no appended event appended twice — on both SQL stores.

mod common;

use std::time::Duration;

use common::Shared;

async fn crash_and_recover(shared: Shared) {
    let store = shared.open().await;
    let sessions = a2_e2e::session_ids("c", 8);
    let seeding = a2_e2e::server(store.clone(), Duration::ZERO, Duration::from_secs(1));
    a2_e2e::seed(&seeding, &sessions, 40).await.unwrap_or_else(|e| panic!("seeding: {e}"));
    let args = ["drain", "--prefix", "c", "--sessions", "8", "--delay-ms", "4", "--ttl-ms", "1000"];
    for round in 0..20u64 {
        let mut worker = shared.worker(&args);
        tokio::time::sleep(Duration::from_millis(150 + (round * 37) % 250)).await;
        // Child::kill is SIGKILL: no destructor, no rollback, no goodbye.
        worker.kill().unwrap_or_else(|e| panic!("killing the worker: {e}"));
        let _ = worker.wait();
    }
    let mut last = shared.worker(&args);
    let status = last.wait().unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success(), "the final worker failed: {status}");
    let (mut handled, mut dead, mut retried) = (0, 0, 0);
    for session in &sessions {
        let verdict = a2_e2e::verify(&*store, session).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(verdict.faults.is_empty(), "{:#?}", verdict.faults);
        assert_eq!(verdict.handled + verdict.dead_lettered, verdict.work * 2);
        handled += verdict.handled;
        dead += verdict.dead_lettered;
        retried += verdict.retried;
    }
    assert!(retried > 0, "the kills landed mid-run: some heads were finished by a later attempt");
    println!(
        "{}: after 20 kills, {handled} heads handled once ({retried} by a later attempt), {dead} dead-lettered",
        shared.url
    );
    shared.remove().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_survives_twenty_kills() {
    crash_and_recover(Shared::sqlite("crash")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_survives_twenty_kills() {
    crash_and_recover(Shared::postgres("crash")).await;
}
