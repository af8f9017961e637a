//! `--peers`: our drain and append next to what a user would pick instead,
//! on the same Postgres in the same run, interleaved round by round (this
//! machine's disk swings 2–3× within minutes, so figures from different
//! runs do not compare): ours, graphile-worker, pg-boss, ours again…

use std::process::Command;

use a2_e2e::{open_with, OpenOptions};

use super::{appends, contract, drain_shape, drop_schema, raw_inserts, Server, Shape};

/// Jobs a peer drains a round: the same count for every contender.
const JOBS: usize = 20_000;
const ROUNDS: usize = 3;

/// One peer's drain, tried twice: graphile-worker 0.17.3 was seen to stall
/// once with 19,000 jobs left (its local queue stopped fetching), and one
/// stall should not void the round.
fn peer(name: &str, url: &str, schema: &str) -> Result<f64, String> {
    peer_once(name, url, schema).or_else(|error| {
        eprintln!("a2-bench: {name}: {error}; once more, in a fresh schema");
        peer_once(name, url, &format!("{schema}_again"))
    })
}

/// One peer's drain through `bench/peers/run.mjs` (pinned by its lockfile), in `schema`.
fn peer_once(name: &str, url: &str, schema: &str) -> Result<f64, String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/peers");
    let output = Command::new("node")
        .arg("run.mjs")
        .args([name, url, schema, &JOBS.to_string()])
        .current_dir(&dir)
        .output()
        .map_err(|e| format!("running node for {name}: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!("{name} failed: {}{stdout}", String::from_utf8_lossy(&output.stderr)));
    }
    let line = stdout.lines().last().unwrap_or_default();
    let printed: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("{name} printed {line:?}, not its figure: {e}"))?;
    printed["jobs_per_s"].as_f64().ok_or_else(|| format!("{name} printed no jobs_per_s: {line}"))
}

pub(super) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// Ours in a fresh schema, the store opened at `store_url` (direct, or
/// through a pooler): appends against raw INSERTs made directly at
/// `direct_url`, then both drain shapes over `JOBS` events.
pub(super) async fn ours(store_url: &str, direct_url: &str, schema: &str) -> Result<[f64; 4], String> {
    let options = OpenOptions { schema: Some(schema.to_owned()), max_connections: Some(32), ..OpenOptions::default() };
    let store = open_with(store_url, options).await.map_err(|e| e.to_string())?;
    let raw = raw_inserts(direct_url, schema).await?;
    let server =
        Server::builder(contract().map_err(|e| e.to_string())?, store.clone()).build().map_err(|e| e.to_string())?;
    let appended = appends(&server).await?;
    let jobs =
        drain_shape(store.clone(), 200, JOBS / 200, Shape::Jobs, "peers-jobs", Some((direct_url, schema))).await?;
    let log = drain_shape(store, 200, JOBS / 200, Shape::Log, "peers-log", Some((direct_url, schema))).await?;
    Ok([appended, raw, jobs, log])
}

pub async fn run(url: &str) -> Result<(), String> {
    let (mut appended, mut raw, mut jobs, mut log, mut graphile, mut boss) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 1..=ROUNDS {
        let schema = format!("a2_peers_{}_{round}", std::process::id());
        let figures = ours(url, url, &schema).await;
        drop_schema(url, &schema).await;
        let [a, r, j, l] = figures?;
        println!("bench peers round={round} ours append_per_s={a:.0} raw_insert_per_s={r:.0} drain_jobs_per_s={j:.0} drain_log_per_s={l:.0}");
        let g = peer("graphile-worker", url, &format!("a2_peers_gw_{}_{round}", std::process::id()))?;
        println!("bench peers round={round} graphile-worker jobs_per_s={g:.0}");
        let b = peer("pg-boss", url, &format!("a2_peers_pgboss_{}_{round}", std::process::id()))?;
        println!("bench peers round={round} pg-boss jobs_per_s={b:.0}");
        appended.push(a);
        raw.push(r);
        jobs.push(j);
        log.push(l);
        graphile.push(g);
        boss.push(b);
    }
    let (g, b, j, l) = (median(&mut graphile), median(&mut boss), median(&mut jobs), median(&mut log));
    let append_ratio = median(&mut appended.iter().zip(&raw).map(|(a, r)| a / r).collect::<Vec<_>>());
    println!("bench peers graphile-worker jobs_per_s={g:.0}");
    println!("bench peers pg-boss jobs_per_s={b:.0}");
    println!("bench postgres drain shape=jobs events={JOBS} jobs_per_s={j:.0}");
    println!("bench postgres drain shape=log events={JOBS} events_per_s={l:.0}");
    println!(
        "bench ratio drain_vs_graphile_worker={:.2} drain_vs_pg_boss={:.2} log_drain_vs_graphile_worker={:.2} append_vs_raw_insert={append_ratio:.2}",
        j / g,
        j / b,
        l / g
    );
    Ok(())
}
