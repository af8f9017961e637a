//! The `a2` binary end to end on a SQLite store, on Postgres and on Postgres
//! through PgBouncer: JSON field names, exit codes, read-only refusals and bad input.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use a2_store::*;
use serde_json::{json, Value};

fn store_path(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("a2-cli-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir.join(format!("{name}.sqlite"))
}

/// A store the `a2` binary reaches by URL: a SQLite file, or a fresh
/// Postgres schema named through the URL's `options`.
async fn store_url(kind: &str) -> (String, Arc<dyn Store>) {
    if kind == "sqlite" {
        let path = store_path("main");
        let store = a2_store_sqlite::Sqlite::open(&path, a2_store_sqlite::Access::ReadWrite, Arc::new(SystemClock))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        return (format!("sqlite:{}", path.display()), Arc::new(store));
    }
    if kind == "postgres_pooled" {
        return pooled_store_url().await;
    }
    let base = a2_test_support::postgres_url();
    let schema = a2_test_support::fresh_schema("cli");
    let admin = sqlx::PgPool::connect(&base).await.unwrap_or_else(|e| panic!("{e}"));
    sqlx::query(&format!("CREATE SCHEMA {schema}")).execute(&admin).await.unwrap_or_else(|e| panic!("{e}"));
    let separator = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{separator}options=-c%20search_path%3D{schema}");
    let store = a2_store_postgres::Postgres::connect(&url, Default::default(), Arc::new(SystemClock))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (url, Arc::new(store))
}

/// A database of its own (a pooler passes no `options`, so no schema by
/// URL), seeded directly, reached by `a2` through this process's PgBouncer.
async fn pooled_store_url() -> (String, Arc<dyn Store>) {
    let (direct, pooled) = a2_test_support::fresh_pooled_database("clipool").await;
    let store = a2_store_postgres::Postgres::connect(&direct, Default::default(), Arc::new(SystemClock))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (pooled, Arc::new(store))
}

/// Two sessions of `shop`; `charger` dead at index 1 of o-1.
async fn seed(store: &dyn Store) {
    let consumers = vec![StoreConsumer::log("mailer", "main"), StoreConsumer::targeted("charger")];
    for s in ["o-0", "o-1"] {
        let key = session_key("shop", s);
        store.cursor_wake(CursorWake { session: key.clone(), consumer: consumers[0].clone() }).await.ok();
        let events = (1..=3)
            .map(|n| NewEvent {
                id: format!("e{n}"),
                event_type: "order.placed".into(),
                payload: json!({ "n": n }),
                cause: None,
                scheduled_by: None,
                targets: if n == 1 { vec![Target { consumer: "charger".into(), lane: None }] } else { vec![] },
            })
            .collect();
        store
            .event_append(EventAppend {
                session: key.clone(),
                events,
                consumers: consumers.clone(),
                origin_index: None,
            })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let key = session_key("shop", "o-1");
    let claim = HeadClaim {
        session: key.clone(),
        holder: "seed".into(),
        ttl_ms: 30_000,
        consumers: vec![consumers[1].clone()],
        through: None,
        exclude: vec![],
        max_failures: 1,
        limit: 10,
        range: 1,
    };
    for head in store.head_claim(claim).await.unwrap_or_else(|e| panic!("{e}")).heads {
        let fail = HeadFail {
            session: key.clone(),
            head: head.head,
            attempt: head.attempt,
            error: "declined".into(),
            aborted: false,
            max_failures: 1,
            backoff: Backoff::default(),
        };
        store.head_fail(fail).await.unwrap_or_else(|e| panic!("{e}"));
    }
}

/// `a2` on `store`; a Postgres store is attached read-write unless the
/// arguments say `--read-only` (every Postgres is read-only unless asked).
fn a2(store: &str, args: &[&str]) -> (i32, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_a2"));
    command.arg("--store").arg(store);
    if store.starts_with("postgres") && !args.contains(&"--read-only") {
        command.arg("--read-write");
    }
    a2_output(command.args(args))
}

fn a2_output(command: &mut Command) -> (i32, String, String) {
    let output = command.output().unwrap_or_else(|e| panic!("running a2: {e}"));
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn json_of(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

async fn reads_actions_and_exit_codes(kind: &str) -> String {
    let (url, store) = store_url(kind).await;
    seed(&*store).await;
    let path = url.as_str();
    let shop = ["--contract", "shop"];
    let (code, out, _) = a2(path, &["--json", "contracts"]);
    assert_eq!((code, json_of(&out)), (0, json!(["shop"])));
    if kind.starts_with("postgres") {
        // Without --read-write a Postgres store is read-only, on this machine too.
        let clear = ["--store", path, "clear", "--contract", "shop", "--session", "o-0"];
        let (code, _, err) = a2_output(Command::new(env!("CARGO_BIN_EXE_a2")).args(clear));
        assert_eq!(code, 3, "{err}");
        let (code, _, err) = a2_output(Command::new(env!("CARGO_BIN_EXE_a2")).args([
            "--store",
            path,
            "--read-write",
            "session",
            "--contract",
            "shop",
            "--session",
            "o-0",
        ]));
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("read-write on database"), "writing names the database it writes to: {err}");
    }

    let (code, out, _) = a2(path, &["--json", "sessions", "--contract", "shop"]);
    assert_eq!(code, 0);
    let first = &json_of(&out)["items"][0];
    for field in ["contract", "session", "head", "clear_index", "updated_at", "dead_letters", "lag"] {
        assert!(first.get(field).is_some(), "sessions JSON has {field}: {first}");
    }

    let (code, out, _) = a2(path, &["--json", "heads", "--contract", "shop", "--session", "o-1"]);
    assert_eq!(code, 0);
    let head = &json_of(&out)[0];
    for field in [
        "consumer",
        "lane",
        "next_index",
        "session_head",
        "lag",
        "oldest_pending_age_ms",
        "attempt_count",
        "failure_count",
        "last_error",
        "dead",
        "lease_holder",
        "lease_expires_at",
        "next_attempt_at",
        "reason",
    ] {
        assert!(head.get(field).is_some(), "heads JSON has {field}: {head}");
    }

    let (code, out, _) = a2(path, &["--json", "consumers"]);
    assert_eq!(code, 0);
    for field in ["contract", "consumer", "sessions", "lagging_sessions", "total_lag", "dead_letters"] {
        assert!(json_of(&out)[0].get(field).is_some(), "consumers JSON has {field}");
    }

    let (code, out, _) = a2(path, &["--json", "dead-letters"]);
    assert_eq!(code, 0);
    let letter = &json_of(&out)["items"][0];
    for field in [
        "contract",
        "session",
        "consumer",
        "lane",
        "index",
        "event_id",
        "type",
        "attempt_count",
        "failure_count",
        "last_error",
        "failed_at",
    ] {
        assert!(letter.get(field).is_some(), "dead-letter JSON has {field}: {letter}");
    }

    // Dead letters by cause, and the attempt history of a head and of a session.
    let (code, out, _) = a2(path, &["--json", "dead-letters", "--group-by", "cause"]);
    assert_eq!(code, 0);
    let groups = json_of(&out);
    assert_eq!(groups.as_array().map(Vec::len), Some(1), "{groups}");
    assert_eq!(
        (&groups[0]["consumer"], &groups[0]["cause"], &groups[0]["count"]),
        (&json!("charger"), &json!("declined"), &json!(1))
    );
    assert_eq!(groups[0]["sample"]["index"], json!(1));
    let o1 = ["--contract", "shop", "--session", "o-1"];
    let (code, out, _) =
        a2(path, &[&["--json", "attempts"][..], &o1, &["--consumer", "charger", "--index", "1"]].concat());
    assert_eq!(code, 0);
    let attempt = &json_of(&out)["items"][0];
    for field in
        ["consumer", "lane", "index", "attempt", "holder", "started_at", "ended_at", "outcome", "error", "appended"]
    {
        assert!(attempt.get(field).is_some(), "attempts JSON has {field}: {attempt}");
    }
    assert_eq!(
        (&attempt["outcome"], &attempt["error"], &attempt["holder"]),
        (&json!("failed"), &json!("declined"), &json!("seed"))
    );
    let (code, out, _) = a2(path, &[&["--json", "timeline"][..], &o1].concat());
    assert_eq!(code, 0);
    assert_eq!(json_of(&out).as_array().map(Vec::len), Some(1), "{out}");
    let (code, out, _) = a2(path, &[&["timeline"][..], &o1].concat());
    assert!(code == 0 && out.contains("failed") && out.contains("declined"), "the table: {out}");
    let (code, out, _) = a2(path, &["--json", "throughput", "--contract", "shop"]);
    assert_eq!(code, 0);
    let rates = json_of(&out);
    assert_eq!(
        (&rates[0]["consumer"], &rates[0]["completed"], &rates[0]["failed"]),
        (&json!("charger"), &json!(0), &json!(1)),
        "{rates}"
    );
    let (code, _, err) = a2(path, &["throughput", "--minutes", "0"]);
    assert_eq!(code, 2, "minutes out of range is bad input: {err}");
    let (code, _, err) = a2(path, &["attempts", "--contract", "shop", "--session", "nobody"]);
    assert_eq!(code, 4, "no such session: {err}");

    let (code, _, err) = a2(path, &["consume", "--contract", "shop", "--session", "o-1", "--consumer", "charger"]);
    assert_eq!(code, 2, "a consumer without a string lane cannot be consumed: {err}");

    // Read-only: exit 3 and nothing changed.
    let (code, _, err) = a2(
        path,
        &[
            "--read-only",
            "redrive",
            "--contract",
            "shop",
            "--session",
            "o-1",
            "--consumer",
            "charger",
            "--index",
            "1",
            "--action",
            "skip",
        ],
    );
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("READ_ONLY"));
    let (_, out, _) = a2(path, &["--json", "dead-letters"]);
    assert_eq!(json_of(&out)["items"].as_array().map(Vec::len), Some(1));

    let redrive = [
        "redrive",
        "--contract",
        "shop",
        "--session",
        "o-1",
        "--consumer",
        "charger",
        "--index",
        "1",
        "--action",
        "skip",
    ];
    let (code, out, _) = a2(path, &[&["--json"][..], &redrive[..]].concat());
    assert_eq!((code, json_of(&out)), (0, json!({ "redriven": true })));
    let (code, out, _) = a2(path, &[&["--json"][..], &redrive[..]].concat());
    assert_eq!((code, json_of(&out)), (5, json!({ "redriven": false })), "nothing left to redrive");

    let (code, out, _) = a2(
        path,
        &["--json", "consume", "--contract", "shop", "--session", "o-0", "--consumer", "mailer", "--through", "2"],
    );
    assert_eq!((code, json_of(&out)), (0, json!({ "index": 2 })));
    let (code, out, _) =
        a2(path, &["--json", "clear", "--contract", "shop", "--session", "o-0", "--if-last-index", "2"]);
    assert_eq!((code, json_of(&out)), (5, json!({ "cleared": false, "index": 3 })));
    let (code, out, _) =
        a2(path, &["--json", "clear", "--contract", "shop", "--session", "o-0", "--if-last-index", "3"]);
    assert_eq!((code, json_of(&out)), (0, json!({ "cleared": true, "index": 3 })));
    let (code, out, _) = a2(path, &["--json", "audit"]);
    assert_eq!(code, 0);
    let actions: Vec<String> = json_of(&out)
        .as_array()
        .map(|a| a.iter().filter_map(|r| r["action"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    assert_eq!(actions, vec!["clear", "clear", "consume.ack", "redrive.skip", "redrive.skip"]);

    // Bad input.
    let (code, _, _) = a2(path, &[&shop[..], &["session"][..]].concat());
    assert_eq!(code, 2, "a flag before the command is a usage error");
    let (code, _, err) = a2(path, &["session", "--contract", "shop", "--session", "nope"]);
    assert_eq!(code, 4, "{err}");
    let (code, _, _) = a2(
        path,
        &[
            "redrive",
            "--contract",
            "shop",
            "--session",
            "o-1",
            "--consumer",
            "charger",
            "--index",
            "-1",
            "--action",
            "retry",
        ],
    );
    assert_eq!(code, 2, "a negative index is a usage error");
    let (code, _, _) = a2(path, &["events", "--contract", "shop", "--session", "o-1", "--after", "abc"]);
    assert_eq!(code, 2, "a non-numeric index is a usage error");
    let (code, _, err) = a2(
        path,
        &[
            "consume",
            "--contract",
            "shop",
            "--session",
            "o-1",
            "--consumer",
            "mailer",
            "--mode",
            "export",
            "--out",
            "/proc/nope/x.jsonl",
        ],
    );
    assert_eq!(code, 2, "an export path that cannot be written: {err}");
    let missing = format!("sqlite:{}", store_path("missing-dir").join("nested").join("x").display());
    let (code, _, err) = a2(&missing, &["--read-only", "contracts"]);
    assert_eq!(code, 4, "a read-only open of a missing file: {err}");
    let output = Command::new(env!("CARGO_BIN_EXE_a2"))
        .args(["--store", "mysql://x", "contracts"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(output.status.code(), Some(2), "an unknown URL scheme");
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_reads_actions_and_exit_codes() {
    reads_actions_and_exit_codes("sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_reads_actions_and_exit_codes() {
    reads_actions_and_exit_codes("postgres").await;
}

/// Every read and action of the CLI through PgBouncer in transaction mode
/// (`?pgbouncer=true`); and without the flag, the pooler's refusal (of a
/// startup setting, or of a named statement) says what to add.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_pooled_reads_actions_and_exit_codes() {
    let url = reads_actions_and_exit_codes("postgres_pooled").await;
    let (code, out, err) = a2(&url, &["--read-only", "consumers"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("read-only") && out.contains("through a pooler"), "the header says so: {out}");
    let unflagged = url.replace("?pgbouncer=true", "");
    // PgBouncer refuses sqlx's startup settings at once; where a pooler
    // ignores them, named statements stay on its server connections between
    // runs, so a later run's meet an earlier one's.
    let runs: Vec<(i32, String, String)> = (0..3).map(|_| a2(&unflagged, &["consumers"])).collect();
    let refused = runs.iter().find(|(code, _, _)| *code != 0);
    let (_, _, err) = refused.unwrap_or_else(|| panic!("three unflagged runs through a pooler all passed: {runs:?}"));
    assert!(err.contains("pgbouncer=true"), "the refusal says what to add: {err}");
    a2_test_support::drop_database(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_seeds_through_the_engine_and_run_mode_runs_its_code() {
    let url = format!("sqlite:{}", store_path("demo").display());
    let (code, out, err) = a2(&url, &["--json", "demo", "--sessions", "3", "--bulk", "--fail-rate", "0"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json_of(&out), json!({ "sessions": 3, "events": 30 }));
    let (code, _, err) =
        a2(&url, &["consume", "--contract", "shop", "--session", "order-00001", "--consumer", "ledger"]);
    assert_eq!(code, 0, "ack needs no hosted code: {err}");
    let run = [
        "--json",
        "consume",
        "--contract",
        "shop",
        "--session",
        "order-00001",
        "--consumer",
        "mailer",
        "--mode",
        "run",
        "--through",
        "3",
    ];
    let (code, out, err) = a2(&url, &run);
    assert_eq!((code, json_of(&out)), (0, json!({ "index": 3 })), "{err}");
    let (_, out, _) =
        a2(&url, &["--json", "events", "--contract", "shop", "--session", "order-00001", "--after", "10"]);
    let types: Vec<String> = json_of(&out)
        .as_array()
        .map(|a| a.iter().filter_map(|e| e["type"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    assert!(types.iter().filter(|t| *t == "email.sent").count() >= 3, "the mailer's own code ran: {types:?}");
    let (code, _, _) = a2(&url, &["--read-only", "demo"]);
    assert_eq!(code, 3, "seeding is an action");
    let (code, _, _) = a2(&url, &["demo", "--fail-rate", "2"]);
    assert_eq!(code, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grant_reader_is_for_postgres_and_is_an_action() {
    let url = format!("sqlite:{}", store_path("grant").display());
    let (code, _, err) = a2(&url, &["demo", "--sessions", "1"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = a2(&url, &["grant-reader", "--role", "a2_reader"]);
    assert_eq!(code, 2, "SQLite has no roles: {err}");
    assert!(err.contains("Postgres"), "{err}");
    let (code, _, _) = a2(&url, &["--read-only", "grant-reader", "--role", "a2_reader"]);
    assert_eq!(code, 3, "granting is an action");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_can_add_a_long_session() {
    let url = format!("sqlite:{}", store_path("long").display());
    let (code, out, err) = a2(&url, &["--json", "demo", "--sessions", "2", "--long-session", "2500"]);
    assert_eq!(code, 0, "{err}");
    assert!(json_of(&out)["events"].as_u64().is_some_and(|n| n > 2500), "{out}");
    let (_, out, _) = a2(&url, &["--json", "session", "--contract", "shop", "--session", "long-00000"]);
    assert_eq!(json_of(&out)["head"], json!(2500));
}

/// `--help` never prints `A2_STORE`'s value (it may carry a password), and
/// `--read-only init` is refused before anything is opened or written.
#[test]
fn help_hides_the_store_and_read_only_init_writes_nothing() {
    let help = Command::new(env!("CARGO_BIN_EXE_a2"))
        .arg("--help")
        .env("A2_STORE", "postgres://ops:s3cret@db.example.com/app")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let shown = String::from_utf8_lossy(&help.stdout);
    assert!(shown.contains("A2_STORE"), "the variable is named: {shown}");
    assert!(!shown.contains("s3cret") && !shown.contains("db.example.com"), "its value is not: {shown}");

    let path = store_path("read-only-init");
    let url = format!("sqlite:{}", path.display());
    let (code, _, err) = a2(&url, &["--read-only", "init"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("READ_ONLY"), "{err}");
    assert!(!path.exists(), "nothing was created at {}", path.display());
}

/// `PGSSLMODE` in the environment picks the TLS mode when the URL names
/// none (and with it, off goes the verify-full default for a remote host):
/// the header says it came from there; a URL's own `sslmode` wins, unmentioned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgsslmode_from_the_environment_is_named_in_the_header() {
    let (url, _store) = store_url("postgres").await;
    let run = |url: &str, env: &str| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_a2"));
        command.args(["--store", url, "--read-only", "consumers"]).env("PGSSLMODE", env);
        a2_output(&mut command)
    };
    let (code, out, err) = run(&url, "disable");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("TLS off (sslmode=disable from PGSSLMODE, not the URL)"), "{out}");
    let separator = if url.contains('?') { '&' } else { '?' };
    let (code, out, err) = run(&format!("{url}{separator}sslmode=disable"), "require");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("TLS off") && !out.contains("PGSSLMODE"), "the URL chose: {out}");
}

/// A read-write open of an older (here: empty) Postgres schema migrates it:
/// `a2` names the database before opening it, says what it applied, and
/// the migration is on record in the store's audit log; an open with
/// nothing to apply records nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_write_attach_names_the_database_and_audits_its_migrations() {
    let base = a2_test_support::postgres_url();
    let schema = a2_test_support::fresh_schema("cli_migrate");
    let admin = sqlx::PgPool::connect(&base).await.unwrap_or_else(|e| panic!("{e}"));
    sqlx::query(&format!("CREATE SCHEMA {schema}")).execute(&admin).await.unwrap_or_else(|e| panic!("{e}"));
    let separator = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{separator}options=-c%20search_path%3D{schema}");
    let (code, _, err) = a2(&url, &["contracts"]);
    assert_eq!(code, 0, "{err}");
    let opening = err.find("opening postgres").unwrap_or_else(|| panic!("named before opening: {err}"));
    let applied = err.find("applied schema migrations 1, 2").unwrap_or_else(|| panic!("says what it applied: {err}"));
    assert!(opening < applied, "{err}");
    let (code, _, err) = a2(&url, &["contracts"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("applied schema migrations"), "up to date, nothing applied: {err}");
    let (code, out, err) = a2(&url, &["--read-only", "--json", "audit"]);
    assert_eq!(code, 0, "{err}");
    let entries = json_of(&out);
    let migrations: Vec<&Value> =
        entries.as_array().into_iter().flatten().filter(|e| e["action"] == json!("store.migrate")).collect();
    assert_eq!(migrations.len(), 1, "one open migrated: {entries}");
    let applied = migrations[0]["outcome"]["applied"].as_array().map_or(0, Vec::len);
    assert!(applied >= 14, "every migration of the new schema: {}", migrations[0]);

    // A SQLite file's migrations are on record the same way.
    let file = format!("sqlite:{}", store_path("migrated").display());
    let (code, _, err) = a2(&file, &["contracts"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("applied schema migrations 1, 2"), "{err}");
    let (_, out, _) = a2(&file, &["--json", "audit"]);
    let entries = json_of(&out);
    let migrated = entries.as_array().into_iter().flatten().filter(|e| e["action"] == json!("store.migrate")).count();
    assert_eq!(migrated, 1, "{entries}");
}
