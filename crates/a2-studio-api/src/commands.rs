//! The commands, as methods of [`Studio`]: each validates its request,
//! calls the operator API and shapes the answer for the UI.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use a2_operator::demo::{self, DemoOptions};
use a2_operator::model::{AuditList, Cleared, DeadLetterList, RedriveAction, SessionSummary, TotalsSnapshot};
use a2_operator::{
    ActivityCursor, ActivityQuery, Actor, ClearSession, Connect, ConsumeTarget, Consumed, ConsumerRef, EventQuery,
    HeadView, JobProgress, Mode, Operator, Redrive, RedriveAll, Redriven, SessionQuery, StoreKind, TotalsQuery,
};

use crate::connection::Connection;
use crate::jobs::Jobs;
use crate::profiles::{redact, Profiles};
use crate::types::{check_limit, json_text};
use crate::*;

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
}

impl Default for Limits {
    fn default() -> Self {
        Self { read_only: false, web: false, started_with: None, export_dir: PathBuf::from(".a2/exports") }
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
    profiles: Profiles,
    versions: tokio::sync::watch::Sender<u32>,
    /// SQLite files this process copied sessions into: the web mode may open them.
    pub(crate) copies: Mutex<std::collections::HashSet<String>>,
}

pub(crate) fn lock_error<T>(_: T) -> ApiError {
    ApiError::new(ErrorCode::Internal, "a Studio lock was poisoned by an earlier panic")
}

fn index(value: u64, what: &str) -> Result<u64, ApiError> {
    if value == 0 {
        return Err(ApiError::invalid(format!("{what}: indexes start at 1")));
    }
    Ok(value)
}

/// Bulk redrives a second, at least and at most: slower would wait for days
/// between two, faster is no limit at all.
const RATE_RANGE: std::ops::RangeInclusive<f64> = 0.01..=100_000.0;

/// The operator's redrive of one dead letter the UI named.
fn redrive(target: DeadLetterRef, action: RedriveAction) -> Redrive {
    let session = a2_operator::SessionRef::new(target.contract, target.session);
    Redrive { session, consumer: target.consumer, index: target.index, action }
}

fn consume_target(contract: String, session: String, consumer: String, through: Option<u64>) -> ConsumeTarget {
    ConsumeTarget { session: a2_operator::SessionRef::new(contract, session), consumer, through }
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
        let url = format!("sqlite:{}", path.display());
        if new && !self.limits.read_only {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .map_err(|e| ApiError::invalid(format!("cannot create {}: {e}", dir.display())))?;
            }
            let operator = Operator::connect(&Connect::new(url.clone())).await?;
            operator.demo_seed(DemoOptions::default()).await?;
        }
        let request = ConnectionOpen { url: Some(url), profile: None, password: None, read_only: None, init: false };
        self.open_with(request, !self.limits.read_only).await
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

    // ── connection and profiles ─────────────────────────────────────

    /// How `url` would be attached if the person changes nothing.
    pub async fn connection_default(&self, request: ConnectionDefaultRequest) -> Result<ConnectionDefault, ApiError> {
        let (read_only, reason) = if self.limits.read_only {
            (true, "this Studio was started --read-only: every connection is read-only")
        } else if a2_operator::default_mode(&request.url) == Mode::ReadOnly {
            (true, "Postgres attaches read-only unless you switch to read-write")
        } else {
            (false, "a local file or memory store opens read-write")
        };
        Ok(ConnectionDefault { read_only, locked: self.limits.read_only, reason: reason.into() })
    }

    pub async fn connection_open(&self, request: ConnectionOpen) -> Result<ConnectionInfo, ApiError> {
        self.open_with(request, self.host_demo.load(std::sync::atomic::Ordering::Relaxed)).await
    }

    /// The mode a request gets: the ceiling first, then what the request asks,
    /// then the profile's, then the default. Asking read-write is refused under
    /// the ceiling and for a profile saved read-only.
    fn mode_of(&self, request: &ConnectionOpen, url: &str, profile_read_only: Option<bool>) -> Result<Mode, ApiError> {
        if request.read_only == Some(false) {
            if self.limits.read_only {
                return Err(ApiError::new(
                    ErrorCode::ReadOnly,
                    "this Studio was started --read-only: no connection can be opened read-write",
                ));
            }
            if profile_read_only == Some(true) {
                return Err(ApiError::new(
                    ErrorCode::ReadOnly,
                    format!(
                        "profile '{}' is saved read-only: save it read-write to write with it",
                        request.profile.as_deref().unwrap_or_default()
                    ),
                ));
            }
        }
        let read_only = self.limits.read_only
            || request.read_only.or(profile_read_only).unwrap_or(a2_operator::default_mode(url) == Mode::ReadOnly);
        Ok(if read_only { Mode::ReadOnly } else { Mode::ReadWrite })
    }

    /// Open a store; `host_demo`: run the demo contract's consumers if it has that contract.
    async fn open_with(&self, request: ConnectionOpen, host_demo: bool) -> Result<ConnectionInfo, ApiError> {
        let (url, password, profile_read_only) = match (&request.profile, &request.url) {
            (Some(name), _) => {
                let profile = self.profiles.resolve(name)?;
                (profile.url, profile.password, Some(profile.read_only))
            }
            (None, Some(url)) => (url.trim().to_owned(), request.password.clone().filter(|p| !p.is_empty()), None),
            (None, None) => return Err(ApiError::invalid("give a store URL or a profile to connect to")),
        };
        if self.limits.web && request.profile.is_none() && !self.is_copy(&url)? {
            let started = self.limits.started_with.as_deref().map(redact);
            if started.as_deref() != Some(redact(&url).as_str()) {
                let serves = started
                    .map_or_else(|| "saved profiles only".to_owned(), |s| format!("{s} and saved profiles only"));
                return Err(ApiError::new(
                    ErrorCode::Forbidden,
                    format!("this Studio's web mode opens {serves}, and the copies it made"),
                ));
            }
        }
        let mut connect = Connect::new(url.clone());
        connect.mode = Some(self.mode_of(&request, &url, profile_read_only)?);
        connect.password = password;
        connect.init = request.init;
        connect.must_exist = self.limits.web;
        let mut operator = Operator::new(a2_operator::attach(&connect).await?, Actor::current());
        let attached = operator.attached().clone();
        let read_only = attached.mode == Mode::ReadOnly;
        let hosts_demo = host_demo && !read_only && operator.contract_list().await?.iter().any(|c| c == demo::CONTRACT);
        if hosts_demo {
            operator.demo_host()?;
        }
        let postgres = attached.kind == StoreKind::Postgres;
        let replica = operator.is_replica();
        let replica_delay_ms = operator.replica_delay_ms().await?;
        let warning = match (read_only, postgres, attached.role_can_write) {
            (true, _, Some(true)) => Some(
                "read-only by session setting only: this database role could write. \
                 Attach with a role that has SELECT alone to make the database refuse every write."
                    .to_owned(),
            ),
            (true, true, None) => Some(
                "could not tell whether this database role can write: read-only rests on the session setting"
                    .to_owned(),
            ),
            _ => None,
        };
        let server = attached.server.as_ref();
        let info = ConnectionInfo {
            url: redact(&url),
            kind: attached.kind,
            read_only,
            role_can_write: attached.role_can_write,
            warning,
            hosts_demo,
            live: postgres && !replica,
            tls: server.map(|s| match s.tls {
                a2_operator::model::TlsState::Off => TlsView::Off,
                a2_operator::model::TlsState::Encrypted => TlsView::Encrypted,
                a2_operator::model::TlsState::Verified => TlsView::Verified,
            }),
            server: server.map(|s| ServerView {
                host: s.host.clone(),
                port: s.port,
                database: s.database.clone(),
                version: s.version.clone(),
                session_user: s.session_user.clone(),
            }),
            locked_read_only: self.limits.read_only,
            replica,
            replica_delay_ms,
        };
        let now = operator.now_ms();
        let connection = Arc::new(Connection::new(operator, info.clone(), self.versions.clone()));
        *self.connection.write().map_err(lock_error)? = Some(connection);
        self.bump();
        // A profile file that cannot be written must not stop the operator from working.
        if let Err(error) = self.profiles.touch(&url, request.profile.as_deref(), now) {
            tracing::warn!(%error, "could not record the recent store");
        }
        Ok(info)
    }

    /// The open connection; on a replica with how far it trails the primary now.
    pub async fn connection_get(&self, _: NoArgs) -> Result<Option<ConnectionInfo>, ApiError> {
        let Some(connection) = self.connection.read().map_err(lock_error)?.clone() else { return Ok(None) };
        let mut info = connection.info.clone();
        if info.replica {
            info.replica_delay_ms = connection.operator.replica_delay_ms().await?;
        }
        Ok(Some(info))
    }

    pub async fn connection_close(&self, _: NoArgs) -> Result<bool, ApiError> {
        let closed = self.connection.write().map_err(lock_error)?.take().is_some();
        self.bump();
        Ok(closed)
    }

    pub async fn profile_list(&self, _: NoArgs) -> Result<ProfileList, ApiError> {
        self.profiles.list()
    }

    pub async fn profile_save(&self, request: ProfileSave) -> Result<Profile, ApiError> {
        self.profiles.save(&request.name, &request.url, request.password, request.read_only)
    }

    pub async fn profile_delete(&self, request: ProfileRef) -> Result<bool, ApiError> {
        self.profiles.delete(&request.name)
    }

    // ── reads ────────────────────────────────────────────────────────

    pub async fn contract_list(&self, _: NoArgs) -> Result<Vec<String>, ApiError> {
        Ok(self.operator()?.contract_list().await?)
    }

    pub async fn consumer_overview(&self, request: ConsumerOverview) -> Result<TotalsSnapshot, ApiError> {
        let operator = self.operator()?;
        let query = TotalsQuery { contract: request.contract, max_age_ms: i64::from(request.max_age_ms) };
        Ok(operator.consumer_overview(query).await?)
    }

    pub async fn session_list(&self, request: SessionListRequest) -> Result<SessionPage, ApiError> {
        let operator = self.operator()?;
        let limit = check_limit(request.limit)?;
        match request.sort {
            SessionSort::Id => {
                let query = SessionQuery {
                    contract: request.contract,
                    id_prefix: request.id_prefix.filter(|p| !p.is_empty()),
                    has_dead_letters: request.has_dead_letters,
                    lagging: request.lagging,
                    after: request.after,
                    limit,
                };
                let page = operator.session_list(query).await?;
                Ok(SessionPage { items: page.items, next: page.next })
            }
            SessionSort::Activity => {
                if request.id_prefix.as_deref().is_some_and(|p| !p.is_empty())
                    || request.has_dead_letters
                    || request.lagging
                {
                    return Err(ApiError::invalid("filters apply to the by-id order: sort by id to filter"));
                }
                let before = request.after.as_deref().map(str::parse::<ActivityCursor>).transpose()?;
                let page = operator
                    .session_list_by_activity(ActivityQuery { contract: request.contract, before, limit })
                    .await?;
                let next = page.next.as_ref().map(ActivityCursor::to_string);
                Ok(SessionPage { items: page.items, next })
            }
        }
    }

    pub async fn session_get(&self, request: SessionRef) -> Result<SessionSummary, ApiError> {
        Ok(self.operator()?.session_get(&request.into()).await?)
    }

    pub async fn event_list(&self, request: EventListRequest) -> Result<Vec<EventView>, ApiError> {
        let limit = check_limit(request.limit)?;
        let events = self
            .operator()?
            .event_list(EventQuery {
                session: a2_operator::SessionRef::new(request.contract, request.session),
                after: request.after,
                before: request.before,
                newest_first: request.newest_first,
                limit,
            })
            .await?;
        Ok(events.into_iter().map(EventView::from).collect())
    }

    pub async fn head_list(&self, request: SessionRef) -> Result<Vec<HeadView>, ApiError> {
        Ok(self.operator()?.head_list(&request.into()).await?)
    }

    pub async fn dead_letter_list(&self, request: DeadLetterQuery) -> Result<DeadLetterPage, ApiError> {
        let operator = self.operator()?;
        let session = match (&request.contract, &request.session) {
            (Some(contract), Some(session)) => Some(a2_operator::key(contract, session)?),
            (None, Some(_)) => return Err(ApiError::invalid("a session is named within a contract")),
            _ => None,
        };
        let query = DeadLetterList {
            contract: request.contract,
            session,
            consumer: request.consumer.filter(|c| !c.is_empty()),
            cause: request.cause,
            after: request.after,
            limit: check_limit(request.limit)?,
        };
        let page = operator.dead_letter_list(query).await?;
        Ok(DeadLetterPage { items: page.items, next: page.next })
    }

    pub async fn dead_letter_groups(
        &self,
        request: DeadLetterGroupQuery,
    ) -> Result<Vec<a2_operator::model::DeadLetterGroup>, ApiError> {
        Ok(self.operator()?.dead_letter_groups(request.contract.filter(|c| !c.is_empty())).await?)
    }

    pub async fn attempt_rates(
        &self,
        request: ThroughputQuery,
    ) -> Result<Vec<a2_operator::model::AttemptRate>, ApiError> {
        let contract = request.contract.filter(|c| !c.is_empty());
        Ok(self.operator()?.attempt_rates(contract, request.minutes).await?)
    }

    pub async fn attempt_list(&self, request: AttemptQuery) -> Result<AttemptPage, ApiError> {
        let query = a2_operator::AttemptQuery {
            session: a2_operator::SessionRef::new(request.contract, request.session),
            consumer: request.consumer.filter(|c| !c.is_empty()),
            index: request.index,
            after: request.after,
            oldest_first: request.oldest_first,
            limit: check_limit(request.limit)?,
        };
        let page = self.operator()?.attempt_list(query).await?;
        Ok(AttemptPage { items: page.items, next: page.next })
    }

    pub async fn snapshot_list(&self, request: SessionRef) -> Result<Vec<SnapshotView>, ApiError> {
        let snapshots = self.operator()?.snapshot_list(&request.into()).await?;
        Ok(snapshots
            .into_iter()
            .map(|s| SnapshotView {
                state: json_text(&s.state),
                reducer: s.reducer,
                index: s.index,
                size_bytes: s.size_bytes,
                pins: s.pins,
                created_at: s.created_at,
            })
            .collect())
    }

    pub async fn audit_list(&self, request: AuditQuery) -> Result<Vec<AuditView>, ApiError> {
        let query = AuditList { before: request.before, limit: check_limit(request.limit)? };
        let records = self.operator()?.audit_list(query).await?;
        Ok(records
            .into_iter()
            .map(|r| AuditView {
                id: r.id,
                at: r.entry.at,
                parameters: json_text(&r.entry.parameters),
                outcome: json_text(&r.entry.outcome),
                user: r.entry.user,
                host: r.entry.host,
                db_user: r.entry.db_user,
                action: r.entry.action,
                contract: r.entry.contract,
                session: r.entry.session_id,
            })
            .collect())
    }

    // ── actions ──────────────────────────────────────────────────────

    pub async fn dead_letter_redrive(&self, request: RedriveOne) -> Result<Redriven, ApiError> {
        // The operator refuses index 0 itself.
        let redriven = self.operator()?.dead_letter_redrive(redrive(request.target, request.action)).await?;
        self.bump();
        Ok(redriven)
    }

    /// Redrive a chosen list, one audit entry each; a target that fails counts as failed, the rest go on.
    pub async fn dead_letter_redrive_many(&self, request: RedriveMany) -> Result<JobProgress, ApiError> {
        let operator = self.writable_operator("redrive")?;
        // Every target is checked before the first is redriven: bad input changes nothing.
        let targets = request
            .targets
            .into_iter()
            .map(|t| index(t.index, "the dead letter's index").map(|_| redrive(t, request.action)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut progress = JobProgress { done: 0, total: targets.len() as u64, failed: 0 };
        for target in targets {
            match operator.dead_letter_redrive(target).await {
                Ok(Redriven { redriven: true }) => progress.done += 1,
                Ok(_) | Err(_) => progress.failed += 1,
            }
        }
        self.bump();
        Ok(progress)
    }

    pub async fn job_redrive_all(&self, request: RedriveAllRequest) -> Result<JobView, ApiError> {
        let operator = self.writable_operator("redrive")?;
        if request.rate.is_some_and(|r| !RATE_RANGE.contains(&r)) {
            return Err(ApiError::invalid(format!(
                "the rate must be between {} and {} redrives a second",
                RATE_RANGE.start(),
                RATE_RANGE.end()
            )));
        }
        let job = RedriveAll {
            contract: request.contract.filter(|c| !c.is_empty()),
            consumer: request.consumer.filter(|c| !c.is_empty()),
            cause: request.cause,
            action: request.action,
            stop_at: request.stop_at,
            rate: request.rate,
        };
        Ok(self.jobs.lock().map_err(lock_error)?.start(operator, job))
    }

    pub async fn job_get(&self, request: JobRef) -> Result<JobView, ApiError> {
        self.jobs.lock().map_err(lock_error)?.get(request.id)
    }

    pub async fn job_cancel(&self, request: JobRef) -> Result<JobView, ApiError> {
        self.jobs.lock().map_err(lock_error)?.cancel(request.id)
    }

    pub async fn consume_preview(&self, request: ConsumeRequest) -> Result<ConsumePreview, ApiError> {
        let operator = self.operator()?;
        let through = request.through.map(|t| index(t, "through")).transpose()?;
        let plan = operator
            .consume_plan(&consume_target(request.contract, request.session, request.consumer, through))
            .await?;
        let (from_index, events) = (plan.from_index, plan.events);
        Ok(ConsumePreview { events, from_index, through_index: from_index + events.saturating_sub(1) })
    }

    pub async fn session_consume(&self, request: ConsumeRequest) -> Result<Consumed, ApiError> {
        let through = request.through.map(|t| index(t, "through")).transpose()?;
        let operator = self.operator()?;
        let export = match request.export_path.as_deref().filter(|p| !p.is_empty()) {
            Some(name) => Some(self.export_file(name)?),
            None => None,
        };
        let consumed = operator
            .session_consume(
                &consume_target(request.contract, request.session, request.consumer, through),
                request.mode,
                export.as_deref(),
            )
            .await?;
        self.bump();
        Ok(consumed)
    }

    pub async fn session_clear(&self, request: ClearRequest) -> Result<Cleared, ApiError> {
        let if_last_index = request.if_last_index;
        let session = a2_operator::SessionRef::new(request.contract, request.session);
        let cleared = self.operator()?.session_clear(ClearSession { session, if_last_index }).await?;
        self.bump();
        Ok(cleared)
    }

    pub async fn consumer_pause(&self, request: PauseRequest) -> Result<PausedConsumer, ApiError> {
        let target = ConsumerRef { contract: request.contract, consumer: request.consumer };
        let paused = self.operator()?.consumer_pause(&target, &request.reason).await?;
        self.bump();
        Ok(paused)
    }

    pub async fn consumer_resume(&self, request: ConsumerTarget) -> Result<bool, ApiError> {
        let target = ConsumerRef { contract: request.contract, consumer: request.consumer };
        let resumed = self.operator()?.consumer_resume(&target).await?;
        self.bump();
        Ok(resumed)
    }

    pub async fn consumer_pause_list(&self, request: PauseQuery) -> Result<Vec<PausedConsumer>, ApiError> {
        Ok(self.operator()?.consumer_pauses(request.contract.as_deref()).await?)
    }

    /// Where an export named `name` is written: a plain file name, inside
    /// the export directory (made for this user alone), never elsewhere.
    pub(crate) fn export_file(&self, name: &str) -> Result<PathBuf, ApiError> {
        let plain = Path::new(name).file_name().is_some_and(|f| f == std::ffi::OsStr::new(name));
        if !plain || name.starts_with('.') || name.contains(['/', '\\', ':']) {
            return Err(ApiError::invalid(format!(
                "an export is named by a plain file name, written in {}: not {name:?}",
                self.limits.export_dir.display()
            )));
        }
        let dir = &self.limits.export_dir;
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir).map_err(|e| ApiError::invalid(format!("cannot create {}: {e}", dir.display())))?;
        Ok(dir.join(name))
    }

    /// Returns when the store changed since `since`: at once on a Postgres
    /// notification (appends), else after a poll interval, since completions,
    /// redrives and clears by other processes send none.
    pub async fn change_wait(&self, request: ChangeWait) -> Result<ChangeTick, ApiError> {
        let live = self.open().map(|c| c.info.live).unwrap_or(false);
        let poll = if live { LIVE_POLL } else { POLL };
        let wait = Duration::from_millis(u64::from(request.timeout_ms.clamp(100, 60_000))).min(poll);
        let mut versions = self.versions.subscribe();
        let current = *versions.borrow_and_update();
        if current != request.since {
            return Ok(ChangeTick { version: current });
        }
        if tokio::time::timeout(wait, versions.changed()).await.is_err() {
            // Nothing announced: a poll, so whatever others changed shows too.
            self.bump();
        }
        Ok(ChangeTick { version: *self.versions.borrow() })
    }

    pub async fn demo_traffic(&self, request: DemoTraffic) -> Result<DemoTrafficState, ApiError> {
        self.open()?.demo_traffic(request.on)
    }

    pub async fn demo_seed(&self, request: DemoSeed) -> Result<DemoSeeded, ApiError> {
        let operator = self.writable_operator("demo")?;
        if !(0.0..=1.0).contains(&request.fail_rate) {
            return Err(ApiError::invalid(format!("the fail rate must be between 0 and 1, not {}", request.fail_rate)));
        }
        let options = DemoOptions {
            sessions: request.sessions as usize,
            seed: request.seed,
            fail_rate: request.fail_rate,
            bulk: request.bulk,
        };
        let mut events = operator.demo_seed(options).await?;
        if request.long_session > 0 {
            events += operator.demo_seed_long_session("long-00000", request.long_session).await?;
        }
        if request.long_history > 0 {
            events += operator.demo_seed_long_history("history-00000", request.long_history).await?;
        }
        self.bump();
        Ok(DemoSeeded { sessions: request.sessions, events })
    }

    pub async fn reader_role_grant(&self, request: ReaderGrant) -> Result<bool, ApiError> {
        self.operator()?.reader_role_grant(&request.role).await?;
        Ok(true)
    }
}
