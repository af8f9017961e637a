//! What only Postgres does: NOTIFY wake-ups across connections, the schema
//! checks, statement timeouts, and typed errors for bad URLs and servers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use a2_engine::{AppendInput, Contract, DrainTimings, Server};
use a2_store::{session_key, EventAppend, NewEvent, Store, StoreError, SystemClock};
use a2_store_postgres::{Access, PgOptions, PgStore, Postgres};
use serde_json::json;

static NEXT: AtomicU64 = AtomicU64::new(0);

fn url() -> String {
    a2_test_support::postgres_url()
}

fn fresh_schema() -> String {
    a2_test_support::fresh_schema("pg")
}

async fn connect(schema: &str, access: Access) -> Result<PgStore, StoreError> {
    let options = PgOptions { schema: Some(schema.to_owned()), access, max_connections: 4, ..PgOptions::default() };
    Postgres::connect(&url(), options, Arc::new(SystemClock)).await
}

async fn admin() -> sqlx::PgPool {
    sqlx::PgPool::connect(&url()).await.unwrap_or_else(|e| panic!("admin connection to {}: {e}", url()))
}

fn contract() -> Contract {
    Contract::new("live").and_then(|c| c.event_with("tick", |_| Ok(()))).unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_wakes_on_another_connections_append_without_polling() {
    let schema = fresh_schema();
    let reader = connect(&schema, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}"));
    let writer = connect(&schema, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}"));
    let slow_poll = DrainTimings { stream_poll: Duration::from_secs(600), ..DrainTimings::default() };
    let watching =
        Server::builder(contract(), Arc::new(reader)).timings(slow_poll).build().unwrap_or_else(|e| panic!("{e}"));
    let mut stream = watching.session("s").unwrap_or_else(|e| panic!("{e}")).stream(0);
    let waiter = tokio::spawn(async move { stream.next().await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let other = Server::builder(contract(), Arc::new(writer)).build().unwrap_or_else(|e| panic!("{e}"));
    other
        .session("s")
        .unwrap_or_else(|e| panic!("{e}"))
        .append(vec![AppendInput::new("tick", json!({}))])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let woke = tokio::time::timeout(Duration::from_secs(10), waiter).await;
    let event = woke
        .unwrap_or_else(|_| panic!("NOTIFY did not wake the stream"))
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(event.index, 1);
}

#[tokio::test]
async fn read_only_never_migrates_and_says_what_is_missing() {
    let schema = fresh_schema();
    let error = connect(&schema, Access::ReadOnly).await.expect_err("no schema yet");
    assert_eq!(error.code(), "SCHEMA_MISMATCH");
    assert!(error.to_string().contains("no A2 schema"), "{error}");
    let store = connect(&schema, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}"));
    store.close().await;
    let pool = admin().await;
    let versions: Vec<i64> = sqlx::query_scalar(&format!("SELECT version FROM {schema}._sqlx_migrations"))
        .fetch_all(&pool)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    sqlx::query(&format!("DELETE FROM {schema}._sqlx_migrations WHERE version = $1"))
        .bind(versions[0])
        .execute(&pool)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let error = connect(&schema, Access::ReadOnly).await.expect_err("an older schema, read-only");
    assert_eq!(error.code(), "SCHEMA_MISMATCH");
    assert!(error.to_string().contains(&format!("lacks A2 schema migrations {}", versions[0])), "{error}");
}

#[tokio::test]
async fn a_newer_schema_is_refused() {
    let schema = fresh_schema();
    connect(&schema, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}")).close().await;
    let pool = admin().await;
    sqlx::query(&format!(
        "INSERT INTO {schema}._sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (99990101000000, 'from the future', true, '\\x00', 0)"
    ))
    .execute(&pool)
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    for access in [Access::ReadWrite, Access::ReadOnly] {
        let error = connect(&schema, access).await.expect_err("newer schema");
        assert_eq!(error.code(), "SCHEMA_MISMATCH", "{error}");
        assert!(error.to_string().contains("newer than this binary"), "{error}");
    }
}

#[tokio::test]
async fn a_read_only_store_refuses_writes() {
    let schema = fresh_schema();
    connect(&schema, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}")).close().await;
    let store = connect(&schema, Access::ReadOnly).await.unwrap_or_else(|e| panic!("{e}"));
    let event = NewEvent {
        id: "x".into(),
        event_type: "tick".into(),
        payload: json!({}),
        cause: None,
        scheduled_by: None,
        targets: vec![],
    };
    let refused = store
        .event_append(EventAppend {
            session: session_key("live", "s"),
            events: vec![event],
            consumers: vec![],
            origin_index: None,
        })
        .await;
    assert_eq!(refused.expect_err("read-only").code(), "READ_ONLY");
    assert!(store
        .session_list(a2_store::SessionList { contract: "live".into(), id_prefix: None, after: None, limit: 10 })
        .await
        .is_ok());
}

#[tokio::test]
async fn a_read_that_runs_past_the_statement_timeout_is_cancelled() {
    let schema = fresh_schema();
    let options = PgOptions {
        schema: Some(schema.clone()),
        statement_timeout: Duration::from_millis(200),
        ..PgOptions::default()
    };
    let store = Postgres::connect(&url(), options, Arc::new(SystemClock)).await.unwrap_or_else(|e| panic!("{e}"));
    let pool = admin().await;
    let mut locker = pool.begin().await.unwrap_or_else(|e| panic!("{e}"));
    sqlx::query(&format!("LOCK TABLE {schema}.a2_sessions IN ACCESS EXCLUSIVE MODE"))
        .execute(&mut *locker)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let started = std::time::Instant::now();
    let read = store.session_get(&session_key("live", "s")).await;
    let error = read.expect_err("the read waits on the lock until the timeout cancels it");
    assert_eq!(error.code(), "STORE_TIMEOUT", "{error}");
    assert!(error.is_retryable());
    assert!(started.elapsed() < Duration::from_secs(5));
    locker.rollback().await.unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test]
async fn bad_urls_and_unreachable_servers_are_typed_errors() {
    let clock = Arc::new(SystemClock);
    let quick = || PgOptions { connect_timeout: Duration::from_secs(3), ..PgOptions::default() };
    let malformed = Postgres::connect("postgres://user@host:notaport/db", quick(), clock.clone()).await;
    assert_eq!(malformed.expect_err("malformed").code(), "INVALID_INPUT");
    let refused = Postgres::connect("postgres://postgres@127.0.0.1:1/postgres", quick(), clock.clone()).await;
    let refused = refused.expect_err("nothing listens on port 1");
    assert_eq!(refused.code(), "STORE_UNAVAILABLE", "{refused}");
    let no_role = Postgres::connect(&url().replacen("postgres@", "no_such_role_a2@", 1), quick(), clock.clone()).await;
    let no_role = no_role.expect_err("no such role");
    assert_eq!(no_role.code(), "STORE_UNAVAILABLE", "{no_role}");
    assert!(no_role.to_string().contains("authentication failed") && !no_role.is_retryable(), "{no_role}");
    let no_db = url().rsplit_once('/').map(|(base, _)| format!("{base}/no_such_database_a2")).unwrap_or_default();
    let no_db = Postgres::connect(&no_db, quick(), clock).await.expect_err("no such database");
    assert!(no_db.to_string().contains("no such database"), "{no_db}");
}

/// Every kind of write, and the session-level way around read-only mode.
const WRITES: [&str; 6] = [
    "INSERT INTO a2_sessions VALUES ('live\u{1f}x', 1, 0, 0, 0)",
    "UPDATE a2_sessions SET head = head + 1",
    "DELETE FROM a2_sessions",
    "TRUNCATE a2_sessions",
    "CREATE TABLE a2_intruder (i int)",
    "SET transaction_read_only = off; INSERT INTO a2_sessions VALUES ('live\u{1f}y', 1, 0, 0, 0)",
];

/// Run `sql` on a connection opened exactly as a read-only store opens its own.
async fn attempt(url: &str, schema: &str, sql: &str) -> Result<(), sqlx::Error> {
    let options = PgOptions { schema: Some(schema.to_owned()), access: Access::ReadOnly, ..PgOptions::default() };
    let connect = a2_store_postgres::connect_options(url, &options).unwrap_or_else(|e| panic!("{e}"));
    let pool = sqlx::postgres::PgPoolOptions::new().max_connections(1).connect_with(connect).await?;
    let result = sqlx::raw_sql(sql).execute(&pool).await.map(|_| ());
    pool.close().await;
    result
}

fn refused_by_the_database(result: Result<(), sqlx::Error>) -> bool {
    // 42501: insufficient privilege; 25006: read-only transaction.
    matches!(result, Err(sqlx::Error::Database(e)) if matches!(e.code().as_deref(), Some("42501" | "25006")))
}

#[tokio::test]
async fn a_read_only_attach_with_a_reader_role_is_refused_every_write_by_the_database() {
    let schema = fresh_schema();
    let writer = connect(&schema, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}"));
    let role = format!("a2_reader_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst));
    let admin = admin().await;
    sqlx::query(&format!("CREATE ROLE {role} LOGIN")).execute(&admin).await.unwrap_or_else(|e| panic!("{e}"));
    writer.reader_role_grant(&role).await.unwrap_or_else(|e| panic!("{e}"));
    let host = url().split_once("://").map(|(_, rest)| rest.rsplit_once('@').map_or(rest, |(_, h)| h).to_owned());
    let reader_url = format!("postgres://{role}@{}", host.unwrap_or_default());

    let reader = connect_as(&reader_url, &schema).await;
    assert!(!reader.role_can_write().await.unwrap_or_else(|e| panic!("{e}")), "the reader role cannot write");
    assert!(reader.session_get(&session_key("live", "s")).await.is_ok(), "but it reads");
    for sql in WRITES {
        let result = attempt(&reader_url, &schema, sql).await;
        assert!(refused_by_the_database(result), "{sql}: must be refused by the database");
    }
    // With a role that may write, the session setting still refuses plain
    // writes, and the Studio warns (role_can_write) because a session could
    // turn read-only mode off.
    let loose = connect(&schema, Access::ReadOnly).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(loose.role_can_write().await.unwrap_or_else(|e| panic!("{e}")));
    for sql in &WRITES[..5] {
        assert!(refused_by_the_database(attempt(&url(), &schema, sql).await), "{sql}");
    }
    let count: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM {schema}.a2_sessions"))
        .fetch_one(&admin)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(count, 0, "nothing was written");

    reader.close().await;
    writer.close().await;
    for cleanup in
        [format!("DROP SCHEMA {schema} CASCADE"), format!("DROP OWNED BY {role}"), format!("DROP ROLE {role}")]
    {
        let _ = sqlx::query(&cleanup).execute(&admin).await;
    }
}

async fn connect_as(url: &str, schema: &str) -> PgStore {
    let options = PgOptions { schema: Some(schema.to_owned()), access: Access::ReadOnly, ..PgOptions::default() };
    Postgres::connect(url, options, Arc::new(SystemClock)).await.unwrap_or_else(|e| panic!("{url}: {e}"))
}

#[tokio::test]
async fn a_reader_role_grant_is_refused_read_only_and_checks_the_name() {
    let schema = fresh_schema();
    connect(&schema, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}")).close().await;
    let reader = connect(&schema, Access::ReadOnly).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(reader.reader_role_grant("someone").await.expect_err("read-only").code(), "READ_ONLY");
    let writer = connect(&schema, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}"));
    let bad = writer.reader_role_grant("x; DROP TABLE a2_events").await.expect_err("not a role name");
    assert_eq!(bad.code(), "INVALID_INPUT");
}

/// The reader role reads A2's tables and nothing else of the schema, later
/// migrations' tables included; `public`, a superuser and a role that can
/// already write are refused.
#[tokio::test]
async fn grant_reader_touches_only_a2_tables() {
    let schema = fresh_schema();
    let writer = connect(&schema, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}"));
    let admin = admin().await;
    let role = format!("a2_reader_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst));
    let writing = format!("a2_writer_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst));
    for sql in [
        format!("CREATE TABLE {schema}.payroll (salary int)"),
        format!("CREATE ROLE {role} LOGIN"),
        format!("CREATE ROLE {writing} LOGIN"),
        format!("GRANT USAGE ON SCHEMA {schema} TO {writing}"),
        format!("GRANT INSERT ON {schema}.a2_events TO {writing}"),
    ] {
        sqlx::query(&sql).execute(&admin).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let code = |r: Result<(), StoreError>| r.map_err(|e| e.code());
    assert_eq!(code(writer.reader_role_grant("public").await), Err("INVALID_INPUT"), "public is everyone");
    assert_eq!(code(writer.reader_role_grant("postgres").await), Err("INVALID_INPUT"), "a superuser can write");
    assert_eq!(code(writer.reader_role_grant(&writing).await), Err("INVALID_INPUT"), "a writer is no reader");
    assert_eq!(code(writer.reader_role_grant("nobody_at_all").await), Err("INVALID_INPUT"), "no such role");
    writer.reader_role_grant(&role).await.unwrap_or_else(|e| panic!("{e}"));
    let can = |table: &str| {
        let (admin, role, table) = (admin.clone(), role.clone(), format!("{schema}.{table}"));
        async move {
            sqlx::query_scalar::<_, bool>("SELECT has_table_privilege($1, $2, 'SELECT')")
                .bind(role)
                .bind(table)
                .fetch_one(&admin)
                .await
                .unwrap_or_else(|e| panic!("{e}"))
        }
    };
    assert!(can("a2_events").await && can("a2_sessions").await && can("_sqlx_migrations").await);
    assert!(!can("payroll").await, "the schema's other tables are not the reader's");
    // A table a later migration adds is granted when a read-write open migrates.
    sqlx::query(&format!("CREATE TABLE {schema}.a2_later (x int)"))
        .execute(&admin)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    sqlx::query(&format!("CREATE TABLE {schema}.later_payroll (x int)"))
        .execute(&admin)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    connect(&schema, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}")).close().await;
    assert!(can("a2_later").await, "a later A2 table is the reader's too");
    assert!(!can("later_payroll").await, "a later table of someone else's is not");
    writer.close().await;
    for cleanup in [
        format!("DROP SCHEMA {schema} CASCADE"),
        format!("DROP OWNED BY {role}"),
        format!("DROP ROLE {role}"),
        format!("DROP OWNED BY {writing}"),
        format!("DROP ROLE {writing}"),
    ] {
        let _ = sqlx::query(&cleanup).execute(&admin).await;
    }
}

/// A role that can write through another one is no reader: a member of a
/// writing role (with NOINHERIT too: `SET ROLE` reaches it) or of the schema's
/// owner is refused, and the refusal names the role and the schema's owner.
#[tokio::test]
async fn grant_reader_refuses_a_role_that_inherits_writes() {
    let schema = fresh_schema();
    let writer = connect(&schema, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}"));
    let admin = admin().await;
    let name = |what: &str| format!("a2_{what}_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst));
    let (group, owner, noinherit, inherit, owner_member, reader) =
        (name("group"), name("owner"), name("noinh"), name("inh"), name("ownm"), name("reader"));
    for sql in [
        format!("CREATE ROLE {group} NOLOGIN"),
        format!("CREATE ROLE {owner} NOLOGIN"),
        format!("GRANT USAGE ON SCHEMA {schema} TO {group}"),
        format!("GRANT UPDATE ON {schema}.a2_heads TO {group}"),
        format!("CREATE ROLE {noinherit} LOGIN NOINHERIT"),
        format!("GRANT {group} TO {noinherit}"),
        format!("CREATE ROLE {inherit} LOGIN INHERIT"),
        format!("GRANT {group} TO {inherit}"),
        format!("ALTER SCHEMA {schema} OWNER TO {owner}"),
        format!("CREATE ROLE {owner_member} LOGIN NOINHERIT"),
        format!("GRANT {owner} TO {owner_member}"),
        format!("CREATE ROLE {reader} LOGIN"),
    ] {
        sqlx::query(&sql).execute(&admin).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let refusal = |role: String| {
        let writer = &writer;
        async move {
            let error = writer.reader_role_grant(&role).await.expect_err("a writer is refused");
            assert_eq!(error.code(), "INVALID_INPUT", "{error}");
            error.to_string()
        }
    };
    let message = refusal(noinherit.clone()).await;
    assert!(message.contains(&group) && message.contains("a2_heads"), "names the role it writes by: {message}");
    assert!(message.contains(&owner), "names the schema's owner: {message}");
    let message = refusal(inherit.clone()).await;
    assert!(message.contains("a2_heads"), "{message}");
    let message = refusal(owner_member.clone()).await;
    assert!(message.contains(&owner) && message.contains("owns the schema"), "{message}");
    writer.reader_role_grant(&reader).await.unwrap_or_else(|e| panic!("a plain role may read: {e}"));
    writer.close().await;
    let _ = sqlx::query(&format!("DROP SCHEMA {schema} CASCADE")).execute(&admin).await;
    for role in [reader, owner_member, inherit, noinherit, owner, group] {
        let _ = sqlx::query(&format!("DROP OWNED BY {role}")).execute(&admin).await;
        let _ = sqlx::query(&format!("DROP ROLE {role}")).execute(&admin).await;
    }
}

/// A process that opens stores one after another (the bench's rounds, a
/// Studio switching connections) must not keep each one's connections: the
/// pools and the LISTEN connection close when the store is dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_store_closes_its_connections() {
    let name = format!("a2-drop-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let options = PgOptions {
        schema: Some(fresh_schema()),
        access: Access::ReadWrite,
        max_connections: 4,
        application_name: name.clone(),
        ..PgOptions::default()
    };
    let store = Postgres::connect(&url(), options, Arc::new(SystemClock)).await.unwrap_or_else(|e| panic!("{e}"));
    let event = NewEvent {
        id: "e1".into(),
        event_type: "tick".into(),
        payload: json!({}),
        cause: None,
        scheduled_by: None,
        targets: Vec::new(),
    };
    let append = EventAppend {
        session: session_key("live", "s"),
        events: vec![event],
        consumers: Vec::new(),
        origin_index: None,
    };
    store.event_append(append).await.unwrap_or_else(|e| panic!("{e}"));
    let admin = admin().await;
    let open = || async {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = $1")
            .bind(&name)
            .fetch_one(&admin)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let mut listening = false;
    for _ in 0..50 {
        if open().await >= 2 {
            listening = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(listening, "the store holds a pool connection and its LISTEN connection while open");
    drop(store);
    let mut left = open().await;
    for _ in 0..100 {
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = open().await;
    }
    assert_eq!(left, 0, "connections still open 10 s after the store was dropped");
}

/// Totals read a chunk of sessions a statement sum to what one statement reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_totals_in_chunks_match_the_whole() {
    let schema = fresh_schema();
    let whole = connect(&schema, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}"));
    let chunked = connect(&schema, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}")).totals_chunk(2);
    a2_conformance::consumer_totals_in_chunks_match_the_whole(Arc::new(whole), Arc::new(chunked)).await;
}

/// A payload index a failed concurrent build left INVALID (written by every
/// append, used by no search) is rebuilt, not reported as already there.
#[tokio::test]
async fn an_invalid_payload_index_is_rebuilt() {
    let schema = fresh_schema();
    let store = connect(&schema, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(store.payload_index_create().await.unwrap_or_else(|e| panic!("{e}")), "made now");
    assert!(!store.payload_index_create().await.unwrap_or_else(|e| panic!("{e}")), "there already");
    let admin = admin().await;
    let index = format!("'{schema}.a2_events_payload'::regclass");
    let valid = |admin: sqlx::PgPool, index: String| async move {
        let sql = format!("SELECT indisvalid FROM pg_index WHERE indexrelid = {index}");
        sqlx::query_scalar::<_, bool>(&sql).fetch_one(&admin).await.unwrap_or_else(|e| panic!("{e}"))
    };
    // What a build that failed half-way leaves behind.
    sqlx::query(&format!("UPDATE pg_index SET indisvalid = false WHERE indexrelid = {index}"))
        .execute(&admin)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!valid(admin.clone(), index.clone()).await);
    assert!(store.payload_index_create().await.unwrap_or_else(|e| panic!("{e}")), "an invalid index is made again");
    assert!(valid(admin.clone(), index).await, "and is valid now");
    store.close().await;
    a2_test_support::drop_schema(&schema).await;
}

/// A table that happens to be named `a2_events` proves nothing: only a
/// migration ledger whose checksums are A2's makes a schema an A2 store.
#[tokio::test]
async fn not_an_a2_store_check_reads_the_ledger() {
    let pool = admin().await;
    let run = |sql: String| {
        let pool = pool.clone();
        async move { sqlx::raw_sql(&sql).execute(&pool).await.unwrap_or_else(|e| panic!("{sql}: {e}")) }
    };
    let schema = fresh_schema();
    run(format!("CREATE SCHEMA {schema}; CREATE TABLE {schema}.a2_events (id text)")).await;
    let error = connect(&schema, Access::ReadWrite).await.expect_err("someone else's a2_events");
    assert_eq!(error.code(), "NOT_AN_A2_STORE", "{error}");
    let tables: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM pg_tables WHERE schemaname = $1")
        .bind(&schema)
        .fetch_one(&pool)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(tables, 1, "left untouched: no ledger, no A2 tables");

    let schema = fresh_schema();
    connect(&schema, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}")).close().await;
    run(format!("UPDATE {schema}._sqlx_migrations SET checksum = '\\x00' WHERE version = 2")).await;
    for access in [Access::ReadWrite, Access::ReadOnly] {
        let error = connect(&schema, access).await.expect_err("a migration from another file");
        assert_eq!(error.code(), "NOT_AN_A2_STORE", "{access:?}: {error}");
        assert!(error.to_string().contains("migration 2"), "{error}");
    }
}

/// Appends within a second of a session's stamp leave `updated_at` alone (the
/// session row's update then changes no indexed column and can be HOT); the
/// first append a second or more after it restamps it. Both append paths:
/// the grouped statement, and a run's append in the shared transaction.
#[tokio::test]
async fn appends_restamp_a_session_at_most_once_a_second() {
    use a2_store::Clock;
    let schema = fresh_schema();
    let clock = Arc::new(a2_store::ManualClock::default());
    let options = PgOptions {
        schema: Some(schema.clone()),
        access: Access::ReadWrite,
        max_connections: 4,
        ..PgOptions::default()
    };
    let store = Postgres::connect(&url(), options, clock.clone()).await.unwrap_or_else(|e| panic!("{e}"));
    let admin = admin().await;
    let append = |n: u32, origin: Option<u64>| EventAppend {
        session: session_key("live", "s"),
        events: vec![NewEvent {
            id: format!("e{n}"),
            event_type: "tick".into(),
            payload: json!({}),
            cause: None,
            scheduled_by: None,
            targets: Vec::new(),
        }],
        consumers: Vec::new(),
        origin_index: origin,
    };
    let stamp = || async {
        let stamp: i64 = sqlx::query_scalar(&format!("SELECT updated_at FROM {schema}.a2_sessions"))
            .fetch_one(&admin)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        stamp
    };
    let start = clock.now_ms();
    store.event_append(append(1, None)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stamp().await, start);
    clock.advance(400);
    store.event_append(append(2, None)).await.unwrap_or_else(|e| panic!("{e}"));
    clock.advance(500);
    store.event_append(append(3, Some(1))).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stamp().await, start, "appends within a second keep the stamp");
    clock.advance(100);
    store.event_append(append(4, None)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stamp().await, start + 1_000, "a second on, the grouped append restamps");
    clock.advance(1_000);
    store.event_append(append(5, Some(2))).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stamp().await, start + 2_000, "and so does a run's append");
    a2_test_support::drop_schema(&schema).await;
}

/// The refresh's reads of the runs by time go through a BRIN index, which
/// matches every page range not yet summarized: the refresh summarizes the
/// new ones first, so it reads the seconds it asks for, not every run since
/// the last vacuum.
#[tokio::test]
async fn a_totals_refresh_leaves_no_run_unsummarized_in_the_time_index() {
    let schema = fresh_schema();
    let store = connect(&schema, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}"));
    let admin = admin().await;
    // Several BRIN page ranges' worth of runs (128 pages a range), as a drain would write them.
    sqlx::query(&format!(
        "INSERT INTO {schema}.a2_attempts (session, consumer, lane, idx, attempt, holder, started_at, ended_at, outcome) \
         SELECT 'live' || chr(31) || (n % 100), 'jobs', '', n, 1, 'h', n, n, 0 FROM generate_series(1, 60000) n"
    ))
    .execute(&admin)
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let refresh = a2_store::TotalsRefresh { contract: Some("live".into()), ..a2_store::TotalsRefresh::default() };
    store.consumer_totals_refresh(refresh).await.unwrap_or_else(|e| panic!("{e}"));
    let left: i32 = sqlx::query_scalar(&format!("SELECT brin_summarize_new_values('{schema}.a2_attempts_by_time')"))
        .fetch_one(&admin)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(left, 0, "page ranges of a2_attempts the refresh left unsummarized");
}
