//! Fixtures every test crate shares, so each test owns its database (a
//! schema per test on one Postgres, a file per test for SQLite) and tests
//! run in parallel without depending on order.

mod pooler;

use std::sync::atomic::{AtomicU64, Ordering};

pub use pooler::{pooled_postgres_url, pooler_in_front_of, settings_dropping_proxy_in_front_of};

static NEXT: AtomicU64 = AtomicU64::new(0);

/// The Postgres `cargo xtask test` provides (`A2_TEST_POSTGRES_URL`), else this machine's.
pub fn postgres_url() -> String {
    std::env::var("A2_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// A schema name no other test uses: `a2_<tag>_<pid>_<n>`. The process id
/// lets [`sweep_schemas`] tell a dead run's leftovers from a live run's.
pub fn fresh_schema(tag: &str) -> String {
    format!("a2_{tag}_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst))
}

/// Drop the `a2_*` schemas that test and bench processes no longer running
/// left behind, once per test process.
pub async fn sweep_schemas() {
    static SWEPT: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    SWEPT
        .get_or_init(|| async {
            let Ok(pool) = sqlx::PgPool::connect(&postgres_url()).await else { return };
            let ours: Vec<String> =
                sqlx::query_scalar("SELECT nspname::text FROM pg_namespace WHERE nspname ~ '^a2_[a-z0-9]+_[0-9]+'")
                    .fetch_all(&pool)
                    .await
                    .unwrap_or_default();
            let alive = |schema: &str| {
                let pid = schema.split('_').nth(2).unwrap_or("");
                !pid.is_empty() && std::path::Path::new(&format!("/proc/{pid}")).exists()
            };
            for schema in ours.into_iter().filter(|s| !alive(s)) {
                let _ = sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).execute(&pool).await;
            }
            pool.close().await;
        })
        .await;
}

/// Drop one schema a test made.
pub async fn drop_schema(schema: &str) {
    if let Ok(pool) = sqlx::PgPool::connect(&postgres_url()).await {
        let _ = sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).execute(&pool).await;
        pool.close().await;
    }
}

/// A database of its own on the test Postgres, for what cannot take a
/// schema by URL (a pooler passes no `options`): (its direct URL, its URL
/// through this process's PgBouncer with `pgbouncer=true`). [`drop_database`] removes it.
pub async fn fresh_pooled_database(tag: &str) -> (String, String) {
    let base = postgres_url();
    let database = fresh_schema(tag);
    let admin = sqlx::PgPool::connect(&base).await.unwrap_or_else(|e| panic!("admin connection to {base}: {e}"));
    sqlx::query(&format!("CREATE DATABASE {database}")).execute(&admin).await.unwrap_or_else(|e| panic!("{e}"));
    admin.close().await;
    let at = |url: &str| url.rsplit_once('/').map(|(server, _)| format!("{server}/{database}")).unwrap_or_default();
    let pooled = pooled_postgres_url();
    let (pooler, flags) = pooled.split_once('?').unwrap_or((&pooled, ""));
    (at(&base), format!("{}?{flags}", at(pooler)))
}

/// Drop a database [`fresh_pooled_database`] made (by either URL), closing what still holds it.
pub async fn drop_database(url: &str) {
    let Some(database) = url.split('?').next().and_then(|u| u.rsplit_once('/')).map(|(_, d)| d.to_owned()) else {
        return;
    };
    if let Ok(admin) = sqlx::PgPool::connect(&postgres_url()).await {
        let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)")).execute(&admin).await;
        admin.close().await;
    }
}
