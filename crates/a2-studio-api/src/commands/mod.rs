//! The commands, as methods of [`Studio`]: each validates its request,
//! calls the operator API and shapes the answer for the UI.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use a2_operator::demo::{self, DemoOptions};
use a2_operator::model::{AuditList, Cleared, DeadLetterList, SessionSummary, TotalsSnapshot};
use a2_operator::{
    event_index, ActivityCursor, ActivityQuery, Actor, Connect, Consumed, HeadView, JobProgress, Mode, Operator,
    Redriven, SessionQuery, StoreKind,
};

use a2_store_registry::Registry;

use crate::connection::Connection;
use crate::jobs::Jobs;
use crate::profiles::{redact, Profiles};
use crate::types::json_text;
use crate::*;

mod actions;
mod connection;
mod presence;
mod reads;
mod timers;

/// How often a store without change notifications (SQLite, memory) is re-read.
const POLL: Duration = Duration::from_secs(2);
/// How often a Postgres store is re-read between notifications (which only appends send).
const LIVE_POLL: Duration = Duration::from_secs(5);

/// What this Studio process may do whatever a request asks, set once at start.
#[derive(Debug, Clone)]
pub struct Limits {
    /// `--read-only`: a ceiling: no connection of this process opens read-write.
    pub read_only: bool,
    /// The web mode: a page may open only the store this process was started
    /// with (`started_with`) and saved profiles, and never creates a file.
    pub web: bool,
    pub started_with: Option<String>,
    /// Where consume's export writes (`--export-dir`).
    pub export_dir: PathBuf,
    /// The most events of a session held whole in memory: an export through
    /// the Studio, an import, a copy (`a2 export` streams any length).
    pub whole_session_events: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            read_only: false,
            web: false,
            started_with: None,
            export_dir: PathBuf::from(".a2/exports"),
            whole_session_events: a2_operator::WHOLE_SESSION_MAX_EVENTS,
        }
    }
}

/// The Studio's state: the open store (one at a time), running jobs, saved profiles.
pub struct Studio {
    pub(crate) limits: Limits,
    connection: RwLock<Option<Arc<Connection>>>,
    /// Run the demo contract's consumers on stores that have it: only when
    /// asked (the dev store, demo traffic), never because a production store
    /// happens to have a contract named like the demo's.
    host_demo: std::sync::atomic::AtomicBool,
    jobs: Mutex<Jobs>,
    pub(crate) profiles: Profiles,
    versions: tokio::sync::watch::Sender<u32>,
    /// SQLite files this process copied sessions into: the web mode may open them.
    pub(crate) copies: Mutex<std::collections::HashSet<String>>,
}

pub(crate) fn lock_error<T>(_: T) -> ApiError {
    ApiError::new(ErrorCode::Internal, "a Studio lock was poisoned by an earlier panic")
}

impl Studio {
    /// A Studio keeping its profiles in `config_dir`.
    pub fn new(config_dir: &Path) -> Self {
        Self::with_limits(config_dir, Limits::default())
    }

    /// A Studio bound by `limits` for its whole life.
    pub fn with_limits(config_dir: &Path, limits: Limits) -> Self {
        Self {
            limits,
            connection: RwLock::new(None),
            host_demo: std::sync::atomic::AtomicBool::new(false),
            jobs: Mutex::new(Jobs::default()),
            profiles: Profiles::new(config_dir),
            versions: tokio::sync::watch::Sender::new(0),
            copies: Mutex::new(std::collections::HashSet::new()),
        }
    }

    /// Host the demo contract's consumers on the stores opened from now on
    /// (the dev store always hosts them).
    pub fn set_host_demo(&self, on: bool) {
        self.host_demo.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    pub(crate) fn open(&self) -> Result<Arc<Connection>, ApiError> {
        self.connection.read().map_err(lock_error)?.clone().ok_or_else(ApiError::not_connected)
    }

    pub(crate) fn operator(&self) -> Result<Operator, ApiError> {
        Ok(self.open()?.operator.clone())
    }

    /// The operator, when the connection may change the store.
    pub(crate) fn writable_operator(&self, action: &str) -> Result<Operator, ApiError> {
        let operator = self.operator()?;
        operator.writable(action)?;
        Ok(operator)
    }

    pub(crate) fn bump(&self) {
        self.versions.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Open the SQLite file at `path`, seeding the demo store when the file is
    /// new (under a read-only ceiling it must exist, and opens read-only).
    pub async fn open_dev_store(&self, path: &Path) -> Result<ConnectionInfo, ApiError> {
        let new = !path.exists();
        let url = a2_store_registry::sqlite_url(path);
        if new && !self.limits.read_only {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .map_err(|e| ApiError::invalid(format!("cannot create {}: {e}", dir.display())))?;
            }
            let operator = Operator::connect(&Connect::new(url.clone()), &Registry).await?;
            operator.demo_seed(DemoOptions::default()).await?;
        }
        let request = ConnectionOpen { url: Some(url), profile: None, password: None, read_only: None };
        self.open_with(request, !self.limits.read_only, false).await
    }

    /// The connect screen's *New dev store*: this user's own SQLite dev store
    /// (`$XDG_DATA_HOME/a2-studio/dev.sqlite`, else `~/.local/share/…`), seeded
    /// with the demo when new. Not in the web mode, which creates no file.
    pub async fn dev_store_open(&self, _: NoArgs) -> Result<ConnectionInfo, ApiError> {
        if self.limits.web {
            return Err(ApiError::new(ErrorCode::Forbidden, "the web mode creates no store: start `a2-studio` itself"));
        }
        let data = crate::profiles::xdg_dir("XDG_DATA_HOME", ".local/share")
            .ok_or_else(|| ApiError::invalid("neither XDG_DATA_HOME nor HOME is set: no place for a dev store"))?;
        self.open_dev_store(&data.join("a2-studio/dev.sqlite")).await
    }
}
