//! Every time a table prints is for a person: how far from now and when, in
//! UTC; spans in two units. `--json` keeps the numbers.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use a2_store::*;
use serde_json::{json, Value};

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("a2-times-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir.join(name)
}

fn ok(store: &str, args: &[&str]) -> String {
    let (code, out, err) = common::a2_with_config(store, args, &scratch("config"));
    assert_eq!(code, 0, "a2 {args:?}: {err}");
    out
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// What a person must never be shown: raw epoch milliseconds (ten digits or
/// more) or a span in seconds past a minute (`in 86398 s`).
fn machine_times(table: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in table.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        for (i, word) in words.iter().enumerate() {
            let digits = word.trim_matches(|c: char| !c.is_ascii_digit());
            if digits.len() >= 10 && digits.chars().all(|c| c.is_ascii_digit()) {
                found.push(format!("{word}: {line}"));
            }
            let seconds = words.get(i + 1).is_some_and(|unit| *unit == "s" || unit.starts_with("s)"));
            if seconds && word.parse::<u64>().is_ok_and(|n| n >= 60) {
                found.push(format!("{word} s: {line}"));
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_prints_times_for_people() {
    let path = scratch("times.sqlite");
    let _ = std::fs::remove_file(&path);
    let url = format!("sqlite:{}", path.display());
    ok(&url, &["demo", "--sessions", "4", "--fail-rate", "0.9"]);
    let store = a2_store_sqlite::Sqlite::open(&path, a2_store_sqlite::Access::ReadWrite, Arc::new(SystemClock))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let sessions: Value =
        serde_json::from_str(&ok(&url, &["--json", "sessions", "--contract", "shop", "--dead-letters"]))
            .unwrap_or_else(|e| panic!("sessions: {e}"));
    let session =
        sessions["items"][0]["session"].as_str().unwrap_or_else(|| panic!("a session with dead letters: {sessions}"));
    let key = session_key("shop", session);
    // The demo ran a moment ago, so its times read `now (…)` or `2 s ago (…)`.
    // A timer due a day from now (a moment less by the time it prints) and a presence stamped 3 minutes ago.
    let due_at = now_ms() + 86_400_000;
    let work = TaskWork::Append {
        events: vec![ScheduledEvent { id: "t-1".into(), event_type: "order.placed".into(), payload: json!({}) }],
    };
    let task =
        TaskSchedule { session: key.clone(), id: "task-1".into(), name: "remind".into(), due_at, work, trigger: None };
    store.task_schedule(task).await.unwrap_or_else(|e| panic!("schedule: {e}"));
    let presence = PresenceSet {
        session: key,
        participant: "ann".into(),
        values: vec![("cursor".into(), Some(json!({ "x": 1 })))],
        seen: 0,
        at: now_ms() - 180_000,
        ttl_ms: 600_000,
    };
    store.presence_set(presence).await.unwrap_or_else(|e| panic!("presence: {e}"));

    let timers = ok(&url, &["timers", "--contract", "shop"]);
    assert!(
        timers.contains("in 23 h 59 min (") && timers.contains(" UTC)"),
        "a day out, in two units and UTC: {timers}"
    );
    let present = ok(&url, &["presence", "--contract", "shop", "--session", session]);
    assert!(present.contains("3 min ago (") && present.contains("in 9 min"), "stamped and expires: {present}");
    let dead = ok(&url, &["dead-letters", "--contract", "shop"]);
    assert!(dead.contains("dead since") && dead.contains(" UTC)"), "when each letter died: {dead}");
    let attempts = ok(&url, &["attempts", "--contract", "shop", "--session", session]);
    assert!(attempts.contains(" UTC)") && attempts.contains("took"), "when each attempt ended: {attempts}");

    let tables = [
        ("timers", timers),
        ("presence", present),
        ("dead letters", dead),
        ("attempts", attempts),
        ("sessions", ok(&url, &["sessions", "--contract", "shop"])),
        ("audit", ok(&url, &["audit"])),
        ("consumers", ok(&url, &["consumers", "--live"])),
        ("throughput", ok(&url, &["throughput"])),
        ("timeline", ok(&url, &["timeline", "--contract", "shop", "--session", session])),
        ("processes", ok(&url, &["processes"])),
    ];
    for (name, table) in &tables {
        let found = machine_times(table);
        assert!(found.is_empty(), "{name} prints machine times: {found:#?}\n{table}");
    }

    // Scripts keep the numbers.
    let timers: Value =
        serde_json::from_str(&ok(&url, &["--json", "timers", "--contract", "shop"])).unwrap_or_else(|e| panic!("{e}"));
    let ours = timers.as_array().and_then(|all| all.iter().find(|t| t["id"] == "task-1"));
    assert_eq!(ours.map(|t| t["due_at"].clone()), Some(json!(due_at)), "{timers}");
}

#[test]
fn the_check_finds_machine_times() {
    assert_eq!(machine_times("in 86398 s").len(), 1);
    assert_eq!(machine_times("at 1796615412000").len(), 1);
    assert_eq!(machine_times("(1796615412000)").len(), 1);
    assert!(machine_times("in 23 h 59 min (2026-12-08 03:50:10 UTC)  12 s ago  59 s").is_empty());
}
