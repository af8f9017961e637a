//! `cargo xtask bench`: the engine's throughput against the same Postgres
//! (and the SQLite dev store), printed one figure a line:
//! `bench <store> <what> <figure>=<value>`.
//!
//! - append: single-event appends from 16 concurrent writers, against raw
//!   single-row INSERTs of an event-shaped row at the same concurrency; and
//!   the same appends straight to the store, without the engine.
//! - drain: a concurrent consumer that returns nothing (a job queue's shape)
//!   working through sessions × events, as heads completed per second.
//! - with `--reads`: the Studio's reads through the operator API on a demo
//!   store of 100,000 sessions / 1,000,000 events, as p50 and p95.
//! - with `--peers` (alone): graphile-worker and pg-boss beside our drain
//!   and append, interleaved over 3 rounds, with medians and ratios.
//! - with `--memory` (alone): a worker's resident memory while draining a
//!   1M-event store.
//! - with `--sse` (alone): 1,000 SSE clients on one session while 10,000
//!   events are pushed, against a server process of its own: delivery
//!   delay p50/p99/max and the server's RSS (`--sse-clients`, `--sse-events`,
//!   `--sse-store memory|sqlite|postgres`).
//! - with `--replica`: the same reads on a hot standby (a throwaway primary
//!   and its `pg_basebackup -R` replica), seeded on the primary.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "a2-bench/peers.rs"]
mod peers;
#[path = "a2-bench/pooled.rs"]
mod pooled;
#[path = "a2-bench/probe.rs"]
mod probe;
#[path = "a2-bench/sse.rs"]
mod sse;

use a2_e2e::{open_with, OpenOptions};
use a2_engine::{AppendInput, BoxError, Consumer, Contract, DrainTimings, Server};
use a2_store::Store;
use serde_json::json;

const WRITERS: usize = 16;
const WINDOW: Duration = Duration::from_secs(5);

fn contract() -> Result<Contract, a2_engine::A2Error> {
    Contract::new("bench")?.event_with("job", |_| Ok(()))
}

fn job_consumer(done: Arc<AtomicU64>) -> Result<Consumer, a2_engine::A2Error> {
    Consumer::builder("jobs").run(move |_| {
        let done = done.clone();
        async move {
            done.fetch_add(1, Ordering::Relaxed);
            Ok::<(), BoxError>(())
        }
    })
}

async fn raw_inserts(url: &str, schema: &str) -> Result<f64, String> {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(WRITERS as u32)
        .connect(url)
        .await
        .map_err(|e| e.to_string())?;
    sqlx::query(&format!(
        "CREATE TABLE IF NOT EXISTS {schema}.raw_events (session TEXT NOT NULL, idx BIGINT NOT NULL, id TEXT NOT NULL, \
         type TEXT NOT NULL, payload JSONB NOT NULL, created_at BIGINT NOT NULL, PRIMARY KEY (session, idx))"
    ))
    .execute(&pool)
    .await
    .map_err(|e| e.to_string())?;
    let count = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (pool, count, schema) = (pool.clone(), count.clone(), schema.to_owned());
        writers.push(tokio::spawn(async move {
            let mut n = 0i64;
            while start.elapsed() < WINDOW {
                n += 1;
                let sql = format!("INSERT INTO {schema}.raw_events VALUES ($1, $2, $3, 'job', $4, $5)");
                let done = sqlx::query(&sql)
                    .bind(format!("raw\u{1f}w{w}"))
                    .bind(n)
                    .bind(format!("id-{n}"))
                    .bind(sqlx::types::Json(json!({ "n": n })))
                    .bind(n)
                    .execute(&pool)
                    .await;
                if done.is_ok() {
                    count.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for writer in writers {
        writer.await.map_err(|e| e.to_string())?;
    }
    Ok(count.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64())
}

/// Single-event appends from concurrent writers, each to sessions of its own.
async fn appends(server: &Server) -> Result<f64, String> {
    let count = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (server, count) = (server.clone(), count.clone());
        writers.push(tokio::spawn(async move {
            let mut n = 0u64;
            while start.elapsed() < WINDOW {
                n += 1;
                let Ok(session) = server.session(&format!("append-w{w}-s{}", n % 64)) else { return };
                if session.append(vec![AppendInput::new("job", json!({ "n": n }))]).await.is_ok() {
                    count.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for writer in writers {
        writer.await.map_err(|e| e.to_string())?;
    }
    Ok(count.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64())
}

/// The same appends straight to the store (ids made here, no engine): with
/// `appends`, it splits the append's cost between the engine and the SQL.
async fn store_appends(store: Arc<dyn Store>) -> Result<f64, String> {
    let count = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (store, count) = (store.clone(), count.clone());
        writers.push(tokio::spawn(async move {
            let mut n = 0u64;
            while start.elapsed() < WINDOW {
                n += 1;
                let event = a2_store::NewEvent {
                    id: format!("store-w{w}-n{n}"),
                    event_type: "job".into(),
                    payload: json!({ "n": n }),
                    cause: None,
                    scheduled_by: None,
                    targets: Vec::new(),
                };
                let session = a2_store::session_key("bench", &format!("store-w{w}-s{}", n % 64));
                let append =
                    a2_store::EventAppend { session, events: vec![event], consumers: Vec::new(), origin_index: None };
                if store.event_append(append).await.is_ok() {
                    count.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for writer in writers {
        writer.await.map_err(|e| e.to_string())?;
    }
    Ok(count.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64())
}

/// What the drained consumer is: a job queue's shape, or an ordered log consumer.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    /// A concurrent consumer whose run returns nothing.
    Jobs,
    /// A string-lane consumer (one ordered cursor a session) whose run returns one event.
    Log,
}

/// Whether the drains measured arm the watchdog (`--drain-only` measures both, interleaved).
static WATCHDOG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

async fn drain(
    store: Arc<dyn Store>,
    sessions: usize,
    events: usize,
    analyze: Option<(&str, &str)>,
) -> Result<f64, String> {
    drain_shape(store, sessions, events, Shape::Jobs, "drain", analyze).await
}

/// Planner statistics for every table of `schema`, as a production store has
/// them (autovacuum analyzes a table within a minute of a load). A schema
/// filled a second ago has none, and then the planner may look a head up by
/// `a2_heads_by_consumer` (consumer, session) rather than its primary key,
/// reading every head of the session at each lookup: the drain measured 27 %
/// slower so. The peers' tables get the same (`bench/peers/run.mjs`).
/// `vacuum` also sets the visibility map, as a long-lived store has it (index-only scans).
async fn analyze_schema(url: &str, schema: &str, vacuum: bool) -> Result<(), String> {
    let command = if vacuum { "VACUUM ANALYZE" } else { "ANALYZE" };
    let pool = sqlx::PgPool::connect(url).await.map_err(|e| e.to_string())?;
    let tables: Vec<String> = sqlx::query_scalar("SELECT tablename::text FROM pg_tables WHERE schemaname = $1")
        .bind(schema)
        .fetch_all(&pool)
        .await
        .map_err(|e| e.to_string())?;
    for table in tables {
        let sql = format!("{command} {schema}.\"{table}\"");
        sqlx::query(&sql).execute(&pool).await.map_err(|e| e.to_string())?;
    }
    pool.close().await;
    Ok(())
}

/// `sessions` × `events` appended, then drained by one server; the rate is
/// the events handled a second, each checked in the store afterwards (no
/// lag left), not only counted in the handler.
async fn drain_shape(
    store: Arc<dyn Store>,
    sessions: usize,
    events: usize,
    shape: Shape,
    prefix: &str,
    analyze: Option<(&str, &str)>,
) -> Result<f64, String> {
    let setup = DrainSetup { shape, prefix, analyze, max_running: None, probe: None, upkeep: false };
    Ok(drain_measured(store, sessions, events, setup).await?.0)
}

/// How a measured drain runs and what else it reports.
struct DrainSetup<'a> {
    shape: Shape,
    /// Session ids start with this (each drain its own sessions).
    prefix: &'a str,
    /// `(url, schema)`: analyze the schema's tables before draining.
    analyze: Option<(&'a str, &'a str)>,
    /// The server's `max_running` (run permits), when not the default 256.
    max_running: Option<usize>,
    /// Report CPU, idleness, and (given a pool on the store's server) commits and WAL a job.
    probe: Option<Option<&'a sqlx::PgPool>>,
    /// Refresh the kept totals every 2 s while draining, as the upkeep leader does.
    upkeep: bool,
}

/// A drain's rate and, with a probe, its other figures as `key=value` pairs.
async fn drain_measured(
    store: Arc<dyn Store>,
    sessions: usize,
    events: usize,
    setup: DrainSetup<'_>,
) -> Result<(f64, String), String> {
    let DrainSetup { shape, prefix, analyze, max_running, probe, upkeep } = setup;
    let done = Arc::new(AtomicU64::new(0));
    let (consumer, contract) = match shape {
        Shape::Jobs => (job_consumer(done.clone()), contract()),
        Shape::Log => {
            let counted = done.clone();
            let ledger = Consumer::builder("ledger").lane("main").types(["job"]).run(move |ctx| {
                let counted = counted.clone();
                async move {
                    counted.fetch_add(1, Ordering::Relaxed);
                    Ok::<_, BoxError>(AppendInput::new("job.done", json!({ "of": ctx.event.index })))
                }
            });
            let contract = contract().and_then(|c| c.event_with("job.done", |_| Ok(())));
            (ledger, contract)
        }
    };
    let (consumer, contract) = (consumer.map_err(|e| e.to_string())?, contract.map_err(|e| e.to_string())?);
    let seeding = Server::builder(contract.clone(), store.clone())
        .consumer(consumer.clone())
        .run_in_background(false)
        .build()
        .map_err(|e| e.to_string())?;
    for s in 0..sessions {
        let batch = (0..events).map(|n| AppendInput::new("job", json!({ "n": n }))).collect();
        seeding
            .session(&format!("{prefix}-{s}"))
            .map_err(|e| e.to_string())?
            .append(batch)
            .await
            .map_err(|e| e.to_string())?;
    }
    if let Some((url, schema)) = analyze {
        analyze_schema(url, schema, false).await?;
    }
    let builder = Server::builder(contract, store.clone())
        .consumer(consumer)
        .timings(DrainTimings { claim_batch: 256, ..DrainTimings::default() })
        .run_in_background(false);
    let builder = match max_running {
        Some(permits) => builder.max_running(permits),
        None => builder,
    };
    // A configured scheduler arms the drain watchdog on every claim and beat: its cost is measured beside.
    let builder = if WATCHDOG.load(std::sync::atomic::Ordering::Relaxed) {
        builder.scheduler(Arc::new(a2_engine::StoreScheduler::new(store.clone())))
    } else {
        builder
    };
    let server = builder.build().map_err(|e| e.to_string())?;
    let ids: Vec<String> = (0..sessions).map(|s| format!("{prefix}-{s}")).collect();
    let probing = match probe {
        Some(pool) => Some(probe::Probe::start(pool).await),
        None => None,
    };
    let refreshes = Arc::new(Refreshes::default());
    if upkeep {
        // A steady leader's kept totals are current when the drain starts: catch up before the clock.
        refresh_bench_totals(&store).await?;
    }
    let leader = upkeep.then(|| tokio::spawn(lead_upkeep(store.clone(), refreshes.clone())));
    let start = Instant::now();
    let mut drains = tokio::task::JoinSet::new();
    for id in ids {
        let session = server.session(&id).map_err(|e| e.to_string())?;
        drains.spawn(async move { session.drain().await });
    }
    while let Some(joined) = drains.join_next().await {
        joined.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
    }
    let elapsed = start.elapsed();
    if let Some(leader) = leader {
        leader.abort();
    }
    let total = (sessions * events) as u64;
    let figures = match (probing, probe) {
        (Some(probing), Some(pool)) => probing.finish(pool, total).await,
        _ if upkeep => refreshes.figures(),
        _ => String::new(),
    };
    let handled = done.load(Ordering::Relaxed);
    if handled < total {
        return Err(format!("only {handled} of {total} jobs ran"));
    }
    let totals = store.consumer_totals(Some("bench")).await.map_err(|e| e.to_string())?;
    let behind: u64 = totals.iter().map(|t| t.total_lag).sum();
    if behind > 0 {
        return Err(format!("the store still shows {behind} events behind after the drain"));
    }
    Ok((total as f64 / elapsed.as_secs_f64(), figures))
}

/// The refreshes a drain's upkeep leader ran inside the measured window, and their time.
#[derive(Default)]
struct Refreshes {
    count: AtomicU64,
    micros: AtomicU64,
}

impl Refreshes {
    fn figures(&self) -> String {
        let count = self.count.load(Ordering::Relaxed);
        let ms = self.micros.load(Ordering::Relaxed) as f64 / 1000.0;
        format!("refreshes={count} refresh_ms_each={:.1}", if count == 0 { 0.0 } else { ms / count as f64 })
    }
}

async fn refresh_bench_totals(store: &Arc<dyn Store>) -> Result<(), String> {
    let refresh = a2_store::TotalsRefresh { contract: Some("bench".into()), ..a2_store::TotalsRefresh::default() };
    store.consumer_totals_refresh(refresh).await.map(|_| ()).map_err(|e| format!("the upkeep's refresh failed: {e}"))
}

/// What the upkeep leader does to a store while it drains: fold what changed
/// into the kept totals, then wait 2 s (`DrainTimings::totals_refresh`), as
/// the engine's leader does. The first comes half a period in, about the
/// phase of a leader that was already running.
async fn lead_upkeep(store: Arc<dyn Store>, refreshes: Arc<Refreshes>) {
    let period = DrainTimings::default().totals_refresh;
    tokio::time::sleep(period / 2).await;
    loop {
        let started = Instant::now();
        if let Err(error) = refresh_bench_totals(&store).await {
            eprintln!("a2-bench: {error}");
        }
        refreshes.micros.fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        refreshes.count.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(period).await;
    }
}

/// The jobs drain with the upkeep leader refreshing beside it and without,
/// interleaved over five rounds: what keeping the totals costs the drain.
/// Each drain is long enough (60,000 jobs, a few seconds) for the leader to
/// refresh inside it; a drain shorter than the period would measure nothing.
async fn totals_cost(store: Arc<dyn Store>, analyze: (&str, &str)) -> Result<(), String> {
    let (mut with, mut without, mut leader) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..5 {
        // Each drain's store holds the runs of every drain before it: which goes first alternates.
        for upkeep in if round % 2 == 0 { [false, true] } else { [true, false] } {
            let prefix = format!("upkeep-{round}-{upkeep}");
            let setup = DrainSetup {
                shape: Shape::Jobs,
                prefix: &prefix,
                analyze: Some(analyze),
                max_running: None,
                probe: None,
                upkeep,
            };
            let (rate, figures) = drain_measured(store.clone(), 600, 100, setup).await?;
            if upkeep {
                with.push(rate);
                leader.push(figures);
            } else {
                without.push(rate)
            };
        }
    }
    let (with, without) = (peers::median(&mut with), peers::median(&mut without));
    println!(
        "bench postgres drain totals_cost jobs_per_s_with_upkeep={with:.0} jobs_per_s_without={without:.0} ratio={:.2} leader=[{}]",
        with / without,
        leader.join(" | ")
    );
    Ok(())
}

/// The upkeep leader's refresh on a seeded store, each after 1,000 sessions
/// changed (an event appended to each) and past the settling window, so it
/// folds in those and its sweep's slice: p50 and p95.
async fn totals_refresh_figures(name: &str, store: &Arc<dyn Store>, sessions: usize) -> Result<(), String> {
    const CHANGED: usize = 1_000;
    let refresh = || {
        let refresh = a2_store::TotalsRefresh { contract: Some("shop".into()), ..a2_store::TotalsRefresh::default() };
        store.consumer_totals_refresh(refresh)
    };
    refresh().await.map_err(|e| e.to_string())?;
    let (mut times, mut folded) = (Vec::new(), 0);
    let settle = Duration::from_millis((a2_store::TOTALS_SETTLE_MS + a2_store::SESSION_RESTAMP_MS) as u64 + 100);
    // Ids of this run's own: a store kept from an earlier run already holds that run's.
    let run = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    for round in 0..10 {
        // Past the settling window twice, with a refresh between, so the timed refresh folds in only
        // this round's changes and its sweep's slice, not the last round's again.
        tokio::time::sleep(settle).await;
        refresh().await.map_err(|e| e.to_string())?;
        tokio::time::sleep(settle).await;
        let mut appends = tokio::task::JoinSet::new();
        for i in 0..CHANGED {
            let id = format!("order-{:05}", ((round * CHANGED + i) * 7919) % sessions);
            let event = a2_store::NewEvent {
                id: format!("bench-refresh-{run}-{round}-{i}"),
                event_type: "order.noted".into(),
                payload: json!({ "round": round }),
                cause: None,
                scheduled_by: None,
                targets: Vec::new(),
            };
            let append = a2_store::EventAppend {
                session: a2_store::session_key("shop", &id),
                events: vec![event],
                consumers: Vec::new(),
                origin_index: None,
            };
            let store = store.clone();
            appends.spawn(async move { store.event_append(append).await });
            if appends.len() >= WRITERS {
                if let Some(joined) = appends.join_next().await {
                    joined.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
                }
            }
        }
        while let Some(joined) = appends.join_next().await {
            joined.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
        }
        let started = Instant::now();
        folded = refresh().await.map_err(|e| e.to_string())?.sessions_folded;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "bench {name} totals_refresh changed_sessions={CHANGED} folded={folded} p50_ms={:.1} p95_ms={:.1}",
        at(0.5),
        at(0.95)
    );
    Ok(())
}

/// This process's resident memory now, in MB (Linux `/proc/self/status`).
fn rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 =
        status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb / 1024.0)
}

/// `--memory`: a background worker finding and draining a 1M-event store
/// (10,000 sessions × 100 jobs) as one would after a restart, its resident
/// memory sampled every 100 ms while it drains (target: under 150 MB).
async fn worker_memory(url: &str) -> Result<(), String> {
    let schema = format!("a2_memory_{}", std::process::id());
    let options = OpenOptions { schema: Some(schema.clone()), max_connections: Some(32), ..OpenOptions::default() };
    let store = open_with(url, options).await.map_err(|e| e.to_string())?;
    let result = worker_memory_in(store).await;
    drop_schema(url, &schema).await;
    let (rate, before, peak) = result?;
    println!(
        "bench memory worker_drain events=1000000 jobs_per_s={rate:.0} rss_mb_before={before:.0} rss_mb_peak={peak:.0}"
    );
    Ok(())
}

async fn worker_memory_in(store: Arc<dyn Store>) -> Result<(f64, f64, f64), String> {
    const SESSIONS: usize = 10_000;
    const EVENTS: usize = 100;
    let done = Arc::new(AtomicU64::new(0));
    let contract = contract().map_err(|e| e.to_string())?;
    let consumer = job_consumer(done.clone()).map_err(|e| e.to_string())?;
    let seeding = Server::builder(contract.clone(), store.clone())
        .consumer(consumer.clone())
        .run_in_background(false)
        .build()
        .map_err(|e| e.to_string())?;
    let mut appends = tokio::task::JoinSet::new();
    for s in 0..SESSIONS {
        let session = seeding.session(&format!("memory-{s}")).map_err(|e| e.to_string())?;
        appends.spawn(async move {
            let batch = (0..EVENTS).map(|n| AppendInput::new("job", json!({ "n": n }))).collect();
            session.append(batch).await
        });
        if appends.len() >= 16 {
            if let Some(joined) = appends.join_next().await {
                joined.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
            }
        }
    }
    while let Some(joined) = appends.join_next().await {
        joined.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
    }
    drop(seeding);
    let before = rss_mb().unwrap_or(0.0);
    let start = Instant::now();
    let timings = DrainTimings { claim_batch: 256, rescue_every: Duration::from_secs(1), ..DrainTimings::default() };
    let worker = Server::builder(contract, store)
        .consumer(consumer)
        .timings(timings)
        .run_in_background(true)
        .build()
        .map_err(|e| e.to_string())?;
    let total = (SESSIONS * EVENTS) as u64;
    let mut peak = before;
    while done.load(Ordering::Relaxed) < total {
        if start.elapsed() > Duration::from_secs(1800) {
            return Err(format!("the worker drained {} of {total} in 30 minutes", done.load(Ordering::Relaxed)));
        }
        peak = peak.max(rss_mb().unwrap_or(0.0));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let rate = total as f64 / start.elapsed().as_secs_f64();
    drop(worker);
    Ok((rate, before, peak))
}

/// p50 and p95 of `samples` runs of a read, in milliseconds.
async fn percentiles<F, Fut, T>(samples: usize, mut read: F) -> Result<(f64, f64), String>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = Result<T, a2_operator::OperatorError>>,
{
    let mut times = Vec::with_capacity(samples);
    for i in 0..samples {
        let start = Instant::now();
        read(i).await.map_err(|e| e.to_string())?;
        times.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
    Ok((at(0.5), at(0.95)))
}

/// A demo store of `sessions` bulk sessions (10 events each) and a few
/// hundred lively ones, analysed and with kept totals, as a production
/// store the Studio reads would be.
async fn seed_reads(
    name: &str,
    store: Arc<dyn Store>,
    sessions: usize,
    analyze: Option<(&str, &str)>,
) -> Result<(), String> {
    use a2_operator::demo::{self, DemoOptions};
    let started = Instant::now();
    let bulk = DemoOptions { sessions, bulk: true, ..DemoOptions::default() };
    let events = demo::seed(store.clone(), bulk).await.map_err(|e| e.to_string())?;
    // A few hundred sessions run by the demo's consumers: heads, retries, dead letters, snapshots.
    let lively = demo::seed(store.clone(), DemoOptions { sessions: 300, fail_rate: 0.3, ..DemoOptions::default() })
        .await
        .map_err(|e| e.to_string())?;
    eprintln!("a2-bench: seeded {name} with {} events in {:?}", events + lively, started.elapsed());
    // A production database has planner statistics (autovacuum keeps them); a fresh load has none yet.
    if let Some((url, schema)) = analyze {
        analyze_schema(url, schema, true).await?;
    }
    refresh_totals(name, &store).await
}

/// Writers keep consumer totals (the reads are a read-only Studio's): what a
/// background server's refresh of the whole store costs, printed.
async fn refresh_totals(name: &str, store: &Arc<dyn Store>) -> Result<(), String> {
    let started = Instant::now();
    let full = a2_store::TotalsRefresh { full: true, ..a2_store::TotalsRefresh::default() };
    store.consumer_totals_refresh(full).await.map_err(|e| e.to_string())?;
    println!("bench {name} consumer_totals_refresh ms={:.0}", started.elapsed().as_secs_f64() * 1000.0);
    Ok(())
}

/// The Studio's reads through the operator API, on 100k sessions / 1M events
/// (seeded here, unless `seeded`: a store an earlier run left).
async fn reads(
    name: &str,
    store: Arc<dyn Store>,
    sessions: usize,
    analyze: Option<(&str, &str)>,
    seeded: bool,
) -> Result<(), String> {
    if seeded {
        refresh_totals(name, &store).await?;
    } else {
        seed_reads(name, store.clone(), sessions, analyze).await?;
    }
    totals_refresh_figures(name, &store, sessions).await?;
    let attached = a2_operator::Attached::new(store, a2_operator::StoreKind::Memory, a2_operator::Mode::ReadOnly);
    measure_reads(name, a2_operator::Operator::new(attached, a2_operator::Actor::current()), sessions).await
}

/// The same reads on a hot standby of a throwaway primary, seeded there and
/// replayed: how production is usually inspected.
async fn replica_reads(sessions: usize) -> Result<(), String> {
    let primary = a2_e2e::cluster::Cluster::start()?;
    let standby = primary.start_standby()?;
    let store = open_with(&primary.url, OpenOptions { max_connections: Some(16), ..OpenOptions::default() })
        .await
        .map_err(|e| e.to_string())?;
    seed_reads("postgres-primary", store.clone(), sessions, Some((&primary.url, "public"))).await?;
    let mut connect = a2_operator::Connect::new(standby.url.clone());
    connect.statement_timeout = Duration::from_secs(30);
    let op = a2_operator::Operator::connect(&connect, &a2_store_registry::Registry).await.map_err(|e| e.to_string())?;
    let started = Instant::now();
    while op.replica_delay_ms().await.map_err(|e| e.to_string())? != Some(0) {
        if started.elapsed() > Duration::from_secs(300) {
            return Err("the standby did not catch up within 5 minutes".into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!("a2-bench: the standby caught up {:?} after the seed", started.elapsed());
    measure_reads("postgres-replica", op, sessions).await
}

/// p50/p95 of each Studio read through `op`, printed as `bench <name> <read> p50_ms= p95_ms=`.
async fn measure_reads(name: &str, op: a2_operator::Operator, sessions: usize) -> Result<(), String> {
    let id = |i: usize| format!("order-{:05}", (i * 7919) % sessions);
    let samples = 100;
    let figures = [
        (
            "session_page",
            percentiles(samples, |i| {
                op.session_list(a2_operator::SessionQuery {
                    contract: "shop".into(),
                    after: Some(id(i)),
                    limit: 50,
                    ..Default::default()
                })
            })
            .await?,
        ),
        (
            "events_page",
            percentiles(samples, |i| {
                let (op, session) = (op.clone(), id(i));
                let query = a2_operator::EventQuery {
                    contract: "shop".into(),
                    session,
                    after: None,
                    before: None,
                    newest_first: true,
                    limit: 100,
                };
                async move { op.event_list(query).await }
            })
            .await?,
        ),
        (
            "heads_of_session",
            percentiles(samples, |i| {
                let (op, session) = (op.clone(), id(i));
                async move { op.head_list(&a2_operator::SessionRef::new("shop", session)).await }
            })
            .await?,
        ),
        ("consumer_totals_recomputed", percentiles(5, |_| op.consumer_totals(Some("shop"))).await?),
        (
            "consumer_totals",
            percentiles(samples, |_| {
                // The kept totals, whatever their age: a refresh of a large store takes seconds, and a
                // read-only connection given older ones than it accepts recomputes them (the line above).
                op.consumer_overview(a2_operator::TotalsQuery {
                    contract: Some("shop".into()),
                    max_age_ms: u32::MAX,
                    live: false,
                    recompute: false,
                })
            })
            .await?,
        ),
        (
            // The Overview's own call on a read-only connection, asking for totals no older than 5 s
            // (the kept ones are older by now): it reads the kept table, whatever their age.
            "consumer_overview_read_only",
            percentiles(samples, |_| {
                op.consumer_overview(a2_operator::TotalsQuery {
                    contract: None,
                    max_age_ms: 5_000,
                    live: false,
                    recompute: false,
                })
            })
            .await?,
        ),
        (
            // The Overview's throughput chart: the last hour, a minute a bucket.
            "throughput_chart_read_only",
            percentiles(samples, |_| op.attempt_rates(None, 60)).await?,
        ),
        (
            "dead_letter_page",
            percentiles(samples, |_| op.dead_letter_list(a2_store::DeadLetterList { limit: 50, ..Default::default() }))
                .await?,
        ),
        (
            "snapshots",
            percentiles(samples, |i| {
                let (op, session) = (op.clone(), format!("order-{:05}", i % 300));
                async move { op.snapshot_list(&a2_operator::SessionRef::new("shop", session)).await }
            })
            .await?,
        ),
    ];
    for (read, (p50, p95)) in figures {
        println!("bench {name} {read} p50_ms={p50:.2} p95_ms={p95:.2}");
    }
    search_figures(name, &op, sessions).await
}

/// A payload search as the Studio walks it: one chunk of 500 sessions (the
/// time to the first answers), and the whole contract, chunk by chunk.
async fn search_figures(name: &str, op: &a2_operator::Operator, sessions: usize) -> Result<(), String> {
    let filter = a2_store::EventMatch { payload: Some(json!({ "customer": "customer-3" })), ..Default::default() };
    let query = |after: Option<String>| a2_operator::SearchQuery {
        contract: "shop".into(),
        filter: filter.clone(),
        after,
        scan: 500,
    };
    let (p50, p95) =
        percentiles(20, |i| op.session_search(query(Some(format!("order-{:05}", (i * 7919) % sessions))))).await?;
    println!("bench {name} search_chunk sessions=500 p50_ms={p50:.2} p95_ms={p95:.2}");
    let started = Instant::now();
    let (mut after, mut found, mut calls) = (None, 0, 0);
    loop {
        let page = op.session_search(query(after)).await.map_err(|e| e.to_string())?;
        found += page.found.len();
        calls += 1;
        after = page.scanned_through;
        if after.is_none() {
            break;
        }
    }
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    println!("bench {name} search_whole_contract calls={calls} found={found} ms={ms:.0}");
    Ok(())
}

async fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let url = args
        .iter()
        .position(|a| a == "--postgres")
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".into());
    // Every contender on the same plain TCP: node's pg does not encrypt unless
    // told to, and sqlx's `prefer` would (this machine's server offers TLS).
    let url = if url.contains("sslmode=") {
        url
    } else {
        format!("{url}{}sslmode=disable", if url.contains('?') { '&' } else { '?' })
    };
    if args.iter().any(|a| a == "--peers") {
        return peers::run(&url).await;
    }
    if args.iter().any(|a| a == "--pooled") {
        return pooled::run(&url).await;
    }
    if args.iter().any(|a| a == "--sse-server") {
        return sse::server(&args, &url).await;
    }
    if args.iter().any(|a| a == "--sse") {
        return sse::run(&args, &url).await;
    }
    if args.iter().any(|a| a == "--memory") {
        return worker_memory(&url).await;
    }
    if args.iter().any(|a| a == "--sqlite-reads-only") {
        // The SQLite store's read and refresh figures alone (100,000 sessions, 1M events).
        // `--sqlite-reads-file PATH` keeps the seeded store there, and measures it again unseeded next time.
        let kept = args.iter().position(|a| a == "--sqlite-reads-file").and_then(|i| args.get(i + 1));
        let dir = std::env::temp_dir().join(format!("a2-bench-{}", std::process::id()));
        let file = kept.map(std::path::PathBuf::from).unwrap_or_else(|| dir.join("reads.sqlite"));
        let measured = sqlite_reads(&file).await;
        let _ = std::fs::remove_dir_all(dir);
        return measured;
    }
    let schema = format!("a2_bench_{}", std::process::id());
    let options = OpenOptions { schema: Some(schema.clone()), max_connections: Some(32), ..OpenOptions::default() };
    let pg = open_with(&url, options).await.map_err(|e| e.to_string())?;
    if args.iter().any(|a| a == "--totals-cost-only") {
        let measured = totals_cost(pg, (&url, &schema)).await;
        drop_schema(&url, &schema).await;
        return measured;
    }
    if args.iter().any(|a| a == "--log-only") {
        let measured = log_only(&url, &schema, pg).await;
        drop_schema(&url, &schema).await;
        return measured;
    }
    if args.iter().any(|a| a == "--drain-only") {
        drain_only(&url, &schema, pg).await?;
        drop_schema(&url, &schema).await;
        return Ok(());
    }
    let raw = raw_inserts(&url, &schema).await?;
    let server =
        Server::builder(contract().map_err(|e| e.to_string())?, pg.clone()).build().map_err(|e| e.to_string())?;
    let appended = appends(&server).await?;
    println!(
        "bench postgres append writers={WRITERS} events_per_s={appended:.0} raw_insert_per_s={raw:.0} ratio={:.2}",
        appended / raw
    );
    let direct = store_appends(pg.clone()).await?;
    println!("bench postgres store_append writers={WRITERS} events_per_s={direct:.0} ratio={:.2}", direct / raw);
    let jobs = drain(pg.clone(), 200, 100, Some((&url, &schema))).await?;
    println!("bench postgres drain sessions=200 events=100 jobs_per_s={jobs:.0}");
    totals_cost(pg.clone(), (&url, &schema)).await?;
    let dir = std::env::temp_dir().join(format!("a2-bench-{}", std::process::id()));
    let sqlite: Arc<dyn Store> =
        open_with(&format!("sqlite:{}", dir.join("bench.sqlite").display()), OpenOptions::default())
            .await
            .map_err(|e| e.to_string())?;
    let server =
        Server::builder(contract().map_err(|e| e.to_string())?, sqlite.clone()).build().map_err(|e| e.to_string())?;
    println!("bench sqlite append writers={WRITERS} events_per_s={:.0}", appends(&server).await?);
    println!("bench sqlite drain sessions=50 events=100 jobs_per_s={:.0}", drain(sqlite, 50, 100, None).await?);
    if args.iter().any(|a| a == "--reads") {
        // `--reads-scale N`: N × 100,000 sessions (N × 1M events) on Postgres; printed, not asserted.
        let scale: usize = args
            .iter()
            .position(|a| a == "--reads-scale")
            .and_then(|i| args.get(i + 1))
            .map(|n| n.parse().map_err(|_| format!("--reads-scale takes a whole number, not {n:?}")))
            .transpose()?
            .unwrap_or(1);
        let sessions = 100_000 * scale.max(1);
        // `--reads-schema NAME`: measure a store an earlier run seeded and kept (10M events take
        // ~37 minutes to seed here); a run that fails after seeding keeps its `…_reads` schema.
        let kept = args.iter().position(|a| a == "--reads-schema").and_then(|i| args.get(i + 1)).cloned();
        let reads_schema = kept.clone().unwrap_or_else(|| format!("{schema}_reads"));
        let options =
            OpenOptions { schema: Some(reads_schema.clone()), max_connections: Some(16), ..OpenOptions::default() };
        let pg = open_with(&url, options).await.map_err(|e| e.to_string())?;
        reads("postgres", pg, sessions, Some((&url, &reads_schema)), kept.is_some()).await?;
    }
    if args.iter().any(|a| a == "--replica") {
        replica_reads(100_000).await?;
    }
    if args.iter().any(|a| a == "--reads") && !args.iter().any(|a| a == "--postgres-only") {
        sqlite_reads(&dir.join("reads.sqlite")).await?;
    }
    let _ = std::fs::remove_dir_all(dir);
    drop_schema(&url, &schema).await;
    drop_schema(&url, &format!("{schema}_reads")).await;
    Ok(())
}

/// The SQLite store's reads on 100,000 sessions / 1M events in `file`,
/// seeded there first unless an earlier run left it.
async fn sqlite_reads(file: &std::path::Path) -> Result<(), String> {
    let seeded = file.exists();
    let sqlite: Arc<dyn Store> =
        open_with(&format!("sqlite:{}", file.display()), OpenOptions::default()).await.map_err(|e| e.to_string())?;
    reads("sqlite", sqlite, 100_000, None, seeded).await
}

/// `--drain-only`, for profiling the drain (§7 of the throughput study):
/// three interleaved rounds of the Postgres jobs drain with and without the
/// watchdog and with 1,024 run permits (if more permits drain faster, the
/// permit held across the completion's commit is the limit), each with its
/// CPU split, idle share, commits and WAL a job; the same drain on the memory
/// store (the engine's own ceiling); the log shape; and, where
/// `pg_stat_statements` is loaded, the statements the jobs drain spent most on.
async fn drain_only(url: &str, schema: &str, pg: Arc<dyn Store>) -> Result<(), String> {
    let stats = sqlx::PgPool::connect(url).await.map_err(|e| e.to_string())?;
    for round in 1..=3 {
        for (label, watchdog, max_running) in
            [("default", false, None), ("watchdog", true, None), ("max_running=1024", false, Some(1024))]
        {
            WATCHDOG.store(watchdog, std::sync::atomic::Ordering::Relaxed);
            let prefix = format!("drain-{round}-{}", label.replace('=', "-"));
            let setup = DrainSetup {
                shape: Shape::Jobs,
                prefix: &prefix,
                analyze: Some((url, schema)),
                max_running,
                probe: Some(Some(&stats)),
                upkeep: false,
            };
            let (jobs, figures) = drain_measured(pg.clone(), 200, 100, setup).await?;
            println!(
                "bench postgres drain round={round} sessions=200 events=100 run={label} jobs_per_s={jobs:.0} {figures}"
            );
        }
        let memory: Arc<dyn Store> = open_with("memory:", OpenOptions::default()).await.map_err(|e| e.to_string())?;
        let setup = DrainSetup {
            shape: Shape::Jobs,
            prefix: "drain-memory",
            analyze: None,
            max_running: None,
            probe: Some(None),
            upkeep: false,
        };
        let (jobs, figures) = drain_measured(memory, 200, 100, setup).await?;
        println!("bench memory drain round={round} sessions=200 events=100 jobs_per_s={jobs:.0} {figures}");
    }
    WATCHDOG.store(false, std::sync::atomic::Ordering::Relaxed);
    let setup = DrainSetup {
        shape: Shape::Log,
        prefix: "log-only",
        analyze: Some((url, schema)),
        max_running: None,
        probe: Some(Some(&stats)),
        upkeep: false,
    };
    let (log, figures) = drain_measured(pg.clone(), 200, 20, setup).await?;
    println!("bench postgres drain shape=log sessions=200 events=20 events_per_s={log:.0} {figures}");
    if probe::statements_reset(&stats).await {
        for (shape, label, events, lines) in [(Shape::Jobs, "jobs", 100, 8), (Shape::Log, "log", 20, 10)] {
            statements_round(pg.clone(), (url, schema), &stats, (shape, label, events), lines).await?;
        }
    } else {
        println!("bench statements unavailable (pg_stat_statements is not in shared_preload_libraries)");
    }
    stats.close().await;
    Ok(())
}

/// One round of the ordered log drain alone, with its cost figures: the
/// quick figure to iterate on (seconds, not a full run).
async fn log_only(url: &str, schema: &str, pg: Arc<dyn Store>) -> Result<(), String> {
    let stats = sqlx::PgPool::connect(url).await.map_err(|e| e.to_string())?;
    let setup = DrainSetup {
        shape: Shape::Log,
        prefix: "log-quick",
        analyze: Some((url, schema)),
        max_running: None,
        probe: Some(Some(&stats)),
        upkeep: false,
    };
    let (log, figures) = drain_measured(pg.clone(), 200, 20, setup).await?;
    println!("bench postgres drain shape=log sessions=200 events=20 events_per_s={log:.0} {figures}");
    // Where pg_stat_statements is loaded, a second round says which statements the time went to.
    if probe::statements_reset(&stats).await {
        statements_round(pg, (url, schema), &stats, (Shape::Log, "log", 20), 10).await?;
    }
    stats.close().await;
    Ok(())
}

/// One unprobed round of `shape` (200 sessions of `events`) after a reset of
/// `pg_stat_statements`, then its `lines` costliest statements, printed.
async fn statements_round(
    pg: Arc<dyn Store>,
    (url, schema): (&str, &str),
    stats: &sqlx::PgPool,
    (shape, label, events): (Shape, &str, usize),
    lines: i64,
) -> Result<(), String> {
    probe::statements_reset(stats).await;
    let prefix = format!("{label}-statements");
    let setup = DrainSetup {
        shape,
        prefix: &prefix,
        analyze: Some((url, schema)),
        max_running: None,
        probe: None,
        upkeep: false,
    };
    drain_measured(pg, 200, events, setup).await?;
    for line in probe::statements_top(stats, &format!("shape={label}"), lines).await {
        println!("{line}");
    }
    Ok(())
}

/// Drop a schema a bench made on `url` (a bench's Postgres need not be the tests').
async fn drop_schema(url: &str, schema: &str) {
    if let Ok(pool) = sqlx::PgPool::connect(url).await {
        let _ = sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).execute(&pool).await;
        pool.close().await;
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("a2-bench: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
