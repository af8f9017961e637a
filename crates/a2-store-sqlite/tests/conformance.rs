//! The conformance suite on SQLite: each test its own database file, under
//! cargo's scratch directory, in a directory of the test process's own: a
//! runner that gives every test a process (nextest) starts each one's count
//! at 0, and a shared directory made them open and wipe one another's files.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use a2_store::{Clock, Store};
use a2_store_sqlite::{Access, Sqlite};

static NEXT: AtomicU64 = AtomicU64::new(0);

fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("a2-sqlite-conformance");
        // Earlier runs' directories: gone once no test could still be using them.
        let stale = std::time::Duration::from_secs(3600);
        for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
            let old = entry.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok());
            if old.is_some_and(|age| age > stale) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let dir = root.join(std::process::id().to_string());
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
