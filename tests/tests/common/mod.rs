//! Stores and worker processes for the cross-process tests.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A store the test and its worker processes share.
pub struct Shared {
    pub url: String,
    pub schema: Option<String>,
}

pub use a2_test_support::postgres_url;

impl Shared {
    pub fn sqlite(name: &str) -> Self {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("a2-e2e-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join(format!("{name}-{}.sqlite", NEXT.fetch_add(1, Ordering::SeqCst)));
        Self { url: format!("sqlite:{}", path.display()), schema: None }
    }

    pub fn postgres(name: &str) -> Self {
        let schema = format!("{}_{name}", a2_test_support::fresh_schema("e2e"));
        Self { url: postgres_url(), schema: Some(schema) }
    }

    /// The same Postgres through this process's PgBouncer in transaction mode (`?pgbouncer=true`).
    pub fn postgres_pooled(name: &str) -> Self {
        let schema = format!("{}_{name}", a2_test_support::fresh_schema("e2e"));
        Self { url: a2_test_support::pooled_postgres_url(), schema: Some(schema) }
    }

    pub async fn open(&self) -> std::sync::Arc<dyn a2_store::Store> {
        a2_e2e::open_store(&self.url, self.schema.as_deref())
            .await
            .unwrap_or_else(|e| panic!("opening {}: {e}", self.url))
    }

    /// `a2-worker <args> --store … [--schema …]`, stdout piped.
    pub fn worker(&self, args: &[&str]) -> Child {
        let mut command = Command::new(env!("CARGO_BIN_EXE_a2-worker"));
        command.args(args).args(["--store", &self.url]).stdout(Stdio::piped()).stderr(Stdio::inherit());
        if let Some(schema) = &self.schema {
            command.args(["--schema", schema]);
        }
        command.spawn().unwrap_or_else(|e| panic!("starting a2-worker: {e}"))
    }

    /// Drop a Postgres schema the test made.
    pub async fn remove(&self) {
        if let Some(schema) = &self.schema {
            a2_test_support::drop_schema(schema).await;
        }
    }
}
