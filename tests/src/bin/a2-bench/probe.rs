//! What a drain costs besides its time (`--drain-only`): the CPU this process
//! and the Postgres backends spent, how idle the machine stayed, and the
//! commits and WAL the server wrote a job. A drain with idle cores is bound
//! by latency (waits), one without by CPU: the two call for different fixes
//! (`../shared/design/postgres-throughput.md`, §7).

use std::time::Duration;

/// Counters read before and after a measured stretch.
pub struct Probe {
    cpu: Cpu,
    server: Option<ServerCounters>,
}

#[derive(Clone, Copy, Default)]
struct Cpu {
    /// This process's user + system time, in clock ticks.
    own: u64,
    /// Every `postgres` process's user + system time (the backends serving us).
    postgres: u64,
    /// The machine's total and idle time over all cores (`/proc/stat`).
    total: u64,
    idle: u64,
}

#[derive(Clone, Copy, Default)]
struct ServerCounters {
    commits: i64,
    wal_records: i64,
    wal_bytes: i64,
}

/// Clock ticks a second (`getconf CLK_TCK`; 100 on every Linux this runs on).
const TICKS: f64 = 100.0;

fn ticks_of(stat: &str) -> Option<u64> {
    // The command name may hold spaces: the fields after it start past the last ')'.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are the 14th and 15th fields of the whole line: 12th and 13th after the name.
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

fn read_cpu() -> Cpu {
    let own = std::fs::read_to_string("/proc/self/stat").ok().and_then(|s| ticks_of(&s)).unwrap_or(0);
    let mut postgres = 0;
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let path = entry.path();
            let is_pid =
                path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
            if !is_pid {
                continue;
            }
            let Ok(stat) = std::fs::read_to_string(path.join("stat")) else { continue };
            if stat.contains("(postgres)") {
                postgres += ticks_of(&stat).unwrap_or(0);
            }
        }
    }
    let (mut total, mut idle) = (0, 0);
    if let Some(line) = std::fs::read_to_string("/proc/stat").ok().and_then(|s| s.lines().next().map(str::to_owned)) {
        let values: Vec<u64> = line.split_whitespace().skip(1).filter_map(|v| v.parse().ok()).collect();
        total = values.iter().take(8).sum();
        // idle + iowait: a core waiting on the disk is not doing our work either.
        idle = values.get(3).copied().unwrap_or(0) + values.get(4).copied().unwrap_or(0);
    }
    Cpu { own, postgres, total, idle }
}

async fn read_server(pool: &sqlx::PgPool) -> Option<ServerCounters> {
    let commits: i64 =
        sqlx::query_scalar("SELECT xact_commit::bigint FROM pg_stat_database WHERE datname = current_database()")
            .fetch_one(pool)
            .await
            .ok()?;
    let (wal_records, wal_bytes): (i64, i64) =
        sqlx::query_as("SELECT wal_records::bigint, wal_bytes::bigint FROM pg_stat_wal").fetch_one(pool).await.ok()?;
    Some(ServerCounters { commits, wal_records, wal_bytes })
}

/// The server's statistics reach its views when a backend reports them (at
/// most once a second while busy): a stretch's last commits show up after this.
const STATS_SETTLE: Duration = Duration::from_millis(1100);

impl Probe {
    pub async fn start(pool: Option<&sqlx::PgPool>) -> Self {
        let server = match pool {
            Some(pool) => {
                tokio::time::sleep(STATS_SETTLE).await;
                read_server(pool).await
            }
            None => None,
        };
        Self { cpu: read_cpu(), server }
    }

    /// The figures since `start`, for `jobs` jobs, as `key=value` pairs.
    pub async fn finish(self, pool: Option<&sqlx::PgPool>, jobs: u64) -> String {
        let cpu = read_cpu();
        let seconds = |ticks: u64| ticks as f64 / TICKS;
        let total = cpu.total.saturating_sub(self.cpu.total).max(1);
        let idle = cpu.idle.saturating_sub(self.cpu.idle);
        let mut line = format!(
            "bench_cpu_s={:.2} postgres_cpu_s={:.2} idle_pct={:.0}",
            seconds(cpu.own.saturating_sub(self.cpu.own)),
            seconds(cpu.postgres.saturating_sub(self.cpu.postgres)),
            idle as f64 * 100.0 / total as f64
        );
        if let (Some(pool), Some(before)) = (pool, self.server) {
            tokio::time::sleep(STATS_SETTLE).await;
            if let Some(after) = read_server(pool).await {
                let per_job = |n: i64| n as f64 / jobs.max(1) as f64;
                line.push_str(&format!(
                    " commits_per_job={:.3} wal_records_per_job={:.1} wal_bytes_per_job={:.0}",
                    per_job(after.commits - before.commits),
                    per_job(after.wal_records - before.wal_records),
                    per_job(after.wal_bytes - before.wal_bytes)
                ));
            }
        }
        line
    }
}

/// Start `pg_stat_statements` afresh; `false` where it is not loaded (it
/// needs `shared_preload_libraries` and a restart of the server).
pub async fn statements_reset(pool: &sqlx::PgPool) -> bool {
    sqlx::query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements").execute(pool).await.is_ok()
        && sqlx::query("SELECT pg_stat_statements_reset()").execute(pool).await.is_ok()
}

/// The statements the server spent most time on since the reset, one line
/// each: calls, mean executor and planning time, WAL records a call.
pub async fn statements_top(pool: &sqlx::PgPool, label: &str, limit: i64) -> Vec<String> {
    let rows: Vec<(String, i64, f64, f64, i64, i64)> = sqlx::query_as(
        "SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), 160), calls, mean_exec_time, mean_plan_time, plans, \
         wal_records::bigint FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
         ORDER BY total_exec_time + total_plan_time DESC LIMIT $1",
    )
    .bind(limit)
    .fetch_all(pool)
    .await
    .unwrap_or_default();
    rows.into_iter()
        .map(|(query, calls, exec, plan, plans, wal)| {
            format!(
                "bench statements {label} calls={calls} exec_ms={exec:.3} plan_ms={plan:.3} plans={plans} wal_records_per_call={:.1} query={query:?}",
                wal as f64 / calls.max(1) as f64
            )
        })
        .collect()
}
