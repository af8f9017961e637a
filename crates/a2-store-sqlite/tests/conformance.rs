//! The conformance suite on SQLite: each test its own database file, under
//! cargo's scratch directory, wiped at the start of every run.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use a2_store::{Clock, Store};
use a2_store_sqlite::{Access, Sqlite};

static NEXT: AtomicU64 = AtomicU64::new(0);

fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("a2-sqlite-conformance");
        let _ = std::fs::remove_dir_all(&dir);
        dir
    })
}

async fn sqlite(clock: Arc<dyn Clock>) -> Arc<dyn Store> {
    let path = scratch().join(format!("store-{}.sqlite", NEXT.fetch_add(1, Ordering::SeqCst)));
    match Sqlite::open(&path, Access::ReadWrite, clock).await {
        Ok(store) => Arc::new(store),
        Err(error) => panic!("opening {}: {error}", path.display()),
    }
}

a2_conformance::conformance_suite!(sqlite, sqlite, realtime);
