//! The values that cross the store seam. Timestamps are wall-clock
//! milliseconds from the injected [`crate::Clock`]; indexes are 1-based.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::keys::SessionKey;

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

/// How a store is opened. Read-only is enforced by the backend itself
/// (`mode=ro` on SQLite, `default_transaction_read_only` on Postgres), and
/// a read-only open never migrates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum Access {
    ReadWrite,
    ReadOnly,
}

/// Which consumer head produced an event (absent for external appends).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Cause {
    pub consumer: String,
    pub lane: Option<String>,
    pub index: u64,
    pub attempt: u32,
    /// How many events the run appended or returned together, on each that
    /// got a derived id (the seeds' `batchSize`): a reader tells a batch's
    /// members from a lone event without reading the log around it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<u32>,
}

/// The scheduled task whose delivery appended an event: a reader links the
/// event back to its timer once the task itself is gone.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ScheduledBy {
    /// The task's id (deterministic: the same schedule is the same task).
    pub task: String,
    /// The schedule's name, as `session.schedule` was given it.
    pub name: String,
}

/// One stored event of a session's log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub id: String,
    #[serde(rename = "type")]
    pub event_type: String,
    pub payload: Value,
    pub index: u64,
    /// As a store returns it, the storage key `<contract>\u{1f}<session id>`;
    /// the engine and the operator hand events out with the session id here
    /// instead (what the seeds' `event.session` is), so it stays text.
    pub session: String,
    pub created_at: Millis,
    pub cause: Option<Cause>,
    /// Set on the events a scheduled task's delivery appended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_by: Option<ScheduledBy>,
}

/// An event to append, with its id already decided and its heads resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub id: String,
    pub event_type: String,
    pub payload: Value,
    pub cause: Option<Cause>,
    pub scheduled_by: Option<ScheduledBy>,
    /// Heads of lane-function and concurrent consumers this event starts,
    /// resolved once at append time.
    pub targets: Vec<Target>,
}

/// A per-event head to create at append: the consumer, and its lane (none
/// for a concurrent consumer).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    pub consumer: String,
    pub lane: Option<String>,
}

/// How a log consumer (string lane) reads a session: one ordered cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSpec {
    pub lane: String,
    /// Event types it takes; `None` takes all.
    pub types: Option<Vec<String>>,
    /// A new cursor starts at index 1 instead of after the session's head.
    pub backfill: bool,
}

/// A consumer as a store needs to know it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreConsumer {
    pub name: String,
    /// Set for log consumers; lane-function and concurrent consumers have heads per event.
    pub log: Option<LogSpec>,
}

impl StoreConsumer {
    pub fn log(name: impl Into<String>, lane: impl Into<String>) -> Self {
        Self { name: name.into(), log: Some(LogSpec { lane: lane.into(), types: None, backfill: false }) }
    }
    pub fn targeted(name: impl Into<String>) -> Self {
        Self { name: name.into(), log: None }
    }
    pub fn backfilling(mut self) -> Self {
        if let Some(log) = self.log.as_mut() {
            log.backfill = true;
        }
        self
    }
    pub fn with_types(mut self, types: &[&str]) -> Self {
        if let Some(log) = self.log.as_mut() {
            log.types = Some(types.iter().map(|t| (*t).to_owned()).collect());
        }
        self
    }
    /// Whether this log consumer takes events of `event_type`.
    pub fn takes(&self, event_type: &str) -> bool {
        match &self.log {
            Some(LogSpec { types: Some(types), .. }) => types.iter().any(|t| t == event_type),
            _ => true,
        }
    }
}

/// The unit of work: a consumer's head at one index of one lane.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct HeadRef {
    pub consumer: String,
    pub lane: Option<String>,
    pub index: u64,
}

impl HeadRef {
    pub fn new(consumer: impl Into<String>, lane: Option<&str>, index: u64) -> Self {
        Self { consumer: consumer.into(), lane: lane.map(str::to_owned), index }
    }
}

impl std::fmt::Display for HeadRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.lane {
            Some(lane) => write!(f, "{}[{}]@{}", self.consumer, lane, self.index),
            None => write!(f, "{}@{}", self.consumer, self.index),
        }
    }
}

/// A head this holder has claimed, with the attempt number that fences it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HeldHead {
    pub head: HeadRef,
    pub attempt: u32,
}

/// Exponential retry delays: `base · 2^(n-1)`, capped at `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub base_ms: i64,
    pub max_ms: i64,
}

impl Backoff {
    /// The wait after the `failure_count`th failure.
    pub fn delay_ms(&self, failure_count: u32) -> i64 {
        let exponent = failure_count.saturating_sub(1).min(40);
        self.base_ms.saturating_mul(1i64 << exponent).min(self.max_ms)
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self { base_ms: 1_000, max_ms: 300_000 }
    }
}

// ── write params and results ─────────────────────────────────────────

#[derive(Debug, Clone)]
pub struct EventAppend {
    pub session: SessionKey,
    pub events: Vec<NewEvent>,
    /// Every consumer the appender runs: log consumers get a cursor here if
    /// they have none, so a new session's first event is theirs too.
    pub consumers: Vec<StoreConsumer>,
    /// The index of the event whose run appends (a consumer's trigger): a
    /// clear through it refuses the append with `SESSION_CLEARED`, decided in
    /// the append's own transaction, so a clear committed a moment before
    /// cannot let a cleared run append past the boundary.
    pub origin_index: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Appended {
    /// The session head after the append.
    pub head: u64,
    /// The batch as stored (already present ones, for an idempotent re-append).
    pub events: Vec<Event>,
    /// Every id was already present: nothing was written.
    pub duplicate: bool,
}

#[derive(Debug, Clone)]
pub struct HeadClaim {
    pub session: SessionKey,
    pub holder: String,
    pub ttl_ms: i64,
    pub consumers: Vec<StoreConsumer>,
    /// Claim no head past this index.
    pub through: Option<u64>,
    /// Heads this drain already saw fail; they wait for a later drain.
    pub exclude: Vec<HeadRef>,
    /// A head taken over from a lapsed claim whose failures reach this is dead-lettered, not run.
    pub max_failures: u32,
    /// At most this many heads in one claim.
    pub limit: u32,
    /// A log cursor's claim may read ahead up to this many consecutive
    /// positions its consumer takes (a range; 0 or 1: one). Only the first is
    /// leased; each later one is leased to the same holder, as attempt 1, by
    /// the completion before it (`HeadComplete::lease_next`), so a lapse is
    /// charged to the one position the cursor stands on.
    pub range: u32,
}

/// A claimed head with its event; `attempt` is the fencing token.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedHead {
    pub head: HeadRef,
    pub attempt: u32,
    pub failure_count: u32,
    pub lease_expires_at: Millis,
    pub event: Event,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Claimed {
    /// The session head when the claim ran.
    pub session_head: u64,
    pub heads: Vec<ClaimedHead>,
    /// Heads dead-lettered on takeover because their lapsed attempts used up the budget.
    pub exhausted: Vec<ClaimedHead>,
    /// Earliest expiry of a live lease held by another holder. Like
    /// `retry_at`, reported when the claim took no heads; a claim that took
    /// some may leave both `None` (its holder claims again after them).
    pub busy_until: Option<Millis>,
    /// Earliest time a head waiting out its backoff becomes runnable.
    pub retry_at: Option<Millis>,
}

#[derive(Debug, Clone)]
pub struct HeadRenew {
    pub session: SessionKey,
    pub holder: String,
    pub ttl_ms: i64,
    pub heads: Vec<HeldHead>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Renewed {
    pub renewed: Vec<HeadRef>,
    /// Heads a newer attempt owns, or that are gone (completed, cleared).
    pub superseded: Vec<HeadRef>,
    pub lease_expires_at: Millis,
}

#[derive(Debug, Clone)]
pub struct HeadComplete {
    pub session: SessionKey,
    pub head: HeadRef,
    pub attempt: u32,
    /// Events the run returned, appended atomically with the completion.
    pub events: Vec<NewEvent>,
    pub consumers: Vec<StoreConsumer>,
    /// The claim's holder: when given, a head leased to another holder is
    /// not this completion's (a range's later positions all start at
    /// attempt 1, so the attempt alone cannot tell two holders apart).
    pub holder: Option<String>,
    /// A cursor's range goes on: lease the next position to `holder` as
    /// attempt 1, keeping the lease's expiry, unless the consumer is paused
    /// or the position is past the session's head.
    pub lease_next: bool,
}

#[derive(Debug, Clone)]
pub struct HeadCompleteMany {
    pub session: SessionKey,
    pub heads: Vec<HeldHead>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum CompleteOutcome {
    /// `holds_next`: the cursor stands on its next position, leased to the
    /// completion's holder (`HeadComplete::lease_next` was granted).
    Completed {
        session_head: u64,
        appended: Vec<Event>,
        holds_next: bool,
    },
    Superseded,
}

#[derive(Debug, Clone)]
pub struct HeadFail {
    pub session: SessionKey,
    pub head: HeadRef,
    pub attempt: u32,
    pub error: String,
    /// The run was cancelled before it threw: its attempt is recorded as aborted, not failed.
    pub aborted: bool,
    pub max_failures: u32,
    pub backoff: Backoff,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FailOutcome {
    Failed { failure_count: u32, retry_at: Millis },
    DeadLettered { failure_count: u32 },
    Superseded,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum RedriveAction {
    /// Run it again with a fresh failure budget.
    Retry,
    /// Settle it without running and move on.
    Skip,
}

#[derive(Debug, Clone)]
pub struct DeadLetterRedrive {
    pub session: SessionKey,
    pub consumer: String,
    pub index: u64,
    pub action: RedriveAction,
    /// Written in the same transaction, its `outcome` set to `{"redriven": …}`.
    pub audit: Option<AuditEntry>,
}

#[derive(Debug, Clone)]
pub struct CursorWake {
    pub session: SessionKey,
    pub consumer: StoreConsumer,
}

/// A log consumer's cursor, as `consume` watches it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CursorState {
    pub session_head: u64,
    /// The next index it will run; `None` when caught up with the head.
    pub next: Option<u64>,
    pub status: HeadStatus,
    /// Its consumer is paused store-wide: no process moves it until resumed.
    pub paused: bool,
}

/// Move a log consumer's cursor through an index without running it, in
/// one transaction whatever the distance: an operator's acknowledgement.
#[derive(Debug, Clone)]
pub struct CursorAdvance {
    pub session: SessionKey,
    pub consumer: StoreConsumer,
    /// The last index acknowledged; the session's head when `None`, and never past it.
    pub through: Option<u64>,
    /// Written in the same transaction, its `outcome` set to the result.
    pub audit: Option<AuditEntry>,
}

/// What a cursor advance did. Only `Moved` changed anything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum CursorAdvanced {
    /// Events `from..next` were acknowledged (none when `from == next`); the cursor now stands at `next`.
    Moved { from: u64, next: u64 },
    /// A live attempt holds the event the cursor stands at: nothing moved.
    Held { index: u64, holder: String, until: Millis },
    /// The event the cursor stands at is dead-lettered: redrive it first.
    DeadLettered { index: u64, last_error: Option<String> },
}

/// Stop every engine process claiming a consumer's work, store-wide, until resumed.
#[derive(Debug, Clone)]
pub struct ConsumerPause {
    pub contract: String,
    pub consumer: String,
    /// Who paused it, as the Studio shows it.
    pub actor: String,
    pub reason: String,
    /// Written in the same transaction.
    pub audit: Option<AuditEntry>,
}

#[derive(Debug, Clone)]
pub struct ConsumerResume {
    pub contract: String,
    pub consumer: String,
    /// Written in the same transaction.
    pub audit: Option<AuditEntry>,
}

/// A paused consumer: no process claims its heads while this stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PausedConsumer {
    pub contract: String,
    pub consumer: String,
    pub actor: String,
    pub reason: String,
    pub paused_at: Millis,
}

/// One head of a session being imported, as it stood where it was copied
/// from. Leases are not carried: no holder in this store runs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportedHead {
    pub consumer: String,
    pub kind: HeadKind,
    pub lane: Option<String>,
    /// A cursor's next index, or the index of a per-event head's event.
    pub index: u64,
    pub attempt_count: u32,
    pub failure_count: u32,
    pub last_error: Option<String>,
    pub failed_at: Option<Millis>,
    pub next_attempt_at: Option<Millis>,
}

impl From<&HeadInfo> for ImportedHead {
    fn from(h: &HeadInfo) -> Self {
        Self {
            consumer: h.consumer.clone(),
            kind: h.kind,
            lane: h.lane.clone(),
            index: h.next_index,
            attempt_count: h.status.attempt_count,
            failure_count: h.status.failure_count,
            last_error: h.status.last_error.clone(),
            failed_at: h.status.failed_at,
            next_attempt_at: h.status.next_attempt_at,
        }
    }
}

/// A whole session copied from another store (or a file), written in one
/// transaction under `session`, which must not exist yet.
#[derive(Debug, Clone)]
pub struct SessionImport {
    pub session: SessionKey,
    pub head: u64,
    pub clear_index: u64,
    pub created_at: Millis,
    pub updated_at: Millis,
    /// Every event after the clear boundary, by index; their `session` is ignored.
    pub events: Vec<Event>,
    pub heads: Vec<ImportedHead>,
    pub snapshots: Vec<Snapshot>,
    /// Written in the same transaction.
    pub audit: Option<AuditEntry>,
}

/// Where a session's log ends and where its clear boundary lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SessionBounds {
    pub head: u64,
    pub clear_index: u64,
}

#[derive(Debug, Clone)]
pub struct SessionClear {
    pub session: SessionKey,
    pub if_last_index: Option<u64>,
    /// Written in the same transaction, its `outcome` set to the `Cleared` result.
    pub audit: Option<AuditEntry>,
    /// The scheduled clear this delivers: deleted in the clear's transaction,
    /// and nothing cleared when its holder no longer holds it, so a clear
    /// task is never applied twice (a second clear would wipe what came after).
    pub settles: Option<crate::TaskHeld>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Cleared {
    pub cleared: bool,
    /// The boundary (when cleared) or the current head (when not).
    pub index: u64,
}

// ── snapshots ───────────────────────────────────────────────────────

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub reducer: String,
    pub index: u64,
    pub state: Value,
    pub pins: Vec<HeadRef>,
    pub created_at: Millis,
}

#[derive(Debug, Clone)]
pub struct SnapshotPut {
    pub session: SessionKey,
    pub reducer: String,
    pub index: u64,
    pub state: Value,
    /// The running head whose read asked for exactly this index.
    pub pin: Option<HeadRef>,
}

#[derive(Debug, Clone)]
pub struct SnapshotGet {
    pub session: SessionKey,
    pub reducer: String,
    /// The newest snapshot at or below this index.
    pub at_most: u64,
}

// ── inspection reads ────────────────────────────────────────────────

#[derive(Debug, Clone)]
pub struct EventList {
    pub session: SessionKey,
    pub after: Option<u64>,
    pub before: Option<u64>,
    pub limit: u32,
    pub newest_first: bool,
}

#[derive(Debug, Clone)]
pub struct SessionList {
    pub contract: String,
    /// Only session ids starting with this.
    pub id_prefix: Option<String>,
    /// Keyset: session ids strictly after this one.
    pub after: Option<String>,
    pub limit: u32,
}

/// A contract's sessions, most recently active first.
#[derive(Debug, Clone)]
pub struct SessionsByActivity {
    pub contract: String,
    /// Keyset: sessions strictly older than this `(updated_at, session id)`.
    pub before: Option<(Millis, String)>,
    pub limit: u32,
}

/// Look through the next `limit` sessions of a contract (by id) for those
/// where a head of one of these consumers could run now and no live claim
/// holds it: what a crashed process left behind.
#[derive(Debug, Clone)]
pub struct SessionsRunnable {
    pub contract: String,
    pub consumers: Vec<String>,
    /// Keyset: session ids strictly after this one.
    pub after: Option<String>,
    /// Sessions looked at (not found) per call, so each call is bounded.
    pub limit: u32,
}

/// One page of the walk: the runnable sessions among those looked at, and
/// where the walk goes on from (`None` when it reached the contract's end).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunnablePage {
    /// Ids (not keys) of the contract's sessions with runnable work.
    pub session_ids: Vec<String>,
    /// The id of the last session looked at.
    pub scanned_through: Option<String>,
}

impl RunnablePage {
    /// The page from the sessions looked at, in key order, each with whether
    /// it has runnable work; a page shorter than `limit` ended the walk.
    pub fn from_scan(scanned: Vec<(SessionKey, bool)>, limit: u32) -> Self {
        let full = scanned.len() >= crate::page_size(limit);
        let id = |key: &SessionKey| key.session_id().to_owned();
        Self {
            scanned_through: scanned.last().filter(|_| full).map(|(key, _)| id(key)),
            session_ids: scanned.iter().filter(|(_, runnable)| *runnable).map(|(key, _)| id(key)).collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SessionSummary {
    pub contract: String,
    #[serde(rename = "session")]
    pub session_id: String,
    pub head: u64,
    pub clear_index: u64,
    pub created_at: Millis,
    /// The last append, clear or redrive (completions do not count: they
    /// would make every head of a session queue on one row). On Postgres an
    /// append restamps it at most once a second ([`crate::SESSION_RESTAMP_MS`]),
    /// so it may lag the last append by up to that.
    pub updated_at: Millis,
    pub dead_letters: u64,
    /// Events behind every head of the session, summed.
    pub lag: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum HeadKind {
    /// A string-lane consumer's cursor.
    Log,
    /// A lane-function consumer's head.
    Lane,
    /// A concurrent consumer's head.
    Concurrent,
}

/// The seven fields that say where a head or cursor stands in its attempts:
/// stored by every backend, moved by [`crate::rules::HeadState`], and shown
/// unchanged by every view (the operator's, the Studio's) that embeds it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct HeadStatus {
    /// Attempts started: also the fencing token of the current attempt.
    pub attempt_count: u32,
    /// Failures since the last redrive (a lapsed lease counts as one).
    pub failure_count: u32,
    pub last_error: Option<String>,
    /// Set when it was dead-lettered; it blocks its lane until redriven.
    pub failed_at: Option<Millis>,
    pub lease_holder: Option<String>,
    pub lease_expires_at: Option<Millis>,
    /// Its backoff: no claim takes it before then.
    pub next_attempt_at: Option<Millis>,
}

impl HeadStatus {
    pub fn dead(&self) -> bool {
        self.failed_at.is_some()
    }

    pub fn lease_live(&self, now: Millis) -> bool {
        self.lease_holder.is_some() && self.lease_expires_at.is_some_and(|t| t > now)
    }

    /// Whether `attempt` is the current, live attempt: the fence of complete, fail and renew.
    pub fn is_current(&self, attempt: u32) -> bool {
        self.attempt_count == attempt && self.failed_at.is_none()
    }

    pub fn release(&mut self) {
        self.lease_holder = None;
        self.lease_expires_at = None;
    }
}

/// A head or cursor as the Studio shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadInfo {
    pub contract: String,
    pub session_id: String,
    pub consumer: String,
    pub kind: HeadKind,
    pub lane: Option<String>,
    /// The index it runs next (a caught-up cursor: head + 1).
    pub next_index: u64,
    pub session_head: u64,
    /// Events behind this head (for a cursor: from its next index to the session head).
    pub lag: u64,
    /// Creation time of the oldest event it has not handled.
    pub oldest_pending_at: Option<Millis>,
    #[serde(flatten)]
    pub status: HeadStatus,
}

impl HeadInfo {
    pub fn dead(&self) -> bool {
        self.status.dead()
    }
}

/// Keyset position in store-wide head and dead-letter pages.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct HeadKey {
    pub session: SessionKey,
    pub consumer: String,
    pub lane: Option<String>,
    pub index: u64,
}

#[derive(Debug, Clone, Default)]
pub struct HeadScan {
    pub consumer: Option<String>,
    pub after: Option<HeadKey>,
    pub limit: u32,
}

#[derive(Debug, Clone, Default)]
pub struct DeadLetterList {
    pub contract: Option<String>,
    /// A storage key, to list one session's dead letters.
    pub session: Option<SessionKey>,
    pub consumer: Option<String>,
    /// Only the dead letters of this cause (see [`crate::error_cause`]).
    pub cause: Option<String>,
    pub after: Option<HeadKey>,
    pub limit: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DeadLetter {
    pub contract: String,
    #[serde(rename = "session")]
    pub session_id: String,
    pub consumer: String,
    pub lane: Option<String>,
    pub index: u64,
    pub event_id: String,
    #[serde(rename = "type")]
    pub event_type: String,
    pub attempt_count: u32,
    pub failure_count: u32,
    pub last_error: Option<String>,
    pub failed_at: Millis,
}

impl DeadLetter {
    pub fn key(&self) -> HeadKey {
        HeadKey {
            session: crate::session_key(&self.contract, &self.session_id),
            consumer: self.consumer.clone(),
            lane: self.lane.clone(),
            index: self.index,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ConsumerTotal {
    pub contract: String,
    pub consumer: String,
    pub sessions: u64,
    pub lagging_sessions: u64,
    pub total_lag: u64,
    pub dead_letters: u64,
    /// Who serves it, by the process registry; `None` where the registry was not read.
    #[serde(default)]
    pub served: Option<crate::Serving>,
}

/// Consumer totals as last computed: a whole-store aggregate is too costly
/// for every look, so writers refresh this and readers show its age.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TotalsSnapshot {
    pub computed_at: Millis,
    pub totals: Vec<ConsumerTotal>,
    /// What the kept servers declare, so an overview tells an idle consumer
    /// from an unserved one; filled by the operator from the process registry.
    #[serde(default)]
    pub catalog: Vec<crate::CatalogConsumer>,
    /// Kept by a refresh, computed for this answer, or none kept: a
    /// read-only connection computes them only when asked in so many words.
    #[serde(default)]
    pub origin: TotalsOrigin,
    /// The live servers that lead the upkeep of these totals' contracts:
    /// who keeps them fresh, and how often; filled by the operator.
    #[serde(default)]
    pub refreshed_by: Vec<crate::RefreshedBy>,
}

/// Where consumer totals come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum TotalsOrigin {
    /// As the last refresh kept them (`computed_at` says when).
    #[default]
    Kept,
    /// Computed for this answer: a pass over every cursor.
    Live,
    /// None kept, and none computed (a read-only connection that was not asked to).
    Missing,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotInfo {
    pub reducer: String,
    pub index: u64,
    pub size_bytes: u64,
    pub state: Value,
    pub pins: Vec<HeadRef>,
    pub created_at: Millis,
}

// ── audit ───────────────────────────────────────────────────────────

/// One operator action, as the audit log keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub at: Millis,
    /// The OS user who acted.
    pub user: String,
    pub host: String,
    /// The database role the action ran as (Postgres `session_user`), beside the OS user.
    #[serde(default)]
    pub db_user: Option<String>,
    /// What was done, e.g. `redrive.retry`, `clear`, `consume.ack`.
    pub action: String,
    pub contract: Option<String>,
    pub session_id: Option<String>,
    pub parameters: Value,
    pub outcome: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    pub id: u64,
    #[serde(flatten)]
    pub entry: AuditEntry,
}

/// Newest first; keyset: ids strictly below `before`.
#[derive(Debug, Clone, Default)]
pub struct AuditList {
    pub before: Option<u64>,
    pub limit: u32,
    /// Only entries of this action (e.g. `demo.seed`).
    pub action: Option<String>,
}
