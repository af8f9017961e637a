//! Attaching to a store by URL, read-write or read-only.

use std::sync::Arc;
use std::time::Duration;

use a2_store::{is_postgres_url, DatabaseServer, OpenOptions, OpenedStore, Store, StoreOpener};

use crate::OperatorError;

/// Read-write or read-only: the store's own notion.
pub type Mode = a2_store::Access;

/// Where and how to attach.
#[derive(Debug, Clone)]
pub struct Connect {
    /// `sqlite:PATH`, `postgres://…` or `memory:`.
    pub url: String,
    /// `None`: as [`default_mode`] decides.
    pub mode: Option<Mode>,
    /// Inspection reads running longer are cancelled (Postgres).
    pub statement_timeout: Duration,
    /// Postgres: a password kept apart from the URL (a keychain's), given to the driver as a password.
    pub password: Option<String>,
    /// Create the A2 schema even in a database or file that holds other tables (`a2 init`).
    pub init: bool,
    /// Open only a SQLite file that exists: the web mode never creates files.
    pub must_exist: bool,
}

impl Connect {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            mode: None,
            statement_timeout: Duration::from_secs(5),
            password: None,
            init: false,
            must_exist: false,
        }
    }
}

/// The mode an attach gets when nobody chose one: every Postgres database
/// read-only (port-forwards, proxies and sockets all look local, so where it
/// runs says nothing about whose it is), a SQLite file or memory read-write.
/// Decided here only: the UI and the CLI ask, they do not guess.
pub fn default_mode(url: &str) -> Mode {
    if is_postgres_url(url) {
        Mode::ReadOnly
    } else {
        Mode::ReadWrite
    }
}

pub use a2_store::StoreKind;

/// An attached store. The store itself stays inside: shells reach it only
/// through the operator's methods, so every action is checked and audited.
#[derive(Debug, Clone)]
pub struct Attached {
    pub(crate) store: Arc<dyn Store>,
    pub kind: StoreKind,
    pub mode: Mode,
    /// Postgres: whether the role itself could write (a read-only attach with
    /// such a role is protected by the session setting alone); `None`: not
    /// Postgres, or the check itself failed.
    pub role_can_write: Option<bool>,
    /// A database server's host, database and role, and the connection's TLS.
    pub server: Option<DatabaseServer>,
    /// The schema migrations this attach applied (Postgres), oldest first.
    pub migrated: Vec<i64>,
    /// The same store as opened, for what only some backends do (granting a
    /// reader role, a payload index); `None` for a store attached by hand.
    pub(crate) opened: Option<Arc<dyn OpenedStore>>,
}

impl Attached {
    /// A store attached by hand (benchmarks, tests), with nothing backend-specific.
    pub fn new(store: Arc<dyn Store>, kind: StoreKind, mode: Mode) -> Self {
        Self { store, kind, mode, role_can_write: None, server: None, migrated: Vec::new(), opened: None }
    }
}

/// Open `connect.url` through `opener` (the registry, in every shell) with
/// the operator's own policy: the mode, and a gentle pool on a database server.
pub async fn attach(connect: &Connect, opener: &dyn StoreOpener) -> Result<Attached, OperatorError> {
    let url = connect.url.trim();
    let access = connect.mode.unwrap_or_else(|| default_mode(url));
    let mut options = OpenOptions {
        access: Some(access),
        statement_timeout: Some(connect.statement_timeout),
        password: connect.password.clone(),
        init: connect.init,
        must_exist: connect.must_exist,
        ..OpenOptions::default()
    };
    if is_postgres_url(url) {
        // Gently: a DBA sees the Studio by name, it holds few connections,
        // and its writes give up rather than queue behind the application's locks.
        let local = opener.is_local(url)?;
        options.max_connections = Some(if local { 10 } else { 2 });
        options.read_connections = Some(2);
        options.application_name = Some("a2-studio".into());
        options.lock_timeout = Some(Duration::from_secs(5));
    }
    let opened = opener.open(url, &options).await?;
    let mode = opened.access(access);
    let kind = opened.kind();
    let role_can_write = match opened.role_can_write().await {
        Some(Ok(can)) => Some(can),
        Some(Err(error)) => {
            tracing::warn!(%error, "could not tell whether the role can write");
            None
        }
        None => None,
    };
    let server = opened.server().cloned();
    let migrated = opened.migrations_applied();
    Ok(Attached { store: opened.store(), kind, mode, role_can_write, server, migrated, opened: Some(opened) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_postgres_attach_is_read_only_unless_asked() {
        for url in [
            "postgres://ops@db.example.com/app",
            "postgres://postgres@127.0.0.1:5432/postgres",
            "postgresql://localhost/app?host=db.prod",
            "postgres:///app?host=/var/run/postgresql",
        ] {
            assert_eq!(default_mode(url), Mode::ReadOnly, "{url}");
        }
        for url in ["sqlite:.a2/dev.sqlite", "memory:"] {
            assert_eq!(default_mode(url), Mode::ReadWrite, "{url}");
        }
    }
}
