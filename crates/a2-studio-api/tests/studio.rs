//! The Studio's commands on every store (memory, SQLite, Postgres), the
//! read-only refusals, bad input, and the web mode's HTTP contract.

use std::sync::Arc;
use std::time::Duration;

use a2_operator::demo::DemoOptions;
use a2_operator::{Connect, Operator};
use a2_store_registry::Registry;
use a2_studio_api::*;
use common::{http, open};

mod common;

fn scratch() -> std::path::PathBuf {
    common::scratch("studio")
}

fn postgres_url() -> String {
    let base = a2_test_support::postgres_url();
    let schema = a2_test_support::fresh_schema("studio");
    let separator = if base.contains('?') { '&' } else { '?' };
    format!("{base}{separator}options=-c%20search_path%3D{schema}")
}

/// A store URL of each kind, seeded with the demo through the engine.
async fn seeded(kind: StoreKind) -> (String, Studio) {
    let url = match kind {
        StoreKind::Memory => "memory:".to_owned(),
        StoreKind::Sqlite => format!("sqlite:{}", scratch().join("demo.sqlite").display()),
        StoreKind::Postgres => postgres_url(),
    };
    let studio = Studio::new(&scratch());
    studio.set_host_demo(true);
    if kind == StoreKind::Postgres {
        // The schema named in the URL must exist before a connection uses it.
        let schema = url.rsplit("search_path%3D").next().unwrap_or_default().to_owned();
        let admin = url.split('?').next().unwrap_or_default().to_owned();
        let pool = sqlx_pool(&admin).await;
        sqlx_exec(&pool, &format!("CREATE SCHEMA IF NOT EXISTS {schema}")).await;
    }
    let info = studio.connection_open(open(&url, Some(false))).await.unwrap_or_else(|e| panic!("{url}: {e}"));
    assert_eq!(info.kind, kind);
    if kind == StoreKind::Memory {
        // A memory store lives in its connection: seed through a second operator is impossible.
        return (url, studio);
    }
    let writer = Connect { mode: Some(a2_operator::Mode::ReadWrite), ..Connect::new(url.clone()) };
    let operator = Operator::connect(&writer, &Registry).await.unwrap_or_else(|e| panic!("{e}"));
    operator.demo_seed(DemoOptions { sessions: 24, ..DemoOptions::default() }).await.unwrap_or_else(|e| panic!("{e}"));
    // Reopen, so the Studio sees the demo contract and hosts its consumers.
    studio.connection_open(open(&url, Some(false))).await.unwrap_or_else(|e| panic!("{e}"));
    (url, studio)
}

async fn sqlx_pool(url: &str) -> sqlx::PgPool {
    sqlx::PgPool::connect(url).await.unwrap_or_else(|e| panic!("{url}: {e}"))
}

async fn sqlx_exec(pool: &sqlx::PgPool, sql: &str) {
    sqlx::query(sql).execute(pool).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
}

fn all_dead(contract: Option<&str>) -> DeadLetterQuery {
    DeadLetterQuery {
        contract: contract.map(str::to_owned),
        session: None,
        consumer: None,
        cause: None,
        after: None,
        limit: 100,
    }
}

async fn reads_and_actions(kind: StoreKind) {
    let (url, studio) = seeded(kind).await;
    let info =
        studio.connection_get(NoArgs {}).await.unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|| panic!("open"));
    assert!(info.hosts_demo && !info.read_only);
    assert_eq!(info.live, kind == StoreKind::Postgres);
    assert_eq!(studio.contract_list(NoArgs {}).await.unwrap_or_else(|e| panic!("{e}")), vec!["shop".to_owned()]);

    // Sessions: keyset pages by id and by activity.
    let page = |after: Option<String>, sort| SessionListRequest {
        contract: "shop".into(),
        id_prefix: None,
        has_dead_letters: false,
        lagging: false,
        sort,
        after,
        limit: 10,
    };
    let first = studio.session_list(page(None, SessionSort::Id)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first.items.len(), 10);
    let second = studio.session_list(page(first.next.clone(), SessionSort::Id)).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(second.items[0].session_id > first.items[9].session_id);
    let recent = studio.session_list(page(None, SessionSort::Activity)).await.unwrap_or_else(|e| panic!("{e}"));
    let older =
        studio.session_list(page(recent.next.clone(), SessionSort::Activity)).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(older.items[0].updated_at <= recent.items[9].updated_at);
    let dead_only = SessionListRequest { has_dead_letters: true, ..page(None, SessionSort::Id) };
    let dead_sessions = studio.session_list(dead_only).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!dead_sessions.items.is_empty() && dead_sessions.items.iter().all(|s| s.dead_letters > 0));

    // A session, its events, heads and snapshots.
    let session = SessionRef { contract: "shop".into(), session: "order-00007".into() };
    let summary = studio.session_get(session.clone()).await.unwrap_or_else(|e| panic!("{e}"));
    let events = studio
        .event_list(EventQuery {
            contract: "shop".into(),
            session: "order-00007".into(),
            after: None,
            before: None,
            newest_first: false,
            limit: 100,
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(events.len() as u64, summary.head);
    assert!(serde_json::from_str::<serde_json::Value>(&events[0].payload).is_ok());
    let heads = studio.head_list(session.clone()).await.unwrap_or_else(|e| panic!("{e}"));
    let mailer = heads.iter().find(|h| h.consumer == "mailer").unwrap_or_else(|| panic!("mailer head"));
    assert!(mailer.lag > 0, "the late order waits for the mailer");
    assert!(studio.snapshot_list(session.clone()).await.is_ok());

    // Consume the lagging mailer through its head, acknowledging.
    let consume = ConsumeRequest {
        contract: "shop".into(),
        session: "order-00007".into(),
        consumer: "mailer".into(),
        through: None,
        mode: ConsumeMode::Ack,
        export_path: None,
    };
    let preview = studio.consume_preview(consume.clone()).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(preview.events, mailer.lag);
    let consumed = studio.session_consume(consume).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(consumed.index, summary.head);

    // Redrive one (skip), a list (retry), then all the rest as a job.
    let dead = studio.dead_letter_list(all_dead(Some("shop"))).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(dead.items.len() >= 2, "the demo dead-letters a few events");
    let target = |d: &DeadLetter| DeadLetterRef {
        contract: d.contract.clone(),
        session: d.session_id.clone(),
        consumer: d.consumer.clone(),
        index: d.index,
    };
    let one = studio
        .dead_letter_redrive(Redrive { target: target(&dead.items[0]), action: RedriveAction::Skip })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(one.redriven);
    let again = studio
        .dead_letter_redrive(Redrive { target: target(&dead.items[0]), action: RedriveAction::Skip })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!again.redriven, "a head that is no longer dead is not redriven twice");
    let many = studio
        .dead_letter_redrive_many(RedriveMany { targets: vec![target(&dead.items[1])], action: RedriveAction::Retry })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((many.done, many.total, many.failed), (1, 1, 0));
    let job = studio
        .job_redrive_all(RedriveAll {
            contract: Some("shop".into()),
            consumer: None,
            cause: None,
            action: RedriveAction::Skip,
            stop_at: None,
            rate: None,
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut view = job.clone();
    for _ in 0..200 {
        view = studio.job_get(JobRef { id: job.id }).await.unwrap_or_else(|e| panic!("{e}"));
        if view.finished {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(view.finished && view.error.is_none(), "{view:?}");
    assert_eq!(view.progress.done + view.progress.failed, view.progress.total);

    // Clear only when the head is the one the operator saw.
    let stale =
        ClearSession { contract: "shop".into(), session: "order-00007".into(), if_last_index: Some(summary.head + 5) };
    assert!(!studio.session_clear(stale).await.unwrap_or_else(|e| panic!("{e}")).cleared);
    let fresh =
        ClearSession { contract: "shop".into(), session: "order-00007".into(), if_last_index: Some(summary.head) };
    assert!(studio.session_clear(fresh).await.unwrap_or_else(|e| panic!("{e}")).cleared);

    // Every action left an audit entry.
    let audit = studio.audit_list(AuditQuery { before: None, limit: 100 }).await.unwrap_or_else(|e| panic!("{e}"));
    let actions: Vec<&str> = audit.iter().map(|a| a.action.as_str()).collect();
    for expected in ["consume.ack", "redrive.skip", "redrive.retry", "redrive.all.skip", "clear"] {
        assert!(actions.contains(&expected), "{expected} in {actions:?}");
    }
    // The job is audited as it goes: an entry per redrive, in its own transaction, then one for the job.
    let job_entries: Vec<&AuditView> = audit.iter().filter(|a| a.action == "redrive.all.skip").collect();
    assert_eq!(job_entries.len() as u64, view.progress.total + 1, "{job_entries:?}");
    let closing = job_entries.first().unwrap_or_else(|| panic!("the job's closing entry"));
    assert!(closing.session.is_none() && closing.outcome.contains(r#""done""#), "{closing:?}");
    assert!(job_entries[1..].iter().all(|e| e.session.is_some()), "each redrive names its session");
    let overview = studio
        .consumer_overview(TotalsQuery { contract: Some("shop".into()), max_age_ms: 0, live: false, recompute: false })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(overview.totals.iter().any(|t| t.consumer == "mailer"));

    // Read-only: every action refused with READ_ONLY, nothing changed.
    let ro = Studio::new(&scratch());
    let info = ro.connection_open(open(&url, Some(true))).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(info.read_only && !info.hosts_demo);
    assert_read_only_refuses_everything(&ro).await;
}

async fn assert_read_only_refuses_everything(ro: &Studio) {
    let before = ro.dead_letter_list(all_dead(None)).await.unwrap_or_else(|e| panic!("{e}"));
    let audit_before = ro.audit_list(AuditQuery { before: None, limit: 500 }).await.unwrap_or_else(|e| panic!("{e}"));
    let target =
        DeadLetterRef { contract: "shop".into(), session: "order-00001".into(), consumer: "charger".into(), index: 1 };
    let consume = ConsumeRequest {
        contract: "shop".into(),
        session: "order-00015".into(),
        consumer: "mailer".into(),
        through: None,
        mode: ConsumeMode::Ack,
        export_path: None,
    };
    let refusals = [
        ro.dead_letter_redrive(Redrive { target: target.clone(), action: RedriveAction::Retry }).await.err(),
        ro.dead_letter_redrive_many(RedriveMany { targets: vec![target], action: RedriveAction::Skip }).await.err(),
        ro.job_redrive_all(RedriveAll {
            contract: None,
            consumer: None,
            cause: None,
            action: RedriveAction::Skip,
            stop_at: None,
            rate: None,
        })
        .await
        .err(),
        ro.session_consume(consume).await.err(),
        ro.session_clear(ClearSession { contract: "shop".into(), session: "order-00015".into(), if_last_index: None })
            .await
            .err(),
        ro.demo_traffic(DemoTraffic { on: Some(true) }).await.err(),
    ];
    for refusal in refusals {
        assert_eq!(refusal.map(|e| e.code), Some(ErrorCode::ReadOnly));
    }
    assert_eq!(ro.dead_letter_list(all_dead(None)).await.unwrap_or_else(|e| panic!("{e}")), before);
    assert_eq!(
        ro.audit_list(AuditQuery { before: None, limit: 500 }).await.unwrap_or_else(|e| panic!("{e}")),
        audit_before
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_and_actions_on_sqlite() {
    reads_and_actions(StoreKind::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_and_actions_on_postgres() {
    reads_and_actions(StoreKind::Postgres).await;
}

#[tokio::test]
async fn a_memory_store_opens_empty_and_bad_input_is_typed() {
    let (_, studio) = seeded(StoreKind::Memory).await;
    assert!(studio.contract_list(NoArgs {}).await.unwrap_or_else(|e| panic!("{e}")).is_empty());
    let missing = studio.session_get(SessionRef { contract: "shop".into(), session: "nope".into() }).await;
    assert_eq!(missing.err().map(|e| e.code), Some(ErrorCode::NotFound));
    let too_many = EventQuery {
        contract: "shop".into(),
        session: "s".into(),
        after: None,
        before: None,
        newest_first: false,
        limit: 501,
    };
    assert_eq!(studio.event_list(too_many).await.err().map(|e| e.code), Some(ErrorCode::InvalidInput));
    let zero = Redrive {
        target: DeadLetterRef { contract: "shop".into(), session: "s".into(), consumer: "c".into(), index: 0 },
        action: RedriveAction::Retry,
    };
    assert_eq!(studio.dead_letter_redrive(zero).await.err().map(|e| e.code), Some(ErrorCode::InvalidInput));
    let nobody = Redrive {
        target: DeadLetterRef {
            contract: "shop".into(),
            session: "order-00001".into(),
            consumer: String::new(),
            index: 1,
        },
        action: RedriveAction::Retry,
    };
    let refused = studio.dead_letter_redrive(nobody).await.err().map(|e| e.code);
    assert_eq!(refused, Some(ErrorCode::InvalidInput), "a redrive names its consumer, hosted or not");
    let cursor = SessionListRequest {
        contract: "shop".into(),
        id_prefix: None,
        has_dead_letters: false,
        lagging: false,
        sort: SessionSort::Activity,
        after: Some("yesterday".into()),
        limit: 10,
    };
    assert_eq!(studio.session_list(cursor).await.err().map(|e| e.code), Some(ErrorCode::InvalidInput));
    let rate = RedriveAll {
        contract: None,
        consumer: None,
        cause: None,
        action: RedriveAction::Retry,
        stop_at: None,
        rate: Some(-1.0),
    };
    assert_eq!(studio.job_redrive_all(rate.clone()).await.err().map(|e| e.code), Some(ErrorCode::InvalidInput));
    // So slow it would wait forever between two (and overflow a Duration): refused, not a panic.
    let glacial = RedriveAll { rate: Some(1e-300), ..rate };
    assert_eq!(studio.job_redrive_all(glacial).await.err().map(|e| e.code), Some(ErrorCode::InvalidInput));
    assert_eq!(studio.job_get(JobRef { id: 999 }).await.err().map(|e| e.code), Some(ErrorCode::NotFound));
    let bad_url = studio.connection_open(open("mysql://x", None)).await;
    assert_eq!(bad_url.err().map(|e| e.code), Some(ErrorCode::InvalidInput));
    assert!(studio.connection_close(NoArgs {}).await.unwrap_or_else(|e| panic!("{e}")));
    assert_eq!(studio.contract_list(NoArgs {}).await.err().map(|e| e.code), Some(ErrorCode::NotConnected));
}

#[tokio::test(start_paused = true)]
async fn a_store_without_notifications_is_polled() {
    let (_, studio) = seeded(StoreKind::Memory).await;
    let start =
        studio.change_wait(ChangeWait { since: u32::MAX, timeout_ms: 10 }).await.unwrap_or_else(|e| panic!("{e}"));
    let polled = studio
        .change_wait(ChangeWait { since: start.version, timeout_ms: 25_000 })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(polled.version, start.version, "a store without notifications is polled");
}

// ── the web mode ────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_mode_needs_its_token_and_refuses_actions_read_only() {
    let dir = scratch();
    let url = format!("sqlite:{}", dir.join("web.sqlite").display());
    let operator = Operator::connect(&Connect::new(url.clone()), &Registry).await.unwrap_or_else(|e| panic!("{e}"));
    operator.demo_seed(DemoOptions { sessions: 8, ..DemoOptions::default() }).await.unwrap_or_else(|e| panic!("{e}"));
    let studio = Arc::new(Studio::new(&dir));
    studio.connection_open(open(&url, Some(true))).await.unwrap_or_else(|e| panic!("{e}"));
    let served = common::serve(studio).await;
    let (port, token) = (served.port, served.token.clone());
    let json = ("content-type", "application/json");
    let with_token = [("x-a2-token", token.as_str()), json];

    let (status, body) = http(port, "POST", "/api/contract_list", &[json], r#"{"request":{}}"#).await;
    assert_eq!(status, 401, "{body}");
    let (status, _) =
        http(port, "POST", "/api/contract_list", &[("x-a2-token", "guess"), json], r#"{"request":{}}"#).await;
    assert_eq!(status, 401);
    let rebound = [("x-a2-token", token.as_str()), ("host", "evil.example:80"), json];
    let (status, _) = http(port, "POST", "/api/contract_list", &rebound, r#"{"request":{}}"#).await;
    assert_eq!(status, 401, "a page on another host name cannot drive it");
    let (status, body) = http(port, "POST", "/api/contract_list", &with_token, r#"{"request":{}}"#).await;
    assert_eq!((status, body.as_str()), (200, r#"["shop"]"#));
    let clear = r#"{"request":{"contract":"shop","session":"order-00001","if_last_index":null}}"#;
    let (status, body) = http(port, "POST", "/api/session_clear", &with_token, clear).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains(r#""code":"READ_ONLY""#), "{body}");
    let (status, body) = http(port, "POST", "/api/session_clear", &with_token, r#"{"request":{"contract":1}}"#).await;
    assert!(status == 400 && body.contains("INVALID_INPUT"), "{status} {body}");
    let (status, _) = http(port, "POST", "/api/no_such_command", &with_token, r#"{"request":{}}"#).await;
    assert_eq!(status, 404);
    let (status, body) = http(port, "GET", "/session/shop/x", &[], "").await;
    assert!(status == 200 && body.contains("A2 Studio"), "routes fall back to the app page");
    served.stop().await;
}

/// A token holder of the web mode can neither point a saved profile at
/// another database (nor wipe one) nor migrate a database it names: profile
/// changes are refused and `init` is not on the wire at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_mode_cannot_save_profiles_or_init() {
    let dir = scratch();
    let url = format!("sqlite:{}", dir.join("web.sqlite").display());
    Operator::connect(&Connect::new(url.clone()), &Registry).await.unwrap_or_else(|e| panic!("{e}"));
    let foreign = dir.join("foreign.sqlite");
    std::fs::write(&foreign, "").unwrap_or_else(|e| panic!("{e}"));
    let limits = Limits { web: true, started_with: Some(url.clone()), ..Limits::default() };
    let studio = Arc::new(Studio::with_limits(&dir, limits));
    studio.connection_open(open(&url, None)).await.unwrap_or_else(|e| panic!("{e}"));
    let served = common::serve(studio.clone()).await;
    let with_token = [("x-a2-token", served.token.as_str()), ("content-type", "application/json")];
    let post = |command: &'static str, body: String| {
        let headers = with_token;
        async move { http(served.port, "POST", &format!("/api/{command}"), &headers, &body).await }
    };

    let save = format!(
        r#"{{"request":{{"name":"prod","url":"sqlite:{}","password":null,"read_only":false}}}}"#,
        foreign.display()
    );
    let (status, body) = post("profile_save", save).await;
    assert!(status == 403 && body.contains(r#""code":"FORBIDDEN""#), "{status} {body}");
    let (status, body) = post("profile_delete", r#"{"request":{"name":"prod"}}"#.to_owned()).await;
    assert!(status == 403 && body.contains(r#""code":"FORBIDDEN""#), "{status} {body}");
    let (status, body) = post("profile_list", r#"{"request":{}}"#.to_owned()).await;
    assert!(status == 200 && !body.contains("prod"), "nothing was saved: {status} {body}");

    let init =
        format!(r#"{{"request":{{"url":"{url}","profile":null,"password":null,"read_only":false,"init":true}}}}"#);
    let (status, body) = post("connection_open", init).await;
    assert!(status == 400 && body.contains("INVALID_INPUT"), "init is no field of the wire type: {status} {body}");
    let refused = studio.connection_init(open(&format!("sqlite:{}", foreign.display()), None)).await;
    assert_eq!(refused.err().map(|e| e.code), Some(ErrorCode::Forbidden), "nor is there a way round it in-process");
    assert_eq!(std::fs::read(&foreign).map(|b| b.len()).ok(), Some(0), "the foreign file was never touched");

    // An action a token holder takes is audited as the web mode's, not as this user's own.
    let pause = r#"{"request":{"contract":"shop","consumer":"mailer","reason":"from a browser"}}"#.to_owned();
    let (status, body) = post("consumer_pause", pause).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = post("audit_list", r#"{"request":{"before":null,"limit":5}}"#.to_owned()).await;
    let audit: serde_json::Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{status} {body}: {e}"));
    let user = audit[0]["user"].as_str().unwrap_or_default().to_owned();
    assert!(user.ends_with(" (web mode)") && user.len() > " (web mode)".len(), "{body}");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_with_a_shop_contract_runs_no_demo_code_unless_asked() {
    let (url, _) = seeded(StoreKind::Sqlite).await;
    let studio = Studio::new(&scratch());
    let info = studio.connection_open(open(&url, Some(false))).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!info.hosts_demo, "a contract named like the demo's is not the demo");
    let refused = studio.demo_traffic(DemoTraffic { on: Some(true) }).await;
    assert_eq!(refused.err().map(|e| e.code), Some(ErrorCode::InvalidInput));
    let run = ConsumeRequest {
        contract: "shop".into(),
        session: "order-00007".into(),
        consumer: "mailer".into(),
        through: None,
        mode: ConsumeMode::Run,
        export_path: None,
    };
    assert_eq!(studio.session_consume(run).await.err().map(|e| e.code), Some(ErrorCode::InvalidInput));
}

/// The printed link carries a one-time code, never the token: the page
/// trades it once (`POST /login`) for the token, from this origin only; a
/// code spent, wrong, or offered by a page of another origin gets nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_printed_link_is_a_one_time_code_for_the_token() {
    let dir = scratch();
    let url = format!("sqlite:{}", dir.join("web.sqlite").display());
    Operator::connect(&Connect::new(url.clone()), &Registry).await.unwrap_or_else(|e| panic!("{e}"));
    let studio = Arc::new(Studio::new(&dir));
    studio.connection_open(open(&url, None)).await.unwrap_or_else(|e| panic!("{e}"));
    let served = common::serve(studio).await;
    let (port, token) = (served.port, served.token.clone());
    let listener = a2_studio_api::web::bind(0).await.unwrap_or_else(|e| panic!("{e}"));
    let printed = a2_studio_api::web::url(&listener, &token).unwrap_or_else(|e| panic!("{e}"));
    assert!(printed.contains("/?code=") && !printed.contains(&token), "the token is not in the link: {printed}");
    let code = a2_studio_api::web::one_time_code(&token);

    let (status, head, body) = common::http_with_head(port, "GET", &format!("/?code={code}"), &[], "").await;
    assert!(status == 200 && body.contains("A2 Studio"), "the link opens the page: {status}");
    assert!(!head.to_lowercase().contains("set-cookie"), "no cookie: it would go to every port of 127.0.0.1: {head}");
    let json = ("content-type", "application/json");
    let login = serde_json::json!({ "code": code }).to_string();
    let elsewhere = [("origin", "http://evil.example"), json];
    let (status, _) = http(port, "POST", "/login", &elsewhere, &login).await;
    assert_eq!(status, 403, "a page of another origin gets nothing");
    let (status, body) = http(port, "POST", "/login", &[json], &login).await;
    assert_eq!((status, body), (200, serde_json::json!({ "token": token }).to_string()));
    let (status, body) = http(port, "POST", "/login", &[json], &login).await;
    assert!(status == 403 && body.contains("already used"), "a code works once: {status} {body}");
    let wrong = serde_json::json!({ "code": "0000" }).to_string();
    let (status, _) = http(port, "POST", "/login", &[json], &wrong).await;
    assert_eq!(status, 403);

    let with_token = [("x-a2-token", token.as_str()), json];
    let (status, _) = http(port, "POST", "/api/contract_list", &with_token, r#"{"request":{}}"#).await;
    assert_eq!(status, 200, "the token traded for drives the API");
    let from_elsewhere = [("x-a2-token", token.as_str()), ("origin", "http://evil.example"), json];
    let (status, _) = http(port, "POST", "/api/contract_list", &from_elsewhere, r#"{"request":{}}"#).await;
    assert_eq!(status, 401, "not from a page of another origin");
    served.stop().await;
}

/// A `.sqlite` a file manager hands the app opens read-only: an older
/// schema is not migrated (the open is refused, the file keeps its ledger),
/// and writing is the person's next step, asked for in so many words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_from_the_file_manager_opens_read_only_until_asked() {
    let (url, _) = seeded(StoreKind::Sqlite).await;
    let path = std::path::PathBuf::from(url.trim_start_matches("sqlite:"));
    let studio = Studio::new(&scratch());
    let info = studio.file_open(&path).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(info.read_only, "opened read-only");
    let clear = ClearSession { contract: "shop".into(), session: "order-00001".into(), if_last_index: None };
    assert_eq!(studio.session_clear(clear).await.err().map(|e| e.code), Some(ErrorCode::ReadOnly));
    let info = studio.connection_open(open(&url, Some(false))).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!info.read_only, "read-write once asked");
    studio.connection_close(NoArgs {}).await.unwrap_or_else(|e| panic!("{e}"));

    // An older schema: the newest migration un-recorded.
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap_or_else(|e| panic!("{e}"));
    let newest = "DELETE FROM _sqlx_migrations WHERE version = (SELECT MAX(version) FROM _sqlx_migrations)";
    sqlx::query(newest).execute(&pool).await.unwrap_or_else(|e| panic!("{e}"));
    let count = "SELECT COUNT(*) FROM _sqlx_migrations";
    let before: i64 = sqlx::query_scalar(count).fetch_one(&pool).await.unwrap_or_else(|e| panic!("{e}"));
    let refused = studio.file_open(&path).await.expect_err("an older schema is not migrated unasked");
    assert_eq!(refused.code, ErrorCode::SchemaMismatch, "{refused:?}");
    let after: i64 = sqlx::query_scalar(count).fetch_one(&pool).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(after, before, "the file's schema is as it was");
    pool.close().await;
}

/// Production data taken off a store goes on record: in the store's audit
/// log when the connection may write; from a read-only attach, which writes
/// nothing to its database, in this machine's `takeouts.jsonl` (0600).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exports_and_copies_from_production_are_audited() {
    let (url, _) = seeded(StoreKind::Postgres).await;
    let config = scratch();
    let studio = Studio::new(&config);
    studio.connection_open(open(&url, Some(true))).await.unwrap_or_else(|e| panic!("{e}"));
    let order = || SessionRef { contract: "shop".into(), session: "order-00001".into() };
    studio.session_export(order()).await.unwrap_or_else(|e| panic!("{e}"));
    let to = scratch().join("copy.sqlite");
    let copy = CopyRequest {
        contract: "shop".into(),
        session: "order-00001".into(),
        as_session: None,
        to: Some(to.display().to_string()),
    };
    studio.session_copy(copy).await.unwrap_or_else(|e| panic!("{e}"));
    let path = config.join(TAKEOUTS_FILE);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("no local record at {}: {e}", path.display()));
    let lines: Vec<Takeout> =
        text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}"))).collect();
    let actions: Vec<&str> = lines.iter().map(|l| l.entry.action.as_str()).collect();
    assert_eq!(actions, vec!["session.export", "session.copy"], "{text}");
    assert!(lines
        .iter()
        .all(|l| l.store == profiles::redact(&url) && l.entry.session_id.as_deref() == Some("order-00001")));
    assert!(lines[0].entry.parameters["events"].as_u64().is_some_and(|n| n > 0), "{text}");
    assert_eq!(lines[1].entry.parameters["to"], serde_json::json!(to.display().to_string()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
        assert_eq!(mode, 0o600, "this user's alone");
    }

    // Read-write: the store's own audit log has it, and this machine's record does not grow.
    studio.connection_open(open(&url, Some(false))).await.unwrap_or_else(|e| panic!("{e}"));
    studio.session_export(order()).await.unwrap_or_else(|e| panic!("{e}"));
    let audit = studio.audit_list(AuditQuery { before: None, limit: 20 }).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(audit.iter().any(|a| a.action == "session.export" && a.session.as_deref() == Some("order-00001")));
    assert_eq!(std::fs::read_to_string(&path).map(|t| t.lines().count()).ok(), Some(2));
}

/// A session held whole in memory (the Studio's export, an import, a copy)
/// is bounded, and refused past the bound by name; `a2 export`'s path
/// streams any length a page at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_streams_and_whole_copies_are_bounded() {
    let (url, first) = seeded(StoreKind::Sqlite).await;
    let order = || SessionRef { contract: "shop".into(), session: "order-00001".into() };
    let head = first.session_get(order()).await.unwrap_or_else(|e| panic!("{e}")).head;
    assert!(head >= 2, "a session of a few events: {head}");
    let limits = Limits { whole_session_events: head - 1, ..Limits::default() };
    let studio = Studio::with_limits(&scratch(), limits);
    studio.connection_open(open(&url, Some(false))).await.unwrap_or_else(|e| panic!("{e}"));

    let refused = studio.session_export(order()).await.expect_err("longer than held whole");
    assert_eq!(refused.code, ErrorCode::InvalidInput);
    assert!(
        refused.message.contains(&format!("has {head} events")) && refused.message.contains("a2 export"),
        "{refused:?}"
    );

    let mut streamed = Vec::new();
    studio.session_export_write(order(), &mut streamed).await.unwrap_or_else(|e| panic!("{e}"));
    let copy = a2_operator::SessionCopy::read(streamed.as_slice(), u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(copy.events.len() as u64, head, "every event, streamed");

    let text = String::from_utf8(streamed).unwrap_or_default();
    let import = ImportRequest { text, as_session: Some("imported".into()), park: true };
    let refused = studio.session_import(import).await.expect_err("an import longer than held whole");
    assert_eq!(refused.code, ErrorCode::InvalidInput);
    let to = scratch().join("bounded-copy.sqlite");
    let copy = CopyRequest {
        contract: "shop".into(),
        session: "order-00001".into(),
        as_session: None,
        to: Some(to.display().to_string()),
    };
    let refused = studio.session_copy(copy).await.expect_err("a copy longer than held whole");
    assert_eq!(refused.code, ErrorCode::InvalidInput);
    assert!(!to.exists(), "nothing written");
}
