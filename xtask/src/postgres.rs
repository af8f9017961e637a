//! A Postgres server for the tests: `DATABASE_URL` when set, else
//! 127.0.0.1:5432 (starting the local cluster if it is installed and
//! stopped), else a throwaway cluster from `initdb`/`pg_ctl` on a free
//! loopback port, removed again when the tests end.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub enum Database {
    Existing(String),
    Throwaway { url: String, data_dir: PathBuf, pg_ctl: PathBuf, as_user: Option<String> },
}

impl Database {
    pub fn url(&self) -> &str {
        match self {
            Self::Existing(url) | Self::Throwaway { url, .. } => url,
        }
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Self::Throwaway { data_dir, pg_ctl, as_user, .. } = self {
            let dir = data_dir.display().to_string();
            let _ = as_postgres(as_user.as_deref(), pg_ctl, &["-D", &dir, "-m", "immediate", "stop"]).status();
            let _ = std::fs::remove_dir_all(data_dir.parent().unwrap_or(data_dir));
        }
    }
}

fn reachable(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
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

/// The newest PostgreSQL server binaries Debian installed.
fn pg_bin() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> =
        std::fs::read_dir("/usr/lib/postgresql").ok()?.flatten().map(|e| e.path().join("bin")).collect();
    versions.sort();
    versions.into_iter().rev().find(|bin| bin.join("pg_ctl").exists())
}

pub fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn as_postgres(user: Option<&str>, program: &Path, args: &[&str]) -> Command {
    match user {
        Some(user) => {
            let mut command = Command::new("runuser");
            command.args(["-u", user, "--"]).arg(program).args(args);
            command
        }
        None => {
            let mut command = Command::new(program);
            command.args(args);
            command
        }
    }
}

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
    let bin = pg_bin().ok_or(
        "no Postgres can be had: none on DATABASE_URL or 127.0.0.1:5432, and no server binaries under /usr/lib/postgresql \
         (install them: apt-get install -y postgresql)",
    )?;
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))?;
    let root = std::env::temp_dir().join(format!("a2-pg-{}-{port}", std::process::id()));
    let data_dir = root.join("data");
    std::fs::create_dir_all(&root).map_err(|e| format!("creating {}: {e}", root.display()))?;
    // initdb refuses to run as root: hand the cluster to the postgres user.
    let as_user = is_root().then(|| "postgres".to_owned());
    if let Some(user) = &as_user {
        let owned = Command::new("chown").args(["-R", user]).arg(&root).status();
        if !owned.is_ok_and(|s| s.success()) {
            return Err(format!("could not give {} to the {user} user", root.display()));
        }
    }
    let dir = data_dir.display().to_string();
    let initdb = as_postgres(
        as_user.as_deref(),
        &bin.join("initdb"),
        &["-D", &dir, "-U", "postgres", "--auth=trust", "--no-sync"],
    )
    .output();
    match initdb {
        Ok(out) if out.status.success() => {}
        Ok(out) => return Err(format!("initdb failed: {}", String::from_utf8_lossy(&out.stderr))),
        Err(e) => return Err(format!("could not run initdb: {e}")),
    }
    let options = format!("-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={} -c fsync=off -c max_connections=200", root.display());
    let log = root.join("server.log").display().to_string();
    let pg_ctl = bin.join("pg_ctl");
    let started =
        as_postgres(as_user.as_deref(), &pg_ctl, &["-D", &dir, "-o", &options, "-l", &log, "-w", "start"]).status();
    if !started.is_ok_and(|s| s.success()) || !wait_for(port, Duration::from_secs(30)) {
        return Err(format!("the throwaway Postgres on port {port} did not start; see {log}"));
    }
    eprintln!("xtask: started a throwaway Postgres on 127.0.0.1:{port}");
    Ok(Database::Throwaway { url: format!("postgres://postgres@127.0.0.1:{port}/postgres"), data_dir, pg_ctl, as_user })
}
