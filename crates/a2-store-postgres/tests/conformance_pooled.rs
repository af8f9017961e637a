//! The conformance suite through PgBouncer in transaction mode
//! (`?pgbouncer=true`): consecutive transactions of one pool connection land
//! on whichever server connection is free, and every scenario must hold
//! all the same. Each test its own schema; the PgBouncer is this process's own.

use std::sync::Arc;

use a2_store::{Clock, Store};
use a2_store_postgres::{PgOptions, Postgres};
use a2_test_support::pooled_postgres_url;

async fn postgres_pooled(clock: Arc<dyn Clock>) -> Arc<dyn Store> {
    a2_test_support::sweep_schemas().await;
    let schema = a2_test_support::fresh_schema("pool");
    let url = pooled_postgres_url();
    let options = PgOptions { schema: Some(schema.clone()), max_connections: 4, ..PgOptions::default() };
    match Postgres::connect(&url, options, clock).await {
        Ok(store) => {
            assert!(store.is_pooled(), "{url} must open in pooled mode");
            Arc::new(store)
        }
        Err(error) => panic!("connecting through PgBouncer at {url} (schema {schema}): {error}"),
    }
}

a2_conformance::conformance_suite!(postgres_pooled, postgres_pooled, realtime);
