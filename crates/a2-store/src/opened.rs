//! A store as a URL opened it, asked backend-neutrally for what only some
//! backends can do. The registry (above the engine) implements these traits
//! for every backend; the operator uses them and so names no backend crate,
//! as sqlx's core knows no driver.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{Access, DatabaseServer, Store, StoreError};

/// Which kind of store a URL opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum StoreKind {
    Memory,
    Sqlite,
    Postgres,
}

/// Whether `url` names a Postgres database (every other scheme is a file or memory).
pub fn is_postgres_url(url: &str) -> bool {
    let url = url.trim();
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// How to open; `None` leaves the backend's own default.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    pub access: Option<Access>,
    /// Postgres: keep the A2 tables in this schema.
    pub schema: Option<String>,
    /// Postgres: connections for the engine's work, and for inspection reads.
    pub max_connections: Option<u32>,
    pub read_connections: Option<u32>,
    /// Postgres: inspection reads running longer are cancelled.
    pub statement_timeout: Option<Duration>,
    /// Postgres: the password, given to the driver apart from the URL.
    pub password: Option<String>,
    /// Postgres: the name `pg_stat_activity` shows.
    pub application_name: Option<String>,
    /// Postgres: writes waiting longer for a row lock give up.
    pub lock_timeout: Option<Duration>,
    /// Create the A2 schema even beside other tables (`a2 init`).
    pub init: bool,
    /// SQLite: open only a file that exists (never create one).
    pub must_exist: bool,
}

/// An opened store and what its backend can do beyond [`Store`]. The
/// defaults say "this backend cannot", so a file or memory store writes none.
#[async_trait]
pub trait OpenedStore: Debug + Send + Sync {
    fn store(&self) -> Arc<dyn Store>;

    fn kind(&self) -> StoreKind;

    /// The access the store was opened with (a `?mode=ro` URL wins over what was asked).
    fn access(&self, asked: Access) -> Access;

    /// The database server behind the store, when it is a server (not a file or memory).
    fn server(&self) -> Option<&DatabaseServer> {
        None
    }

    /// The schema migrations this open applied, oldest first: a read-write
    /// open of an older store changes its schema, and that goes on record.
    fn migrations_applied(&self) -> Vec<i64> {
        Vec::new()
    }

    /// Whether the logged-in role could change A2's tables (a read-only attach
    /// with such a role is protected by its session setting alone); `None`
    /// where there is no role.
    async fn role_can_write(&self) -> Option<Result<bool, StoreError>> {
        None
    }

    /// On a hot standby, how far it trails its primary (ms); `None` elsewhere.
    async fn replica_delay_ms(&self) -> Result<Option<i64>, StoreError> {
        Ok(None)
    }

    /// Whether the store has database roles that can be granted read access.
    fn has_roles(&self) -> bool {
        false
    }

    /// Let `role` read this store and nothing more.
    async fn reader_role_grant(&self, _role: &str) -> Result<(), StoreError> {
        Err(StoreError::invalid("this store has no database roles to grant"))
    }

    /// Whether event payloads can be indexed for searches (else a search scans).
    fn has_payload_index(&self) -> bool {
        false
    }

    /// Index event payloads for searches; `true` when made now.
    async fn payload_index_create(&self) -> Result<bool, StoreError> {
        Err(StoreError::invalid("this store has no payload index"))
    }
}

/// Turns a store URL into an opened store: the registry's job, handed down
/// to the operator so it opens stores without naming a backend.
#[async_trait]
pub trait StoreOpener: Send + Sync {
    async fn open(&self, url: &str, options: &OpenOptions) -> Result<Arc<dyn OpenedStore>, StoreError>;

    /// Whether `url` names a store on this machine: a file, memory, or a
    /// database server on a loopback host or Unix socket.
    fn is_local(&self, url: &str) -> Result<bool, StoreError>;
}
