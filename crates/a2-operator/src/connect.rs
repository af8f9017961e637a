//! Attaching to a store by URL, read-write or read-only.

use std::sync::Arc;
use std::time::Duration;

use a2_store::memory::MemoryStore;
use a2_store::{Store, SystemClock};
use a2_store_postgres::{PgOptions, PgStore, Postgres};
use a2_store_sqlite::Sqlite;
use serde::{Deserialize, Serialize};

use crate::OperatorError;

/// Read-write or read-only: the store's own notion.
pub type Mode = a2_store::Access;

/// Where and how to attach.
#[derive(Debug, Clone)]
pub struct Connect {
    /// `sqlite:PATH`, `postgres://…` or `memory:`.
    pub url: String,
    /// `None`: read-only for a Postgres host that is not this machine, else read-write.
    pub mode: Option<Mode>,
    /// Inspection reads running longer are cancelled (Postgres).
    pub statement_timeout: Duration,
}

impl Connect {
    pub fn new(url: impl Into<String>) -> Self {
        Self { url: url.into(), mode: None, statement_timeout: Duration::from_secs(5) }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum StoreKind {
    Memory,
    Sqlite,
    Postgres,
}

/// An attached store. The store itself stays inside: shells reach it only
/// through the operator's methods, so every action is checked and audited.
#[derive(Debug, Clone)]
pub struct Attached {
    pub(crate) store: Arc<dyn Store>,
    pub kind: StoreKind,
    pub mode: Mode,
    /// Postgres: whether the role itself could write (a read-only attach with
    /// such a role is protected by the session setting alone).
    pub role_can_write: Option<bool>,
    /// The same store as Postgres, for what only Postgres does (granting a reader role).
    pub(crate) postgres: Option<PgStore>,
}

impl Attached {
    /// A store attached by hand (benchmarks, tests), with nothing Postgres-only.
    pub fn new(store: Arc<dyn Store>, kind: StoreKind, mode: Mode) -> Self {
        Self { store, kind, mode, role_can_write: None, postgres: None }
    }
}

fn local_host(host: Option<&str>) -> bool {
    match host {
        None => true,
        Some(host) => matches!(host, "localhost" | "127.0.0.1" | "::1" | "[::1]" | ""),
    }
}

pub async fn attach(connect: &Connect) -> Result<Attached, OperatorError> {
    let url = connect.url.trim();
    let clock = Arc::new(SystemClock);
    if url == "memory:" {
        let mode = connect.mode.unwrap_or(Mode::ReadWrite);
        return Ok(Attached {
            store: Arc::new(MemoryStore::new(clock)),
            kind: StoreKind::Memory,
            mode,
            role_can_write: None,
            postgres: None,
        });
    }
    if url.starts_with("sqlite:") {
        let store = Sqlite::open_url(url, connect.mode.unwrap_or(Mode::ReadWrite), clock).await?;
        let mode = if store.is_read_only() { Mode::ReadOnly } else { Mode::ReadWrite };
        let store = Arc::new(store);
        return Ok(Attached { store, kind: StoreKind::Sqlite, mode, role_can_write: None, postgres: None });
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let local = local_host(a2_store_postgres::url_host(url)?.as_deref());
        let mode = connect.mode.unwrap_or(if local { Mode::ReadWrite } else { Mode::ReadOnly });
        // Gentle on a remote database: two connections at most.
        let connections = if local { 10 } else { 2 };
        let options = PgOptions {
            access: mode,
            max_connections: connections,
            read_connections: 2,
            statement_timeout: connect.statement_timeout,
            ..PgOptions::default()
        };
        let store = Postgres::connect(url, options, clock).await?;
        let role_can_write = store.role_can_write().await.ok();
        let postgres = Some(store.clone());
        return Ok(Attached { store: Arc::new(store), kind: StoreKind::Postgres, mode, role_can_write, postgres });
    }
    Err(OperatorError::invalid(format!("{url:?} is not a store URL: use sqlite:PATH, postgres://… or memory:")))
}

#[cfg(test)]
mod tests {
    use super::local_host;

    #[test]
    fn only_this_machine_is_local() {
        for host in [None, Some("localhost"), Some("127.0.0.1"), Some("::1")] {
            assert!(local_host(host), "{host:?}");
        }
        for host in ["db.example.com", "10.0.0.5", "127.0.0.2", "localhost.evil"] {
            assert!(!local_host(Some(host)), "{host}");
        }
    }
}
