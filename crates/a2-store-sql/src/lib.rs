//! The SQL layer both SQL backends share. A backend supplies its dialect's
//! [`Statements`], a [`Conn`] over its driver, and how it opens connections
//! ([`SqlBackend`]); every store operation — binding, paging, row mapping,
//! the claim, settle, clear, redrive and snapshot flows — is written once
//! here, in [`SqlStore`], so the two backends cannot drift apart in Rust.
//! `docs/adding-a-backend.md` walks through adding a third.

mod claim;
mod conn;
mod each;
mod group;
mod ledger;
pub use group::{Batcher, MAX_BATCH};
pub use ledger::{read_ledger, Ledger};
mod explain;
mod presence;
mod rates;
pub mod rows;
mod search;
mod servers;
mod statements;
mod steps;
mod store;
mod tasks;
mod totals;
mod upkeep;
mod value;

use std::ops::Deref;
use std::sync::Arc;

use a2_store::{Appended, Clock, EventAppend, StoreError};

pub use conn::{Conn, Transaction};
pub use statements::{PayloadBinding, RowsStatement, Statements};
pub use totals::TotalsStatements;
pub use value::{Arg, Cell, Row};

/// What a SQL backend supplies beyond its statements: its connections and
/// the few things only it can do (a one-statement append, a change feed).
#[async_trait::async_trait]
pub trait SqlBackend: Send + Sync + std::fmt::Debug + 'static {
    /// A connection for inspection reads (read-only where the backend can say so).
    async fn read(&self) -> Result<Box<dyn Conn>, StoreError>;

    /// A connection for the engine's own reads (the rescuer's scan, a run's
    /// session bounds): work, not inspection, so not on the inspection pool.
    async fn work(&self) -> Result<Box<dyn Conn>, StoreError> {
        self.read().await
    }

    /// A write transaction; `READ_ONLY` on a store attached read-only.
    async fn begin(&self) -> Result<Box<dyn Transaction>, StoreError>;

    /// A connection for one statement that writes alone (autocommit: a claim's
    /// pick, a completion flush), refused as `begin` is on a read-only store.
    /// Only a backend whose statements can write alone is asked for one; one
    /// that has such statements and no `write` of its own fails loudly here
    /// rather than writing on a pool that may be its inspection pool.
    async fn write(&self) -> Result<Box<dyn Conn>, StoreError> {
        Err(StoreError::Schema {
            message: "this backend runs a statement alone but gives no connection for it (SqlBackend::write)".into(),
        })
    }

    /// A whole append in fewer round trips than the shared transaction, where
    /// the backend has such a path. `Ok(None)`: use the shared transaction.
    async fn event_append_native(&self, _params: &EventAppend) -> Result<Option<Appended>, StoreError> {
        Ok(None)
    }

    /// A completion that appends, in fewer round trips than the shared
    /// transaction, where the backend has such a path. `Ok(None)`: nothing was
    /// written, and the shared transaction decides (a late attempt, an id
    /// already present).
    async fn head_complete_native(
        &self,
        _params: &a2_store::HeadComplete,
        _now: a2_store::Millis,
    ) -> Result<Option<a2_store::CompleteOutcome>, StoreError> {
        Ok(None)
    }

    /// Tell other processes that a session's log grew.
    fn announce(&self, _key: &str) {}

    /// Session keys whose logs grew, heard from any process.
    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        None
    }
}

/// A store over a SQL backend: implements [`a2_store::Store`] once for all of
/// them, and derefs to the backend for what is its own (paths, roles, plans).
#[derive(Debug, Clone)]
pub struct SqlStore<B> {
    backend: B,
    sql: &'static Statements,
    clock: Arc<dyn Clock>,
    /// Appends waiting for a shared transaction ([`SqlStore::with_append_batching`]).
    append_batcher: Option<group::AppendBatcher>,
    /// Completions waiting for a shared transaction ([`SqlStore::with_completion_batching`]).
    completion_batcher: Option<group::CompletionBatcher>,
    /// Sessions a consumer-totals statement aggregates at most ([`SqlStore::totals_chunk`]).
    totals_chunk: u32,
    /// The database refused the refresh's catch-up of the runs' index for good
    /// (`TotalsStatements::runs_index_catch_up`): not asked again.
    runs_index_refused: Arc<std::sync::atomic::AtomicBool>,
}

/// Sessions one consumer-totals statement aggregates: about 0.4 s on
/// Postgres here (7 µs a session), well inside a reader's statement timeout,
/// whatever the store's size (the whole of 1M sessions took longer than 5 s).
pub const TOTALS_CHUNK: u32 = 50_000;

impl<B: SqlBackend> SqlStore<B> {
    /// A store running the backend's `sql` on its connections, stamping times from `clock`.
    pub fn new(backend: B, sql: &'static Statements, clock: Arc<dyn Clock>) -> Self {
        Self {
            backend,
            sql,
            clock,
            append_batcher: None,
            completion_batcher: None,
            totals_chunk: TOTALS_CHUNK,
            runs_index_refused: Default::default(),
        }
    }

    /// Consumer totals aggregated `sessions` at a time (default [`TOTALS_CHUNK`]); tests make it small.
    pub fn totals_chunk(self, sessions: u32) -> Self {
        Self { totals_chunk: sessions.max(1), ..self }
    }

    fn sql(&self) -> &'static Statements {
        self.sql
    }

    fn now(&self) -> a2_store::Millis {
        self.clock.now_ms()
    }
}

impl<B: SqlBackend + Clone> SqlStore<B> {
    /// Group commit: concurrent appends share one transaction and one commit,
    /// each with its own outcome (a refused one sends the batch back one by
    /// one). For a backend whose commit, not its statements, is the cost
    /// (SQLite's fsync).
    pub fn with_append_batching(self) -> Self {
        let append_batcher = group::start_append_batcher(Self { completion_batcher: None, ..self.clone() });
        Self { append_batcher: Some(append_batcher), ..self }
    }

    /// Completions from every session this process drains share one
    /// transaction, `in_flight` at once: a drain of many sessions commits a
    /// few times, not once a session.
    pub fn with_completion_batching(self, in_flight: usize) -> Self {
        let completion_batcher = group::start_completion_batcher(
            Self { append_batcher: None, completion_batcher: None, ..self.clone() },
            in_flight,
        );
        Self { completion_batcher: Some(completion_batcher), ..self }
    }
}

impl<B> Deref for SqlStore<B> {
    type Target = B;

    fn deref(&self) -> &B {
        &self.backend
    }
}

/// One page's row limit, as a bound parameter.
fn page(limit: u32) -> Arg {
    Arg::Int(i64::try_from(a2_store::page_size(limit)).unwrap_or(500))
}
