//! What only the pooled route (`?pgbouncer=true`) must show beyond the
//! conformance suite: read-only still refused at the database when every
//! transaction may land on another server connection, migration through the
//! pooler, no LISTEN (readers poll) unless a direct `listen_url` is given.

use std::sync::Arc;
use std::time::Duration;

use a2_engine::{AppendInput, Contract, DrainTimings, Server};
use a2_store::{session_key, Store, StoreError, SystemClock};
use a2_store_postgres::{Access, PgOptions, PgStore, Postgres};
use a2_store_sql::SqlBackend as _;
use serde_json::json;

async fn pooled(schema: &str, access: Access) -> Result<PgStore, StoreError> {
    let options = PgOptions { schema: Some(schema.to_owned()), access, max_connections: 4, ..PgOptions::default() };
    Postgres::connect(&a2_test_support::pooled_postgres_url(), options, Arc::new(SystemClock)).await
}

async fn admin() -> sqlx::PgPool {
    let url = a2_test_support::postgres_url();
    sqlx::PgPool::connect(&url).await.unwrap_or_else(|e| panic!("admin connection to {url}: {e}"))
}

/// Every kind of write a read-only transaction refuses.
const WRITES: [&str; 5] = [
    "INSERT INTO a2_sessions VALUES ('live\u{1f}x', 1, 0, 0, 0)",
    "UPDATE a2_sessions SET head = head + 1",
    "DELETE FROM a2_sessions",
    "TRUNCATE a2_sessions",
    "CREATE TABLE a2_intruder (i int)",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_holds_through_a_pooler() {
    let schema = a2_test_support::fresh_schema("pooled");
    // Migrated through the pooler: the pooled migrator's transaction.
    let writer = pooled(&schema, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}"));
    let reader = pooled(&schema, Access::ReadOnly).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(reader.is_pooled() && reader.server().pooled && reader.is_read_only());
    // Writers share the pooler's server connections meanwhile, so the
    // reader's transactions land on connections a writer used just before.
    let busy = tokio::spawn(async move {
        for i in 0..200 {
            let sql = format!(
                "INSERT INTO a2_presence (session, participant, field, value, seen, at, expires_at) \
                 VALUES ('s', 'p{i}', 'f', NULL, 0, 0, 0)"
            );
            let mut conn = writer.write().await.unwrap_or_else(|e| panic!("{e}"));
            conn.execute(&sql, vec![]).await.unwrap_or_else(|e| panic!("{e}"));
        }
        writer
    });
    for round in 0..10 {
        for sql in WRITES {
            for (via, conn) in [("read", reader.read().await), ("work", reader.work().await)] {
                let mut conn = conn.unwrap_or_else(|e| panic!("{e}"));
                let refused = conn.execute(sql, vec![]).await;
                assert!(
                    matches!(refused, Err(StoreError::ReadOnly { .. })),
                    "round {round}, {via} pool: {sql} must be refused by the database, got {refused:?}"
                );
            }
        }
        assert!(reader.session_get(&session_key("live", "s")).await.is_ok(), "but it reads");
    }
    let writer = busy.await.unwrap_or_else(|e| panic!("{e}"));
    let admin = admin().await;
    let sessions: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM {schema}.a2_sessions"))
        .fetch_one(&admin)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sessions, 0, "nothing was written");
    let intruder: Option<String> = sqlx::query_scalar(&format!("SELECT to_regclass('{schema}.a2_intruder')::text"))
        .fetch_one(&admin)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(intruder, None, "no table was made");
    reader.close().await;
    writer.close().await;
    a2_test_support::drop_schema(&schema).await;
}

fn contract() -> Contract {
    Contract::new("live").and_then(|c| c.event_with("tick", |_| Ok(()))).unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_store_polls_and_a_listen_url_makes_it_live() {
    let schema = a2_test_support::fresh_schema("pooled");
    let polled = pooled(&schema, Access::ReadWrite).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(polled.changes().is_none(), "a pooler carries no LISTEN: readers poll");
    let direct = url::form_urlencoded::byte_serialize(a2_test_support::postgres_url().as_bytes()).collect::<String>();
    let live_url = format!("{}&listen_url={direct}", a2_test_support::pooled_postgres_url());
    let options = PgOptions { schema: Some(schema.clone()), max_connections: 4, ..PgOptions::default() };
    let live = Postgres::connect(&live_url, options, Arc::new(SystemClock)).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(live.is_live());
    // An append through the pooler (its NOTIFY in a transaction of its own) wakes a stream listening directly.
    let slow_poll = DrainTimings { stream_poll: Duration::from_secs(600), ..DrainTimings::default() };
    let watching =
        Server::builder(contract(), Arc::new(live)).timings(slow_poll).build().unwrap_or_else(|e| panic!("{e}"));
    let mut stream = watching.session("s").unwrap_or_else(|e| panic!("{e}")).stream(0);
    let waiter = tokio::spawn(async move { stream.next().await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let other = Server::builder(contract(), Arc::new(polled)).build().unwrap_or_else(|e| panic!("{e}"));
    let session = other.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![AppendInput::new("tick", json!({}))]).await.unwrap_or_else(|e| panic!("{e}"));
    let woke = tokio::time::timeout(Duration::from_secs(10), waiter).await;
    let event = woke
        .unwrap_or_else(|_| panic!("the pooled append's NOTIFY did not wake the stream"))
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(event.index, 1);
    a2_test_support::drop_schema(&schema).await;
}
