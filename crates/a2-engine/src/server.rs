//! The server: a contract bound to a store and the consumers that react to
//! its events; sessions are handles onto it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use a2_store::{Cleared, Event, RedriveAction, SessionClear, Store};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::drain::{DrainOptions, DrainResult, DrainTimings};
use crate::inner::{Inner, StateAt};
use crate::{ids, A2Error, AppendInput, Consumer, Contract};

/// Builds a [`Server`].
pub struct ServerBuilder {
    contract: Contract,
    store: Arc<dyn Store>,
    consumers: Vec<Consumer>,
    timings: DrainTimings,
    background: bool,
    max_running: usize,
    snapshot_every: u64,
}

impl ServerBuilder {
    /// Write a reducer's snapshot once a read folded this many events past
    /// the last one (default 100), not on every read; reads a running head
    /// pins are written whatever the count.
    pub fn snapshot_every(mut self, events: u64) -> Self {
        self.snapshot_every = events.max(1);
        self
    }

    /// At most this many heads run at once across every session (default 256):
    /// more would only queue on the store's connections.
    pub fn max_running(mut self, max_running: usize) -> Self {
        self.max_running = max_running.max(1);
        self
    }

    pub fn consumer(mut self, consumer: Consumer) -> Self {
        self.consumers.push(consumer);
        self
    }

    pub fn consumers(mut self, consumers: impl IntoIterator<Item = Consumer>) -> Self {
        self.consumers.extend(consumers);
        self
    }

    pub fn timings(mut self, timings: DrainTimings) -> Self {
        self.timings = timings;
        self
    }

    /// Whether appends start background drains (default: yes). A server that
    /// only inspects, or moves consumers with `consume`, turns it off.
    pub fn run_in_background(mut self, background: bool) -> Self {
        self.background = background;
        self
    }

    pub fn build(self) -> Result<Server, A2Error> {
        let mut names = std::collections::HashSet::new();
        for consumer in &self.consumers {
            consumer.check_against(&self.contract)?;
            if !names.insert(consumer.name().to_owned()) {
                return Err(A2Error::invalid_consumer(format!("two consumers are named '{}'", consumer.name())));
            }
        }
        let (notices, _) = broadcast::channel(1024);
        let store_consumers = self.consumers.iter().map(Consumer::store_consumer).collect();
        let server = Server {
            inner: Arc::new(Inner {
                clock: self.store.clock(),
                contract: self.contract,
                store: self.store,
                consumers: self.consumers,
                store_consumers,
                timings: self.timings,
                background: self.background,
                notices,
                drains: Mutex::new(HashMap::new()),
                shutdown: CancellationToken::new(),
                running: Arc::new(tokio::sync::Semaphore::new(self.max_running)),
                draining: Arc::new(tokio::sync::Semaphore::new(self.max_running)),
                refresher: std::sync::atomic::AtomicBool::new(false),
                rescuer: std::sync::atomic::AtomicBool::new(false),
                consume_waits: Mutex::new(HashMap::new()),
                snapshot_every: self.snapshot_every,
            }),
        };
        // Built inside a runtime: look for work left by dead processes from the start.
        if tokio::runtime::Handle::try_current().is_ok() {
            server.inner.start_rescuer();
        }
        Ok(server)
    }
}

/// A contract implemented over a store.
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("contract", &self.inner.contract.name()).finish_non_exhaustive()
    }
}

impl Server {
    pub fn builder(contract: Contract, store: Arc<dyn Store>) -> ServerBuilder {
        ServerBuilder {
            contract,
            store,
            consumers: Vec::new(),
            timings: DrainTimings::default(),
            background: true,
            max_running: 256,
            snapshot_every: 100,
        }
    }

    /// A builder on the store this environment defaults to (`A2_ENV`): the
    /// SQLite dev file in development, memory in tests; production must
    /// name its store, so there this is `STORE_NOT_CONFIGURED`.
    pub async fn builder_from_env(contract: Contract) -> Result<ServerBuilder, A2Error> {
        let store = crate::resolve_store(crate::Environment::from_env()?, None, &crate::dev_store_path()).await?;
        Ok(Self::builder(contract, store))
    }

    pub fn contract(&self) -> &Contract {
        &self.inner.contract
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// The consumer this server runs under that name.
    pub fn consumer(&self, name: &str) -> Option<Consumer> {
        self.inner.consumers.iter().find(|c| c.name() == name).cloned()
    }

    pub fn session(&self, id: &str) -> Result<Session, A2Error> {
        a2_store::validate_session_id(id)
            .map_err(|e| A2Error::InvalidSessionId { id: id.to_owned(), reason: e.to_string() })?;
        Ok(Session { inner: self.inner.clone(), id: id.to_owned() })
    }

    /// Stop background drains; running heads are abandoned and their leases lapse.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
    }
}

/// One session of the server's contract.
#[derive(Clone)]
pub struct Session {
    pub(crate) inner: Arc<Inner>,
    pub(crate) id: String,
}

impl Session {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Append external events atomically; ids left out get a random one.
    pub async fn append(&self, events: Vec<AppendInput>) -> Result<Vec<Event>, A2Error> {
        for event in &events {
            if let Some(id) = &event.id {
                ids::validate_external_id(id)?;
            }
        }
        let events = events
            .into_iter()
            .map(|mut e| {
                e.id.get_or_insert_with(ids::random_event_id);
                e
            })
            .collect();
        self.inner.append(&self.id, events, None, false).await
    }

    /// A reducer's state through `through` (default: the head), with the index it reflects.
    pub async fn state(&self, reducer: &str, through: Option<u64>) -> Result<StateAt, A2Error> {
        self.inner.state(&self.id, reducer, through, None).await
    }

    /// Clear through the head, only if the head is `if_last_index` when given.
    pub async fn clear(&self, if_last_index: Option<u64>) -> Result<Cleared, A2Error> {
        let key = self.inner.key(&self.id);
        Ok(self.inner.store.session_clear(SessionClear { session: key, if_last_index, audit: None }).await?)
    }

    /// Run a log consumer until its cursor passes `through` (default: the head now).
    pub async fn consume(&self, consumer: &Consumer, through: Option<u64>) -> Result<u64, A2Error> {
        self.inner.consume(&self.id, consumer, through, None, None).await
    }

    /// `consume`, whose wait `cancel` stops with `CANCELLED`; a run already
    /// in progress carries on, and so does what it starts.
    pub async fn consume_until_cancelled(
        &self,
        consumer: &Consumer,
        through: Option<u64>,
        cancel: CancellationToken,
    ) -> Result<u64, A2Error> {
        self.inner.consume(&self.id, consumer, through, None, Some(cancel)).await
    }

    /// Retry or skip a dead head; `false` when it is not dead.
    pub async fn redrive(&self, consumer: &str, index: u64, action: RedriveAction) -> Result<bool, A2Error> {
        self.inner.redrive(&self.id, consumer, index, action).await
    }

    /// Drain the session here and now, returning how it ended.
    pub async fn drain(&self) -> Result<DrainResult, A2Error> {
        crate::drain::run_drain(&self.inner, &self.id, DrainOptions::default()).await
    }
}
