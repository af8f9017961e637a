//! The operations console through the `a2` binary: pause and resume, an
//! acknowledgement of a long session in one call, and a session brought home
//! (export, import, copy from a read-only Postgres attach into a SQLite file).

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("a2-ops-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

fn sqlite(name: &str) -> String {
    format!("sqlite:{}", scratch(&format!("{name}.sqlite")).display())
}

/// `a2 --store STORE ARGS…`: exit code, stdout, stderr.
fn a2(store: &str, args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_a2"))
        .arg("--store")
        .arg(store)
        .args(args)
        .env("A2_STUDIO_CONFIG_DIR", scratch("config"))
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running a2: {e}"));
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn ok(store: &str, args: &[&str]) -> String {
    let (code, out, err) = a2(store, args);
    assert_eq!(code, 0, "a2 {args:?} exited {code}: {err}");
    out
}

fn json(store: &str, args: &[&str]) -> Value {
    let out = ok(store, &[&["--json"], args].concat());
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("a2 {args:?} printed no JSON ({e}): {out}"))
}

#[test]
fn pause_resume_and_an_acknowledgement_in_one_call() {
    let store = sqlite("pause");
    ok(&store, &["demo", "--sessions", "4", "--long-session", "20000"]);

    let paused = json(&store, &["pause", "--contract", "shop", "--consumer", "mailer", "--reason", "provider down"]);
    assert_eq!(paused["consumer"], "mailer");
    assert_eq!(paused["reason"], "provider down");
    let table = ok(&store, &["consumers", "--contract", "shop"]);
    let mailer = table.lines().find(|l| l.contains("mailer")).unwrap_or_default();
    assert!(mailer.contains("paused by") && mailer.contains("provider down"), "{table}");
    assert!(mailer.contains(" (20") && mailer.ends_with(" UTC): provider down"), "a date-time, not epoch ms: {table}");
    let consumers = json(&store, &["consumers", "--contract", "shop"]);
    let mailer = consumers.as_array().and_then(|c| c.iter().find(|c| c["consumer"] == "mailer")).cloned();
    let mailer = mailer.unwrap_or_default();
    assert_eq!(mailer["paused"]["reason"], "provider down", "--json carries the pause: {consumers}");
    assert_eq!(
        mailer["served"]["kind"], "nobody",
        "and who serves it: work waits and no process runs this store: {consumers}"
    );
    let (code, _, err) = a2(&store, &["pause", "--contract", "shop", "--consumer", "mailer", "--reason", " "]);
    assert_eq!(code, 2, "a pause needs a reason: {err}");

    // Acknowledging 20,000 events is one store call and one audit entry, paused or not.
    let through = json(
        &store,
        &["consume", "--contract", "shop", "--session", "long-00000", "--consumer", "mailer", "--mode", "ack"],
    );
    assert_eq!(through["index"], 20_000);
    let heads = json(&store, &["heads", "--contract", "shop", "--session", "long-00000"]);
    let mailer = heads.as_array().and_then(|h| h.iter().find(|h| h["consumer"] == "mailer")).cloned();
    assert_eq!(mailer.map(|m| m["lag"].clone()), Some(Value::from(0)), "{heads}");

    assert_eq!(json(&store, &["resume", "--contract", "shop", "--consumer", "mailer"])["resumed"], true);
    let (code, _, _) = a2(&store, &["resume", "--contract", "shop", "--consumer", "mailer"]);
    assert_eq!(code, 5, "resuming a running consumer changes nothing");

    let audit = json(&store, &["audit", "--limit", "10"]);
    let actions: Vec<&str> = audit.as_array().into_iter().flatten().filter_map(|a| a["action"].as_str()).collect();
    assert_eq!(actions.iter().filter(|a| **a == "consume.ack").count(), 1, "{actions:?}");
    assert!(actions.contains(&"pause") && actions.contains(&"resume"), "{actions:?}");
}

#[test]
fn a_session_exports_imports_and_refuses_a_damaged_file() {
    let source = sqlite("export-source");
    ok(&source, &["demo", "--sessions", "12"]);
    let export = ok(&source, &["export", "--contract", "shop", "--session", "order-00003"]);
    let lines: Vec<&str> = export.lines().collect();
    assert!(lines[0].contains("\"a2.session/1\""), "{}", lines[0]);
    assert!(lines.last().unwrap_or(&"").starts_with("{\"end\":"), "the last line closes the file");
    let file = scratch("order-00003.jsonl");
    std::fs::write(&file, &export).unwrap_or_else(|e| panic!("{e}"));
    let path = file.display().to_string();

    let target = sqlite("export-target");
    let cut = scratch("cut.jsonl");
    std::fs::write(&cut, lines[..lines.len() - 1].join("\n")).unwrap_or_else(|e| panic!("{e}"));
    let (code, _, err) = a2(&target, &["import", "--file", &cut.display().to_string()]);
    assert_eq!(code, 2, "a cut-off file is bad input: {err}");
    assert!(err.contains("no end line"), "{err}");
    let (code, _, _) = a2(&target, &["session", "--contract", "shop", "--session", "order-00003"]);
    assert_eq!(code, 4, "nothing was written");

    let imported = json(&target, &["import", "--file", &path]);
    assert_eq!(imported["session"], "order-00003");
    let read = |store: &str| {
        let mut summary = json(store, &["session", "--contract", "shop", "--session", "order-00003"]);
        summary.as_object_mut().map(|o| o.remove("url"));
        (summary, json(store, &["heads", "--contract", "shop", "--session", "order-00003"]))
    };
    assert_eq!(read(&source), read(&target), "the import reads back as the source");
    let (code, _, err) = a2(&target, &["import", "--file", &path]);
    assert_eq!(code, 2, "the session exists now: {err}");
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(json(&target, &["import", "--file", &path, "--as", "order-copy"])["session"], "order-copy");
}

/// The mode bits of `path` and of its `-wal` and `-shm`, where they exist.
#[cfg(unix)]
fn modes(path: &std::path::Path) -> Vec<(String, u32)> {
    use std::os::unix::fs::PermissionsExt as _;
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|suffix| {
            let file = PathBuf::from(format!("{}{suffix}", path.display()));
            std::fs::metadata(&file).ok().map(|m| (file.display().to_string(), m.permissions().mode() & 0o777))
        })
        .collect()
}

/// A store holds events and copies of production sessions: a new one is
/// this user's alone (0600, with its `-wal` and `-shm`), and a copy into an
/// existing store that others could read makes it private first.
#[cfg(unix)]
#[test]
fn a_copy_into_an_existing_store_is_this_users_alone() {
    use std::os::unix::fs::PermissionsExt as _;
    let source = scratch("private-source.sqlite");
    let source_url = format!("sqlite:{}", source.display());
    ok(&source_url, &["demo", "--sessions", "3"]);
    let created = modes(&source);
    assert!(!created.is_empty() && created.iter().all(|(_, mode)| *mode == 0o600), "a new store: {created:?}");

    let target = scratch("private-target.sqlite");
    let target_url = format!("sqlite:{}", target.display());
    ok(&target_url, &["init"]);
    for (file, _) in modes(&target) {
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap_or_else(|e| panic!("{e}"));
    }
    assert!(modes(&target).iter().all(|(_, mode)| *mode == 0o644));
    let to = target.display().to_string();
    ok(&source_url, &["copy", "--contract", "shop", "--session", "order-00001", "--to", &to]);
    let after = modes(&target);
    assert!(after.iter().all(|(_, mode)| *mode == 0o600), "the copy's target was made private: {after:?}");
    let copied = json(&target_url, &["session", "--contract", "shop", "--session", "order-00001"]);
    assert_eq!(copied["session"], "order-00001", "{copied}");
}

/// What `a2 search` finds, as (session, matches) pairs.
fn found(store: &str, args: &[&str]) -> Vec<(String, u64)> {
    let hits = json(store, &[&["search", "--contract", "shop"], args].concat());
    let hits = hits.as_array().cloned().unwrap_or_default();
    hits.iter()
        .map(|h| (h["session"].as_str().unwrap_or_default().to_owned(), h["matches"].as_u64().unwrap_or(0)))
        .collect()
}

#[test]
fn search_finds_sessions_by_payload_type_and_id() {
    let store = sqlite("search");
    ok(&store, &["demo", "--sessions", "40"]);
    // The demo's session i orders for customer-(i % 17): sessions 3, 20 and 37.
    let by_customer = found(&store, &["--payload", r#"{"customer": "customer-3"}"#]);
    let sessions: Vec<&str> = by_customer.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(sessions, vec!["order-00003", "order-00020", "order-00037"], "{by_customer:?}");
    assert!(by_customer.iter().all(|(_, n)| *n >= 1));
    let typed = found(&store, &["--type", "order.placed"]);
    assert_eq!(typed.len(), 39, "every demo session has orders, but order-00000, cleared");
    assert!(typed.iter().all(|(s, _)| s != "order-00000"), "cleared events are not found");
    let both = found(&store, &["--type", "order.shipped", "--payload", r#"{"customer": "customer-3"}"#]);
    assert!(both.len() <= by_customer.len());
    let filtered = json(
        &store,
        &[
            "events",
            "--contract",
            "shop",
            "--session",
            "order-00020",
            "--type",
            "order.placed",
            "--path",
            "$.customer = customer-3",
        ],
    );
    assert_eq!(filtered.as_array().map(Vec::len), Some(3), "order-00020 has three orders of customer-3: {filtered}");
    let (code, _, err) = a2(&store, &["search", "--contract", "shop", "--payload", "{customer"]);
    assert_eq!(code, 2, "bad JSON is bad input: {err}");
    assert!(err.contains("not JSON"), "{err}");
    let (code, _, err) = a2(&store, &["index", "payloads"]);
    assert_eq!(code, 2, "a payload index is Postgres-only: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_postgres_session_copies_into_a_sqlite_file() {
    let base = a2_test_support::postgres_url();
    let schema = a2_test_support::fresh_schema("ops_copy");
    let admin = sqlx::PgPool::connect(&base).await.unwrap_or_else(|e| panic!("{e}"));
    sqlx::query(&format!("CREATE SCHEMA {schema}")).execute(&admin).await.unwrap_or_else(|e| panic!("{e}"));
    let separator = if base.contains('?') { '&' } else { '?' };
    let production = format!("{base}{separator}options=-c%20search_path%3D{schema}");
    let url = production.clone();
    tokio::task::spawn_blocking(move || {
        ok(&url, &["--read-write", "demo", "--sessions", "10"]);
        let home = scratch("home.sqlite");
        let copied = json(
            &url,
            &[
                "--read-only",
                "copy",
                "--contract",
                "shop",
                "--session",
                "order-00004",
                "--to",
                &home.display().to_string(),
            ],
        );
        assert_eq!(copied["url"], format!("sqlite:{}", home.display()));
        let dev = format!("sqlite:{}", home.display());
        let heads =
            |store: &str, ro: &str| json(store, &[ro, "heads", "--contract", "shop", "--session", "order-00004"]);
        assert_eq!(heads(&url, "--read-only"), heads(&dev, "--read-write"), "the copy has the production heads");
        // The copy is the developer's to change: a dead letter there can be skipped.
        let dead = json(&dev, &["dead-letters", "--contract", "shop", "--session", "order-00004"]);
        if let Some(letter) = dead["items"].as_array().and_then(|i| i.first()).cloned() {
            let index = letter["index"].to_string();
            let consumer = letter["consumer"].as_str().unwrap_or_default().to_owned();
            let skip = ["redrive", "--contract", "shop", "--session", "order-00004", "--consumer", &consumer];
            ok(&dev, &[&skip[..], &["--index", &index, "--action", "skip"]].concat());
        }
        let (code, _, err) =
            a2(&url, &["--read-only", "import", "--file", &scratch("none.jsonl").display().to_string()]);
        assert_ne!(code, 0, "production stays read-only: {err}");

        // Pausing changes the store: refused read-only, by the operator and by the database.
        let pause = ["pause", "--contract", "shop", "--consumer", "mailer", "--reason", "x"];
        let (code, _, err) = a2(&url, &[&["--read-only"], &pause[..]].concat());
        assert_eq!(code, 3, "a pause on a read-only attach: {err}");
        assert!(err.contains("READ_ONLY"), "{err}");

        // Search on Postgres answers the same, with and without the payload index.
        let pattern = r#"{"customer": "customer-4"}"#;
        let before = found(&url, &["--read-only", "--payload", pattern]);
        assert_eq!(before.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(), vec!["order-00004"]);
        let (code, _, err) = a2(&url, &["--read-only", "index", "payloads"]);
        assert_eq!(code, 3, "creating an index is a write: {err}");
        assert_eq!(json(&url, &["--read-write", "index", "payloads"])["created"], true);
        let (code, _, _) = a2(&url, &["--read-write", "index", "payloads"]);
        assert_eq!(code, 5, "it exists now");
        assert_eq!(found(&url, &["--read-only", "--payload", pattern]), before);
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE")).execute(&admin).await.unwrap_or_else(|e| panic!("{e}"));
}

/// `--recompute` is the kept totals' repair path: a full pass, read-write
/// only; it keeps what a live pass computes.
#[test]
fn consumers_recompute_is_a_read_write_repair() {
    let store = sqlite("recompute");
    ok(&store, &["demo", "--sessions", "6"]);
    let (code, _, err) = a2(&store, &["--read-only", "consumers", "--recompute"]);
    assert_eq!(code, 3, "read-only refuses the full pass: {err}");
    let recomputed = json(&store, &["consumers", "--recompute"]);
    let live = json(&store, &["consumers", "--live"]);
    assert!(recomputed.as_array().is_some_and(|c| !c.is_empty()), "{recomputed}");
    assert_eq!(recomputed, live);
    let (code, _, err) = a2(&store, &["consumers", "--recompute", "--live"]);
    assert_eq!(code, 2, "one or the other: {err}");
}

/// The audit names the user the process runs as, not whatever `$USER` says.
#[test]
fn the_audit_names_the_process_user_not_the_environment() {
    let store = sqlite("identity");
    ok(&store, &["demo", "--sessions", "2"]);
    let spoofed = Command::new(env!("CARGO_BIN_EXE_a2"))
        .args(["--store", &store, "pause", "--contract", "shop", "--consumer", "mailer", "--reason", "spoof"])
        .env("USER", "mallory")
        .env("LOGNAME", "mallory")
        .env("A2_STUDIO_CONFIG_DIR", scratch("config"))
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(spoofed.status.success(), "{}", String::from_utf8_lossy(&spoofed.stderr));
    let id = Command::new("id").arg("-un").output().unwrap_or_else(|e| panic!("{e}"));
    let me = String::from_utf8_lossy(&id.stdout).trim().to_owned();
    let audit = json(&store, &["audit"]);
    let paused = audit.as_array().and_then(|a| a.iter().find(|e| e["action"] == "pause")).cloned();
    let paused = paused.unwrap_or_else(|| panic!("the pause is audited: {audit}"));
    assert_eq!(paused["user"], me.as_str(), "{paused}");
}
