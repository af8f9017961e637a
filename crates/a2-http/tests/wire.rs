//! The wire's scenarios stamped per backend, so `cargo test -- --list`
//! shows `memory::push_refuses_derived_ids`, `sqlite::…` and `postgres::…`.

#[path = "wire/client.rs"]
mod client;
#[path = "wire/scenarios.rs"]
mod scenarios;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use a2_store::{Store, SystemClock};

macro_rules! wire_suite {
    ($backend:ident, $open:expr; $($scenario:ident),* $(,)?) => {
        mod $backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    super::scenarios::$scenario($open().await).await;
                }
            )*
        }
    };
}

macro_rules! every_backend {
    ($($scenario:ident),* $(,)?) => {
        wire_suite!(memory, super::memory; $($scenario),*);
        wire_suite!(sqlite, super::sqlite; $($scenario),*);
        wire_suite!(postgres, super::postgres; $($scenario),*);
    };
}

every_backend!(
    push_refuses_derived_ids,
    stream_resumes_after_last_event_id,
    followers_share_a_tail_and_catch_up_from_the_store,
    cleared_events_are_never_streamed,
    pushed_events_and_presence_reach_another_stream,
    push_refusals_write_nothing,
    history_and_state_read_as_json,
    push_accepts_seed_envelope_with_fractional_at_and_extra_keys,
    stream_without_presence_fields_serves_events,
    wire_refuses_a_foreign_host_header,
    push_bounds_ids_events_and_sizes,
    one_client_cannot_take_every_stream,
);

async fn memory() -> Arc<dyn Store> {
    Arc::new(a2_store::memory::MemoryStore::new(Arc::new(SystemClock)))
}

async fn sqlite() -> Arc<dyn Store> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("a2-http-wire").join(std::process::id().to_string());
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("store-{}.sqlite", NEXT.fetch_add(1, Ordering::SeqCst)));
    let _ = std::fs::remove_file(&path);
    match a2_store_sqlite::Sqlite::open(&path, a2_store_sqlite::Access::ReadWrite, Arc::new(SystemClock)).await {
        Ok(store) => Arc::new(store),
        Err(error) => panic!("opening {}: {error}", path.display()),
    }
}

async fn postgres() -> Arc<dyn Store> {
    a2_test_support::sweep_schemas().await;
    let schema = a2_test_support::fresh_schema("wire");
    let options =
        a2_store_postgres::PgOptions { schema: Some(schema.clone()), max_connections: 4, ..Default::default() };
    match a2_store_postgres::Postgres::connect(&a2_test_support::postgres_url(), options, Arc::new(SystemClock)).await {
        Ok(store) => Arc::new(store),
        Err(error) => panic!("connecting to Postgres (schema {schema}): {error}"),
    }
}
