//! One place that turns a store URL into a store: `memory:`, `sqlite:PATH`
//! (`?mode=ro` for read-only) and `postgres://…`. The operator, the tests'
//! worker and the bench all open stores here, so a URL means the same
//! everywhere and a new backend is added in one match. What only some
//! backends can do (the server behind a store, reader roles, a payload
//! index) is asked of the opened store here too, so no caller above names
//! a backend crate. The environment's default store is chosen here as well.

use std::sync::Arc;
use std::time::Duration;

use a2_store::memory::MemoryStore;
use a2_store::{Access, Clock, DatabaseServer, Store, StoreError};
use a2_store_postgres::{PgOptions, PgStore, Postgres};
use a2_store_sqlite::{Sqlite, SqliteOpen, SqliteStore};

mod environment;

pub use environment::{dev_store_path, resolve_store, server_builder_from_env, Environment};

/// How to open; `None` leaves the backend's own default.
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
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

/// An opened store, by backend, for what only one backend does.
#[derive(Debug, Clone)]
pub enum Opened {
    Memory(Arc<MemoryStore>),
    Sqlite(Arc<SqliteStore>),
    Postgres(PgStore),
}

impl Opened {
    pub fn store(&self) -> Arc<dyn Store> {
        match self {
            Self::Memory(store) => store.clone(),
            Self::Sqlite(store) => store.clone(),
            Self::Postgres(store) => Arc::new(store.clone()),
        }
    }

    /// The access the store was opened with (a `?mode=ro` URL wins over the options).
    pub fn access(&self, asked: Access) -> Access {
        let read_only = match self {
            Self::Memory(_) => asked == Access::ReadOnly,
            Self::Sqlite(store) => store.is_read_only(),
            Self::Postgres(store) => store.is_read_only(),
        };
        if read_only {
            Access::ReadOnly
        } else {
            Access::ReadWrite
        }
    }
}

impl Opened {
    /// The database server behind the store, when it is a server (not a file or memory).
    pub fn server(&self) -> Option<&DatabaseServer> {
        match self {
            Self::Postgres(store) => Some(store.server()),
            Self::Memory(_) | Self::Sqlite(_) => None,
        }
    }

    /// Whether the role the store logged in as could change A2's tables
    /// (a read-only attach with such a role is protected by its session
    /// setting alone); `None` where there is no role.
    pub async fn role_can_write(&self) -> Option<Result<bool, StoreError>> {
        match self {
            Self::Postgres(store) => Some(store.role_can_write().await),
            Self::Memory(_) | Self::Sqlite(_) => None,
        }
    }

    /// On a hot standby, how far it trails its primary (ms); `None` elsewhere.
    pub async fn replica_delay_ms(&self) -> Result<Option<i64>, StoreError> {
        match self {
            Self::Postgres(store) => store.replica_delay_ms().await,
            Self::Memory(_) | Self::Sqlite(_) => Ok(None),
        }
    }

    /// Whether the store has database roles that can be granted read access.
    pub fn has_roles(&self) -> bool {
        matches!(self, Self::Postgres(_))
    }

    /// Let `role` read this store and nothing more.
    pub async fn reader_role_grant(&self, role: &str) -> Result<(), StoreError> {
        match self {
            Self::Postgres(store) => store.reader_role_grant(role).await,
            Self::Memory(_) | Self::Sqlite(_) => Err(StoreError::invalid("this store has no database roles to grant")),
        }
    }

    /// Whether event payloads can be indexed for searches (else a search scans).
    pub fn has_payload_index(&self) -> bool {
        matches!(self, Self::Postgres(_))
    }

    /// Index event payloads for searches; `true` when made now.
    pub async fn payload_index_create(&self) -> Result<bool, StoreError> {
        match self {
            Self::Postgres(store) => store.payload_index_create().await,
            Self::Memory(_) | Self::Sqlite(_) => Err(StoreError::invalid("this store has no payload index")),
        }
    }
}

/// Whether `url` names a store on this machine: a file, memory, or a database
/// server on a loopback host or Unix socket.
pub fn is_local(url: &str) -> Result<bool, StoreError> {
    let url = url.trim();
    if !is_postgres(url) {
        return Ok(true);
    }
    Ok(a2_store_postgres::url_host(url)?.as_deref().is_none_or(a2_store_postgres::is_local_host))
}

/// Whether `url` names a Postgres database.
pub fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// Open the store `url` names.
pub async fn open(url: &str, options: &StoreOptions, clock: Arc<dyn Clock>) -> Result<Opened, StoreError> {
    let url = url.trim();
    let access = options.access.unwrap_or(Access::ReadWrite);
    if url == "memory:" {
        return Ok(Opened::Memory(Arc::new(MemoryStore::new(clock))));
    }
    if url.starts_with("sqlite:") {
        let how = SqliteOpen { access, create: !options.must_exist, init: options.init };
        return Ok(Opened::Sqlite(Arc::new(Sqlite::open_url_with(url, how, clock).await?)));
    }
    if is_postgres(url) {
        let defaults = PgOptions::default();
        let pg = PgOptions {
            access,
            max_connections: options.max_connections.unwrap_or(defaults.max_connections),
            read_connections: options.read_connections.unwrap_or(defaults.read_connections),
            statement_timeout: options.statement_timeout.unwrap_or(defaults.statement_timeout),
            schema: options.schema.clone(),
            password: options.password.clone(),
            application_name: options.application_name.clone().unwrap_or(defaults.application_name.clone()),
            lock_timeout: options.lock_timeout,
            init: options.init,
            ..defaults
        };
        return Ok(Opened::Postgres(Postgres::connect(url, pg, clock).await?));
    }
    Err(StoreError::invalid(format!("{url:?} is not a store URL: use sqlite:PATH, postgres://… or memory:")))
}
