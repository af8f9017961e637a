//! 1,000 acknowledged appends, SIGKILL the writer, reopen: all 1,000 are there.

mod common;

use std::collections::HashSet;
use std::io::{BufRead, BufReader};

use common::Shared;

async fn acknowledged_appends_survive_a_kill(shared: Shared) {
    let mut writer = shared.worker(&["append", "--session", "durable", "--count", "1000"]);
    let stdout = writer.stdout.take().unwrap_or_else(|| panic!("the writer's stdout"));
    let mut acked = 0;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap_or_else(|e| panic!("reading acks: {e}"));
        acked = line.strip_prefix("ack ").and_then(|n| n.parse::<u64>().ok()).unwrap_or(acked);
        if acked == 1000 {
            break;
        }
    }
    writer.kill().unwrap_or_else(|e| panic!("killing the writer: {e}"));
    let _ = writer.wait();
    assert_eq!(acked, 1000, "the writer acknowledged every append");
    let store = shared.open().await;
    let events = a2_e2e::all_events(&*store, "durable").await.unwrap_or_else(|e| panic!("{e}"));
    let ids: HashSet<String> = events.iter().map(|e| e.id.clone()).collect();
    assert_eq!(events.len(), 1000);
    assert!((1..=1000).all(|n| ids.contains(&format!("ack-{n}"))), "every acknowledged id is present");
    assert_eq!(events.iter().map(|e| e.index).collect::<Vec<_>>(), (1..=1000).collect::<Vec<u64>>());
    shared.remove().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_keeps_every_acknowledged_append() {
    acknowledged_appends_survive_a_kill(Shared::sqlite("durable")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keeps_every_acknowledged_append() {
    acknowledged_appends_survive_a_kill(Shared::postgres("durable")).await;
}
