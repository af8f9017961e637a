//! The conformance suite on SQLite: each test its own database file.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use a2_store::{Clock, Store};
use a2_store_sqlite::{Access, SqliteStore};

static NEXT: AtomicU64 = AtomicU64::new(0);

async fn sqlite(clock: Arc<dyn Clock>) -> Arc<dyn Store> {
    let dir = std::env::temp_dir().join(format!("a2-sqlite-conformance-{}", std::process::id()));
    let path = dir.join(format!("store-{}.sqlite", NEXT.fetch_add(1, Ordering::SeqCst)));
    let _ = std::fs::remove_file(&path);
    match SqliteStore::open(&path, Access::ReadWrite, clock).await {
        Ok(store) => Arc::new(store),
        Err(error) => panic!("opening {}: {error}", path.display()),
    }
}

a2_conformance::conformance_suite!(sqlite, sqlite, realtime);
