//! What only SQLite does: files, `mode=ro`, the schema checks and typed
//! errors for files that are not A2 stores.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use a2_store::{session_key, EventAppend, NewEvent, SessionList, Store, SystemClock};
use a2_store_sqlite::{Access, Sqlite, SqliteStore};
use serde_json::json;

static NEXT: AtomicU64 = AtomicU64::new(0);

fn fresh_path() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("a2-sqlite-open-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir.join(format!("store-{}.sqlite", NEXT.fetch_add(1, Ordering::SeqCst)))
}

async fn open(path: &PathBuf, access: Access) -> Result<SqliteStore, a2_store::StoreError> {
    Sqlite::open(path, access, Arc::new(SystemClock)).await
}

fn event(id: &str) -> NewEvent {
    NewEvent {
        id: id.into(),
        event_type: "tick".into(),
        payload: json!({}),
        cause: None,
        scheduled_by: None,
        targets: vec![],
    }
}

#[tokio::test]
async fn read_only_opens_never_create_or_migrate() {
    let path = fresh_path();
    let missing = open(&path, Access::ReadOnly).await.expect_err("no file");
    assert_eq!(missing.code(), "NOT_FOUND");
    assert!(!path.exists(), "a read-only open created nothing");
    let plain = fresh_path();
    let pool = sqlx::SqlitePool::connect(&format!("sqlite:{}?mode=rwc", plain.display()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    sqlx::query("CREATE TABLE other (x INTEGER)").execute(&pool).await.unwrap_or_else(|e| panic!("{e}"));
    pool.close().await;
    let error = open(&plain, Access::ReadOnly).await.expect_err("not an A2 store");
    assert_eq!(error.code(), "SCHEMA_MISMATCH");
    assert!(error.to_string().contains("no A2 schema"), "{error}");
}

#[tokio::test]
async fn a_read_only_store_refuses_writes_at_the_api_and_the_database() {
    let path = fresh_path();
    let writer = open(&path, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}"));
    writer
        .event_append(EventAppend {
            session: session_key("c", "s"),
            events: vec![event("a")],
            consumers: vec![],
            origin_index: None,
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let reader = open(&path, Access::ReadOnly).await.unwrap_or_else(|e| panic!("{e}"));
    let refused = reader
        .event_append(EventAppend {
            session: session_key("c", "s"),
            events: vec![event("b")],
            consumers: vec![],
            origin_index: None,
        })
        .await;
    assert_eq!(refused.expect_err("read-only").code(), "READ_ONLY");
    let listed =
        reader.session_list(SessionList { contract: "c".into(), id_prefix: None, after: None, limit: 10 }).await;
    assert_eq!(listed.map(|l| l.len()).ok(), Some(1), "reads work and see the writer's data");
    // The database itself refuses a write on a mode=ro connection.
    let ro = sqlx::SqlitePool::connect(&format!("sqlite:{}?mode=ro", path.display()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let write = sqlx::query("DELETE FROM a2_events").execute(&ro).await.map_err(a2_store_sqlite::db_error);
    assert_eq!(write.expect_err("mode=ro").code(), "READ_ONLY");
}

#[tokio::test]
async fn a_newer_schema_is_refused_and_garbage_is_a_typed_error() {
    let path = fresh_path();
    open(&path, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}")).close().await;
    let pool = sqlx::SqlitePool::connect(&format!("sqlite:{}", path.display())).await.unwrap_or_else(|e| panic!("{e}"));
    sqlx::query("INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (99990101000000, 'future', 1, x'00', 0)")
        .execute(&pool)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    pool.close().await;
    for access in [Access::ReadWrite, Access::ReadOnly] {
        let error = open(&path, access).await.expect_err("newer");
        assert_eq!(error.code(), "SCHEMA_MISMATCH", "{error}");
        assert!(error.to_string().contains("newer than this binary"), "{error}");
    }
    let garbage = fresh_path();
    std::fs::write(&garbage, vec![0x42u8; 8192]).unwrap_or_else(|e| panic!("{e}"));
    let error = open(&garbage, Access::ReadWrite).await.expect_err("not a database");
    assert_eq!(error.code(), "NOT_AN_A2_STORE", "{error}");
    assert!(!error.is_retryable());
    assert_eq!(std::fs::read(&garbage).unwrap_or_default(), vec![0x42u8; 8192], "left as it was");
}

#[tokio::test]
async fn a_file_with_other_tables_is_refused_untouched_unless_initialised() {
    let path = fresh_path();
    let pool = sqlx::SqlitePool::connect(&format!("sqlite:{}?mode=rwc", path.display()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    sqlx::query("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
        .execute(&pool)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    pool.close().await;
    let before = std::fs::read(&path).unwrap_or_default();
    let error = open(&path, Access::ReadWrite).await.expect_err("someone else's file");
    assert_eq!(error.code(), "NOT_AN_A2_STORE", "{error}");
    assert!(error.to_string().contains("invoices") && error.to_string().contains("a2 init"), "{error}");
    assert_eq!(std::fs::read(&path).unwrap_or_default(), before, "not a byte changed, not even the journal mode");
    let how = a2_store_sqlite::SqliteOpen { init: true, ..a2_store_sqlite::SqliteOpen::new(Access::ReadWrite) };
    let store = Sqlite::open_with(&path, how, Arc::new(SystemClock)).await.unwrap_or_else(|e| panic!("{e}"));
    store.close().await;
    // Once initialised it is an A2 store, and opens like one.
    open(&path, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}")).close().await;
    let missing = a2_store_sqlite::SqliteOpen { create: false, ..a2_store_sqlite::SqliteOpen::new(Access::ReadWrite) };
    let error = Sqlite::open_with(fresh_path(), missing, Arc::new(SystemClock)).await.expect_err("no file");
    assert_eq!(error.code(), "NOT_FOUND");
}

#[tokio::test]
async fn urls_name_the_file_and_the_mode() {
    let path = fresh_path();
    let store = Sqlite::open_url(&format!("sqlite:{}", path.display()), Access::ReadWrite, Arc::new(SystemClock)).await;
    assert!(store.is_ok_and(|s| !s.is_read_only()));
    let ro =
        Sqlite::open_url(&format!("sqlite://{}?mode=ro", path.display()), Access::ReadWrite, Arc::new(SystemClock))
            .await;
    assert!(ro.is_ok_and(|s| s.is_read_only()));
    for bad in ["postgres://x", "sqlite:", "sqlite:?mode=ro"] {
        let error = Sqlite::open_url(bad, Access::ReadWrite, Arc::new(SystemClock)).await.expect_err(bad);
        assert_eq!(error.code(), "INVALID_INPUT", "{bad}: {error}");
    }
}

/// A file whose name holds `?`, `#` or `%` is opened by its URL as itself,
/// never as a shorter path with a query (`a?mode=ro.sqlite` is not `a`).
#[tokio::test]
async fn a_path_with_a_question_mark_opens_that_file() {
    let dir = fresh_path().with_extension("d");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    for name in ["a?mode=ro.sqlite", "b#1.sqlite", "c%3F.sqlite"] {
        let path = dir.join(name);
        let url = a2_store_sqlite::path_url(&path);
        let store = Sqlite::open_url(&url, Access::ReadWrite, Arc::new(SystemClock)).await;
        let store = store.unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(store.path(), path.as_path(), "{url}");
        assert!(!store.is_read_only(), "{url}: a ? in the name is not a query");
        store.close().await;
        assert!(path.exists(), "{url} made {}", path.display());
    }
    let doubled = format!("/{}", dir.join("d.sqlite").display());
    let url = a2_store_sqlite::path_url(std::path::Path::new(&doubled));
    let store = Sqlite::open_url(&url, Access::ReadWrite, Arc::new(SystemClock)).await;
    let store = store.unwrap_or_else(|e| panic!("{url}: {e}"));
    assert_eq!(store.path(), std::path::Path::new(&doubled), "a path that starts // stays absolute");
    store.close().await;
    let stray: Vec<_> = std::fs::read_dir(&dir).into_iter().flatten().flatten().map(|e| e.file_name()).collect();
    assert!(stray.iter().all(|n| n.to_string_lossy().contains('.')), "no file cut short at the ?: {stray:?}");
}

/// Totals read a chunk of sessions a statement sum to what one statement reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_totals_in_chunks_match_the_whole() {
    let path = fresh_path();
    let whole = open(&path, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}"));
    let chunked = whole.clone().totals_chunk(2);
    a2_conformance::consumer_totals_in_chunks_match_the_whole(Arc::new(whole), Arc::new(chunked)).await;
}

/// A table that happens to be named `a2_events` proves nothing: only a
/// migration ledger whose checksums are A2's makes a file an A2 store.
#[tokio::test]
async fn not_an_a2_store_check_reads_the_ledger() {
    let run = |path: PathBuf, sql: &'static str| async move {
        let pool = sqlx::SqlitePool::connect(&format!("sqlite:{}?mode=rwc", path.display()))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        sqlx::raw_sql(sql).execute(&pool).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        pool.close().await;
    };
    let path = fresh_path();
    run(path.clone(), "CREATE TABLE a2_events (id TEXT)").await;
    let before = std::fs::read(&path).unwrap_or_default();
    let error = open(&path, Access::ReadWrite).await.expect_err("someone else's a2_events");
    assert_eq!(error.code(), "NOT_AN_A2_STORE", "{error}");
    assert_eq!(std::fs::read(&path).unwrap_or_default(), before, "not a byte changed");

    let path = fresh_path();
    open(&path, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}")).close().await;
    run(path.clone(), "UPDATE _sqlx_migrations SET checksum = x'00' WHERE version = 2").await;
    for access in [Access::ReadWrite, Access::ReadOnly] {
        let error = open(&path, access).await.expect_err("a migration from another file");
        assert_eq!(error.code(), "NOT_AN_A2_STORE", "{access:?}: {error}");
        assert!(error.to_string().contains("migration 2"), "{error}");
    }
}
