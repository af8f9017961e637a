//! One place that turns a store URL into a store: `memory:`, `sqlite:PATH`
//! (`?mode=ro` for read-only) and `postgres://…`. The operator, the tests'
//! worker and the bench all open stores here, so a URL means the same
//! everywhere and a new backend is added in one match. What only some
//! backends can do (the server behind a store, reader roles, a payload
//! index) is asked of the opened store here too, so no caller above names
//! a backend crate. The environment's default store is chosen here as well.

use std::sync::Arc;

use a2_store::memory::MemoryStore;
use a2_store::{
    is_postgres_url, Access, Clock, DatabaseServer, OpenOptions, OpenedStore, Store, StoreError, StoreKind,
    StoreOpener, SystemClock,
};
use a2_store_postgres::{PgOptions, PgStore, Postgres};
use a2_store_sqlite::{Sqlite, SqliteOpen, SqliteStore};
use async_trait::async_trait;

mod environment;

pub use a2_store_sqlite::path_url as sqlite_url;
pub use environment::{dev_store_path, resolve_store, server_builder_from_env, Environment};

/// An opened store, by backend, for what only one backend does.
#[derive(Debug, Clone)]
pub enum Opened {
    Memory(Arc<MemoryStore>),
    Sqlite(Arc<SqliteStore>),
    Postgres(PgStore),
}

#[async_trait]
impl OpenedStore for Opened {
    fn store(&self) -> Arc<dyn Store> {
        match self {
            Self::Memory(store) => store.clone(),
            Self::Sqlite(store) => store.clone(),
            Self::Postgres(store) => Arc::new(store.clone()),
        }
    }

    fn kind(&self) -> StoreKind {
        match self {
            Self::Memory(_) => StoreKind::Memory,
            Self::Sqlite(_) => StoreKind::Sqlite,
            Self::Postgres(_) => StoreKind::Postgres,
        }
    }

    fn access(&self, asked: Access) -> Access {
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

    fn server(&self) -> Option<&DatabaseServer> {
        match self {
            Self::Postgres(store) => Some(store.server()),
            Self::Memory(_) | Self::Sqlite(_) => None,
        }
    }

    fn migrations_applied(&self) -> Vec<i64> {
        match self {
            Self::Postgres(store) => store.migrations_applied().to_vec(),
            Self::Sqlite(store) => store.migrations_applied().to_vec(),
            Self::Memory(_) => Vec::new(),
        }
    }

    async fn role_can_write(&self) -> Option<Result<bool, StoreError>> {
        match self {
            Self::Postgres(store) => Some(store.role_can_write().await),
            Self::Memory(_) | Self::Sqlite(_) => None,
        }
    }

    async fn replica_delay_ms(&self) -> Result<Option<i64>, StoreError> {
        match self {
            Self::Postgres(store) => store.replica_delay_ms().await,
            Self::Memory(_) | Self::Sqlite(_) => Ok(None),
        }
    }

    fn has_roles(&self) -> bool {
        matches!(self, Self::Postgres(_))
    }

    async fn reader_role_grant(&self, role: &str) -> Result<(), StoreError> {
        match self {
            Self::Postgres(store) => store.reader_role_grant(role).await,
            Self::Memory(_) | Self::Sqlite(_) => Err(StoreError::invalid("this store has no database roles to grant")),
        }
    }

    fn has_payload_index(&self) -> bool {
        matches!(self, Self::Postgres(_))
    }

    async fn payload_index_create(&self) -> Result<bool, StoreError> {
        match self {
            Self::Postgres(store) => store.payload_index_create().await,
            Self::Memory(_) | Self::Sqlite(_) => Err(StoreError::invalid("this store has no payload index")),
        }
    }
}

/// The registry as a [`StoreOpener`], handed to the operator; every store
/// it opens keeps time by the system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct Registry;

#[async_trait]
impl StoreOpener for Registry {
    async fn open(&self, url: &str, options: &OpenOptions) -> Result<Arc<dyn OpenedStore>, StoreError> {
        Ok(Arc::new(open(url, options, Arc::new(SystemClock)).await?))
    }

    fn is_local(&self, url: &str) -> Result<bool, StoreError> {
        is_local(url)
    }
}

/// Whether `url` names a store on this machine: a file, memory, or a database
/// server on a loopback host or Unix socket.
pub fn is_local(url: &str) -> Result<bool, StoreError> {
    let url = url.trim();
    if !is_postgres_url(url) {
        return Ok(true);
    }
    Ok(a2_store_postgres::url_host(url)?.as_deref().is_none_or(a2_store_postgres::is_local_host))
}

/// Open the store `url` names.
pub async fn open(url: &str, options: &OpenOptions, clock: Arc<dyn Clock>) -> Result<Opened, StoreError> {
    let url = url.trim();
    let access = options.access.unwrap_or(Access::ReadWrite);
    if url == "memory:" {
        return Ok(Opened::Memory(Arc::new(MemoryStore::new(clock))));
    }
    if url.starts_with("sqlite:") {
        let how = SqliteOpen { access, create: !options.must_exist, init: options.init };
        return Ok(Opened::Sqlite(Arc::new(Sqlite::open_url_with(url, how, clock).await?)));
    }
    if is_postgres_url(url) {
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
    Err(StoreError::invalid(format!(
        "{} is not a store URL: use sqlite:PATH, postgres://… or memory:",
        unknown_store(url)
    )))
}

/// libpq's connection keywords: the only words of a conninfo an error names.
const CONNINFO_KEYWORDS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "connect_timeout",
    "client_encoding",
    "options",
    "application_name",
    "sslmode",
    "sslcert",
    "sslkey",
    "sslrootcert",
    "sslcrl",
    "target_session_attrs",
    "service",
    "channel_binding",
    "gssencmode",
    "keepalives",
    "load_balance_hosts",
];

/// What an unknown store text is, named without echoing it: the rest of a
/// mistyped URL, or a libpq `key=value` conninfo, may hold a password.
fn unknown_store(text: &str) -> String {
    let scheme = text
        .split_once(':')
        .map(|(scheme, _)| scheme)
        .filter(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')));
    if let Some(scheme) = scheme {
        return format!("a URL with the scheme {scheme:?}");
    }
    if text.contains('=') {
        // Only libpq's own keywords are named: with spaces around `=` or a quoted value,
        // what stands before an `=` may be a piece of the password.
        let keys: Vec<&str> = text
            .split_whitespace()
            .filter_map(|pair| pair.split_once('=').map(|(k, _)| k))
            .map(|key| if CONNINFO_KEYWORDS.contains(&key) { key } else { "?" })
            .collect();
        return format!(
            "a key=value connection string (keys: {}; write it as postgres://user@host/dbname?… instead)",
            keys.join(", ")
        );
    }
    format!("a text of {} characters", text.chars().count())
}
