//! The operator API: one surface for the `a2` CLI, the Studio's desktop
//! shell and its web mode. It reads any A2 store and acts on it — redrive,
//! consume, clear — refusing every action with `READ_ONLY` on a read-only
//! connection before touching the store, and writing each action to the
//! store's audit log.

mod actions;
mod connect;
mod console;
pub mod demo;
mod error;
mod params;
mod presence;
mod reads;
mod search;
mod timers;
mod transfer;
mod views;

use a2_engine::Server;
use a2_store::*;

pub use connect::{attach, default_mode, Attached, Connect, Mode, StoreKind};
pub use console::ConsumerRef;
pub use error::{exit_code, OperatorError};
pub use params::{
    event_index, non_empty, page_limit, ActivityCursor, ActivityQuery, AttemptQuery, ClearSession, ConsumeTarget,
    DeadLetterRef, EventQuery, Redrive, SessionQuery, SessionRef, TotalsQuery,
};
pub use presence::{ContractPresence, PresenceCellView};
pub use search::{path_pattern, SearchQuery};
pub use timers::{
    TimerCursor, TimerDelivered, TimerEvent, TimerQuery, TimerRef, TimerTrigger, TimerView, OVERDUE_AFTER_MS,
};
pub use transfer::{
    ExportCounts, ExportHeader, ImportPending, Imported, SessionCopy, EXPORT_FORMAT, PARKED_ON_IMPORT,
    WHOLE_SESSION_MAX_EVENTS,
};
pub use views::{reason, ConsumeMode, ConsumePlan, Consumed, HeadView, Page, ProcessView, Redriven};

/// The store's own values, as operator calls take and return them: shells
/// name them through the operator and depend on no store crate.
pub mod model {
    pub use a2_store::{
        Access, Attempt, AttemptKey, AttemptOutcome, AttemptRate, AuditEntry, AuditList, Cause, Cleared, ConsumerTotal,
        DeadLetter, DeadLetterGroup, DeadLetterList, Event, EventMatch, HeadKey, HeadKind, HeadRef, LeasedHead, Millis,
        PausedConsumer, RedriveAction, ScheduledBy, Serving, SessionSummary, TotalsOrigin, TotalsSnapshot,
    };
    pub use a2_store::{DatabaseServer, TlsState};
}

type Result<T> = std::result::Result<T, OperatorError>;

pub use a2_store::Actor;

/// An export file, appended to, readable by this user alone (events hold production data).
fn export_file(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Which dead letters a bulk redrive takes, and how fast (empty names: any).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RedriveAll {
    pub contract: Option<String>,
    pub consumer: Option<String>,
    /// Only the dead letters of this cause: a group of the grouped queue.
    pub cause: Option<String>,
    pub action: RedriveAction,
    /// Stop after this many.
    pub stop_at: Option<u64>,
    /// At most this many a second.
    pub rate: Option<f64>,
}

impl RedriveAll {
    /// Bulk redrives a second, at least and at most: slower is a job that
    /// waits for days between two, faster is no limit at all.
    pub const RATES: std::ops::RangeInclusive<f64> = 0.01..=100_000.0;

    /// Refuse a job that cannot run as asked, before it starts (a shell that
    /// runs it in the background asks this up front).
    pub fn check(&self) -> Result<()> {
        if self.rate.is_some_and(|r| !Self::RATES.contains(&r)) {
            return Err(OperatorError::invalid(format!(
                "the rate must be between {} and {} redrives a second",
                Self::RATES.start(),
                Self::RATES.end()
            )));
        }
        Ok(())
    }
}

/// How far a job got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct JobProgress {
    pub done: u64,
    pub total: u64,
    /// Dead letters that could not be redriven (gone meanwhile, or an error).
    pub failed: u64,
}

/// An attached store and the actions an operator may take on it.
#[derive(Clone)]
pub struct Operator {
    attached: Attached,
    actor: Actor,
    /// Servers this process runs, by contract: `consume` runs their consumers' own code.
    hosted: Vec<Server>,
}

/// The storage key of a contract's session, its id checked first.
pub fn key(contract: &str, session: &str) -> Result<SessionKey> {
    validate_session_id(session)?;
    if contract.is_empty() {
        return Err(OperatorError::invalid("a contract name is needed"));
    }
    Ok(session_key(contract, session))
}

impl Operator {
    pub fn new(attached: Attached, actor: Actor) -> Self {
        Self { attached, actor, hosted: Vec::new() }
    }

    pub async fn connect(connect: &Connect, opener: &dyn a2_store::StoreOpener) -> Result<Self> {
        Ok(Self::new(attach(connect, opener).await?, Actor::current()))
    }

    /// Run consumers of this server's contract with their own code in `consume`.
    pub fn host(&mut self, server: Server) {
        self.hosted.push(server);
    }

    pub fn attached(&self) -> &Attached {
        &self.attached
    }

    pub fn is_read_only(&self) -> bool {
        self.attached.mode == Mode::ReadOnly
    }

    /// Attached to a hot standby: read-only whatever was asked, and no notifications.
    pub fn is_replica(&self) -> bool {
        self.attached.server.as_ref().is_some_and(|s| s.replica)
    }

    /// On a hot standby, how far it trails its primary (ms).
    pub async fn replica_delay_ms(&self) -> Result<Option<i64>> {
        match &self.attached.opened {
            Some(opened) => Ok(opened.replica_delay_ms().await?),
            None => Ok(None),
        }
    }

    fn store(&self) -> &dyn Store {
        &*self.attached.store
    }

    /// Session keys whose logs grew, heard from any process (Postgres); `None`
    /// where the only way to see other processes' changes is to poll.
    pub fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        self.store().changes()
    }

    /// Now, by the store's clock.
    pub fn now_ms(&self) -> Millis {
        self.now()
    }

    fn now(&self) -> Millis {
        self.attached.store.clock().now_ms()
    }

    /// `READ_ONLY` unless this connection may change the store: for shells
    /// that must refuse up front what the operator would refuse later.
    pub fn writable(&self, action: &str) -> Result<()> {
        if self.is_read_only() {
            let why = match self.attached.server.as_ref().filter(|s| s.replica) {
                Some(s) => format!("{}:{} is a read replica (hot standby): act on the primary", s.host, s.port),
                None => "the connection is read-only".to_owned(),
            };
            return Err(OperatorError::ReadOnly { action: action.to_owned(), why });
        }
        Ok(())
    }

    /// Put on record the schema migrations this attach applied (`store.migrate`):
    /// a read-write open of an older production store changes its schema.
    /// Nothing is written when it applied none.
    pub async fn audit_migrations(&self) -> Result<()> {
        let migrated = &self.attached.migrated;
        if migrated.is_empty() {
            return Ok(());
        }
        let database = self.attached.server.as_ref().map(|s| format!("{}:{}/{}", s.host, s.port, s.database));
        let mut entry = self.wide_entry("store.migrate", None, serde_json::json!({ "database": database }));
        entry.outcome = serde_json::json!({ "applied": migrated });
        self.store().audit_append(entry).await?;
        Ok(())
    }

    /// An audit entry for `action` on a session, by this operator: for shells
    /// that record what they did with what they read (an export, a copy).
    pub fn audit_entry(
        &self,
        action: &str,
        contract: &str,
        session: &str,
        parameters: serde_json::Value,
    ) -> AuditEntry {
        self.entry(action, contract, session, parameters)
    }

    /// Put `entry` in the store's audit log (refused on a read-only connection).
    pub async fn audit_record(&self, entry: AuditEntry) -> Result<()> {
        self.writable(&entry.action)?;
        self.store().audit_append(entry).await?;
        Ok(())
    }

    /// An audit entry for an action on a session; the outcome is filled in when known.
    fn entry(&self, action: &str, contract: &str, session: &str, parameters: serde_json::Value) -> AuditEntry {
        AuditEntry {
            contract: Some(contract.to_owned()),
            session_id: Some(session.to_owned()),
            ..self.wide_entry(action, None, parameters)
        }
    }

    /// An audit entry for an action on no one session: a contract's consumer, or the whole store.
    fn wide_entry(&self, action: &str, contract: Option<&str>, parameters: serde_json::Value) -> AuditEntry {
        AuditEntry {
            at: self.now(),
            user: self.actor.user.clone(),
            host: self.actor.host.clone(),
            db_user: self.attached.server.as_ref().map(|s| s.session_user.clone()),
            action: action.to_owned(),
            contract: contract.map(str::to_owned),
            session_id: None,
            parameters,
            outcome: serde_json::Value::Null,
        }
    }
}
