//! The `a2` command line as clap reads it: the global flags, the commands and their arguments.

use std::path::PathBuf;

use a2_studio_api::SessionRef;
use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(name = "a2", version = a2_studio_api::VERSION, about = "Read and fix any A2 store")]
pub(crate) struct Cli {
    /// The store: sqlite:PATH, postgres://… or memory:. (`--help` never
    /// prints `A2_STORE`'s value: it may carry a password.)
    #[arg(long, global = true, env = "A2_STORE", hide_env_values = true, default_value = "sqlite:.a2/dev.sqlite")]
    pub(crate) store: String,
    /// Attach read-only (the default for every Postgres). With `serve`, a
    /// ceiling: no connection the web page opens can be read-write.
    #[arg(long, global = true, conflicts_with = "read_write")]
    pub(crate) read_only: bool,
    /// Attach a Postgres store read-write (a step of its own: `a2` names the
    /// database, host and server it will write to).
    #[arg(long, global = true)]
    pub(crate) read_write: bool,
    /// Print one JSON document instead of a table.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Args, Clone)]
pub(crate) struct Target {
    #[arg(long)]
    pub(crate) contract: String,
    #[arg(long)]
    pub(crate) session: String,
}

impl From<Target> for SessionRef {
    fn from(target: Target) -> Self {
        SessionRef { contract: target.contract, session: target.session }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Action {
    Retry,
    Skip,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum GroupBy {
    Cause,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Sort {
    Id,
    Activity,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ConsumeKind {
    /// Run the consumer's own code (the demo contract's, which this binary carries).
    Run,
    Ack,
    Export,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Contracts in the store.
    Contracts,
    /// Sessions of a contract, by id.
    Sessions {
        #[arg(long)]
        contract: String,
        #[arg(long)]
        prefix: Option<String>,
        /// Only sessions with dead letters.
        #[arg(long)]
        dead_letters: bool,
        /// Only sessions with work behind a head.
        #[arg(long)]
        lagging: bool,
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// The `next` of the previous page (`<millis>:<session>` with --sort activity).
        #[arg(long)]
        after: Option<String>,
        /// By session id, or most recently active first.
        #[arg(long, value_enum, default_value = "id")]
        sort: Sort,
    },
    /// One session's summary.
    Session(Target),
    /// A page of a session's events.
    Events {
        #[command(flatten)]
        target: Target,
        #[arg(long)]
        after: Option<u64>,
        #[arg(long)]
        before: Option<u64>,
        #[arg(long)]
        newest_first: bool,
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Only events of this type (oldest first, the session walked a chunk at a time).
        #[arg(long = "type", conflicts_with_all = ["before", "newest_first"])]
        event_type: Option<String>,
        /// Only events whose payload matches: `$.customer = "c-7"`.
        #[arg(long, conflicts_with_all = ["before", "newest_first"])]
        path: Option<String>,
    },
    /// Every cursor and head of a session, and why it is not moving.
    Heads(Target),
    /// Who is in a session now: each participant's live presence fields.
    Presence(Target),
    /// The processes serving --store (live, and gone within a day): host,
    /// pid, version, the consumers each runs, and when each last beat.
    Processes {
        #[arg(long)]
        contract: Option<String>,
        /// One process (its id, or the first characters a2 processes shows): the heads it runs now.
        #[arg(long)]
        id: Option<String>,
    },
    /// Every consumer with its lag and dead letters.
    Consumers {
        #[arg(long)]
        contract: Option<String>,
        /// Read-write: totals kept up to this many seconds ago will do (0:
        /// refresh now). Read-only connections read the kept totals, whatever their age.
        #[arg(long, default_value_t = 0)]
        max_age: u32,
        /// Compute the totals now, even read-only: a pass over every cursor of the store.
        #[arg(long)]
        live: bool,
        /// Read-write: recompute the kept totals by a full pass over every cursor
        /// (the repair path; the upkeep leader folds in only what changed).
        #[arg(long, conflicts_with = "live")]
        recompute: bool,
    },
    /// Dead letters store-wide, of a contract or of a session.
    DeadLetters {
        #[arg(long)]
        contract: Option<String>,
        #[arg(long)]
        session: Option<String>,
        #[arg(long)]
        consumer: Option<String>,
        /// Only the dead letters of one cause (a group's `cause`, as `--group-by cause` prints it).
        #[arg(long)]
        cause: Option<String>,
        /// Group them instead of listing them: by consumer and cause (the
        /// error with numbers, ids and UUIDs masked), largest group first.
        #[arg(long, value_enum, conflicts_with_all = ["session", "cause", "after"])]
        group_by: Option<GroupBy>,
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// The `next` cursor of the previous page.
        #[arg(long)]
        after: Option<String>,
    },
    /// A session's attempts, head by head, each head's newest first: every run,
    /// how it ended, how long it took, what it threw and what it appended.
    Attempts {
        #[command(flatten)]
        target: Target,
        #[arg(long)]
        consumer: Option<String>,
        /// One head: the event index (with --consumer).
        #[arg(long, requires = "consumer")]
        index: Option<u64>,
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// The `next` cursor of the previous page.
        #[arg(long)]
        after: Option<String>,
    },
    /// Each consumer's completions and failures per minute, from the attempt history.
    Throughput {
        #[arg(long)]
        contract: Option<String>,
        /// How far back, in minutes.
        #[arg(long, default_value_t = 60)]
        minutes: u32,
    },
    /// A session's whole attempt history by start time: what the Studio's timeline draws.
    Timeline(Target),
    /// A session's reducer snapshots.
    Snapshots(Target),
    /// Retry or skip a dead letter, or (`--all`) every one matching.
    Redrive {
        #[arg(long)]
        contract: Option<String>,
        #[arg(long)]
        session: Option<String>,
        #[arg(long)]
        consumer: Option<String>,
        #[arg(long)]
        index: Option<u64>,
        #[arg(long, value_enum)]
        action: Action,
        /// Every dead letter (of --contract, of --consumer, of --cause) as a job.
        #[arg(long, conflicts_with_all = ["session", "index"])]
        all: bool,
        /// With --all: only the dead letters of this cause (a group of `dead-letters --group-by cause`).
        #[arg(long, requires = "all")]
        cause: Option<String>,
        /// With --all: stop after this many.
        #[arg(long, requires = "all")]
        stop_at: Option<u64>,
        /// With --all: at most this many a second.
        #[arg(long, requires = "all")]
        rate: Option<f64>,
    },
    /// Move a string-lane consumer through an index.
    Consume {
        #[command(flatten)]
        target: Target,
        #[arg(long)]
        consumer: String,
        #[arg(long)]
        through: Option<u64>,
        #[arg(long, value_enum, default_value = "ack")]
        mode: ConsumeKind,
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Stop every process claiming a consumer's work, in all sessions, until
    /// it is resumed; attempts already running finish.
    Pause {
        #[arg(long)]
        contract: String,
        #[arg(long)]
        consumer: String,
        /// Shown beside the consumer while it is paused.
        #[arg(long)]
        reason: String,
    },
    /// What is due: pending scheduled tasks, soonest first (overdue ones
    /// mean no server of their contract is delivering); or deliver one now,
    /// or cancel it, by id.
    Timers {
        #[arg(long)]
        contract: Option<String>,
        /// One session's timers; needs --contract.
        #[arg(long, requires = "contract")]
        session: Option<String>,
        #[command(subcommand)]
        action: Option<TimerAction>,
    },
    /// Let a paused consumer's work be claimed again.
    Resume {
        #[arg(long)]
        contract: String,
        #[arg(long)]
        consumer: String,
    },
    /// Write a session (events, heads, dead letters, snapshots) to stdout as
    /// `a2.session/1` JSON Lines; read-only connections may export.
    Export(Target),
    /// Write an exported session (from --file, else stdin) into --store, whole
    /// or not at all; refused if that session exists there.
    Import {
        #[arg(long)]
        file: Option<PathBuf>,
        /// Import under this session id instead of the exported one.
        #[arg(long = "as")]
        as_session: Option<String>,
        /// Park the copy's pending heads as dead letters: nothing it carries
        /// runs here until an operator redrives it.
        #[arg(long)]
        park: bool,
    },
    /// Copy a session of --store into a local SQLite file (the dev store
    /// unless --to), to replay its consumers there; read-only connections may copy.
    Copy {
        #[command(flatten)]
        target: Target,
        #[arg(long)]
        to: Option<PathBuf>,
        #[arg(long = "as")]
        as_session: Option<String>,
    },
    /// Sessions of a contract with events that match: a payload JSON
    /// containment (`{"customer":"c-7"}`), a type, an id. Walks the sessions a
    /// chunk at a time, progress on stderr.
    Search {
        #[arg(long)]
        contract: String,
        #[arg(long)]
        payload: Option<String>,
        #[arg(long = "type")]
        event_type: Option<String>,
        #[arg(long)]
        id: Option<String>,
    },
    /// Create an index: `payloads` (Postgres, GIN) answers payload searches
    /// from the index, at a cost to every append.
    Index {
        #[arg(value_enum)]
        what: IndexKind,
    },
    /// Clear a session through its head.
    Clear {
        #[command(flatten)]
        target: Target,
        /// Clear only if the head is still this index.
        #[arg(long)]
        if_last_index: Option<u64>,
    },
    /// Seed the store with the demo `shop` contract, through the engine.
    Demo {
        #[arg(long, default_value_t = 40)]
        sessions: u32,
        #[arg(long, default_value_t = 7)]
        seed: u64,
        /// Share of events whose first attempt fails; a tenth of it always fails.
        #[arg(long, default_value_t = 0.1)]
        fail_rate: f64,
        /// Append only, 10 events a session: for scale tests.
        #[arg(long)]
        bulk: bool,
        /// Also one session `long-00000` of this many unhandled events (the Studio's scroll test).
        #[arg(long, default_value_t = 0)]
        long_session: u64,
        /// Also one session `history-00000` whose charger ran this many attempts (the timeline's scale test).
        #[arg(long, default_value_t = 0)]
        long_history: u64,
    },
    /// Let a Postgres role read this store and nothing more (create the role first:
    /// `CREATE ROLE a2_reader LOGIN PASSWORD '…'`); attach read-only with it in production.
    GrantReader {
        #[arg(long)]
        role: String,
    },
    /// Create the A2 schema in --store, even where the database or file holds
    /// other tables (an attach never migrates a database that is not an A2 store).
    Init,
    /// Serve the Studio (UI and commands) over HTTP on 127.0.0.1, opened on
    /// --store: the page can open that store and saved profiles, nothing else.
    Serve {
        /// 0: any free port.
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Where consume's export writes its files.
        #[arg(long, default_value = ".a2/exports")]
        export_dir: PathBuf,
        /// Keep demo traffic flowing (the demo contract's consumers run in this process).
        #[arg(long)]
        demo_traffic: bool,
    },
    /// Serve the demo contract as an A2 app over HTTP on 127.0.0.1: the wire's
    /// push, stream (SSE), history and state routes under /shop/sessions/{id}/,
    /// and at / a page that pushes to and follows a session. Writes to --store.
    ServeApp {
        /// 0: any free port.
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
    /// What operators did.
    Audit {
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Entries older than this id.
        #[arg(long)]
        after: Option<u64>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum IndexKind {
    /// Event payloads, for payload searches (Postgres).
    Payloads,
}

/// What to do to one timer.
#[derive(Debug, clap::Subcommand)]
pub enum TimerAction {
    /// Make it due now; delivered at once where this process hosts its
    /// contract, else by the next look of any server of the contract.
    Deliver { id: String },
    /// Delete it before it is delivered.
    Cancel { id: String },
}
