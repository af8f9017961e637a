//! `a2`: read and fix any A2 store from a shell. A client of the Studio's
//! command list (the same commands the desktop app and the web mode serve),
//! printed as a table or, with `--json`, as one JSON document.
//!
//! Exit codes: 0 done, 1 error, 2 usage, 3 refused because read-only,
//! 4 not found, 5 nothing changed.

mod args;
mod print;
mod when;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use a2_studio_api::{
    default_mode, web, ApiError, AttemptKey, AttemptQuery, AuditQuery, ClearSession, ConnectionInfo, ConnectionOpen,
    ConsumeMode, ConsumeRequest, ConsumerRef, CopyRequest, DeadLetterGroupQuery, DeadLetterQuery, DeadLetterRef,
    DemoSeed, EventFilterRequest, EventQuery, HeadKey, ImportRequest, JobProgress, JobRef, Limits, Mode, NoArgs,
    PauseQuery, PauseRequest, ProcessQuery, ProcessRef, ReaderGrant, Redrive, RedriveAction, RedriveAll, SearchHit,
    SearchRequest, SessionListRequest, SessionRef, SessionSort, Studio, ThroughputQuery, TimerQuery, TimerRef,
    TotalsQuery,
};
use args::{Action, Cli, Command, ConsumeKind, GroupBy, IndexKind, Sort, TimerAction};
use clap::Parser;
use serde_json::json;

/// How a command ended, beyond errors.
enum Done {
    Changed,
    Unchanged,
}

/// `Some(true)` read-only, `Some(false)` read-write, `None`: the Studio decides by the host.
fn read_only_of(cli: &Cli) -> Option<bool> {
    if cli.read_only {
        Some(true)
    } else if cli.read_write {
        Some(false)
    } else {
        None
    }
}

/// The Studio's web mode: the same commands as the desktop app, over HTTP with a token.
async fn serve(cli: &Cli, port: u16, demo_traffic: bool, export_dir: PathBuf) -> Result<(), ApiError> {
    let limits = Limits {
        read_only: cli.read_only,
        web: true,
        started_with: Some(cli.store.clone()),
        export_dir,
        ..Limits::default()
    };
    let studio = Arc::new(Studio::with_limits(&a2_studio_api::profiles::default_dir()?, limits));
    // Demo traffic runs the demo's consumers in this process, so it hosts them.
    studio.set_host_demo(demo_traffic);
    let read_only = read_only_of(cli);
    let info = studio.connection_open(open_request(cli, read_only)).await?;
    announce_writes(&info);
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
        println!("A2 Studio is serving {} on {url}", a2_studio_api::profiles::redact(&cli.store));
        println!("Open that URL in a browser on this machine; Ctrl-C stops it.");
    }
    // Said on stderr, so a script reading the URL from stdout still gets it.
    if web::Assets::get(&web::EmbeddedUi, "index.html").is_none() {
        eprintln!(
            "a2: this binary carries no Studio UI (it was built before ui/dist existed): the page will say so. \
             Build ui/ first (`cargo xtask studio` does), then this binary."
        );
    }
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let served = web::run(listener, studio.clone(), Arc::new(web::EmbeddedUi), token, shutdown).await;
    studio.stop_background().await;
    served.map_err(|e| ApiError::new(a2_studio_api::ErrorCode::Unavailable, e.to_string()))
}

/// The demo contract as an app over the wire, until Ctrl-C.
async fn serve_app(cli: &Cli, port: u16) -> Result<(), ApiError> {
    let limits = Limits { read_only: cli.read_only, ..Limits::default() };
    let studio = Studio::with_limits(&a2_studio_api::profiles::default_dir()?, limits);
    // As everywhere, a Postgres store is written only with --read-write.
    let info = studio.connection_open(open_request(cli, read_only_of(cli))).await?;
    announce_writes(&info);
    let servers = studio.app_servers().await?;
    let unavailable = |e: std::io::Error| ApiError::new(a2_studio_api::ErrorCode::Unavailable, e.to_string());
    let listener = web::bind(port).await.map_err(unavailable)?;
    let url = format!("http://127.0.0.1:{}/", listener.local_addr().map_err(unavailable)?.port());
    if cli.json {
        println!("{}", json!({ "url": url }));
    } else {
        println!("The demo app is serving {} on {url}", a2_studio_api::profiles::redact(&cli.store));
        println!("Routes: {url}shop/sessions/{{id}}/push | stream | history | state; Ctrl-C stops it.");
    }
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let stopping = servers.clone();
    let served = a2_studio_api::app::serve_app(listener, servers, shutdown).await;
    // Each server leaves the process registry before the process exits.
    for server in &stopping {
        server.stop().await;
    }
    served
}

fn open_request(cli: &Cli, read_only: Option<bool>) -> ConnectionOpen {
    ConnectionOpen { url: Some(cli.store.clone()), profile: None, password: None, read_only }
}

/// Writing to a Postgres database is a step of its own: say which one
/// before opening it (a read-write open of an older store migrates it).
fn announce_opening(cli: &Cli, read_only: Option<bool>) {
    let read_write = read_only.map_or(default_mode(&cli.store) == Mode::ReadWrite, |read_only| !read_only);
    if read_write && cli.store.trim().starts_with("postgres") {
        eprintln!(
            "a2: opening {} read-write (an older A2 schema is migrated, on record in its audit log)",
            a2_studio_api::profiles::redact(&cli.store)
        );
    }
}

/// Which database was opened read-write, as which role, and what its open migrated.
fn announce_writes(info: &ConnectionInfo) {
    if let (false, Some(server)) = (info.read_only, &info.server) {
        eprintln!(
            "a2: read-write on database '{}' at {}:{} (PostgreSQL {}) as role {}",
            server.database, server.host, server.port, server.version, server.session_user
        );
    }
    if !info.migrated.is_empty() {
        let versions: Vec<String> = info.migrated.iter().map(i64::to_string).collect();
        eprintln!("a2: applied schema migrations {} (audit log: store.migrate)", versions.join(", "));
    }
}

/// Where an export goes: the CLI's own user names any file, so its
/// directory becomes this process's export directory.
fn export_limits(cli: &Cli) -> Limits {
    let mut limits = Limits::default();
    if let Command::Consume { out: Some(file), .. } = &cli.command {
        if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
            limits.export_dir = dir.to_path_buf();
        } else {
            limits.export_dir = PathBuf::from(".");
        }
    }
    limits
}

/// Every command but `serve` is one or more Studio commands: the same list
/// the desktop app and the web mode serve, so each is scriptable and the
/// checks and formats exist once.
async fn run(cli: Cli) -> Result<Done, ApiError> {
    let studio = Studio::with_limits(&a2_studio_api::profiles::default_dir()?, export_limits(&cli));
    // This binary carries the demo contract's code; it runs only when asked to.
    studio.set_host_demo(matches!(cli.command, Command::Consume { mode: ConsumeKind::Run, .. }));
    // `init` exists to write: it asks read-write itself, and `--read-only` refuses it before anything opens.
    if matches!(cli.command, Command::Init) && cli.read_only {
        return Err(ApiError::new(
            a2_studio_api::ErrorCode::ReadOnly,
            "`init` creates the A2 schema: it cannot run --read-only",
        ));
    }
    let read_only = if matches!(cli.command, Command::Init) { Some(false) } else { read_only_of(&cli) };
    announce_opening(&cli, read_only);
    let info = if matches!(cli.command, Command::Init) {
        studio.connection_init(open_request(&cli, read_only)).await?
    } else {
        studio.connection_open(open_request(&cli, read_only)).await?
    };
    announce_writes(&info);
    let out = print::Out { json: cli.json };
    match cli.command {
        Command::Contracts => out.contracts(&studio.contract_list(NoArgs {}).await?),
        Command::Sessions { contract, prefix, dead_letters, lagging, limit, after, sort } => {
            let sort = match sort {
                Sort::Id => SessionSort::Id,
                Sort::Activity => SessionSort::Activity,
            };
            let request = SessionListRequest {
                contract,
                id_prefix: prefix,
                has_dead_letters: dead_letters,
                lagging,
                sort,
                after,
                limit,
            };
            out.sessions(&studio.session_list(request).await?);
        }
        Command::Session(t) => {
            out.header(&info);
            out.session(&studio.session_get(t.into()).await?);
        }
        Command::Events { target, after, event_type, path, limit, .. } if event_type.is_some() || path.is_some() => {
            let mut request = EventFilterRequest {
                contract: target.contract,
                session: target.session,
                payload: None,
                path,
                event_type,
                after,
                scan: None,
            };
            let mut events = Vec::new();
            while events.len() < limit as usize {
                let page = studio.event_filter(request.clone()).await?;
                events.extend(page.events);
                match page.scanned_through {
                    Some(through) => request.after = Some(through),
                    None => break,
                }
            }
            events.truncate(limit as usize);
            out.events(&events);
        }
        Command::Events { target, after, before, newest_first, limit, .. } => {
            let request =
                EventQuery { contract: target.contract, session: target.session, after, before, newest_first, limit };
            out.events(&studio.event_list(request).await?);
        }
        Command::Heads(t) => out.heads(&studio.head_list(t.into()).await?),
        Command::Presence(t) => out.presence(&studio.presence_list(t.into()).await?),
        Command::Consumers { contract, max_age, live, recompute } => {
            out.header(&info);
            let max_age_ms = max_age.saturating_mul(1000);
            let pauses = studio.consumer_pause_list(PauseQuery { contract: contract.clone() }).await?;
            out.consumers(
                &studio.consumer_overview(TotalsQuery { contract, max_age_ms, live, recompute }).await?,
                &pauses,
            );
        }
        Command::Processes { contract, id: None } => {
            out.header(&info);
            out.processes(&studio.process_list(ProcessQuery { contract }).await?);
        }
        Command::Processes { contract, id: Some(id) } => {
            out.header(&info);
            // The table shows eight characters of an id: any unique start of one will do.
            let processes = studio.process_list(ProcessQuery { contract }).await?;
            let matching: Vec<&str> =
                processes.iter().map(|p| p.server.id.as_str()).filter(|full| full.starts_with(id.as_str())).collect();
            let [full] = matching[..] else {
                return Err(ApiError::invalid(format!(
                    "{} processes' ids start with {id:?}: a2 processes lists them",
                    matching.len()
                )));
            };
            out.leased_heads(&studio.process_heads(ProcessRef { id: full.to_owned() }).await?);
        }
        Command::DeadLetters { group_by: Some(GroupBy::Cause), contract, consumer, .. } => {
            let mut groups = studio.dead_letter_groups(DeadLetterGroupQuery { contract }).await?;
            groups.retain(|g| consumer.as_ref().is_none_or(|c| *c == g.consumer));
            out.dead_letter_groups(&groups);
        }
        Command::DeadLetters { contract, session, consumer, cause, group_by: None, limit, after } => {
            let after = page_cursor::<HeadKey>(after)?;
            let query = DeadLetterQuery { contract, session, consumer, cause, after, limit };
            out.dead_letters(&studio.dead_letter_list(query).await?);
        }
        Command::Attempts { target, consumer, index, limit, after } => {
            let after = page_cursor::<AttemptKey>(after)?;
            let SessionRef { contract, session } = target.into();
            let query = AttemptQuery { contract, session, consumer, index, after, oldest_first: false, limit };
            out.attempts(&studio.attempt_list(query).await?);
        }
        Command::Throughput { contract, minutes } => {
            out.throughput(&studio.attempt_rates(ThroughputQuery { contract, minutes }).await?);
        }
        Command::Timeline(target) => {
            let SessionRef { contract, session } = target.into();
            let mut attempts = Vec::new();
            let mut after = None;
            loop {
                let query = AttemptQuery {
                    contract: contract.clone(),
                    session: session.clone(),
                    consumer: None,
                    index: None,
                    after,
                    oldest_first: true,
                    limit: 500,
                };
                let page = studio.attempt_list(query).await?;
                attempts.extend(page.items);
                match page.next {
                    Some(next) => after = Some(next),
                    None => break,
                }
            }
            // Kept in head order; a timeline reads by time.
            attempts.sort_by_key(|a| (a.started_at.unwrap_or(a.ended_at), a.ended_at));
            out.timeline(&attempts);
        }
        Command::Snapshots(t) => out.snapshots(&studio.snapshot_list(t.into()).await?),
        Command::Redrive { contract, session, consumer, index, action, all, cause, stop_at, rate } => {
            let action = match action {
                Action::Retry => RedriveAction::Retry,
                Action::Skip => RedriveAction::Skip,
            };
            if all {
                let request = RedriveAll { contract, consumer, cause, action, stop_at, rate };
                let done = redrive_all(&studio, request, !cli.json).await?;
                out.value(&json!(done), &format!("done {} of {}, {} failed", done.done, done.total, done.failed));
                return Ok(if done.done > 0 { Done::Changed } else { Done::Unchanged });
            }
            let (Some(contract), Some(session), Some(consumer), Some(index)) = (contract, session, consumer, index)
            else {
                return Err(ApiError::invalid(
                    "redrive needs --contract, --session, --consumer and --index (or --all)",
                ));
            };
            let target = DeadLetterRef { contract, session, consumer, index };
            let done = studio.dead_letter_redrive(Redrive { target, action }).await?;
            out.value(&json!(done), &format!("redriven: {}", done.redriven));
            return Ok(if done.redriven { Done::Changed } else { Done::Unchanged });
        }
        Command::Consume { target, consumer, through, mode, out: file } => {
            let request = ConsumeRequest {
                contract: target.contract,
                session: target.session,
                consumer,
                through,
                mode: match mode {
                    ConsumeKind::Run => ConsumeMode::Run,
                    ConsumeKind::Ack => ConsumeMode::Ack,
                    ConsumeKind::Export => ConsumeMode::Export,
                },
                export_path: file.and_then(|f| f.file_name().map(|n| n.to_string_lossy().into_owned())),
            };
            let preview = studio.consume_preview(request.clone()).await?;
            if !cli.json {
                eprintln!("consuming {} event(s) for '{}'", preview.events, request.consumer);
            }
            let done = studio.session_consume(request).await?;
            out.value(&json!(done), &format!("handled through index {}", done.index));
        }
        Command::Clear { target, if_last_index } => {
            let request = ClearSession { contract: target.contract, session: target.session, if_last_index };
            let done = studio.session_clear(request).await?;
            out.value(&json!(done), &format!("cleared: {} (index {})", done.cleared, done.index));
            return Ok(if done.cleared { Done::Changed } else { Done::Unchanged });
        }
        Command::Timers { contract, session, action: None } => {
            let mut query = TimerQuery { contract, session, after: None, limit: 0 };
            let mut timers = Vec::new();
            loop {
                let page = studio.timer_list(query.clone()).await?;
                timers.extend(page.items);
                match page.next {
                    Some(next) => query.after = Some(next),
                    None => break,
                }
            }
            out.timers(&timers);
        }
        Command::Timers { action: Some(TimerAction::Deliver { id }), .. } => {
            let done = studio.timer_deliver(TimerRef { id }).await?;
            let line = if done.delivered {
                format!("timer '{}' delivered to session '{}'", done.timer.id, done.timer.session)
            } else {
                format!(
                    "timer '{}' is due now: the next look of a server of '{}' delivers it",
                    done.timer.id, done.timer.contract
                )
            };
            out.value(&json!(done), &line);
        }
        Command::Timers { action: Some(TimerAction::Cancel { id }), .. } => {
            let cancelled = studio.timer_cancel(TimerRef { id }).await?;
            out.value(&json!(cancelled), &format!("timer '{}' ({}) cancelled", cancelled.id, cancelled.name));
        }
        Command::Pause { contract, consumer, reason } => {
            let paused = studio.consumer_pause(PauseRequest { contract, consumer, reason }).await?;
            let line = format!(
                "consumer '{}' of '{}' is paused (by {}: {})",
                paused.consumer, paused.contract, paused.actor, paused.reason
            );
            out.value(&json!(paused), &line);
        }
        Command::Resume { contract, consumer } => {
            let resumed = studio.consumer_resume(ConsumerRef { contract, consumer: consumer.clone() }).await?;
            let line = if resumed {
                format!("consumer '{consumer}' resumed")
            } else {
                format!("consumer '{consumer}' was not paused")
            };
            out.value(&json!({ "resumed": resumed }), &line);
            return Ok(if resumed { Done::Changed } else { Done::Unchanged });
        }
        Command::Export(t) => {
            // Streamed a page at a time: a session of any length costs one page of memory.
            let mut stdout = std::io::BufWriter::new(std::io::stdout());
            studio.session_export_write(t.into(), &mut stdout).await?;
            std::io::Write::flush(&mut stdout)
                .map_err(|e| ApiError::invalid(format!("cannot write the export: {e}")))?;
        }
        Command::Import { file, as_session, park } => {
            let text = match &file {
                Some(path) => std::fs::read_to_string(path)
                    .map_err(|e| ApiError::invalid(format!("cannot read {}: {e}", path.display())))?,
                None => std::io::read_to_string(std::io::stdin())
                    .map_err(|e| ApiError::invalid(format!("cannot read the export from stdin: {e}")))?,
            };
            let done = studio.session_import(ImportRequest { text, as_session, park }).await?;
            let pending = match (done.pending, done.parked) {
                (0, _) => String::new(),
                (n, true) => format!("; {n} pending heads parked as dead letters (redrive to run them)"),
                (n, false) => format!(
                    "; {n} pending heads run as soon as a server of contract '{}' claims them here (--park holds them)",
                    done.contract
                ),
            };
            let line = format!(
                "imported {}/{}: {} events, {} heads, {} snapshots{pending}",
                done.contract, done.session, done.events, done.heads, done.snapshots
            );
            out.value(&json!(done), &line);
        }
        Command::Copy { target, to, as_session } => {
            let to = to.map(|p| p.display().to_string());
            let request = CopyRequest { contract: target.contract, session: target.session, as_session, to };
            let done = studio.session_copy(request).await?;
            let line = format!(
                "copied into {} as {}/{}: {} events, {} heads, {} snapshots",
                done.url, done.contract, done.session, done.events, done.heads, done.snapshots
            );
            out.value(&json!(done), &line);
        }
        Command::Search { contract, payload, event_type, id } => {
            let hits = search(
                &studio,
                SearchRequest { contract, payload, event_type, event_id: id, after: None, scan: None },
                !cli.json,
            )
            .await?;
            out.search(&hits);
        }
        Command::Index { what: IndexKind::Payloads } => {
            let made = studio.payload_index(NoArgs {}).await?;
            let line = if made {
                "created index a2_events_payload (GIN) on event payloads"
            } else {
                "index a2_events_payload already exists"
            };
            out.value(&json!({ "created": made }), line);
            return Ok(if made { Done::Changed } else { Done::Unchanged });
        }
        Command::Audit { limit, after } => {
            out.audit(&studio.audit_list(AuditQuery { before: after, limit }).await?);
        }
        Command::GrantReader { role } => {
            studio.reader_role_grant(ReaderGrant { role: role.clone() }).await?;
            out.value(&json!({ "granted": role }), &format!("granted read-only access to role {role}"));
        }
        // Served by `serve` before any connection is made here.
        Command::Serve { .. } | Command::ServeApp { .. } => return Err(ApiError::invalid("serve runs on its own")),
        Command::Init => out.value(&json!(info), &format!("{} is an A2 store", info.url)),
        Command::Demo { sessions, seed, fail_rate, bulk, long_session, long_history } => {
            let done =
                studio.demo_seed(DemoSeed { sessions, seed, fail_rate, bulk, long_session, long_history }).await?;
            out.value(&json!(done), &format!("seeded {} sessions, {} events", done.sessions, done.events));
        }
    }
    Ok(Done::Changed)
}

/// Walk a search call by call until the contract's end, progress on stderr.
async fn search(studio: &Studio, mut request: SearchRequest, show: bool) -> Result<Vec<SearchHit>, ApiError> {
    let (mut hits, mut scanned, mut total) = (Vec::new(), 0, 0);
    loop {
        let page = studio.session_search(request.clone()).await?;
        total = page.total.unwrap_or(total);
        scanned += page.scanned;
        hits.extend(page.found);
        if show {
            eprint!("\rsearched {scanned} of {total} sessions, {} found", hits.len());
        }
        match page.scanned_through {
            Some(after) => request.after = Some(after),
            None => break,
        }
    }
    if show {
        eprintln!();
    }
    Ok(hits)
}

/// Redrive every matching dead letter as a Studio job, showing its progress;
/// Ctrl-C cancels it between two redrives (what was done stays done and is audited).
async fn redrive_all(studio: &Studio, request: RedriveAll, show: bool) -> Result<JobProgress, ApiError> {
    let job = studio.job_redrive_all(request).await?;
    let interrupted = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = interrupted.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let mut cancelled = false;
    let view = loop {
        let view = studio.job_get(JobRef { id: job.id }).await?;
        if show {
            let p = view.progress;
            eprint!("\r{}", print::progress_bar("redriving", p.done + p.failed, p.total, p.failed));
        }
        if view.finished {
            break view;
        }
        if !cancelled && interrupted.load(std::sync::atomic::Ordering::SeqCst) {
            studio.job_cancel(JobRef { id: job.id }).await?;
            cancelled = true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    if show {
        eprintln!();
    }
    match view.error {
        Some(error) => Err(error),
        None => Ok(view.progress),
    }
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
    if let Command::Serve { port, demo_traffic, export_dir } = &cli.command {
        return served(serve(&cli, *port, *demo_traffic, export_dir.clone()).await);
    }
    if let Command::ServeApp { port } = &cli.command {
        return served(serve_app(&cli, *port).await);
    }
    match run(cli).await {
        Ok(Done::Changed) => ExitCode::SUCCESS,
        Ok(Done::Unchanged) => ExitCode::from(5),
        Err(error) => {
            if json {
                println!("{}", json!({ "error": { "code": error.code, "message": error.message } }));
            } else {
                eprintln!("a2: {} [{}]", error.message, error.code);
            }
            ExitCode::from(error.exit_code())
        }
    }
}

/// How a server that ran until stopped exits.
fn served(result: Result<(), ApiError>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("a2: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}

/// A `--after` cursor: the `next` a previous page printed.
fn page_cursor<T: serde::de::DeserializeOwned>(after: Option<String>) -> Result<Option<T>, ApiError> {
    after
        .map(|a| {
            serde_json::from_str::<T>(&a)
                .map_err(|e| ApiError::invalid(format!("--after is not a cursor from a previous page: {e}")))
        })
        .transpose()
}

/// The Studio commands `a2` calls, and those it leaves to the apps on purpose.
#[cfg(test)]
mod parity {
    macro_rules! command_names {
        ($( $name:ident($request:ty) -> $response:ty; )*) => {
            &[$(stringify!($name)),*]
        };
    }

    /// Every command the desktop app and the web mode serve.
    const SERVED: &[&str] = a2_studio_api::studio_commands!(command_names);

    const CALLED: &[&str] = &[
        "connection_open",
        "contract_list",
        "consumer_overview",
        "session_list",
        "session_get",
        "event_list",
        "head_list",
        "dead_letter_list",
        "dead_letter_groups",
        "attempt_list",
        "attempt_rates",
        "snapshot_list",
        "audit_list",
        "dead_letter_redrive",
        "job_redrive_all",
        "job_get",
        "job_cancel",
        "consume_preview",
        "session_consume",
        "session_clear",
        "consumer_pause",
        "consumer_resume",
        "consumer_pause_list",
        "session_export",
        "session_import",
        "session_copy",
        "session_search",
        "event_filter",
        "payload_index",
        "demo_seed",
        "reader_role_grant",
        "timer_list",
        "timer_deliver",
        "timer_cancel",
        "presence_list",
        "process_list",
        "process_heads",
    ];

    /// A window's state, not an operator's action: a one-shot command has no use for them.
    const APP_ONLY: &[&str] = &[
        // Where the UI's read-only switch starts; the CLI's flags say it outright.
        "connection_default",
        // The desktop app's own dev store: the CLI names its store with --store.
        "dev_store_open",
        "connection_get",
        "connection_close",
        "profile_list",
        "profile_save",
        "profile_delete",
        "dead_letter_redrive_many",
        "change_wait",
        "demo_traffic",
        // The overview's count of sessions with presence; `a2 presence` reads one session.
        "presence_sessions",
    ];

    /// A command added to the list must be given to the CLI or named app-only here.
    #[test]
    fn every_studio_command_is_scriptable_or_named_app_only() {
        let mut accounted: Vec<&str> = CALLED.iter().chain(APP_ONLY).copied().collect();
        let mut served = SERVED.to_vec();
        accounted.sort_unstable();
        served.sort_unstable();
        assert_eq!(accounted, served);
    }
}
