use std::sync::Arc;

use crate::attempts::*;
use crate::presence::*;
use crate::search::*;
use crate::servers::*;
use crate::tasks::*;
use crate::types::*;
use crate::upkeep::*;
use crate::{Clock, SessionKey, StoreError};

/// The largest page any inspection read returns, whatever the caller asks.
pub const MAX_PAGE: u32 = 500;

/// One store, many backends. Writes are atomic per call; reads never write.
/// Methods are named entity-first, each with one params struct, so a backend
/// reads as a list of statements and the conformance suite as a list of facts.
#[async_trait::async_trait]
pub trait Store: Send + Sync + std::fmt::Debug {
    /// The clock this store stamps and compares times with.
    fn clock(&self) -> Arc<dyn Clock>;

    /// Storage keys of sessions whose logs grew, as the backend hears of
    /// them from any process (Postgres `LISTEN/NOTIFY`); `None` where the
    /// only way to learn of another process's appends is to poll.
    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        None
    }

    // ── the engine's writes ──────────────────────────────────────────

    /// Append a batch at the session's next indexes, create the heads its
    /// events target, and give new log consumers their cursors — in one
    /// transaction. Re-appending ids already present is a no-op.
    async fn event_append(&self, params: EventAppend) -> Result<Appended, StoreError>;

    /// Take every runnable head (up to the limit) not leased by a live
    /// holder, bump its attempt, and lease it to the holder.
    async fn head_claim(&self, params: HeadClaim) -> Result<Claimed, StoreError>;

    /// Extend the leases a holder still owns; report the ones it lost.
    async fn head_renew(&self, params: HeadRenew) -> Result<Renewed, StoreError>;

    /// Settle the current attempt of a head and append what it returned.
    async fn head_complete(&self, params: HeadComplete) -> Result<CompleteOutcome, StoreError>;

    /// Settle many heads of one session that returned nothing, in one
    /// transaction: each is fenced by its attempt on its own. Returns the heads
    /// it settled; the others were superseded. The drain's fast path.
    async fn head_complete_many(&self, params: HeadCompleteMany) -> Result<Vec<HeadRef>, StoreError>;

    /// Record a failed attempt: backoff, or a dead letter at the budget.
    async fn head_fail(&self, params: HeadFail) -> Result<FailOutcome, StoreError>;

    /// Retry or skip a dead head; `false` when the head is not dead.
    async fn dead_letter_redrive(&self, params: DeadLetterRedrive) -> Result<bool, StoreError>;

    /// Make sure a log consumer has its cursor in the session and report it.
    async fn cursor_wake(&self, params: CursorWake) -> Result<CursorState, StoreError>;

    /// Acknowledge a log consumer's events through an index without running
    /// it: the cursor moves in one transaction (with its audit entry), or
    /// not at all when a live attempt holds it or it is dead-lettered.
    async fn cursor_advance(&self, params: CursorAdvance) -> Result<CursorAdvanced, StoreError>;

    /// Pause a consumer store-wide: no claim of any process takes its heads
    /// until it is resumed (running attempts finish). Pausing a paused
    /// consumer keeps the first pause and returns it.
    async fn consumer_pause(&self, params: ConsumerPause) -> Result<PausedConsumer, StoreError>;

    /// Lift a pause; `false` when the consumer was not paused.
    async fn consumer_resume(&self, params: ConsumerResume) -> Result<bool, StoreError>;

    /// Paused consumers (of one contract, or all), by contract and name.
    async fn consumer_pause_list(&self, contract: Option<&str>) -> Result<Vec<PausedConsumer>, StoreError>;

    /// Write a whole session copied from elsewhere (events, heads with their
    /// failures, snapshots) in one transaction, under a key that must not
    /// exist yet; checked whole first, so a bad copy writes nothing.
    async fn session_import(&self, params: SessionImport) -> Result<(), StoreError>;

    /// A session's head and clear boundary (zeros when it does not exist): a
    /// primary-key read on the engine's connections, cheap enough for every
    /// append a run makes, which must not outlive its cleared trigger.
    async fn session_bounds(&self, session: &SessionKey) -> Result<SessionBounds, StoreError>;

    /// Set the clear boundary at the head (guarded by `if_last_index`).
    async fn session_clear(&self, params: SessionClear) -> Result<Cleared, StoreError>;

    async fn snapshot_put(&self, params: SnapshotPut) -> Result<(), StoreError>;
    async fn snapshot_get(&self, params: SnapshotGet) -> Result<Option<Snapshot>, StoreError>;

    /// Walk a contract's sessions by id, a bounded page at a time, for work no
    /// live claim holds (lapsed leases, due retries, cursors behind the head,
    /// pending per-event heads): a rescuer drains them so a crash strands nothing.
    async fn session_list_runnable(&self, params: SessionsRunnable) -> Result<RunnablePage, StoreError>;

    // ── reads (engine and Studio) ────────────────────────────────────

    /// Events above the clear boundary, paged by index.
    async fn event_list(&self, params: EventList) -> Result<Vec<Event>, StoreError>;

    /// Contract names that have at least one session.
    async fn contract_list(&self) -> Result<Vec<String>, StoreError>;

    /// A contract's sessions by id, keyset paged (a prefix scan on `<contract>\u{1f}`).
    async fn session_list(&self, params: SessionList) -> Result<Vec<SessionSummary>, StoreError>;

    /// A contract's sessions, most recently active first, keyset paged.
    async fn session_list_by_activity(&self, params: SessionsByActivity) -> Result<Vec<SessionSummary>, StoreError>;

    /// One session's summary, if it exists.
    async fn session_get(&self, session: &SessionKey) -> Result<Option<SessionSummary>, StoreError>;

    /// Every cursor and pending head of a session, with lag.
    async fn head_list(&self, session: &SessionKey) -> Result<Vec<HeadInfo>, StoreError>;

    /// Pending heads and cursors store-wide, keyset paged.
    async fn head_scan(&self, params: HeadScan) -> Result<Vec<HeadInfo>, StoreError>;

    /// Dead letters store-wide, per contract or per session, keyset paged.
    async fn dead_letter_list(&self, params: DeadLetterList) -> Result<Vec<DeadLetter>, StoreError>;

    /// Each consumer's sessions, lag and dead letters, store-wide.
    async fn consumer_totals(&self, contract: Option<&str>) -> Result<Vec<ConsumerTotal>, StoreError>;

    /// Bring the kept consumer totals up to date: a backend that keeps each
    /// session's part recomputes only the sessions that changed since the
    /// last refresh (and a rolling slice), so a refresh costs what changed.
    async fn consumer_totals_refresh(&self, params: TotalsRefresh) -> Result<TotalsRefreshed, StoreError>;

    /// The latest kept consumer totals (of one contract, or all), if any were computed.
    async fn consumer_totals_snapshot(&self, contract: Option<&str>) -> Result<Option<TotalsSnapshot>, StoreError>;

    /// A session's snapshots, newest first.
    async fn snapshot_list(&self, session: &SessionKey) -> Result<Vec<SnapshotInfo>, StoreError>;

    /// A contract's sessions with events matching `filter`, a bounded chunk
    /// of sessions a call (by id, from `after`): a search over a big store is
    /// many short calls, each answering what it found.
    async fn session_search(&self, params: SessionSearch) -> Result<SessionSearchPage, StoreError>;

    /// How many sessions a contract has: a search's progress is told against it.
    async fn session_count(&self, contract: &str) -> Result<u64, StoreError>;

    /// One session's events matching `filter`, oldest first, a bounded
    /// chunk of events looked at a call.
    async fn event_filter(&self, params: EventFilter) -> Result<EventFilterPage, StoreError>;

    // ── attempt history ──────────────────────────────────────────────

    /// A session's attempts (of one consumer, or one head), keyset paged by when they ended.
    async fn attempt_list(&self, params: AttemptList) -> Result<Vec<Attempt>, StoreError>;

    /// Drop old attempts in a page of a contract's sessions: each head keeps
    /// its newest `keep`, a dead-lettered head all of its own.
    async fn attempt_prune(&self, params: AttemptPrune) -> Result<AttemptPruned, StoreError>;

    /// Completed and failed attempts per consumer and time bucket since a time, oldest bucket first.
    async fn attempt_rates(&self, params: AttemptRates) -> Result<Vec<AttemptRate>, StoreError>;

    /// Dead letters grouped by contract, consumer and cause, largest group first.
    async fn dead_letter_groups(&self, params: DeadLetterGroups) -> Result<Vec<DeadLetterGroup>, StoreError>;

    // ── the operators' audit log ─────────────────────────────────────

    /// Record an operator action; returns its id.
    async fn audit_append(&self, entry: AuditEntry) -> Result<u64, StoreError>;

    /// The audit log, newest first.
    async fn audit_list(&self, params: AuditList) -> Result<Vec<AuditRecord>, StoreError>;

    // ── the scheduler's tasks ────────────────────────────────────────

    /// Keep a task until it is due; `false` when a task with its id is
    /// already kept (scheduling again, e.g. from a retried run, is one task).
    async fn task_schedule(&self, params: TaskSchedule) -> Result<bool, StoreError>;

    /// Lease due tasks not held by a live delivery (`FOR UPDATE SKIP LOCKED`
    /// where the database has it), bumping their attempts.
    async fn task_claim(&self, params: TaskClaim) -> Result<Vec<ScheduledTask>, StoreError>;

    /// Delete a delivered task or put a failed one back, only while the
    /// holder still holds it; `false` when it does not.
    async fn task_finish(&self, params: TaskFinish) -> Result<bool, StoreError>;

    /// Pending tasks, by due time then id.
    async fn task_list(&self, params: TaskList) -> Result<Vec<ScheduledTask>, StoreError>;

    /// Delete a task before it is delivered; the task, or `None` when there was
    /// none or a live delivery holds it (it may be half delivered already).
    async fn task_cancel(&self, params: TaskChange) -> Result<Option<ScheduledTask>, StoreError>;

    /// Make a task due now, so the next delivery pass takes it (a live
    /// delivery keeps its lease: taking it over would deliver it twice at once).
    async fn task_hasten(&self, params: TaskChange) -> Result<Option<ScheduledTask>, StoreError>;

    // ── the process registry ─────────────────────────────────────────

    /// Register or refresh a running server, `last_seen` stamped by the
    /// store's clock, and prune every row not seen for `SERVER_KEPT_MS`.
    async fn server_beat(&self, params: ServerBeat) -> Result<(), StoreError>;

    /// Forget a server that shut down cleanly; `false` when none was kept.
    async fn server_remove(&self, id: &str) -> Result<bool, StoreError>;

    /// The kept servers (live and recently gone), by contract, then start.
    async fn server_list(&self, params: ServerList) -> Result<Vec<ServerRecord>, StoreError>;

    /// Heads leased now by holders under a prefix (one process's), by session,
    /// consumer, lane and index; at most `limit` (capped at `MAX_PAGE`).
    async fn head_list_leased(&self, params: HeadsLeased) -> Result<Vec<LeasedHead>, StoreError>;

    // ── the upkeep lease ─────────────────────────────────────────────

    /// Take or keep the upkeep lease of a scope for `ttl_ms`: `Some(generation)`
    /// when the caller holds it now, `None` while another's lease lasts.
    async fn upkeep_lease(&self, params: UpkeepLease) -> Result<Option<u64>, StoreError>;

    /// Let the lease go at once; `false` when the caller no longer held it.
    async fn upkeep_release(&self, params: UpkeepRelease) -> Result<bool, StoreError>;

    /// Who leads each scope's upkeep (expired leases included: `expires_at` says).
    async fn upkeep_leaders(&self) -> Result<Vec<UpkeepLeader>, StoreError>;

    // ── the presence plane ───────────────────────────────────────────

    /// Write a participant's fields, last writer winning per field by `at`;
    /// returns the fields this write changed (a losing one changes nothing).
    /// Not an append: no log row, no head, no drain.
    async fn presence_set(&self, params: PresenceSet) -> Result<Vec<String>, StoreError>;

    /// A session's unexpired cells by participant then field, tombstones
    /// (`value: None`) too: a feed stamps a deletion with its sender's stamp.
    async fn presence_read(&self, session: &SessionKey) -> Result<Vec<PresenceCell>, StoreError>;

    /// Delete expired cells and tombstones, up to `limit`; how many went.
    async fn presence_prune(&self, params: PresencePrune) -> Result<u64, StoreError>;

    /// How many sessions of each contract have live presence, by contract.
    async fn presence_sessions(&self) -> Result<Vec<(String, u64)>, StoreError>;
}

/// Clamp a requested page size to `1..=MAX_PAGE`.
pub fn page_size(limit: u32) -> usize {
    limit.clamp(1, MAX_PAGE) as usize
}
