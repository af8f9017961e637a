//! Attaching safely: read-only decided by the backend and held as a
//! ceiling, no writes to a database or file that is not an A2 store, web
//! mode bound to its own store, exports under one directory, no password
//! shown, stored or audited.

use std::sync::Arc;

use a2_studio_api::*;
use common::{http, open};

mod common;

fn scratch() -> std::path::PathBuf {
    common::scratch("attach")
}

/// A fresh, empty Postgres schema, reached through the URL's search path.
async fn postgres_schema() -> (String, String, sqlx::PgPool) {
    let base = a2_test_support::postgres_url();
    let schema = a2_test_support::fresh_schema("attach");
    let admin = sqlx::PgPool::connect(&base).await.unwrap_or_else(|e| panic!("{e}"));
    sqlx::query(&format!("CREATE SCHEMA {schema}")).execute(&admin).await.unwrap_or_else(|e| panic!("{e}"));
    let separator = if base.contains('?') { '&' } else { '?' };
    (format!("{base}{separator}options=-c%20search_path%3D{schema}"), schema, admin)
}

async fn tables(admin: &sqlx::PgPool, schema: &str) -> Vec<String> {
    sqlx::query_scalar("SELECT tablename::text FROM pg_tables WHERE schemaname = $1 ORDER BY 1")
        .bind(schema)
        .fetch_all(admin)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn seeded_sqlite(dir: &std::path::Path) -> String {
    let url = format!("sqlite:{}", dir.join("store.sqlite").display());
    let studio = Studio::new(dir);
    studio.connection_open(open(&url, None)).await.unwrap_or_else(|e| panic!("{e}"));
    let seed = DemoSeed { sessions: 4, seed: 7, fail_rate: 0.0, bulk: true, long_session: 0, long_history: 0 };
    studio.demo_seed(seed).await.unwrap_or_else(|e| panic!("{e}"));
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_postgres_attach_opens_read_only_unless_asked_and_writing_names_the_server() {
    let (url, schema, admin) = postgres_schema().await;
    let studio = Studio::new(&scratch());
    let default = studio.connection_default(ConnectionDefaultRequest { url: url.clone() }).await;
    let default = default.unwrap_or_else(|e| panic!("{e}"));
    assert!(default.read_only && !default.locked, "{default:?}");
    let sqlite = studio.connection_default(ConnectionDefaultRequest { url: "sqlite:x.sqlite".into() }).await;
    assert!(!sqlite.unwrap_or_else(|e| panic!("{e}")).read_only);

    // Read-write first, to create the store; then a plain attach is read-only, on this machine too.
    let written = studio.connection_open(open(&url, Some(false))).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!written.read_only);
    let server = written.server.clone().unwrap_or_else(|| panic!("a Postgres connection names its server"));
    assert!(!server.database.is_empty() && !server.version.is_empty() && !server.session_user.is_empty());
    // sslmode=prefer on this machine: encrypted if the server offers TLS (Debian's does), never verified.
    assert!(matches!(written.tls, Some(TlsView::Off | TlsView::Encrypted)), "{:?}", written.tls);
    let active: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = 'a2-studio'")
        .fetch_one(&admin)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(active > 0, "a DBA sees the Studio by name in pg_stat_activity");
    studio
        .demo_seed(DemoSeed { sessions: 2, seed: 1, fail_rate: 0.0, bulk: true, long_session: 0, long_history: 0 })
        .await
        .ok();
    let clear = ClearSession { contract: "shop".into(), session: "order-00001".into(), if_last_index: None };
    studio.session_clear(clear).await.unwrap_or_else(|e| panic!("{e}"));
    let audit = studio.audit_list(AuditQuery { before: None, limit: 10 }).await.unwrap_or_else(|e| panic!("{e}"));
    let entry = audit.iter().find(|a| a.action == "clear").unwrap_or_else(|| panic!("the clear is audited"));
    assert_eq!(entry.db_user.as_deref(), Some(server.session_user.as_str()), "the database role beside the OS user");

    let plain = studio.connection_open(open(&url, None)).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(plain.read_only, "Postgres on 127.0.0.1 is read-only by default too");
    assert!(written.read_only_proof.is_empty(), "a read-write connection proves nothing read-only");
    // The test's role is a superuser: the session setting, checked on each connection, is the proof.
    assert_eq!(plain.read_only_proof, vec![ReadOnlyProof::SessionVerified], "{plain:?}");
    let sqlite = format!("sqlite:{}", scratch().join("proof.sqlite").display());
    studio.connection_open(open(&sqlite, Some(false))).await.unwrap_or_else(|e| panic!("{e}"));
    let file = studio.connection_open(open(&sqlite, Some(true))).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file.read_only_proof, vec![ReadOnlyProof::ReadOnlyFile], "{file:?}");
    let remote_by_query = format!("{url}&host=127.0.0.1");
    assert!(studio.connection_open(open(&remote_by_query, None)).await.unwrap_or_else(|e| panic!("{e}")).read_only);
    a2_test_support::drop_schema(&schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_database_that_is_not_an_a2_store_is_left_untouched_until_init() {
    let (url, schema, admin) = postgres_schema().await;
    sqlx::query(&format!("CREATE TABLE {schema}.orders (id int PRIMARY KEY)"))
        .execute(&admin)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let studio = Studio::new(&scratch());
    let refused = studio.connection_open(open(&url, Some(false))).await.err();
    let refused = refused.unwrap_or_else(|| panic!("a database with other tables was migrated"));
    assert_eq!(refused.code, ErrorCode::NotAnA2Store, "{refused}");
    assert!(refused.message.contains("a2 init"), "{refused}");
    assert_eq!(tables(&admin, &schema).await, vec!["orders".to_owned()], "nothing was written");
    studio.connection_init(open(&url, Some(false))).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(tables(&admin, &schema).await.contains(&"a2_events".to_owned()));
    a2_test_support::drop_schema(&schema).await;
}

#[tokio::test]
async fn a_sqlite_file_that_is_not_an_a2_store_is_left_untouched_until_init() {
    let dir = scratch();
    let path = dir.join("app.sqlite");
    {
        use std::str::FromStr;
        let options = sqlx::sqlite::SqliteConnectOptions::from_str(&format!("sqlite:{}", path.display()))
            .unwrap_or_else(|e| panic!("{e}"))
            .create_if_missing(true);
        let pool = sqlx::SqlitePool::connect_with(options).await.unwrap_or_else(|e| panic!("{e}"));
        sqlx::query("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
            .execute(&pool)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        pool.close().await;
    }
    let before = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
    let studio = Studio::new(&dir);
    let url = format!("sqlite:{}", path.display());
    let refused = studio.connection_open(open(&url, None)).await.err();
    assert_eq!(refused.map(|e| e.code), Some(ErrorCode::NotAnA2Store));
    assert_eq!(std::fs::read(&path).unwrap_or_default(), before, "not a byte changed");
    assert!(!dir.join("app.sqlite-wal").exists(), "no WAL switch");

    let text = dir.join("notes.sqlite");
    std::fs::write(&text, "not a database at all").unwrap_or_else(|e| panic!("{e}"));
    let refused = studio.connection_open(open(&format!("sqlite:{}", text.display()), None)).await.err();
    assert_eq!(refused.map(|e| e.code), Some(ErrorCode::NotAnA2Store));
    assert_eq!(std::fs::read_to_string(&text).unwrap_or_default(), "not a database at all");

    let info = studio.connection_init(open(&url, None)).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!info.read_only);
    assert!(studio.contract_list(NoArgs {}).await.unwrap_or_else(|e| panic!("{e}")).is_empty());
}

#[tokio::test]
async fn a_profile_saved_read_only_stays_read_only() {
    let dir = scratch();
    let url = seeded_sqlite(&dir).await;
    let studio = Studio::new(&dir);
    let save = ProfileSave { name: "prod".into(), url: url.clone(), password: None, read_only: true };
    studio.profile_save(save).await.unwrap_or_else(|e| panic!("{e}"));
    let profile = |read_only| ConnectionOpen { url: None, profile: Some("prod".into()), password: None, read_only };
    let raised = studio.connection_open(profile(Some(false))).await.err();
    assert_eq!(raised.map(|e| e.code), Some(ErrorCode::ReadOnly));
    let info = studio.connection_open(profile(None)).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(info.read_only);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("profiles.json")).map(|m| m.permissions().mode()).unwrap_or(0);
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passwords_never_reach_what_is_shown_or_stored() {
    let dir = scratch();
    let sqlite = seeded_sqlite(&dir).await;
    let (url, schema, _) = postgres_schema().await;
    let studio = Studio::new(&dir);
    studio.connection_open(open(&url, Some(false))).await.unwrap_or_else(|e| panic!("{e}"));
    // This machine's Postgres trusts every password: the attach works, and must not keep it.
    let in_userinfo = url.replacen("postgres@", "postgres:hunter2@", 1);
    let in_query = format!("{url}&password=hunter2");
    for secret in [in_userinfo, in_query, format!("{sqlite}?password=hunter2")] {
        let info = studio.connection_open(open(&secret, None)).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(!info.url.contains("hunter2"), "{}", info.url);
    }
    let book = studio.profile_list(NoArgs {}).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(book.recent.iter().all(|r| !r.contains("hunter2")), "{:?}", book.recent);
    let file = std::fs::read_to_string(dir.join("profiles.json")).unwrap_or_default();
    assert!(!file.contains("hunter2"), "{file}");
    a2_test_support::drop_schema(&schema).await;
}

#[tokio::test]
async fn exports_are_written_only_under_the_export_directory() {
    let dir = scratch();
    let url = seeded_sqlite(&dir).await;
    let exports = dir.join("exports");
    let limits = Limits { export_dir: exports.clone(), ..Limits::default() };
    let studio = Studio::with_limits(&dir, limits);
    studio.connection_open(open(&url, None)).await.unwrap_or_else(|e| panic!("{e}"));
    let export = |name: &str| ConsumeRequest {
        contract: "shop".into(),
        session: "order-00002".into(),
        consumer: "mailer".into(),
        through: Some(1),
        mode: ConsumeMode::Export,
        export_path: Some(name.into()),
    };
    for name in ["../escape.jsonl", "/tmp/a2-escape.jsonl", ".hidden", "a\\b.jsonl", "c:x.jsonl"] {
        let refused = studio.session_consume(export(name)).await.err();
        assert_eq!(refused.map(|e| e.code), Some(ErrorCode::InvalidInput), "{name}");
    }
    assert!(!dir.join("escape.jsonl").exists());
    studio.session_consume(export("order-2.jsonl")).await.unwrap_or_else(|e| panic!("{e}"));
    let written = exports.join("order-2.jsonl");
    assert!(std::fs::read_to_string(&written).unwrap_or_default().contains("order.placed"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&written).map(|m| m.permissions().mode()).unwrap_or(0);
        assert_eq!(mode & 0o777, 0o600, "an export of production data is this user's alone");
        // An export directory found open to others, or a link to one, is refused, not trusted.
        std::fs::set_permissions(&exports, std::fs::Permissions::from_mode(0o755)).unwrap_or_else(|e| panic!("{e}"));
        let refused = studio.session_consume(export("order-2b.jsonl")).await.err();
        assert!(refused.as_ref().is_some_and(|e| e.message.contains("mode 755")), "{refused:?}");
        assert!(!exports.join("order-2b.jsonl").exists());
        std::fs::set_permissions(&exports, std::fs::Permissions::from_mode(0o700)).unwrap_or_else(|e| panic!("{e}"));
        let linked = dir.join("linked-exports");
        std::os::unix::fs::symlink(&exports, &linked).unwrap_or_else(|e| panic!("{e}"));
        let through_link = Studio::with_limits(&dir, Limits { export_dir: linked, ..Limits::default() });
        through_link.connection_open(open(&url, None)).await.unwrap_or_else(|e| panic!("{e}"));
        let refused = through_link.session_consume(export("order-2c.jsonl")).await.err();
        assert!(refused.as_ref().is_some_and(|e| e.message.contains("symbolic link")), "{refused:?}");
    }
}

// ── the web mode ────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_mode_under_a_read_only_ceiling_opens_its_own_store_read_only_and_nothing_else() {
    let dir = scratch();
    let url = seeded_sqlite(&dir).await;
    let limits = Limits { read_only: true, web: true, started_with: Some(url.clone()), ..Limits::default() };
    let studio = Arc::new(Studio::with_limits(&dir, limits));
    let info = studio.connection_open(open(&url, None)).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(info.read_only && info.locked_read_only);
    let served = common::serve(studio).await;
    let (port, token) = (served.port, served.token.clone());
    let headers = [("x-a2-token", token.as_str()), ("content-type", "application/json")];
    let call = |command: &'static str, request: serde_json::Value| {
        let body = serde_json::json!({ "request": request }).to_string();
        let headers = headers;
        async move { http(port, "POST", &format!("/api/{command}"), &headers, &body).await }
    };
    let store =
        |read_only: serde_json::Value| serde_json::json!({ "url": url, "profile": null, "read_only": read_only });

    let (status, body) = call("connection_open", store(serde_json::json!(false))).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains(r#""code":"READ_ONLY""#), "{body}");
    let (status, body) = call("connection_open", store(serde_json::Value::Null)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""read_only":true"#), "{body}");
    let (status, body) = call("connection_default", serde_json::json!({ "url": "sqlite:other.sqlite" })).await;
    assert!(status == 200 && body.contains(r#""locked":true"#), "{status} {body}");

    let elsewhere = dir.join("new.sqlite");
    let other =
        serde_json::json!({ "url": format!("sqlite:{}", elsewhere.display()), "profile": null, "read_only": null });
    let (status, body) = call("connection_open", other).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("FORBIDDEN"), "{body}");
    assert!(!elsewhere.exists(), "web mode creates no files");

    let (status, body) = call("contract_list", serde_json::json!({ "surprise": 1 })).await;
    assert!(status == 400 && body.contains("unknown field"), "requests refuse unknown fields: {status} {body}");
    let huge = format!(r#"{{"request":{{"contract":"{}"}}}}"#, "x".repeat(300 * 1024));
    let (status, _) = http(port, "POST", "/api/contract_list", &headers, &huge).await;
    assert_eq!(status, 413, "an oversized body is refused unread");
    let (status, _) = http(port, "POST", "/api/contract_list", &[], &huge).await;
    assert_eq!(status, 401, "without the token, not even the size is looked at");

    let (status, body) = http(port, "GET", "/app.js", &[], "").await;
    assert_eq!((status, body.as_str()), (200, "console.log(1)"));
    let (status, body) = http(port, "GET", "/c:app.js", &[], "").await;
    assert!(status == 200 && body.contains("A2 Studio"), "a drive-like path is no asset: {status}");
    let (status, _) = http(port, "GET", "/app.js", &[("host", "evil.example:80")], "").await;
    assert_eq!(status, 421, "assets too answer to this machine's names only");
    served.stop().await;
}

/// The Studio through PgBouncer in transaction mode (`?pgbouncer=true`): a
/// read-only attach that reads, refuses writes, and says it polls (a pooler
/// carries no LISTEN). A database of its own: a pooler passes no `options`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_studio_attaches_through_a_pooler_read_only_and_polls() {
    let (_, url) = a2_test_support::fresh_pooled_database("attachpool").await;

    let writer = Studio::new(&scratch());
    let written = writer.connection_open(open(&url, Some(false))).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(written.pooled && !written.live && !written.read_only, "{written:?}");
    let seed = DemoSeed { sessions: 3, seed: 7, fail_rate: 0.0, bulk: true, long_session: 0, long_history: 0 };
    writer.demo_seed(seed.clone()).await.unwrap_or_else(|e| panic!("seeding through the pooler: {e}"));
    writer.stop_background().await;

    let studio = Studio::new(&scratch());
    let info = studio.connection_open(open(&url, None)).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(info.read_only && info.pooled && !info.live, "read-only, pooled, polled: {info:?}");
    assert_eq!(studio.contract_list(NoArgs {}).await.unwrap_or_else(|e| panic!("{e}")), vec!["shop".to_owned()]);
    let totals = studio
        .consumer_overview(TotalsQuery { contract: None, max_age_ms: 0, live: true, recompute: false })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!totals.totals.is_empty(), "the overview reads through the pooler");
    let refused = studio.demo_seed(seed).await.expect_err("a read-only attach refuses writes");
    assert_eq!(refused.code, ErrorCode::ReadOnly, "{refused:?}");
    studio.connection_close(NoArgs {}).await.ok();
    a2_test_support::drop_database(&url).await;
}

/// A copy of the seeded `order-00002` to `to`.
fn copy(to: &std::path::Path) -> CopyRequest {
    CopyRequest {
        contract: "shop".into(),
        session: "order-00002".into(),
        as_session: None,
        to: Some(to.display().to_string()),
    }
}

/// A copy goes only into a real folder only this user can write: not
/// through a folder that is a symbolic link, nor into one where another user
/// could put a link in the copy's place before SQLite opens it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_refuses_a_symlinked_parent() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = scratch();
    let url = seeded_sqlite(&dir).await;
    let studio = Studio::new(&dir);
    studio.connection_open(open(&url, None)).await.unwrap_or_else(|e| panic!("{e}"));
    let real = dir.join("real");
    std::fs::create_dir_all(&real).unwrap_or_else(|e| panic!("{e}"));
    let linked = dir.join("linked");
    std::os::unix::fs::symlink(&real, &linked).unwrap_or_else(|e| panic!("{e}"));
    let refused = studio.session_copy(copy(&linked.join("copy.sqlite"))).await.expect_err("a linked folder");
    assert_eq!(refused.code, ErrorCode::InvalidInput, "{refused:?}");
    assert!(refused.message.contains("symbolic link"), "{refused:?}");
    assert!(!real.join("copy.sqlite").exists(), "nothing was written where the folder's link points");

    let shared = dir.join("shared");
    std::fs::create_dir_all(&shared).unwrap_or_else(|e| panic!("{e}"));
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap_or_else(|e| panic!("{e}"));
    let refused = studio.session_copy(copy(&shared.join("copy.sqlite"))).await.expect_err("a folder others write");
    assert_eq!(refused.code, ErrorCode::InvalidInput, "{refused:?}");
    assert!(!shared.join("copy.sqlite").exists());

    studio.session_copy(copy(&real.join("copy.sqlite"))).await.unwrap_or_else(|e| panic!("a real folder of mine: {e}"));
    // A sidecar planted as a link is refused too (before SQLite would follow it).
    let planted = real.join("again.sqlite-wal");
    std::os::unix::fs::symlink(dir.join("elsewhere-wal"), &planted).unwrap_or_else(|e| panic!("{e}"));
    let refused = studio.session_copy(copy(&real.join("again.sqlite"))).await.expect_err("a linked -wal");
    assert_eq!(refused.code, ErrorCode::InvalidInput, "{refused:?}");
    assert!(!dir.join("elsewhere-wal").exists());
}

/// A copy of a session is this user's alone (0600), never follows a
/// symbolic link, and under a read-only ceiling writes only a new file
/// under the export directory, never a store that exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_are_private_and_only_new_files_under_a_read_only_ceiling() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = scratch();
    let url = seeded_sqlite(&dir).await;
    let studio = Studio::new(&dir);
    studio.connection_open(open(&url, None)).await.unwrap_or_else(|e| panic!("{e}"));
    let target = dir.join("copies").join("copy.sqlite");
    studio.session_copy(copy(&target)).await.unwrap_or_else(|e| panic!("{e}"));
    let mode = std::fs::metadata(&target).map(|m| m.permissions().mode()).unwrap_or(0);
    assert_eq!(mode & 0o777, 0o600, "a copy of production data is this user's alone");

    let elsewhere = dir.join("elsewhere.sqlite");
    let link = dir.join("copies").join("link.sqlite");
    std::os::unix::fs::symlink(&elsewhere, &link).unwrap_or_else(|e| panic!("{e}"));
    let refused = studio.session_copy(copy(&link)).await.expect_err("a symbolic link is not followed");
    assert_eq!(refused.code, ErrorCode::InvalidInput, "{refused:?}");
    assert!(!elsewhere.exists(), "nothing was written where the link points");

    let exports = dir.join("exports");
    let ceiling =
        Studio::with_limits(&dir, Limits { read_only: true, export_dir: exports.clone(), ..Limits::default() });
    ceiling.connection_open(open(&url, None)).await.unwrap_or_else(|e| panic!("{e}"));
    let refused = ceiling.session_copy(copy(&target)).await.expect_err("not to a path of its choosing");
    assert_eq!(refused.code, ErrorCode::InvalidInput, "{refused:?}");
    let fresh = std::path::Path::new("ceiling.sqlite");
    ceiling.session_copy(copy(fresh)).await.unwrap_or_else(|e| panic!("a new file under the export dir: {e}"));
    assert!(exports.join(fresh).exists());
    let again = ceiling.session_copy(copy(fresh)).await.expect_err("a store that exists is not written");
    assert_eq!(again.code, ErrorCode::ReadOnly, "{again:?}");
}
