//! The conformance suite on Postgres: each test its own schema, on the server
//! `cargo xtask test` provides (`A2_TEST_POSTGRES_URL`), else 127.0.0.1:5432.

use std::sync::Arc;

use a2_store::{Clock, Store};
use a2_store_postgres::{PgOptions, Postgres};
use a2_test_support::postgres_url;

async fn postgres(clock: Arc<dyn Clock>) -> Arc<dyn Store> {
    a2_test_support::sweep_schemas().await;
    let schema = a2_test_support::fresh_schema("conf");
    let options = PgOptions { schema: Some(schema.clone()), max_connections: 4, ..PgOptions::default() };
    match Postgres::connect(&postgres_url(), options, clock).await {
        Ok(store) => Arc::new(store),
        Err(error) => panic!("connecting to Postgres at {} (schema {schema}): {error}", postgres_url()),
    }
}

a2_conformance::conformance_suite!(postgres, postgres, realtime);
