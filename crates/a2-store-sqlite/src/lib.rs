//! The SQLite backend: the dev default, a single file. WAL with
//! `synchronous=FULL` so an acknowledged append survives a crash; one writer
//! connection per process (writes queue in the pool, not on SQLite's lock)
//! and `BEGIN IMMEDIATE` so writers in other processes wait on the busy
//! timeout instead of failing; read-only opens use `mode=ro` and never migrate.

mod conn;
mod error;
mod sql;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

pub use a2_store::Access;
use a2_store::{Clock, StoreError};
use a2_store_sql::{read_ledger, Conn, Ledger, SqlBackend, SqlStore, Transaction};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};

pub use error::db_error;

/// Embedded migrations; the highest version is the schema this binary speaks.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// The dev default store file, relative to the working directory.
pub const DEV_STORE_PATH: &str = ".a2/dev.sqlite";

/// The SQLite store: the shared SQL layer over this backend.
pub type SqliteStore = SqlStore<Sqlite>;

/// A SQLite file's connections: what the shared SQL layer runs on.
#[derive(Debug, Clone)]
pub struct Sqlite {
    path: PathBuf,
    /// Absent on a read-only store.
    writer: Option<SqlitePool>,
    reader: SqlitePool,
    /// The schema migrations this open applied, oldest first (none when it was up to date).
    migrated: Vec<i64>,
}

fn options(path: &Path, access: Access) -> SqliteConnectOptions {
    let base = SqliteConnectOptions::new().filename(path).busy_timeout(Duration::from_secs(30)).foreign_keys(false);
    match access {
        Access::ReadWrite => {
            base.create_if_missing(true).journal_mode(SqliteJournalMode::Wal).synchronous(SqliteSynchronous::Full)
        }
        // A read-only connection sets no pragma that writes; the file's WAL mode stays as it is.
        Access::ReadOnly => base.read_only(true),
    }
}

/// Create the store's file empty and this user's alone (0600, whatever the
/// umask), before SQLite opens it: a store holds events, and copies of
/// production sessions. SQLite gives its `-wal` and `-shm` files the
/// database file's mode, so they are private too.
fn create_private(path: &Path) -> Result<(), StoreError> {
    let mut file = std::fs::OpenOptions::new();
    file.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut file, 0o600);
    match file.open(path) {
        Ok(_) => Ok(()),
        // A dangling link: SQLite would follow it and create its target with the umask's mode.
        Err(_) if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) => {
            Err(StoreError::invalid(format!(
                "{} is a symbolic link to nothing: a store is created only as a plain file",
                path.display()
            )))
        }
        // Another process made it meanwhile: it is opened as any existing store.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(StoreError::unavailable(format!("creating {}: {e}", path.display()))),
    }
}

/// How to open a SQLite store beyond read-write or read-only.
#[derive(Debug, Clone, Copy)]
pub struct SqliteOpen {
    pub access: Access,
    /// Read-write: create the file (and its folder) when missing.
    pub create: bool,
    /// Create the A2 tables even in a file that holds other tables (`a2 init`).
    pub init: bool,
}

impl SqliteOpen {
    pub fn new(access: Access) -> Self {
        Self { access, create: true, init: false }
    }
}

impl Sqlite {
    /// Open (and, read-write, create and migrate) the store at `path`.
    pub async fn open(
        path: impl AsRef<Path>,
        access: Access,
        clock: Arc<dyn Clock>,
    ) -> Result<SqliteStore, StoreError> {
        Self::open_with(path, SqliteOpen::new(access), clock).await
    }

    /// Open as `how` says. A file that is not empty and not an A2 store is
    /// refused before anything is written to it (not even the WAL switch).
    pub async fn open_with(
        path: impl AsRef<Path>,
        how: SqliteOpen,
        clock: Arc<dyn Clock>,
    ) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref().to_path_buf();
        let access = how.access;
        let exists = path.exists();
        if !exists && (access == Access::ReadOnly || !how.create) {
            return Err(StoreError::not_found(format!("SQLite store {}", path.display())));
        }
        if access == Access::ReadWrite && !exists {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .map_err(|e| StoreError::unavailable(format!("creating {}: {e}", dir.display())))?;
            }
            create_private(&path)?;
        }
        if access == Access::ReadWrite && exists && !how.init {
            refuse_other_files(&path).await?;
        }
        let writer = match access {
            Access::ReadWrite => Some(
                SqlitePoolOptions::new()
                    .max_connections(1)
                    .acquire_timeout(Duration::from_secs(60))
                    .connect_with(options(&path, access))
                    .await
                    .map_err(|e| open_error(&path, e))?,
            ),
            Access::ReadOnly => None,
        };
        let mut migrated = Vec::new();
        if let Some(writer) = &writer {
            let before = applied_versions(writer).await.map_err(db_error)?;
            MIGRATOR.run(writer).await.map_err(|e| match e {
                sqlx::migrate::MigrateError::VersionMissing(v) => newer_schema(&path, v),
                other => StoreError::Schema { message: format!("migrating {}: {other}", path.display()) },
            })?;
            let after = applied_versions(writer).await.map_err(db_error)?;
            migrated = after.into_iter().filter(|v| !before.contains(v)).collect();
        }
        let reader = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options(&path, Access::ReadOnly))
            .await
            .map_err(|e| open_error(&path, e))?;
        check_schema(&reader, &path).await?;
        let store = SqlStore::new(Self { path, writer, reader, migrated }, &sql::SQL, clock);
        // One fsync a commit is SQLite's cost, not its statements: concurrent appends share a
        // commit, and so do completions (one writer connection: one flush at a time).
        Ok(if access == Access::ReadWrite { store.with_append_batching().with_completion_batching(1) } else { store })
    }

    /// Open by URL: `sqlite:PATH` or `sqlite://PATH` (`?mode=ro` for read-only).
    pub async fn open_url(url: &str, access: Access, clock: Arc<dyn Clock>) -> Result<SqliteStore, StoreError> {
        Self::open_url_with(url, SqliteOpen::new(access), clock).await
    }

    /// Open by URL as `how` says; `?mode=ro` makes it read-only whatever `how` asks.
    pub async fn open_url_with(url: &str, how: SqliteOpen, clock: Arc<dyn Clock>) -> Result<SqliteStore, StoreError> {
        let path = url_path(url)?;
        let read_only = url.split_once('?').is_some_and(|(_, query)| query.split('&').any(|kv| kv == "mode=ro"));
        let how = if read_only { SqliteOpen { access: Access::ReadOnly, ..how } } else { how };
        Self::open_with(path, how, clock).await
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn is_read_only(&self) -> bool {
        self.writer.is_none()
    }

    /// The schema migrations this open applied, oldest first.
    pub fn migrations_applied(&self) -> &[i64] {
        &self.migrated
    }

    fn writer(&self) -> Result<&SqlitePool, StoreError> {
        self.writer.as_ref().ok_or_else(|| StoreError::ReadOnly {
            message: format!("{} was opened read-only (mode=ro)", self.path.display()),
        })
    }

    /// Close both pools, waiting for their connections to finish.
    pub async fn close(&self) {
        if let Some(writer) = &self.writer {
            writer.close().await;
        }
        self.reader.close().await;
    }
}

#[async_trait::async_trait]
impl SqlBackend for Sqlite {
    async fn read(&self) -> Result<Box<dyn Conn>, StoreError> {
        Ok(Box::new(conn::Link::new(self.reader.acquire().await.map_err(db_error)?)))
    }

    async fn begin(&self) -> Result<Box<dyn Transaction>, StoreError> {
        let tx = self.writer()?.begin_with("BEGIN IMMEDIATE").await.map_err(db_error)?;
        Ok(Box::new(conn::Link::new(tx)))
    }
}

fn open_error(path: &Path, error: sqlx::Error) -> StoreError {
    match db_error(error) {
        StoreError::Unavailable { message, retryable } => {
            StoreError::Unavailable { message: format!("opening {}: {message}", path.display()), retryable }
        }
        other => other,
    }
}

/// The file a `sqlite:` URL names.
pub fn url_path(url: &str) -> Result<String, StoreError> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .ok_or_else(|| StoreError::invalid(format!("{url:?} is not a sqlite: URL")))?;
    let path = rest.split_once('?').map_or(rest, |(path, _)| path);
    if path.is_empty() {
        return Err(StoreError::invalid(format!("{url:?} names no file")));
    }
    Ok(unescape_path(path))
}

/// The `sqlite:` URL of the file at `path`: its `%`, `?` and `#` written as
/// `%25`, `%3F` and `%23`, so no part of a file's name is read as the URL's
/// query (a path with `?` would otherwise open another file).
pub fn path_url(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut url = String::with_capacity(text.len() + 9);
    // `sqlite://` is stripped whole: a path that starts `//` keeps its slashes behind it.
    url.push_str(if text.starts_with("//") { "sqlite://" } else { "sqlite:" });
    for c in text.chars() {
        match c {
            '%' => url.push_str("%25"),
            '?' => url.push_str("%3F"),
            '#' => url.push_str("%23"),
            c => url.push(c),
        }
    }
    url
}

/// Undo [`path_url`]'s three escapes (any other `%` stays as written).
fn unescape_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let escape = rest.get(at..at + 3).map(str::to_ascii_uppercase);
        let (text, skip) = match escape.as_deref() {
            Some("%25") => ("%", 3),
            Some("%3F") => ("?", 3),
            Some("%23") => ("#", 3),
            _ => ("%", 1),
        };
        out.push_str(text);
        rest = &rest[at + skip..];
    }
    out.push_str(rest);
    out
}

/// Refuse a file that holds tables and none of A2's, or is no SQLite
/// database at all, reading it read-only so it stays exactly as it was.
async fn refuse_other_files(path: &Path) -> Result<(), StoreError> {
    if std::fs::metadata(path).map(|m| m.len()).unwrap_or(0) == 0 {
        return Ok(());
    }
    let not_ours = |why: String| StoreError::NotAStore {
        message: format!("{} {why}: it was left untouched; `a2 init` creates an A2 store in it", path.display()),
    };
    let read = async {
        let reader = SqlitePoolOptions::new().max_connections(1).connect_with(options(path, Access::ReadOnly)).await?;
        let tables = sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table'").fetch_all(&reader).await;
        let ledger = match &tables {
            Ok(tables) if tables.iter().any(|t| t == "_sqlx_migrations") => Some(ledger_rows(&reader).await),
            _ => None,
        };
        reader.close().await;
        Ok::<_, sqlx::Error>((tables?, ledger.transpose()?))
    };
    let (tables, applied): (Vec<String>, Option<LedgerRows>) = match read.await {
        Ok(read) => read,
        Err(sqlx::Error::Database(e)) if e.message().contains("not a database") => {
            return Err(not_ours("is not a SQLite database".into()))
        }
        Err(e) => return Err(open_error(path, e)),
    };
    if tables.is_empty() {
        return Ok(());
    }
    // Only a ledger with A2's checksums proves the tables A2's (a table named `a2_events` does not).
    match applied.map(|applied| read_ledger(known_migrations(), &applied)) {
        None => Err(not_ours(format!("holds tables ({}) and no A2 migration ledger", tables.join(", ")))),
        // Only sqlx's bookkeeping table: a first migration that stopped half-way is ours to finish.
        Some(Ledger::Empty) if tables.len() == 1 => Ok(()),
        Some(Ledger::Empty) => {
            Err(not_ours(format!("holds tables ({}) and an empty migration ledger", tables.join(", "))))
        }
        Some(Ledger::Ours) => Ok(()),
        Some(Ledger::Foreign { why }) => Err(not_ours(why)),
    }
}

/// The versions the ledger records as applied (none before it exists).
async fn applied_versions(pool: &SqlitePool) -> Result<Vec<i64>, sqlx::Error> {
    let ledger: Option<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'")
            .fetch_optional(pool)
            .await?;
    if ledger.is_none() {
        return Ok(Vec::new());
    }
    sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version").fetch_all(pool).await
}

/// The migration ledger's rows: (version, checksum).
type LedgerRows = Vec<(i64, Vec<u8>)>;

async fn ledger_rows(reader: &SqlitePool) -> Result<LedgerRows, sqlx::Error> {
    sqlx::query_as("SELECT version, checksum FROM _sqlx_migrations ORDER BY version").fetch_all(reader).await
}

fn known_migrations() -> impl Iterator<Item = (i64, &'static [u8])> {
    MIGRATOR.iter().map(|m| (m.version, m.checksum.as_ref()))
}

fn newer_schema(path: &Path, version: i64) -> StoreError {
    let known = MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0);
    StoreError::Schema {
        message: format!(
            "{} has schema version {version}, newer than this binary's {known}: upgrade A2 before opening it",
            path.display()
        ),
    }
}

/// Refuse a file without the A2 schema, with a newer schema, or (read-only) with an older one.
async fn check_schema(reader: &SqlitePool, path: &Path) -> Result<(), StoreError> {
    let tables: Option<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'")
            .fetch_optional(reader)
            .await
            .map_err(db_error)?;
    if tables.is_none() {
        return Err(StoreError::Schema {
            message: format!("{} has no A2 schema: open it read-write once to create it", path.display()),
        });
    }
    let ledger = ledger_rows(reader).await.map_err(db_error)?;
    if let Ledger::Foreign { why } = read_ledger(known_migrations(), &ledger) {
        return Err(StoreError::NotAStore {
            message: format!("{} {why}: A2 will not read or write it", path.display()),
        });
    }
    let applied: Vec<i64> = sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
        .fetch_all(reader)
        .await
        .map_err(db_error)?;
    let known: Vec<i64> = MIGRATOR.iter().map(|m| m.version).collect();
    if let Some(newer) = applied.iter().find(|v| !known.contains(v)) {
        return Err(newer_schema(path, *newer));
    }
    let missing: Vec<String> = known.iter().filter(|v| !applied.contains(v)).map(i64::to_string).collect();
    if !missing.is_empty() {
        return Err(StoreError::Schema {
            message: format!(
                "{} lacks schema migrations {} and a read-only connection never migrates: open it read-write once",
                path.display(),
                missing.join(", ")
            ),
        });
    }
    Ok(())
}

/// Parse a `sqlite:` URL's options the way sqlx does, for callers that need them.
pub fn connect_options(url: &str) -> Result<SqliteConnectOptions, StoreError> {
    SqliteConnectOptions::from_str(url).map_err(|e| StoreError::invalid(format!("{url:?}: {e}")))
}
