//! The conformance suite on Postgres: each test its own schema, on the server
//! `cargo xtask test` provides (`A2_TEST_POSTGRES_URL`), else 127.0.0.1:5432.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use a2_store::{Clock, Store};
use a2_store_postgres::{PgOptions, Postgres};

static NEXT: AtomicU64 = AtomicU64::new(0);

fn url() -> String {
    std::env::var("A2_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// Drop the schemas that test and bench processes no longer running left
/// behind (their names carry the process id), once per test process.
async fn sweep() {
    static SWEPT: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    SWEPT
        .get_or_init(|| async {
            let Ok(pool) = sqlx::PgPool::connect(&url()).await else { return };
            let ours: Vec<String> = sqlx::query_scalar(
                "SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'a2\\_conf\\_%' \
                 OR nspname LIKE 'a2\\_e2e\\_%' OR nspname LIKE 'a2\\_bench\\_%'",
            )
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

async fn postgres(clock: Arc<dyn Clock>) -> Arc<dyn Store> {
    sweep().await;
    let schema = format!("a2_conf_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst));
    let options = PgOptions { schema: Some(schema.clone()), max_connections: 4, ..PgOptions::default() };
    match Postgres::connect(&url(), options, clock).await {
        Ok(store) => Arc::new(store),
        Err(error) => panic!("connecting to Postgres at {} (schema {schema}): {error}", url()),
    }
}

a2_conformance::conformance_suite!(postgres, postgres, realtime);
