//! The operator API: one surface for the `a2` CLI, the Studio's desktop
//! shell and its web mode. It reads any A2 store and acts on it — redrive,
//! consume, clear — refusing every action with `READ_ONLY` on a read-only
//! connection before touching the store, and writing each action to the
//! store's audit log.

mod connect;
mod console;
pub mod demo;
mod error;
mod params;
mod search;
mod transfer;
mod views;

use std::io::Write;
use std::sync::Arc;

use a2_engine::{BoxError, Consumer, Contract, Server};
use a2_store::*;
use serde_json::json;

pub use a2_store_registry::dev_store_path;
pub use connect::{attach, default_mode, Attached, Connect, Mode, StoreKind};
pub use console::ConsumerRef;
pub use error::{exit_code, OperatorError};
pub use params::{
    ActivityCursor, ActivityQuery, AttemptQuery, ClearSession, ConsumeTarget, EventQuery, Redrive, SessionQuery,
    SessionRef, TotalsQuery,
};
pub use search::{path_pattern, SearchQuery};
pub use transfer::{ExportCounts, ExportHeader, Imported, SessionCopy, EXPORT_FORMAT};
pub use views::{reason, ConsumeMode, ConsumePlan, Consumed, HeadView, Page, Redriven};

/// The store's own values, as operator calls take and return them: shells
/// name them through the operator and depend on no store crate.
pub mod model {
    pub use a2_store::{
        Access, Attempt, AttemptKey, AttemptOutcome, AttemptRate, AuditList, Cause, Cleared, ConsumerTotal, DeadLetter,
        DeadLetterGroup, DeadLetterList, Event, EventMatch, HeadKey, HeadKind, HeadRef, Millis, PausedConsumer,
        RedriveAction, SessionSummary, TotalsSnapshot,
    };
    pub use a2_store::{DatabaseServer, TlsState};
}

type Result<T> = std::result::Result<T, OperatorError>;

/// Who is acting, for the audit log.
#[derive(Debug, Clone)]
pub struct Actor {
    pub user: String,
    pub host: String,
}

impl Actor {
    /// The OS user and host name of this process.
    pub fn current() -> Self {
        let user = std::env::var("USER")
            .or_else(|_| std::env::var("LOGNAME"))
            .ok()
            .or_else(user_from_passwd)
            .unwrap_or_else(|| "unknown".into());
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .or_else(|_| std::env::var("HOSTNAME"))
            .unwrap_or_else(|_| "unknown".into());
        Self { user, host }
    }
}

/// The name of this process's real user, from `/proc` and `/etc/passwd`.
fn user_from_passwd() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let uid = status.lines().find_map(|l| l.strip_prefix("Uid:"))?.split_whitespace().next()?.to_owned();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.get(2) == Some(&uid.as_str())).then(|| fields[0].to_owned())
    })
}

/// An export file, appended to, readable by this user alone (events hold production data).
fn export_file(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Which dead letters a bulk redrive takes, and how fast.
#[derive(Debug, Clone)]
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
pub fn key(contract: &str, session: &str) -> Result<String> {
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

    pub async fn connect(connect: &Connect) -> Result<Self> {
        Ok(Self::new(attach(connect).await?, Actor::current()))
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

    // ── reads ────────────────────────────────────────────────────────

    pub async fn contract_list(&self) -> Result<Vec<String>> {
        Ok(self.store().contract_list().await?)
    }

    /// Sessions of a contract by id; filters read on until the page fills
    /// (at most ten store pages, so a filter that matches little stays cheap).
    pub async fn session_list(&self, query: SessionQuery) -> Result<Page<SessionSummary, String>> {
        let limit = page_size(query.limit);
        // Unfiltered, a store page is the page; filtered, read wider pages to fill it.
        let filtered = query.has_dead_letters || query.lagging;
        let fetch = if filtered { MAX_PAGE } else { limit as u32 };
        let mut items = Vec::new();
        let mut after = query.after.clone();
        for _ in 0..10 {
            let page = self
                .store()
                .session_list(SessionList {
                    contract: query.contract.clone(),
                    id_prefix: query.id_prefix.clone(),
                    after: after.clone(),
                    limit: fetch,
                })
                .await?;
            let full = page.len() == fetch as usize;
            for summary in page {
                after = Some(summary.session_id.clone());
                if (query.has_dead_letters && summary.dead_letters == 0) || (query.lagging && summary.lag == 0) {
                    continue;
                }
                items.push(summary);
                if items.len() == limit {
                    return Ok(Page { next: after, items });
                }
            }
            if !full {
                return Ok(Page { items, next: None });
            }
        }
        Ok(Page { items, next: after })
    }

    /// Sessions of a contract, most recently active first (appends, clears and redrives count).
    pub async fn session_list_by_activity(&self, query: ActivityQuery) -> Result<Page<SessionSummary, ActivityCursor>> {
        let before = query.before.map(|c| (c.at, c.session));
        let params = SessionsByActivity { contract: query.contract, before, limit: query.limit };
        let items = self.store().session_list_by_activity(params).await?;
        let next = (items.len() == page_size(query.limit))
            .then(|| items.last().map(|s| ActivityCursor { at: s.updated_at, session: s.session_id.clone() }))
            .flatten();
        Ok(Page { items, next })
    }

    pub async fn session_get(&self, target: &SessionRef) -> Result<SessionSummary> {
        let SessionRef { contract, session } = target;
        self.store()
            .session_get(&target.key()?)
            .await?
            .ok_or_else(|| OperatorError::NotFound { what: format!("session '{session}' of contract '{contract}'") })
    }

    pub async fn event_list(&self, query: EventQuery) -> Result<Vec<Event>> {
        let EventQuery { session, after, before, newest_first, limit } = query;
        self.session_get(&session).await?;
        let mut events =
            self.store().event_list(EventList { session: session.key()?, after, before, limit, newest_first }).await?;
        for event in &mut events {
            event.session.clone_from(&session.session);
        }
        Ok(events)
    }

    pub async fn head_list(&self, session: &SessionRef) -> Result<Vec<HeadView>> {
        let now = self.now();
        let heads = self.store().head_list(&session.key()?).await?;
        self.exists_if_empty(&heads, session).await?;
        Ok(heads.into_iter().map(|h| HeadView::from_info(h, now)).collect())
    }

    /// Consumer totals computed now: a pass over every cursor (seconds on a big store).
    pub async fn consumer_totals(&self, contract: Option<&str>) -> Result<Vec<ConsumerTotal>> {
        Ok(self.store().consumer_totals(contract).await?)
    }

    /// Consumer totals no older than `max_age_ms`: the kept ones when fresh
    /// enough, else recomputed (and kept, on a read-write connection).
    pub async fn consumer_overview(&self, query: TotalsQuery) -> Result<TotalsSnapshot> {
        let (contract, max_age_ms) = (query.contract.as_deref(), query.max_age_ms);
        let now = self.now();
        let kept = self.store().consumer_totals_snapshot(contract).await?;
        if let Some(kept) = kept.as_ref().filter(|k| now - k.computed_at <= max_age_ms) {
            return Ok(kept.clone());
        }
        // A replica cannot refresh them: the primary's last refresh is what there is, its age shown.
        if let (true, Some(kept)) = (self.is_replica(), kept) {
            return Ok(kept);
        }
        if self.is_read_only() {
            return Ok(TotalsSnapshot { computed_at: now, totals: self.store().consumer_totals(contract).await? });
        }
        let mut fresh = self.store().consumer_totals_refresh().await?;
        fresh.totals.retain(|t| contract.is_none_or(|c| c == t.contract));
        Ok(fresh)
    }

    pub async fn dead_letter_list(&self, query: DeadLetterList) -> Result<Page<DeadLetter, HeadKey>> {
        let limit = page_size(query.limit);
        let items = self.store().dead_letter_list(query).await?;
        let next = (items.len() == limit).then(|| items.last().map(DeadLetter::key)).flatten();
        Ok(Page { items, next })
    }

    /// A session's attempts: newest first (a head's history) or oldest first (its timeline).
    pub async fn attempt_list(&self, query: AttemptQuery) -> Result<Page<Attempt, AttemptKey>> {
        let AttemptQuery { session, consumer, index, after, oldest_first, limit } = query;
        let params = AttemptList { session: session.key()?, consumer, index, after, oldest_first, limit };
        let items = self.store().attempt_list(params).await?;
        self.exists_if_empty(&items, &session).await?;
        let next = (items.len() == page_size(limit)).then(|| items.last().map(Attempt::key)).flatten();
        Ok(Page { items, next })
    }

    /// Each consumer's completions and failures per minute over the last `minutes`, from the attempt history.
    pub async fn attempt_rates(&self, contract: Option<String>, minutes: u32) -> Result<Vec<AttemptRate>> {
        if !(1..=24 * 60).contains(&minutes) {
            return Err(OperatorError::invalid(format!("minutes must be between 1 and 1440, not {minutes}")));
        }
        let since = self.now() - i64::from(minutes) * 60_000;
        Ok(self.store().attempt_rates(AttemptRates { contract, since, bucket_ms: 60_000 }).await?)
    }

    /// Dead letters grouped by consumer and cause, largest group first.
    pub async fn dead_letter_groups(&self, contract: Option<String>) -> Result<Vec<DeadLetterGroup>> {
        Ok(self.store().dead_letter_groups(DeadLetterGroups { contract }).await?)
    }

    pub async fn snapshot_list(&self, session: &SessionRef) -> Result<Vec<SnapshotInfo>> {
        let snapshots = self.store().snapshot_list(&session.key()?).await?;
        self.exists_if_empty(&snapshots, session).await?;
        Ok(snapshots)
    }

    /// An empty page may mean no such session: only then is the session looked up,
    /// so the common read costs one query, not two.
    async fn exists_if_empty<T>(&self, page: &[T], session: &SessionRef) -> Result<()> {
        if page.is_empty() {
            self.session_get(session).await?;
        }
        Ok(())
    }

    pub async fn audit_list(&self, query: AuditList) -> Result<Vec<AuditRecord>> {
        Ok(self.store().audit_list(query).await?)
    }

    // ── actions ──────────────────────────────────────────────────────

    /// Retry or skip one dead letter; `redriven: false` when the head is not dead.
    pub async fn dead_letter_redrive(&self, redrive: Redrive) -> Result<Redriven> {
        let Redrive { session: target, consumer, index, action } = redrive;
        let (contract, session) = (target.contract.as_str(), target.session.as_str());
        let name = match action {
            RedriveAction::Retry => "redrive.retry",
            RedriveAction::Skip => "redrive.skip",
        };
        self.writable(name)?;
        if index == 0 {
            return Err(OperatorError::invalid("indexes start at 1"));
        }
        self.session_get(&target).await?;
        let audit = Some(self.entry(name, contract, session, json!({ "consumer": consumer, "index": index })));
        let params = DeadLetterRedrive { session: target.key()?, consumer, index, action, audit };
        let redriven = self.store().dead_letter_redrive(params).await?;
        if redriven {
            if let Some(server) = self.hosted.iter().find(|s| s.contract().name() == contract) {
                // A hosted consumer runs the retried head now, after this answer: the
                // request returns when the redrive is committed, not when the consumer has run.
                let hosted = server.session(session)?;
                tokio::spawn(async move {
                    if let Err(error) = hosted.drain().await {
                        tracing::warn!(code = error.code(), %error, "the drain after a redrive failed; the rescuer retries");
                    }
                });
            }
        }
        Ok(Redriven { redriven })
    }

    /// Redrive every dead letter matching the filter, as a job: `progress`
    /// hears after each one; `cancelled` stops it between two. Each redrive
    /// is audited in its own transaction as it happens (a crash mid-job
    /// leaves the record of what was done); a closing entry says how the job
    /// ended, failed included.
    pub async fn dead_letter_redrive_all(
        &self,
        job: RedriveAll,
        cancelled: impl Fn() -> bool,
        mut progress: impl FnMut(JobProgress),
    ) -> Result<JobProgress> {
        let action_name = match job.action {
            RedriveAction::Retry => "redrive.all.retry",
            RedriveAction::Skip => "redrive.all.skip",
        };
        self.writable(action_name)?;
        // Slower than one a hundred seconds is a job that never ends; the bound also keeps the pause finite.
        if job.rate.is_some_and(|r| !(0.01..=100_000.0).contains(&r)) {
            return Err(OperatorError::invalid("--rate must be between 0.01 and 100000 redrives a second"));
        }
        let mut state = JobProgress::default();
        let result = self.redrive_each(&job, action_name, &cancelled, &mut state, &mut progress).await;
        let mut entry = self.wide_entry(
            action_name,
            job.contract.as_deref(),
            json!({ "consumer": job.consumer, "stop_at": job.stop_at, "rate": job.rate }),
        );
        entry.outcome = match &result {
            Ok(()) => {
                json!({ "done": state.done, "total": state.total, "failed": state.failed, "cancelled": cancelled() })
            }
            Err(error) => json!({ "done": state.done, "total": state.total, "failed": state.failed,
                                  "error": { "code": error.code(), "message": error.to_string() } }),
        };
        let recorded = self.store().audit_append(entry).await;
        result?;
        recorded?;
        Ok(state)
    }

    async fn redrive_each(
        &self,
        job: &RedriveAll,
        action_name: &str,
        cancelled: &impl Fn() -> bool,
        state: &mut JobProgress,
        progress: &mut impl FnMut(JobProgress),
    ) -> Result<()> {
        let stop_at = job.stop_at.unwrap_or(u64::MAX);
        // The matching set as it stands now: later dead letters wait for the next job.
        let mut targets = Vec::new();
        let mut after = None;
        while (targets.len() as u64) < stop_at {
            let query = DeadLetterList {
                contract: job.contract.clone(),
                consumer: job.consumer.clone(),
                cause: job.cause.clone(),
                after: after.clone(),
                limit: MAX_PAGE,
                ..Default::default()
            };
            let page = self.store().dead_letter_list(query).await?;
            let Some(last) = page.last() else { break };
            after = Some(last.key());
            targets.extend(
                page.into_iter().take(usize::try_from(stop_at).unwrap_or(usize::MAX).saturating_sub(targets.len())),
            );
        }
        state.total = targets.len() as u64;
        progress(*state);
        let pause = job.rate.map(|r| std::time::Duration::from_secs_f64(1.0 / r));
        for letter in targets {
            if cancelled() {
                break;
            }
            let contract = letter.contract.clone();
            let audit = self.entry(
                action_name,
                &contract,
                &letter.session_id,
                json!({ "consumer": letter.consumer, "index": letter.index, "job": true }),
            );
            let params = DeadLetterRedrive {
                session: letter.key().session,
                consumer: letter.consumer.clone(),
                index: letter.index,
                action: job.action,
                audit: Some(audit),
            };
            match self.store().dead_letter_redrive(params).await {
                Ok(true) => state.done += 1,
                Ok(false) => state.failed += 1,
                // A store that stopped answering ends the job; one letter's refusal does not.
                Err(error) if error.is_retryable() => return Err(error.into()),
                Err(_) => state.failed += 1,
            }
            progress(*state);
            if let Some(pause) = pause {
                tokio::time::sleep(pause).await;
            }
        }
        Ok(())
    }

    /// Let a Postgres role read this store and nothing more: attached
    /// read-only with that role, the database itself refuses every write.
    pub async fn reader_role_grant(&self, role: &str) -> Result<()> {
        self.writable("grant.reader")?;
        let Some(opened) = self.attached.opened.as_ref().filter(|o| o.has_roles()) else {
            return Err(OperatorError::invalid("reader roles are a Postgres feature: this store is not Postgres"));
        };
        opened.reader_role_grant(role).await?;
        let mut entry = self.wide_entry("grant.reader", None, json!({ "role": role }));
        entry.outcome = json!({ "granted": true });
        self.store().audit_append(entry).await?;
        Ok(())
    }

    /// Clear a session through its head, only if the head is still `if_last_index` when given.
    pub async fn session_clear(&self, clear: ClearSession) -> Result<Cleared> {
        let ClearSession { session: target, if_last_index } = clear;
        self.writable("clear")?;
        self.session_get(&target).await?;
        let audit =
            Some(self.entry("clear", &target.contract, &target.session, json!({ "if_last_index": if_last_index })));
        Ok(self.store().session_clear(SessionClear { session: target.key()?, if_last_index, audit }).await?)
    }

    /// How many events a consume through `through` would take.
    pub async fn consume_preview(&self, target: &ConsumeTarget) -> Result<u64> {
        Ok(self.consume_plan(target).await?.events)
    }

    /// Where a consume through `through` would start and how many events it would take.
    pub async fn consume_plan(&self, target: &ConsumeTarget) -> Result<ConsumePlan> {
        let cursor = self.log_cursor(target).await?;
        let through = target.through.unwrap_or(cursor.session_head).min(cursor.session_head);
        Ok(ConsumePlan { from_index: cursor.next_index, events: (through + 1).saturating_sub(cursor.next_index) })
    }

    async fn log_cursor(&self, target: &ConsumeTarget) -> Result<HeadView> {
        let (session, consumer) = (target.session.session.as_str(), target.consumer.as_str());
        let heads = self.head_list(&target.session).await?;
        let Some(head) = heads.into_iter().find(|h| h.consumer == consumer) else {
            return Err(OperatorError::NotFound { what: format!("consumer '{consumer}' in session '{session}'") });
        };
        if head.kind != HeadKind::Log {
            return Err(OperatorError::invalid(format!(
                "consumer '{consumer}' has no string lane, so it has no position to consume through"
            )));
        }
        Ok(head)
    }

    /// Move a string-lane consumer through an index: with its own code where
    /// this process hosts its contract, by exporting each event, or by
    /// acknowledging them all in one store call.
    pub async fn session_consume(
        &self,
        target: &ConsumeTarget,
        mode: ConsumeMode,
        export_to: Option<&std::path::Path>,
    ) -> Result<Consumed> {
        let ConsumeTarget { session: SessionRef { contract, session }, consumer, through } = target;
        let (contract, session, consumer, through) = (contract.as_str(), session.as_str(), consumer.as_str(), *through);
        let action = match mode {
            ConsumeMode::Run => "consume.run",
            ConsumeMode::Ack => "consume.ack",
            ConsumeMode::Export => "consume.export",
        };
        self.writable(action)?;
        let cursor = self.log_cursor(target).await?;
        if mode == ConsumeMode::Ack {
            return self.cursor_ack(target, &cursor).await;
        }
        let lane = cursor.lane.clone().unwrap_or_default();
        let index = match mode {
            ConsumeMode::Run => {
                let hosted = self.hosted.iter().find(|s| s.contract().name() == contract);
                let Some((server, own)) = hosted.and_then(|s| s.consumer(consumer).map(|c| (s, c))) else {
                    return Err(OperatorError::invalid(format!(
                        "this process does not run consumer '{consumer}' of contract '{contract}': use ack or export"
                    )));
                };
                server.session(session)?.consume(&own, through).await?
            }
            ConsumeMode::Ack | ConsumeMode::Export => {
                // Ack returned above: one store call, not a consumer run.
                let Some(path) = export_to else {
                    return Err(OperatorError::invalid("export needs a file to write (--out)"));
                };
                let sink = Arc::new(std::sync::Mutex::new(
                    export_file(path)
                        .map_err(|e| OperatorError::invalid(format!("cannot write {}: {e}", path.display())))?,
                ));
                let operator = Consumer::builder(consumer).lane(lane).run(move |ctx| {
                    let sink = sink.clone();
                    async move {
                        let line = serde_json::to_string(&ctx.event)?;
                        let mut file = sink.lock().map_err(|_| "the export file lock was poisoned")?;
                        writeln!(file, "{line}")?;
                        file.flush()?;
                        Ok::<(), BoxError>(())
                    }
                })?;
                let server = Server::builder(Contract::new(contract)?, self.attached.store.clone())
                    .run_in_background(false)
                    .build()?;
                server.session(session)?.consume(&operator, through).await?
            }
        };
        // Consume spans many transactions (one per head), so its record follows it.
        let outcome = Consumed { index };
        let mut entry = self.entry(
            action,
            contract,
            session,
            json!({ "consumer": consumer, "through": through, "from": cursor.next_index }),
        );
        entry.outcome = json!(outcome);
        self.store().audit_append(entry).await?;
        Ok(outcome)
    }
}
