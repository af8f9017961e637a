//! A Postgres cluster a test starts, stops and starts again: `initdb` and
//! `pg_ctl` from Debian's server binaries, on a free loopback port, removed
//! when dropped. As root the cluster belongs to the `postgres` user
//! (initdb refuses to run as root).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

pub struct Cluster {
    pub url: String,
    pub port: u16,
    root: PathBuf,
    bin: PathBuf,
    as_user: Option<String>,
}

fn pg_bin() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> =
        std::fs::read_dir("/usr/lib/postgresql").ok()?.flatten().map(|e| e.path().join("bin")).collect();
    versions.sort();
    versions.into_iter().rev().find(|bin| bin.join("pg_ctl").exists())
}

/// Whether this process runs as root (then clusters belong to `postgres`).
pub fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
pub fn reachable(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_ok()
}

impl Cluster {
    /// Start a new cluster, or say why not.
    pub fn start() -> Result<Self, String> {
        let bin =
            pg_bin().ok_or("no Postgres server binaries under /usr/lib/postgresql (apt-get install postgresql)")?;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| format!("no free port: {e}"))?;
        let root = std::env::temp_dir().join(format!("a2-cluster-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&root).map_err(|e| format!("creating {}: {e}", root.display()))?;
        let as_user = is_root().then(|| "postgres".to_owned());
        if let Some(user) = &as_user {
            let owned = Command::new("chown").args(["-R", user]).arg(&root).status();
            if !owned.is_ok_and(|s| s.success()) {
                return Err(format!("could not give {} to {user}", root.display()));
            }
        }
        let cluster = Self { url: format!("postgres://postgres@127.0.0.1:{port}/postgres"), port, root, bin, as_user };
        let data = cluster.data_dir();
        let out = cluster
            .command("initdb", &["-D", &data, "-U", "postgres", "--auth=trust", "--no-sync"])
            .output()
            .map_err(|e| format!("could not run initdb: {e}"))?;
        if !out.status.success() {
            return Err(format!("initdb failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        cluster.up()?;
        Ok(cluster)
    }

    fn data_dir(&self) -> String {
        self.root.join("data").display().to_string()
    }

    fn command(&self, program: &str, args: &[&str]) -> Command {
        let program = self.bin.join(program);
        match &self.as_user {
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

    /// Start the server and wait until it accepts connections.
    pub fn up(&self) -> Result<(), String> {
        let options = format!(
            "-c listen_addresses=127.0.0.1 -c port={} -c unix_socket_directories={} -c fsync=off -c max_connections=200",
            self.port,
            self.root.display()
        );
        let log = self.root.join("server.log").display().to_string();
        let started =
            self.command("pg_ctl", &["-D", &self.data_dir(), "-o", &options, "-l", &log, "-w", "start"]).status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while started.as_ref().is_ok_and(|s| s.success()) && Instant::now() < deadline {
            if reachable(self.port) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(format!("Postgres on port {} did not start; see {log}", self.port))
    }

    /// Stop the server as a crash would (`-m immediate`: no checkpoint, clients cut off).
    pub fn crash(&self) -> Result<(), String> {
        let status = self.command("pg_ctl", &["-D", &self.data_dir(), "-m", "immediate", "-w", "stop"]).status();
        match status {
            Ok(s) if s.success() => Ok(()),
            other => Err(format!("pg_ctl stop: {other:?}")),
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.crash();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
