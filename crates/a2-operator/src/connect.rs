//! Attaching to a store by URL, read-write or read-only.

use std::sync::Arc;
use std::time::Duration;

use a2_store::{Store, SystemClock};
use a2_store_postgres::PgStore;
use a2_store_registry::{Opened, StoreOptions};
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
    let mut options = StoreOptions { statement_timeout: Some(connect.statement_timeout), ..StoreOptions::default() };
    if a2_store_registry::is_postgres(url) {
        // A remote database is attached read-only unless asked, and gently: two connections at most.
        let local = local_host(a2_store_postgres::url_host(url)?.as_deref());
        options.access = Some(connect.mode.unwrap_or(if local { Mode::ReadWrite } else { Mode::ReadOnly }));
        options.max_connections = Some(if local { 10 } else { 2 });
        options.read_connections = Some(2);
    } else {
        options.access = connect.mode;
    }
    let opened = a2_store_registry::open(url, &options, Arc::new(SystemClock)).await?;
    let mode = opened.access(options.access.unwrap_or(Mode::ReadWrite));
    let (kind, postgres) = match &opened {
        Opened::Memory(_) => (StoreKind::Memory, None),
        Opened::Sqlite(_) => (StoreKind::Sqlite, None),
        Opened::Postgres(store) => (StoreKind::Postgres, Some(store.clone())),
    };
    let role_can_write = match &postgres {
        Some(store) => store.role_can_write().await.ok(),
        None => None,
    };
    Ok(Attached { store: opened.store(), kind, mode, role_can_write, postgres })
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
