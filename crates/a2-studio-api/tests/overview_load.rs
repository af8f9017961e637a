//! A read-only Studio left open on the Overview of a production store is no
//! load on it: its refreshes read the kept figures (totals, the throughput
//! chart's minutes), never every cursor or every run, counted by Postgres
//! itself (`pg_stat_user_tables`).

use std::sync::Arc;
use std::time::Duration;

use a2_studio_api::*;
use common::{http, open};

mod common;

/// Rows of `schema`'s tables read so far: sequential reads plus index fetches.
async fn rows_read(admin: &sqlx::PgPool, schema: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT COALESCE(SUM(seq_tup_read + COALESCE(idx_tup_fetch, 0)), 0)::bigint \
         FROM pg_stat_user_tables WHERE schemaname = $1",
    )
    .bind(schema)
    .fetch_one(admin)
    .await
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The count once every backend that read has reported (a backend reports
/// when idle for a while or when it exits): the same figure twice, a second apart.
async fn rows_read_settled(admin: &sqlx::PgPool, schema: &str) -> i64 {
    let mut last = rows_read(admin, schema).await;
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = rows_read(admin, schema).await;
        if now == last {
            return now;
        }
        last = now;
    }
    last
}

/// Every row of `schema.table` copied `times` over, each copy's `session`
/// key suffixed `-<n>`: more sessions just as the engine wrote them.
async fn copy_sessions(admin: &sqlx::PgPool, schema: &str, table: &str, times: i32) {
    let columns: Vec<String> = sqlx::query_scalar(
        "SELECT column_name::text FROM information_schema.columns \
         WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position",
    )
    .bind(schema)
    .bind(table)
    .fetch_all(admin)
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let copied: Vec<String> =
        columns.iter().map(|c| if c == "session" { "session || '-' || n".to_owned() } else { c.clone() }).collect();
    let statement = format!(
        "INSERT INTO {schema}.{table} ({}) SELECT {} FROM {schema}.{table}, generate_series(1, {times}) AS n",
        columns.join(", "),
        copied.join(", ")
    );
    sqlx::raw_sql(&statement).execute(admin).await.unwrap_or_else(|e| panic!("{table}: {e}"));
}

/// A minute of the Overview (twelve refreshes, as it polls every 5 s, each
/// making every call the Overview makes) on a read-only attach of a store of
/// 100,000 sessions / 1,000,000 events whose kept figures a server refreshed:
/// fewer than 10,000 rows read, where one pass over every cursor reads
/// hundreds of thousands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_overview_left_open_reads_almost_nothing() {
    let base = a2_test_support::postgres_url();
    let schema = a2_test_support::fresh_schema("overview");
    let admin = sqlx::PgPool::connect(&base).await.unwrap_or_else(|e| panic!("{e}"));
    sqlx::query(&format!("CREATE SCHEMA {schema}")).execute(&admin).await.unwrap_or_else(|e| panic!("{e}"));
    let separator = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{separator}options=-c%20search_path%3D{schema}");

    // Production as a server keeps it: sessions, runs in the last hour, the kept figures refreshed.
    let dir = common::scratch("overview");
    {
        let writer = Studio::new(&dir);
        writer.connection_open(open(&url, Some(false))).await.unwrap_or_else(|e| panic!("{e}"));
        // 1,000 sessions of 10 events seeded through the engine, then copied 99 times over by SQL
        // under new session keys: the store a 100,000-session demo makes, in a minute, not ten.
        let bulk = DemoSeed { sessions: 1_000, seed: 7, fail_rate: 0.0, bulk: true, long_session: 0, long_history: 0 };
        let seeded = writer.demo_seed(bulk).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(seeded.events, 10_000, "{seeded:?}");
        for table in ["a2_sessions", "a2_events", "a2_heads"] {
            copy_sessions(&admin, &schema, table, 99).await;
        }
        let events: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM {schema}.a2_events"))
            .fetch_one(&admin)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(events, 1_000_000);
        // A production store has planner statistics (autovacuum keeps them).
        sqlx::raw_sql(&format!("ANALYZE {schema}.a2_sessions, {schema}.a2_events, {schema}.a2_heads"))
            .execute(&admin)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let lively = DemoSeed { sessions: 60, seed: 8, fail_rate: 0.3, bulk: false, long_session: 0, long_history: 0 };
        writer.demo_seed(lively).await.unwrap_or_else(|e| panic!("{e}"));
        let refresh = TotalsQuery { contract: None, max_age_ms: 0, live: false, recompute: false };
        let kept = writer.consumer_overview(refresh).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(kept.totals.iter().map(|t| t.sessions).max() >= Some(100_000), "{kept:?}");
        writer.connection_close(NoArgs {}).await.unwrap_or_else(|e| panic!("{e}"));
    }
    let pass = rows_read_settled(&admin, &schema).await;

    let studio = Arc::new(Studio::new(&dir));
    let info = studio.connection_open(open(&url, None)).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(info.read_only, "a Postgres attach is read-only unless asked");
    let served = common::serve(studio.clone()).await;
    let (port, token) = (served.port, served.token.clone());
    let headers = [("x-a2-token", token.as_str()), ("content-type", "application/json")];
    let calls = [
        ("consumer_overview", serde_json::json!({ "contract": null, "max_age_ms": 5_000, "live": false })),
        ("consumer_pause_list", serde_json::json!({ "contract": null })),
        ("contract_list", serde_json::json!({})),
        ("presence_sessions", serde_json::json!({})),
        ("attempt_rates", serde_json::json!({ "contract": null, "minutes": 60 })),
    ];
    // The kept totals are older than the 5 s the Overview asks for.
    tokio::time::sleep(Duration::from_millis(5_100)).await;
    let before = rows_read_settled(&admin, &schema).await;
    for _ in 0..12 {
        for (command, request) in &calls {
            let body = serde_json::json!({ "request": request }).to_string();
            let (status, answer) = http(port, "POST", &format!("/api/{command}"), &headers, &body).await;
            assert_eq!(status, 200, "{command}: {answer}");
        }
    }
    let (_, overview) = http(
        port,
        "POST",
        "/api/consumer_overview",
        &headers,
        &serde_json::json!({ "request": calls[0].1 }).to_string(),
    )
    .await;
    served.stop().await;
    studio.connection_close(NoArgs {}).await.unwrap_or_else(|e| panic!("{e}"));
    drop(studio);
    let read = rows_read_settled(&admin, &schema).await - before;
    eprintln!("a minute of the read-only Overview read {read} rows; seeding and one refresh read {pass}");
    assert!(read < 10_000, "a minute of the read-only Overview read {read} rows (seeding and one refresh read {pass})");
    assert!(overview.contains(r#""origin":"kept""#), "the kept totals, said so: {overview}");

    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE")).execute(&admin).await.unwrap_or_else(|e| panic!("{e}"));
}
