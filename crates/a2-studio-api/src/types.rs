//! What the commands take and return. Each command takes one request
//! struct (`NoArgs` when it needs nothing), so the Tauri shell and the HTTP
//! mode pass the same `{ "request": … }` body. Payloads and reducer states
//! travel as JSON text: JavaScript's `JSON.parse` would round integers past
//! 2^53, and the Studio shows them exact.

pub use a2_operator::model::PausedConsumer;
use a2_operator::model::{Attempt, AttemptKey, HeadKey, Millis, RedriveAction};
/// The operator's own params, taken as they are where a command only passes them on.
pub use a2_operator::{
    AttemptQuery, ClearSession, ConsumeTarget, ConsumerRef, DeadLetterRef, EventQuery, Redrive, RedriveAll, SessionRef,
    TotalsQuery,
};
use a2_operator::{ConsumeMode, JobProgress, StoreKind};
use serde::{Deserialize, Serialize};
use specta::Type;

use crate::ApiError;

#[derive(Debug, Clone, Default, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct ConnectionOpen {
    /// `sqlite:PATH`, `postgres://…` or `memory:`; ignored when `profile` is given.
    pub url: Option<String>,
    /// A saved profile: its URL, mode and keychain password.
    pub profile: Option<String>,
    /// A password typed for this connection, given to the driver apart from
    /// the URL (so it is never shown, stored or logged with it).
    #[serde(default)]
    pub password: Option<String>,
    /// `None`: the profile's mode, else as `connection_default` says (every
    /// Postgres read-only). `Some(false)` is refused under a read-only ceiling
    /// or for a profile saved read-only.
    pub read_only: Option<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct ConnectionDefaultRequest {
    pub url: String,
}

/// How a store URL would be attached if the person changes nothing: decided
/// by the Studio, so the UI's switch starts where the backend would.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct ConnectionDefault {
    pub read_only: bool,
    /// This process was started read-only: no connection can be read-write.
    pub locked: bool,
    /// Why, in a sentence.
    pub reason: String,
}

/// The connection's TLS: off, encrypted without checking the server, its
/// certificate checked but not the host it names (`verify-ca`), or verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Type)]
#[serde(rename_all = "snake_case")]
pub enum TlsView {
    Off,
    Encrypted,
    VerifiedCaOnly,
    Verified,
}

/// One way a read-only connection was proved read-only, by the store
/// itself rather than by this app: what the Studio's badge says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Type)]
#[serde(rename_all = "snake_case")]
pub enum ReadOnlyProof {
    /// The database role holds no write privilege on any A2 table (nor does any role it can act as).
    Role,
    /// Every connection was checked with `SHOW transaction_read_only` as it was made.
    SessionVerified,
    /// Through a pooler: every transaction begins `READ ONLY`, which no pooler can drop.
    ReadOnlyTransactions,
    /// A hot standby, which refuses every write.
    Replica,
    /// SQLite: the file was opened read-only.
    ReadOnlyFile,
}

/// The Postgres server a connection reaches, as a read-write switch names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct ServerView {
    pub host: String,
    pub port: u16,
    pub database: String,
    pub version: String,
    /// The role the connection logged in as.
    pub session_user: String,
}

/// The open store as the UI shows it; the URL never carries a password.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct ConnectionInfo {
    pub url: String,
    pub kind: StoreKind,
    pub read_only: bool,
    /// Postgres: whether the role could write despite a read-only attach.
    pub role_can_write: Option<bool>,
    /// Shown beside the read-only badge, e.g. a role that could write.
    pub warning: Option<String>,
    /// A read-only connection: how the store was proved to refuse writes (strongest first).
    pub read_only_proof: Vec<ReadOnlyProof>,
    /// This process runs the demo contract's consumers (consume can run them),
    /// as the dev store and demo traffic ask.
    pub hosts_demo: bool,
    /// Changes arrive as they happen (Postgres LISTEN/NOTIFY); else the UI polls.
    pub live: bool,
    /// Postgres through a transaction-mode pooler (`?pgbouncer=true`), which
    /// carries no LISTEN: polled unless the URL gave a direct `listen_url`.
    pub pooled: bool,
    /// Postgres: the connection's TLS.
    pub tls: Option<TlsView>,
    /// Postgres: the `sslmode` came from `PGSSLMODE` (this value), not the URL,
    /// so the verify-full default for a remote host did not apply.
    pub sslmode_from_env: Option<String>,
    /// Postgres: which server, database and role.
    pub server: Option<ServerView>,
    /// This process was started read-only (`--read-only`): the connection cannot be switched to read-write.
    pub locked_read_only: bool,
    /// Postgres: a hot standby (read-only whatever was asked; polled, since notifications never reach it).
    pub replica: bool,
    /// On a replica, how far it trails the primary (ms), as of this answer; `None` before it replayed anything.
    pub replica_delay_ms: Option<i64>,
    /// Postgres: the schema migrations this open applied (on record in the audit log as `store.migrate`).
    pub migrated: Vec<i64>,
}

/// A saved connection. Its password, if any, is in the OS keychain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct Profile {
    pub name: String,
    pub url: String,
    pub read_only: bool,
    pub has_password: bool,
    pub last_used: Option<Millis>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Type)]
pub struct ProfileList {
    pub profiles: Vec<Profile>,
    /// Store URLs opened lately, newest first (no passwords).
    pub recent: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct ProfileSave {
    pub name: String,
    /// A password in the URL is moved to the keychain.
    pub url: String,
    pub password: Option<String>,
    pub read_only: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct ProfileRef {
    pub name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Type)]
#[serde(rename_all = "snake_case")]
pub enum SessionSort {
    Id,
    Activity,
}

#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct SessionListRequest {
    pub contract: String,
    pub id_prefix: Option<String>,
    pub has_dead_letters: bool,
    pub lagging: bool,
    pub sort: SessionSort,
    /// The `next` of the previous page.
    pub after: Option<String>,
    pub limit: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct SessionPage {
    pub items: Vec<a2_operator::model::SessionSummary>,
    pub next: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct EventView {
    pub index: u64,
    pub id: String,
    #[serde(rename = "type")]
    pub event_type: String,
    /// The payload as JSON text, integers exact.
    pub payload: String,
    pub created_at: Millis,
    pub cause: Option<a2_operator::model::Cause>,
    /// The timer whose delivery appended it.
    pub scheduled_by: Option<a2_operator::model::ScheduledBy>,
}

impl From<a2_operator::model::Event> for EventView {
    fn from(e: a2_operator::model::Event) -> Self {
        Self {
            index: e.index,
            payload: json_text(&e.payload),
            id: e.id,
            event_type: e.event_type,
            created_at: e.created_at,
            cause: e.cause,
            scheduled_by: e.scheduled_by,
        }
    }
}

/// One call of a search over a contract's sessions; the caller walks
/// `after` from call to call, showing progress, and may stop at any time.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    pub contract: String,
    /// JSON text of what the payload contains: `{"customer": "c-7"}`.
    pub payload: Option<String>,
    pub event_type: Option<String>,
    pub event_id: Option<String>,
    /// The previous page's `scanned_through`.
    pub after: Option<String>,
    /// Sessions looked at in this call (default 500).
    pub scan: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct SearchHit {
    pub session: String,
    /// Matching events in the session.
    pub matches: u64,
    pub first: EventView,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct SearchPage {
    pub found: Vec<SearchHit>,
    pub scanned: u64,
    /// Where the next call goes on from; `None`: the search is complete.
    pub scanned_through: Option<String>,
    /// The contract's sessions, on the first call (no `after`), for progress.
    pub total: Option<u64>,
}

/// One session's events that match, a chunk at a time.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct EventFilterRequest {
    pub contract: String,
    pub session: String,
    /// JSON text of what the payload contains.
    pub payload: Option<String>,
    /// Or a path condition: `$.customer = "c-7"`.
    pub path: Option<String>,
    pub event_type: Option<String>,
    pub after: Option<u64>,
    /// Events looked at in this call (default 1000).
    pub scan: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct EventFilterView {
    pub events: Vec<EventView>,
    /// The last index looked at; `None`: the session's end was reached.
    pub scanned_through: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct DeadLetterQuery {
    pub contract: Option<String>,
    pub session: Option<String>,
    pub consumer: Option<String>,
    /// Only the dead letters of one cause (a group's `cause`).
    pub cause: Option<String>,
    pub after: Option<HeadKey>,
    pub limit: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct DeadLetterPage {
    pub items: Vec<a2_operator::model::DeadLetter>,
    pub next: Option<HeadKey>,
}

/// A page of pending timers, soonest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct TimerPage {
    pub items: Vec<a2_operator::TimerView>,
    pub next: Option<a2_operator::TimerCursor>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct AttemptPage {
    pub items: Vec<Attempt>,
    pub next: Option<AttemptKey>,
}

/// Throughput per consumer: completions and failures per minute over the last `minutes`.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct ThroughputQuery {
    pub contract: Option<String>,
    pub minutes: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct DeadLetterGroupQuery {
    pub contract: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct SnapshotView {
    pub reducer: String,
    pub index: u64,
    pub size_bytes: u64,
    /// The reducer state as JSON text, integers exact.
    pub state: String,
    pub pins: Vec<a2_operator::model::HeadRef>,
    pub created_at: Millis,
}

#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    pub before: Option<u64>,
    pub limit: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct AuditView {
    pub id: u64,
    pub at: Millis,
    pub user: String,
    pub host: String,
    /// The database role it ran as (Postgres).
    pub db_user: Option<String>,
    pub action: String,
    pub contract: Option<String>,
    pub session: Option<String>,
    /// JSON text.
    pub parameters: String,
    /// JSON text.
    pub outcome: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct RedriveMany {
    pub targets: Vec<DeadLetterRef>,
    pub action: RedriveAction,
}

#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct JobRef {
    pub id: u32,
}

/// A background job (bulk redrive) as far as it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct JobView {
    pub id: u32,
    pub progress: JobProgress,
    pub finished: bool,
    pub cancelled: bool,
    pub error: Option<ApiError>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct ConsumeRequest {
    pub contract: String,
    pub session: String,
    pub consumer: String,
    /// `None`: through the session head.
    pub through: Option<u64>,
    pub mode: ConsumeMode,
    /// Export mode: the JSON-lines file to append to, a plain file name in
    /// the Studio's export directory (`--export-dir`, default `.a2/exports`).
    pub export_path: Option<String>,
}

impl ConsumeRequest {
    pub fn target(&self) -> ConsumeTarget {
        let (contract, session) = (self.contract.clone(), self.session.clone());
        ConsumeTarget { contract, session, consumer: self.consumer.clone(), through: self.through }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct ConsumePreview {
    /// Events the consume would take.
    pub events: u64,
    pub from_index: u64,
    pub through_index: u64,
}

/// Pause a consumer store-wide: every process stops claiming its work.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct PauseRequest {
    pub contract: String,
    pub consumer: String,
    /// Shown beside the consumer while it is paused.
    pub reason: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct PauseQuery {
    /// One contract's paused consumers; all when `None`.
    pub contract: Option<String>,
}

/// One process of the registry, by its id.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct ProcessRef {
    pub id: String,
}

/// The processes serving the open store, one contract's or all.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct ProcessQuery {
    pub contract: Option<String>,
}

/// An `a2.session/1` export to write into the open store.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct ImportRequest {
    /// The JSON Lines text, as `session_export` gives it.
    pub text: String,
    /// Import under this session id instead of the exported one.
    pub as_session: Option<String>,
    /// Park the copy's pending heads as dead letters, so nothing runs here by itself.
    #[serde(default)]
    pub park: bool,
}

/// Copy a session of the open store into a local SQLite file.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct CopyRequest {
    pub contract: String,
    pub session: String,
    /// Under this session id instead of its own.
    pub as_session: Option<String>,
    /// The SQLite file (created if new): the dev store when `None`; in the
    /// web mode a plain file name under the export directory.
    pub to: Option<String>,
}

/// Where an imported or copied session now is, and what was written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct ImportOutcome {
    /// The store it was written to (`sqlite:PATH` for a copy): open it to look.
    pub url: String,
    pub contract: String,
    pub session: String,
    pub events: u64,
    pub heads: u64,
    pub snapshots: u64,
    /// Heads with work left: run by a server of the contract as soon as it
    /// claims them here, unless `parked` (then dead letters to redrive).
    pub pending: u64,
    pub parked: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct ChangeWait {
    /// The `version` of the last tick the UI saw.
    pub since: u32,
    pub timeout_ms: u32,
}

/// The store's change counter: the UI reads again whenever it moves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct ChangeTick {
    pub version: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct DemoTraffic {
    /// `None`: only say whether it is flowing.
    pub on: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct DemoTrafficState {
    pub on: bool,
    pub appended: u32,
}

pub(crate) fn json_text(value: &serde_json::Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

/// Seed the demo `shop` contract into the open store, through the engine.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct DemoSeed {
    pub sessions: u32,
    pub seed: u64,
    /// Share of events whose first attempt fails; a tenth of it always fails.
    pub fail_rate: f64,
    /// Append only, 10 events a session: for scale tests.
    pub bulk: bool,
    /// Also one session `long-00000` of this many unhandled events.
    pub long_session: u64,
    /// Also one session `history-00000` whose charger ran this many attempts.
    pub long_history: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Type)]
pub struct DemoSeeded {
    pub sessions: u32,
    pub events: u64,
}

/// Let a Postgres role read the open store and nothing more.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(deny_unknown_fields)]
pub struct ReaderGrant {
    pub role: String,
}
