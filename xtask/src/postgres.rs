//! A Postgres server for the tests: `DATABASE_URL` when set, else
//! 127.0.0.1:5432 (starting the local cluster if it is installed and
//! stopped), else a throwaway cluster from `initdb`/`pg_ctl` on a free
//! loopback port, removed again when the tests end.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The tests' own throwaway cluster, one source for both (std only).
#[path = "../../tests/src/cluster.rs"]
#[allow(dead_code)] // start_tls serves the TLS tests
mod cluster;

pub enum Database {
    Existing(String),
    /// Stopped and removed when dropped.
    Throwaway(cluster::Cluster),
}

impl Database {
    pub fn url(&self) -> &str {
        match self {
            Self::Existing(url) => url,
            Self::Throwaway(cluster) => &cluster.url,
        }
    }
}

fn wait_for(port: u16, within: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < within {
        if reachable(port) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

pub use cluster::{is_root, reachable};

pub fn ensure() -> Result<Database, String> {
    if let Ok(url) = std::env::var("DATABASE_URL") {
        eprintln!("xtask: Postgres from DATABASE_URL");
        return Ok(Database::Existing(url));
    }
    // For checking the last resort on a machine that has a server running.
    if std::env::var_os("A2_XTASK_THROWAWAY_PG").is_some() {
        return throwaway();
    }
    let local = "postgres://postgres@127.0.0.1:5432/postgres".to_owned();
    if reachable(5432) {
        eprintln!("xtask: Postgres on 127.0.0.1:5432");
        return Ok(Database::Existing(local));
    }
    if Path::new("/etc/postgresql").is_dir() && is_root() {
        let versions: Vec<String> = std::fs::read_dir("/etc/postgresql")
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        for version in versions {
            let started =
                Command::new("pg_ctlcluster").args(["--skip-systemctl-redirect", &version, "main", "start"]).status();
            if started.is_ok_and(|s| s.success()) && wait_for(5432, Duration::from_secs(20)) {
                eprintln!("xtask: started the local Postgres {version} cluster on 127.0.0.1:5432");
                return Ok(Database::Existing(local));
            }
        }
    }
    throwaway()
}

fn throwaway() -> Result<Database, String> {
    let cluster = cluster::Cluster::start()?;
    eprintln!("xtask: started a throwaway Postgres on 127.0.0.1:{}", cluster.port);
    Ok(Database::Throwaway(cluster))
}
