//! `a2`: read and fix any A2 store from a shell. A thin shell over the
//! operator API: every command is one operator call, printed as a table or,
//! with `--json`, as one JSON document.
//!
//! Exit codes: 0 done, 1 error, 2 usage, 3 refused because read-only,
//! 4 not found, 5 nothing changed.

mod print;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use a2_operator::demo::DemoOptions;
use a2_operator::{
    ActivityCursor, ActivityQuery, ClearSession, Connect, ConsumeMode, ConsumeTarget, EventQuery, Mode, Operator,
    OperatorError, Redrive, RedriveAll, SessionQuery, SessionRef, TotalsQuery,
};
use a2_store::{AuditList, DeadLetterList, HeadKey, RedriveAction};
use a2_studio_api::{web, ApiError, ConnectionOpen, Studio};
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::json;

#[derive(Parser)]
#[command(name = "a2", version, about = "Read and fix any A2 store")]
struct Cli {
    /// The store: sqlite:PATH, postgres://… or memory:.
    #[arg(long, global = true, env = "A2_STORE", default_value = "sqlite:.a2/dev.sqlite")]
    store: String,
    /// Attach read-only (the default for a Postgres host that is not this machine).
    #[arg(long, global = true, conflicts_with = "read_write")]
    read_only: bool,
    /// Attach read-write even to a remote Postgres.
    #[arg(long, global = true)]
    read_write: bool,
    /// Print one JSON document instead of a table.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct Target {
    #[arg(long)]
    contract: String,
    #[arg(long)]
    session: String,
}

impl From<Target> for SessionRef {
    fn from(target: Target) -> Self {
        SessionRef::new(target.contract, target.session)
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum Action {
    Retry,
    Skip,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Sort {
    Id,
    Activity,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ConsumeKind {
    /// Run the consumer's own code (the demo contract's, which this binary carries).
    Run,
    Ack,
    Export,
}

#[derive(Subcommand)]
enum Command {
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
    },
    /// Every cursor and head of a session, and why it is not moving.
    Heads(Target),
    /// Every consumer with its lag and dead letters.
    Consumers {
        #[arg(long)]
        contract: Option<String>,
        /// Totals kept up to this many seconds ago will do (0: compute now).
        #[arg(long, default_value_t = 0)]
        max_age: u32,
    },
    /// Dead letters store-wide, of a contract or of a session.
    DeadLetters {
        #[arg(long)]
        contract: Option<String>,
        #[arg(long)]
        session: Option<String>,
        #[arg(long)]
        consumer: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// The `next` cursor of the previous page.
        #[arg(long)]
        after: Option<String>,
    },
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
        /// Every dead letter (of --contract, of --consumer) as a job.
        #[arg(long, conflicts_with_all = ["session", "index"])]
        all: bool,
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
        sessions: usize,
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
    },
    /// Let a Postgres role read this store and nothing more (create the role first:
    /// `CREATE ROLE a2_reader LOGIN PASSWORD '…'`); attach read-only with it in production.
    GrantReader {
        #[arg(long)]
        role: String,
    },
    /// Serve the Studio (UI and commands) over HTTP on 127.0.0.1, opened on --store.
    Serve {
        /// 0: any free port.
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Keep demo traffic flowing (the demo contract's consumers run in this process).
        #[arg(long)]
        demo_traffic: bool,
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

/// How a command ended, beyond errors.
enum Done {
    Changed,
    Unchanged,
}

fn mode_of(cli: &Cli) -> Option<Mode> {
    if cli.read_only {
        Some(Mode::ReadOnly)
    } else if cli.read_write {
        Some(Mode::ReadWrite)
    } else {
        None
    }
}

/// The Studio's web mode: the same commands as the desktop app, over HTTP with a token.
async fn serve(cli: &Cli, port: u16, demo_traffic: bool) -> Result<(), ApiError> {
    let studio = Arc::new(Studio::new(&a2_studio_api::profiles::default_dir()));
    // Demo traffic runs the demo's consumers in this process, so it hosts them.
    studio.set_host_demo(demo_traffic);
    let read_only = mode_of(cli).map(|m| m == Mode::ReadOnly);
    studio.connection_open(ConnectionOpen { url: Some(cli.store.clone()), profile: None, read_only }).await?;
    if demo_traffic {
        studio.demo_traffic(a2_studio_api::DemoTraffic { on: Some(true) }).await?;
    }
    let listener = web::bind(port).await.map_err(|e| {
        ApiError::new(a2_studio_api::ErrorCode::Unavailable, format!("cannot listen on 127.0.0.1:{port}: {e}"))
    })?;
    let token = web::new_token();
    let url =
        web::url(&listener, &token).map_err(|e| ApiError::new(a2_studio_api::ErrorCode::Unavailable, e.to_string()))?;
    if cli.json {
        println!("{}", json!({ "url": url }));
    } else {
        // Never print a password from the store URL.
        println!("A2 Studio is serving {} on {url}", a2_studio_api::profiles::split_password(&cli.store).0);
        println!("Open that URL in a browser on this machine; Ctrl-C stops it.");
    }
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    web::run(listener, studio, Arc::new(web::workspace_ui()), token, shutdown)
        .await
        .map_err(|e| ApiError::new(a2_studio_api::ErrorCode::Unavailable, e.to_string()))
}

async fn run(cli: Cli) -> Result<Done, OperatorError> {
    let mode = mode_of(&cli);
    let mut op = Operator::connect(&Connect { mode, ..Connect::new(cli.store.clone()) }).await?;
    if let Command::Consume { mode: ConsumeKind::Run, .. } = cli.command {
        // This binary carries the demo contract's code; it runs only when asked to.
        op.demo_host()?;
    }
    let out = print::Out { json: cli.json };
    match cli.command {
        Command::Contracts => out.contracts(&op.contract_list().await?),
        Command::Sessions { contract, limit, after, sort: Sort::Activity, .. } => {
            let before = after.as_deref().map(str::parse::<ActivityCursor>).transpose()?;
            let page = op.session_list_by_activity(ActivityQuery { contract, before, limit }).await?;
            let next = page.next.as_ref().map(ActivityCursor::to_string);
            out.sessions(&a2_operator::Page { items: page.items, next });
        }
        Command::Sessions { contract, prefix, dead_letters, lagging, limit, after, sort: Sort::Id } => {
            let query =
                SessionQuery { contract, id_prefix: prefix, has_dead_letters: dead_letters, lagging, after, limit };
            out.sessions(&op.session_list(query).await?)
        }
        Command::Session(t) => out.session(&op.session_get(&t.into()).await?),
        Command::Events { target, after, before, newest_first, limit } => {
            out.events(&op.event_list(EventQuery { session: target.into(), after, before, newest_first, limit }).await?)
        }
        Command::Heads(t) => out.heads(&op.head_list(&t.into()).await?),
        Command::Consumers { contract, max_age } => {
            let overview =
                op.consumer_overview(TotalsQuery { contract, max_age_ms: i64::from(max_age) * 1000 }).await?;
            out.consumers(&overview.totals)
        }
        Command::DeadLetters { contract, session, consumer, limit, after } => {
            let after = after
                .map(|a| {
                    serde_json::from_str::<HeadKey>(&a).map_err(|e| {
                        OperatorError::invalid(format!("--after is not a cursor from a previous page: {e}"))
                    })
                })
                .transpose()?;
            let session = match (&contract, session) {
                (Some(c), Some(s)) => Some(a2_store::session_key(c, &s)),
                (None, Some(_)) => return Err(OperatorError::invalid("--session needs --contract")),
                (_, None) => None,
            };
            out.dead_letters(&op.dead_letter_list(DeadLetterList { contract, session, consumer, after, limit }).await?)
        }
        Command::Snapshots(t) => out.snapshots(&op.snapshot_list(&t.into()).await?),
        Command::Redrive { contract, session, consumer, index, action, all, stop_at, rate } => {
            let action = match action {
                Action::Retry => RedriveAction::Retry,
                Action::Skip => RedriveAction::Skip,
            };
            if all {
                let job = RedriveAll { contract, consumer, action, stop_at, rate };
                let show = !cli.json;
                // Ctrl-C stops the job between two redrives; what was done stays done and is audited.
                let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
                let flag = stop.clone();
                tokio::spawn(async move {
                    if tokio::signal::ctrl_c().await.is_ok() {
                        flag.store(true, std::sync::atomic::Ordering::SeqCst);
                    }
                });
                let done = op
                    .dead_letter_redrive_all(
                        job,
                        || stop.load(std::sync::atomic::Ordering::SeqCst),
                        |p| {
                            if show {
                                eprint!("\r{}", print::progress_bar("redriving", p.done + p.failed, p.total, p.failed));
                            }
                        },
                    )
                    .await?;
                if show {
                    eprintln!();
                }
                out.value(&json!(done), &format!("done {} of {}, {} failed", done.done, done.total, done.failed));
                return Ok(if done.done > 0 { Done::Changed } else { Done::Unchanged });
            }
            let (Some(contract), Some(session), Some(consumer), Some(index)) = (contract, session, consumer, index)
            else {
                return Err(OperatorError::invalid(
                    "redrive needs --contract, --session, --consumer and --index (or --all)",
                ));
            };
            let redrive = Redrive { session: SessionRef::new(contract, session), consumer, index, action };
            let done = op.dead_letter_redrive(redrive).await?;
            out.value(&json!(done), &format!("redriven: {}", done.redriven));
            return Ok(if done.redriven { Done::Changed } else { Done::Unchanged });
        }
        Command::Consume { target, consumer, through, mode, out: file } => {
            let mode = match mode {
                ConsumeKind::Run => ConsumeMode::Run,
                ConsumeKind::Ack => ConsumeMode::Ack,
                ConsumeKind::Export => ConsumeMode::Export,
            };
            let target = ConsumeTarget { session: target.into(), consumer, through };
            let preview = op.consume_preview(&target).await?;
            if !cli.json {
                eprintln!("consuming {preview} event(s) for '{}'", target.consumer);
            }
            let done = op.session_consume(&target, mode, file.as_deref()).await?;
            out.value(&json!(done), &format!("handled through index {}", done.index));
        }
        Command::Clear { target, if_last_index } => {
            let done = op.session_clear(ClearSession { session: target.into(), if_last_index }).await?;
            out.value(&json!(done), &format!("cleared: {} (index {})", done.cleared, done.index));
            return Ok(if done.cleared { Done::Changed } else { Done::Unchanged });
        }
        Command::Audit { limit, after } => out.audit(&op.audit_list(AuditList { before: after, limit }).await?),
        Command::GrantReader { role } => {
            op.reader_role_grant(&role).await?;
            out.value(&json!({ "granted": role }), &format!("granted read-only access to role {role}"));
        }
        // Served by `serve` before any connection is made here.
        Command::Serve { .. } => return Err(OperatorError::invalid("serve runs on its own")),
        Command::Demo { sessions, seed, fail_rate, bulk, long_session } => {
            if op.is_read_only() {
                return Err(OperatorError::ReadOnly { action: "demo".into() });
            }
            if !(0.0..=1.0).contains(&fail_rate) {
                return Err(OperatorError::invalid(format!("--fail-rate must be between 0 and 1, not {fail_rate}")));
            }
            let options = DemoOptions { sessions, seed, fail_rate, bulk };
            let mut events = op.demo_seed(options).await?;
            if long_session > 0 {
                events += op.demo_seed_long_session("long-00000", long_session).await?;
            }
            out.value(
                &json!({ "sessions": sessions, "events": events }),
                &format!("seeded {sessions} sessions, {events} events"),
            );
        }
    }
    Ok(Done::Changed)
}

fn main() -> ExitCode {
    // Before any thread starts, so `serve` can keep profile passwords in the keychain.
    a2_studio_api::profiles::prepare_keychain();
    match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime.block_on(cli_main()),
        Err(error) => {
            eprintln!("a2: cannot start the async runtime: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn cli_main() -> ExitCode {
    let cli = Cli::parse();
    let json = cli.json;
    if let Command::Serve { port, demo_traffic } = cli.command {
        return match serve(&cli, port, demo_traffic).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("a2: {error}");
                ExitCode::from(a2_operator::exit_code(error.code.as_str()))
            }
        };
    }
    match run(cli).await {
        Ok(Done::Changed) => ExitCode::SUCCESS,
        Ok(Done::Unchanged) => ExitCode::from(5),
        Err(error) => {
            if json {
                println!("{}", json!({ "error": { "code": error.code(), "message": error.to_string() } }));
            } else {
                eprintln!("a2: {error} [{}]", error.code());
            }
            ExitCode::from(error.exit_code())
        }
    }
}
