//! The Postgres backend, for production. Claims are safe with many processes
//! at once: candidate heads are locked `FOR UPDATE SKIP LOCKED`, and every
//! completion, failure and renewal is fenced by the attempt number. Appends
//! serialize per session on the session row and `NOTIFY a2_events`, so
//! streams and live views wake without polling. Inspection reads run on a
//! small separate pool with a statement timeout; a read-only store sets
//! `default_transaction_read_only` on every connection and never migrates.

mod append;
mod complete;
mod conn;
mod error;
mod grants;
mod migrate;
mod pinned;
mod plans;
mod route;
mod server;
mod sql;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

pub use a2_store::Access;
use a2_store::{Appended, Clock, DatabaseServer, EventAppend, StoreError};
use a2_store_sql::{Batcher, Conn, Ledger, SqlBackend, SqlStore, Transaction};
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::Connection as _;
use tokio::sync::broadcast;

pub use error::db_error;
use route::Db;
pub use route::{url_route, UrlRoute};
pub use server::is_local_host;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Append flushes in flight at once (each one statement and one commit).
const APPEND_FLUSHES: usize = 2;

/// Completion flushes in flight at once (each one statement and one commit).
const COMPLETE_FLUSHES: usize = 2;

/// The channel appends notify on; the payload is the session key.
pub const NOTIFY_CHANNEL: &str = "a2_events";

/// How to connect.
#[derive(Debug, Clone)]
pub struct PgOptions {
    pub access: Access,
    /// Connections for the engine's writes and reads.
    pub max_connections: u32,
    /// Connections for inspection reads.
    pub read_connections: u32,
    /// Inspection reads running longer are cancelled by the server.
    pub statement_timeout: Duration,
    /// Keep the A2 tables in this schema (created if missing) instead of `public`.
    pub schema: Option<String>,
    pub connect_timeout: Duration,
    /// Given to the driver as the password (never spliced into a URL, where it could be logged).
    pub password: Option<String>,
    /// What `pg_stat_activity` shows for this store's connections.
    pub application_name: String,
    /// Writes waiting longer than this for a row lock give up (`lock_timeout`); `None`: wait.
    pub lock_timeout: Option<Duration>,
    /// Create the A2 schema even where the schema holds other tables (`a2 init`);
    /// otherwise only an empty schema or an A2 store is migrated.
    pub init: bool,
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            access: Access::ReadWrite,
            max_connections: 10,
            read_connections: 2,
            statement_timeout: Duration::from_secs(5),
            schema: None,
            connect_timeout: Duration::from_secs(10),
            password: None,
            application_name: "a2".into(),
            lock_timeout: None,
            init: false,
        }
    }
}

/// The Postgres store: the shared SQL layer over this backend.
pub type PgStore = SqlStore<Postgres>;

/// A Postgres database's pools and change feed: what the shared SQL layer runs on.
#[derive(Debug, Clone)]
pub struct Postgres {
    pool: Db,
    reader: Db,
    access: Access,
    changes: broadcast::Sender<String>,
    /// The NOTIFY connection (not waiting for the disk).
    notifier: Db,
    /// Session keys to announce, gathered so one NOTIFY carries many.
    announce: tokio::sync::mpsc::UnboundedSender<String>,
    server: DatabaseServer,
    /// The schema migrations this open applied, oldest first (none when it was up to date).
    migrated: Vec<i64>,
    /// Group commit: appends arriving while one flush runs share the next one's statement and commit.
    appends: Batcher<EventAppend, Result<Option<Appended>, StoreError>>,
    /// Group commit for completions that append: many sessions' share one statement and commit.
    completions: Batcher<a2_store::HeadComplete, Result<Option<a2_store::CompleteOutcome>, StoreError>>,
    /// The TLS links that trust sslrootcert's CA alone (`pinned.rs`), closed with the store.
    _links: Vec<Arc<pinned::PinnedLink>>,
    /// The LISTEN task, stopped when the last clone of the store goes, so
    /// its connection and the pools close with the store.
    _listening: Option<Arc<Listening>>,
}

/// Aborts the LISTEN task when dropped.
#[derive(Debug)]
struct Listening(tokio::task::AbortHandle);

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The connection settings of a store opened with `options`: the schema's
/// search path, read-only transactions by default when read-only, and
/// `verify-full` TLS for a host that is not this machine unless the URL
/// chose an `sslmode`. Through a pooler (`?pgbouncer=true`) the settings are
/// not sent at connect (a pooler refuses them, and a session keeps nothing):
/// each transaction carries them (`route.rs`), and no statement is kept.
/// Public so tests can open exactly the connection a store uses.
pub fn connect_options(url: &str, options: &PgOptions) -> Result<PgConnectOptions, StoreError> {
    route_options(&url_route(url)?, options)
}

/// [`connect_options`] for a URL whose route was read already.
fn route_options(route: &UrlRoute, options: &PgOptions) -> Result<PgConnectOptions, StoreError> {
    // sqlx's verify-ca path asks rustls for the process's default crypto
    // provider; where a second provider is compiled in (aws-lc-rs, through
    // another crate) neither is the default and that path panics. Ours is
    // ring, as sqlx's own; an application that installed one keeps it.
    static PROVIDER: std::sync::Once = std::sync::Once::new();
    PROVIDER.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    let mut connect = PgConnectOptions::from_str(&route.url)
        .map_err(|e| StoreError::invalid(format!("not a usable Postgres URL: {e}")))?
        .application_name(&options.application_name);
    if let Some(password) = &options.password {
        connect = connect.password(password);
    }
    let connect = server::default_tls(&route.url, connect);
    let mut settings = session_settings(options)?;
    if route.pooled {
        return Ok(connect.statement_cache_capacity(0).extra_float_digits(None));
    }
    if options.access == Access::ReadOnly {
        settings.push(("default_transaction_read_only", "on".into()));
    }
    Ok(connect.options(settings.iter().map(|(k, v)| (*k, v.as_str()))))
}

/// `pool`, whose every new connection is proved read-only first when `prove`.
fn proving(pool: PgPoolOptions, prove: bool) -> PgPoolOptions {
    if !prove {
        return pool;
    }
    pool.after_connect(|conn, _| {
        Box::pin(async move {
            // The pool gives up on such a connection and makes another, until its acquire times out.
            server::prove_read_only(conn).await.map_err(|refused| sqlx::Error::Configuration(Box::new(refused)))
        })
    })
}

/// The settings every connection of a store needs, whichever its pool.
fn session_settings(options: &PgOptions) -> Result<Vec<(&'static str, String)>, StoreError> {
    let mut settings = Vec::new();
    if let Some(schema) = &options.schema {
        if !valid_schema(schema) {
            return Err(StoreError::invalid(format!("schema name {schema:?} must be lowercase letters, digits and _")));
        }
        settings.push(("search_path", schema.clone()));
    }
    Ok(settings)
}

/// The host a Postgres URL names, or `None` for a Unix socket.
pub fn url_host(url: &str) -> Result<Option<String>, StoreError> {
    // Without A2's own parameters: the driver logs the ones it does not know, values and all.
    let options = PgConnectOptions::from_str(&url_route(url)?.url)
        .map_err(|e| StoreError::invalid(format!("not a usable Postgres URL: {e}")))?;
    let host = options.get_host();
    Ok((!host.starts_with('/')).then(|| host.to_owned()))
}

fn valid_schema(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 63
        && chars.next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

impl Postgres {
    pub async fn connect(url: &str, options: PgOptions, clock: Arc<dyn Clock>) -> Result<PgStore, StoreError> {
        let route = url_route(url)?;
        let connect = route_options(&route, &options)?;
        // Refused before any connection is made: the listen URL carries the same password.
        if let Some(direct) = &route.listen_url {
            server::listen_tls_holds(&connect, &connect_options(direct, &options)?)?;
        }
        // With sslrootcert= and verification asked, every pool reaches the server through a link
        // that trusts that CA alone; `connect` stays as the URL said, for the badge.
        let (through, pinned) = pinned::route(&route.url, connect.clone(), options.connect_timeout).await?;
        let main_pinned = pinned.is_some();
        let mut links: Vec<Arc<pinned::PinnedLink>> = pinned.into_iter().collect();
        let timeout = ("statement_timeout", options.statement_timeout.as_millis().to_string());
        let mut work_settings: Vec<(&str, String)> =
            plans::WORK_PLANS.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        if let Some(wait) = options.lock_timeout {
            work_settings.push(("lock_timeout", wait.as_millis().to_string()));
        }
        // NOTIFY on a connection of its own that does not wait for the disk: a
        // notifying commit holds the cluster's notify lock, and one lost in a
        // crash only delays a poll.
        let unsynced = ("synchronous_commit", "off".to_owned());
        // Each pool's own settings: given at connect when direct; through a
        // pooler, each of its transactions begins with them (and the store's).
        let session = session_settings(&options)?;
        let read_only = options.access == Access::ReadOnly;
        let settle = |own: &[(&'static str, String)], read_only: bool| {
            if route.pooled {
                let all = [session.clone(), own.to_vec()].concat();
                (through.clone(), Some(route::begin_statement(read_only, &all)))
            } else {
                (through.clone().options(own.iter().map(|(k, v)| (*k, v.as_str()))), None)
            }
        };
        let (reader_connect, reader_begin) = settle(&[timeout], read_only);
        // Generic plans on the engine's pool only (`plans.rs`): its statements are the same every time.
        let (work_connect, work_begin) = settle(&work_settings, read_only);
        let (notify_connect, notify_begin) = settle(&[unsynced], read_only);
        // The reader connects first, within the connect timeout: a bad host,
        // role or database fails fast and typed.
        // A direct read-only pool proves each connection read-only as it is made (a pooled
        // one's transactions begin READ ONLY, which no pooler can drop). First on a connection
        // of its own, where a refusal can say why: a pool would only make another, and time out.
        let prove = read_only && !route.pooled;
        if prove {
            let probe = tokio::time::timeout(options.connect_timeout, PgConnection::connect_with(&reader_connect));
            let mut probe = probe
                .await
                .map_err(|_| StoreError::unavailable("the read-only check timed out connecting"))?
                .map_err(db_error)?;
            server::prove_read_only(&mut probe).await?;
            let _ = probe.close().await;
        }
        let reader = proving(PgPoolOptions::new(), prove)
            .max_connections(options.read_connections.max(1))
            .acquire_timeout(options.connect_timeout)
            .connect_with(reader_connect)
            .await
            .map_err(db_error)?;
        let reader = Db::new(reader, reader_begin);
        // The engine's pool waits for a connection as long as a lease lasts:
        // more running heads than connections queue here, they do not fail.
        let pool = proving(PgPoolOptions::new(), prove)
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(Duration::from_secs(60))
            .connect_lazy_with(work_connect);
        let pool = Db::new(pool, work_begin);
        let notifier = proving(PgPoolOptions::new(), prove)
            .max_connections(1)
            .acquire_timeout(options.connect_timeout)
            .connect_lazy_with(notify_connect);
        let notifier = Db::new(notifier, notify_begin);
        let mut conn = reader.conn().await?;
        let from_env = server::sslmode_from_env(&route.url);
        let server = server::describe(&mut conn, &connect, (route.pooled, from_env)).await?;
        conn.done().await?;
        // A hot standby refuses every write: it is attached read-only whatever was asked.
        let options = if server.replica { PgOptions { access: Access::ReadOnly, ..options } } else { options };
        if let (Some(schema), Access::ReadWrite) = (&options.schema, options.access) {
            let create = format!("CREATE SCHEMA IF NOT EXISTS {schema}");
            let mut conn = pool.conn().await?;
            route::simple(&mut conn, &create).await?;
            conn.done().await?;
        }
        if options.access == Access::ReadWrite && !options.init {
            refuse_other_databases(&pool, &server).await?;
        }
        let mut migrated = Vec::new();
        if options.access == Access::ReadWrite {
            migrated = migrate::run(&pool, &MIGRATOR).await?;
            // Tables a migration added are the reader roles' to read too. A
            // role that may write but not grant (not the owner) leaves that
            // to the owner's next open: it is not a reason to refuse this one.
            if let Err(error) = regrant_readers(&pool).await {
                tracing::warn!(code = error.code(), %error, "could not grant the reader roles the A2 tables");
            }
        }
        let mut conn = reader.conn().await?;
        check_schema(&mut conn).await?;
        conn.done().await?;
        let (changes, _) = broadcast::channel(1024);
        let announce = announcer(notifier.clone());
        let appends = {
            let (pool, clock) = (pool.clone(), clock.clone());
            // Two flushes at once: one's commit waits on the disk while the next one's statement runs.
            Batcher::start(a2_store_sql::MAX_BATCH, APPEND_FLUSHES, move |batch| {
                let (pool, clock) = (pool.clone(), clock.clone());
                async move { append::flush(&pool, batch, clock.now_ms()).await }
            })
        };
        let completions = {
            let (pool, clock) = (pool.clone(), clock.clone());
            Batcher::start(a2_store_sql::MAX_BATCH, COMPLETE_FLUSHES, move |batch| {
                let (pool, clock) = (pool.clone(), clock.clone());
                async move { complete::flush(&pool, batch, clock.now_ms()).await }
            })
        };
        // A standby cannot LISTEN (nor would a NOTIFY reach it), nor can a
        // session through a pooler (unless a direct `listen_url` is given):
        // readers poll instead.
        let listening = match (&route.listen_url, server.replica, route.pooled) {
            (_, true, _) | (None, false, true) => None,
            (None, false, false) => Some(Arc::new(listen(pool.pool.clone(), changes.clone()))),
            (Some(direct), false, _) => {
                let listen_options = connect_options(direct, &options)?;
                let (listen_connect, pinned) = pinned::route(direct, listen_options, options.connect_timeout).await?;
                // The same password rides on it: it may not trust more than the main URL does.
                if main_pinned && pinned.is_none() {
                    return Err(StoreError::invalid(
                        "the URL trusts its sslrootcert= CA alone, and listen_url does not: give listen_url \
                         the same sslmode and sslrootcert",
                    ));
                }
                links.extend(pinned);
                let listen_pool = PgPoolOptions::new()
                    .max_connections(1)
                    .acquire_timeout(options.connect_timeout)
                    .connect_lazy_with(listen_connect);
                Some(Arc::new(listen(listen_pool, changes.clone())))
            }
        };
        let store = Self {
            pool,
            reader,
            notifier,
            access: options.access,
            changes,
            announce,
            server,
            migrated,
            _links: links,
            appends,
            completions,
            _listening: listening,
        };
        let read_write = store.access == Access::ReadWrite;
        let store = SqlStore::new(store, &sql::SQL, clock);
        Ok(if read_write { store.with_completion_batching(COMPLETE_FLUSHES) } else { store })
    }

    /// Whether statements go through a transaction-mode pooler (`?pgbouncer=true`).
    pub fn is_pooled(&self) -> bool {
        !self.pool.prepared()
    }

    /// Whether changes from other processes arrive as notifications (else readers poll).
    pub fn is_live(&self) -> bool {
        self._listening.is_some()
    }

    pub fn is_read_only(&self) -> bool {
        self.access == Access::ReadOnly
    }

    /// Sessions whose logs grew, from any process (LISTEN/NOTIFY).
    pub fn subscribe(&self) -> broadcast::Receiver<String> {
        self.changes.subscribe()
    }

    /// Announce that a session's log grew, to every process listening.
    pub(crate) fn notify(&self, key: &str) {
        let _ = self.announce.send(key.to_owned());
    }

    /// Whether the connected role could change any A2 table (a read-only
    /// attach with such a role is protected by the session setting alone).
    pub async fn role_can_write(&self) -> Result<bool, StoreError> {
        let mut conn = self.reader.conn().await?;
        let can = server::role_can_write(&mut conn).await?;
        conn.done().await?;
        Ok(can)
    }

    /// The server, database and role this store is attached to, and its TLS.
    pub fn server(&self) -> &DatabaseServer {
        &self.server
    }

    /// The schema migrations this open applied, oldest first.
    pub fn migrations_applied(&self) -> &[i64] {
        &self.migrated
    }

    /// On a hot standby, how far it trails the primary (ms); `None` on a primary.
    pub async fn replica_delay_ms(&self) -> Result<Option<i64>, StoreError> {
        if !self.server.replica {
            return Ok(None);
        }
        let mut conn = self.reader.conn().await?;
        let delay = server::replica_delay_ms(&mut conn).await?;
        conn.done().await?;
        Ok(delay)
    }

    /// Let `role` read the A2 tables and nothing more, now and after later
    /// migrations. A read-only attach with such a role is refused every write
    /// by the database itself, even a session that turns read-only mode off.
    pub async fn reader_role_grant(&self, role: &str) -> Result<(), StoreError> {
        self.writable()?;
        if !valid_schema(role) {
            return Err(StoreError::invalid(format!("role name {role:?} must be lowercase letters, digits and _")));
        }
        let mut conn = self.pool.conn().await?;
        grants::reader_role_grant(&mut conn, role).await?;
        conn.done().await
    }

    /// Index event payloads (GIN, `jsonb_path_ops`) so a payload search is
    /// answered from the index. Built without blocking appends; from then on
    /// every append also writes the index, which costs append throughput.
    /// `true` when it was made now, `false` when it existed.
    pub async fn payload_index_create(&self) -> Result<bool, StoreError> {
        self.writable()?;
        // An index whose concurrent build failed stays behind INVALID: it is
        // written by every append and answers nothing, so it is rebuilt, not
        // taken for one that exists.
        const FOUND: &str = "SELECT current_schema()::text, i.indisvalid, \
             EXISTS (SELECT 1 FROM pg_stat_progress_create_index p WHERE p.index_relid = c.oid) \
             FROM (SELECT 1) one LEFT JOIN pg_class c ON c.relname = 'a2_events_payload' \
             AND c.relnamespace = current_schema()::regnamespace LEFT JOIN pg_index i ON i.indexrelid = c.oid";
        let mut conn = self.pool.conn().await?;
        let (schema, valid, building): (String, Option<bool>, bool) =
            sqlx::query_as(FOUND).persistent(false).fetch_one(&mut *conn).await.map_err(db_error)?;
        conn.done().await?;
        if valid == Some(true) {
            return Ok(false);
        }
        if building {
            return Err(StoreError::invalid("the payload index is being built now (by another call): let it finish"));
        }
        // Not in a transaction (CONCURRENTLY cannot be), and sent as one
        // simple query each, so they need no session setting: the schema is named.
        let schema = format!("\"{}\"", schema.replace('"', "\"\""));
        let mut conn = self.pool.pool.acquire().await.map_err(db_error)?;
        if valid == Some(false) {
            tracing::warn!("the payload index was left invalid by a build that failed: rebuilding it");
            route::simple(&mut conn, &format!("DROP INDEX CONCURRENTLY IF EXISTS {schema}.a2_events_payload")).await?;
        }
        let create = format!(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS a2_events_payload ON {schema}.a2_events USING GIN (payload jsonb_path_ops)"
        );
        route::simple(&mut conn, &create).await?;
        Ok(true)
    }

    pub async fn close(&self) {
        self.pool.pool.close().await;
        self.reader.pool.close().await;
        self.notifier.pool.close().await;
    }

    /// A connection whose statements each commit on their own: autocommit
    /// when direct, a transaction apiece through a pooler.
    async fn each_statement(&self) -> Result<Box<dyn Conn>, StoreError> {
        let conn = self.pool.pool.acquire().await.map_err(db_error)?;
        Ok(match self.pool.begin_statement() {
            None => Box::new(conn::Link::new(conn)),
            Some(begin) => Box::new(conn::EachStatement { conn, begin }),
        })
    }

    fn writable(&self) -> Result<(), StoreError> {
        match self.access {
            Access::ReadWrite => Ok(()),
            Access::ReadOnly if self.server.replica => Err(StoreError::ReadOnly {
                message: format!(
                    "{}:{} is a read replica (hot standby): act on the primary",
                    self.server.host, self.server.port
                ),
            }),
            Access::ReadOnly => {
                Err(StoreError::ReadOnly { message: "this Postgres store was attached read-only".into() })
            }
        }
    }
}

#[async_trait::async_trait]
impl SqlBackend for Postgres {
    async fn read(&self) -> Result<Box<dyn Conn>, StoreError> {
        Ok(match self.reader.begin_statement() {
            None => Box::new(conn::Link::new(self.reader.pool.acquire().await.map_err(db_error)?)),
            // Through a pooler a read keeps one transaction (so its settings
            // hold), rolled back when the read is done.
            Some(begin) => Box::new(conn::Link::unnamed(self.reader.pool.begin_with(begin).await.map_err(db_error)?)),
        })
    }

    async fn work(&self) -> Result<Box<dyn Conn>, StoreError> {
        self.each_statement().await
    }

    async fn begin(&self) -> Result<Box<dyn Transaction>, StoreError> {
        self.writable()?;
        Ok(match self.pool.begin_statement() {
            None => Box::new(conn::Link::new(self.pool.pool.begin().await.map_err(db_error)?)),
            Some(begin) => Box::new(conn::Link::unnamed(self.pool.pool.begin_with(begin).await.map_err(db_error)?)),
        })
    }

    async fn write(&self) -> Result<Box<dyn Conn>, StoreError> {
        self.writable()?;
        self.each_statement().await
    }

    async fn event_append_native(&self, params: &EventAppend) -> Result<Option<Appended>, StoreError> {
        self.writable()?;
        // A run's append checks the clear boundary under the session's lock: the shared transaction does.
        if params.origin_index.is_some() {
            return Ok(None);
        }
        self.appends
            .submit(params.clone())
            .await
            .unwrap_or_else(|| Err(StoreError::unavailable("the store's append queue stopped")))
    }

    async fn head_complete_native(
        &self,
        params: &a2_store::HeadComplete,
        _now: a2_store::Millis,
    ) -> Result<Option<a2_store::CompleteOutcome>, StoreError> {
        self.writable()?;
        // Stamped when its flush runs, as a grouped append is.
        self.completions
            .submit(params.clone())
            .await
            .unwrap_or_else(|| Err(StoreError::unavailable("the store's completion queue stopped")))
    }

    fn announce(&self, key: &str) {
        self.notify(key);
    }

    fn changes(&self) -> Option<broadcast::Receiver<String>> {
        self.is_live().then(|| self.subscribe())
    }
}

/// Forward `a2_events` notifications to subscribers until the store is dropped.
fn listen(pool: PgPool, changes: broadcast::Sender<String>) -> Listening {
    let task = tokio::spawn(async move {
        loop {
            if pool.is_closed() {
                return;
            }
            match sqlx::postgres::PgListener::connect_with(&pool).await {
                Ok(mut listener) => {
                    if listener.listen(NOTIFY_CHANNEL).await.is_ok() {
                        while let Ok(notification) = listener.recv().await {
                            let keys: Vec<String> = serde_json::from_str(notification.payload()).unwrap_or_default();
                            for key in keys {
                                let _ = changes.send(key);
                            }
                        }
                    }
                }
                Err(error) => tracing::debug!(%error, "LISTEN connection failed; retrying"),
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    Listening(task.abort_handle())
}

/// NOTIFY takes a lock that every notifying commit in the cluster queues
/// on, so appends do not notify themselves: they hand their session key to
/// this task, which sends what gathered while its last NOTIFY ran as one
/// JSON array (within the 8,000-byte payload limit).
fn announcer(notifier: Db) -> tokio::sync::mpsc::UnboundedSender<String> {
    let (announce, mut keys) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        while let Some(first) = keys.recv().await {
            let mut batch = std::collections::BTreeSet::from([first]);
            let mut size = 0;
            while size < 6_000 {
                match keys.try_recv() {
                    Ok(key) => {
                        size += key.len() + 3;
                        batch.insert(key);
                    }
                    Err(_) => break,
                }
            }
            let payload = serde_json::to_string(&batch).unwrap_or_default();
            if let Err(error) = notify(&notifier, &payload).await {
                tracing::debug!(%error, "NOTIFY failed; listeners fall back to polling");
            }
        }
    });
    announce
}

async fn notify(notifier: &Db, payload: &str) -> Result<(), StoreError> {
    let mut conn = notifier.conn().await?;
    let notify = sqlx::query("SELECT pg_notify($1, $2)").persistent(notifier.prepared());
    notify.bind(NOTIFY_CHANNEL).bind(payload).execute(&mut *conn).await.map_err(db_error)?;
    conn.done().await
}

async fn regrant_readers(pool: &Db) -> Result<(), StoreError> {
    let mut conn = pool.conn().await?;
    grants::regrant_readers(&mut conn).await?;
    conn.done().await
}

/// Refuse to migrate a schema that holds tables and none of A2's: it is
/// someone else's database, and an attach must leave it as it found it.
async fn refuse_other_databases(pool: &Db, server: &DatabaseServer) -> Result<(), StoreError> {
    let mut conn = pool.conn().await?;
    let contents = server::contents(&mut conn).await?;
    conn.done().await?;
    let why = match contents {
        server::Contents::Empty | server::Contents::A2Store => return Ok(()),
        server::Contents::Other => "has tables and no A2 migration ledger".to_owned(),
        server::Contents::Foreign(why) => why,
    };
    Err(StoreError::NotAStore {
        message: format!(
            "database '{}' on {} {why}: it was left untouched; `a2 init` creates an A2 store in it",
            server.database, server.host
        ),
    })
}

fn newer_schema(version: i64) -> StoreError {
    let known = MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0);
    StoreError::Schema {
        message: format!(
            "the database has A2 schema version {version}, newer than this binary's {known}: upgrade A2 first"
        ),
    }
}

async fn check_schema(reader: &mut sqlx::PgConnection) -> Result<(), StoreError> {
    let table: Option<String> = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations')::text")
        .persistent(false)
        .fetch_one(&mut *reader)
        .await
        .map_err(db_error)?;
    if table.is_none() {
        return Err(StoreError::Schema {
            message: "the database has no A2 schema: connect read-write once to create it".into(),
        });
    }
    if let Ledger::Foreign { why } = server::ledger(&mut *reader).await? {
        return Err(StoreError::NotAStore { message: format!("this database {why}: A2 will not read or write it") });
    }
    let applied: Vec<i64> = sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
        .persistent(false)
        .fetch_all(reader)
        .await
        .map_err(db_error)?;
    let known: Vec<i64> = MIGRATOR.iter().map(|m| m.version).collect();
    if let Some(newer) = applied.iter().find(|v| !known.contains(v)) {
        return Err(newer_schema(*newer));
    }
    let missing: Vec<String> = known.iter().filter(|v| !applied.contains(v)).map(i64::to_string).collect();
    if !missing.is_empty() {
        return Err(StoreError::Schema {
            message: format!(
                "the database lacks A2 schema migrations {} and a read-only connection never migrates",
                missing.join(", ")
            ),
        });
    }
    Ok(())
}
