//! A Postgres cluster a test starts, stops and starts again: `initdb` and
//! `pg_ctl` from Debian's server binaries, on a free loopback port, removed
//! when dropped. As root the cluster belongs to the `postgres` user
//! (initdb refuses to run as root). A TLS cluster accepts `hostssl` only,
//! on 127.0.0.1 and 127.0.0.2 (a loopback address that is not "this
//! machine" by name, for what a remote host gets).

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
    tls: bool,
}

/// A server certificate and its key, PEM.
pub struct ServerTls<'a> {
    pub cert_pem: &'a str,
    pub key_pem: &'a str,
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

/// A free loopback port and an empty folder for a cluster on it, owned by `as_user`.
fn fresh_root(kind: &str, as_user: Option<&str>) -> Result<(u16, PathBuf), String> {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))?;
    let root = std::env::temp_dir().join(format!("a2-{kind}-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&root).map_err(|e| format!("creating {}: {e}", root.display()))?;
    if let Some(user) = as_user {
        let owned = Command::new("chown").args(["-R", user]).arg(&root).status();
        if !owned.is_ok_and(|s| s.success()) {
            return Err(format!("could not give {} to {user}", root.display()));
        }
    }
    Ok((port, root))
}

impl Cluster {
    /// Start a new cluster, or say why not.
    pub fn start() -> Result<Self, String> {
        Self::start_with(None)
    }

    /// Start a cluster that refuses every connection without TLS.
    pub fn start_tls(tls: ServerTls<'_>) -> Result<Self, String> {
        Self::start_with(Some(tls))
    }

    fn start_with(tls: Option<ServerTls<'_>>) -> Result<Self, String> {
        let bin =
            pg_bin().ok_or("no Postgres server binaries under /usr/lib/postgresql (apt-get install postgresql)")?;
        let as_user = is_root().then(|| "postgres".to_owned());
        let (port, root) = fresh_root("cluster", as_user.as_deref())?;
        let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
        let cluster = Self { url, port, root, bin, as_user, tls: tls.is_some() };
        let data = cluster.data_dir();
        let out = cluster
            .command("initdb", &["-D", &data, "-U", "postgres", "--auth=trust", "--no-sync"])
            .output()
            .map_err(|e| format!("could not run initdb: {e}"))?;
        if !out.status.success() {
            return Err(format!("initdb failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        if let Some(tls) = tls {
            cluster.install_tls(&tls)?;
        }
        cluster.up()?;
        Ok(cluster)
    }

    /// The certificate and key in the data folder (the key the server's
    /// user's alone, as Postgres demands), and `hostssl` as the only way in.
    fn install_tls(&self, tls: &ServerTls<'_>) -> Result<(), String> {
        let data = self.root.join("data");
        let hba = "local all all trust\nhostssl all all 127.0.0.0/8 trust\nhostssl all all ::1/128 trust\n";
        for (name, text, mode) in
            [("server.crt", tls.cert_pem, 0o644), ("server.key", tls.key_pem, 0o600), ("pg_hba.conf", hba, 0o600)]
        {
            let path = data.join(name);
            std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
            let chmod = Command::new("chmod").arg(format!("{mode:o}")).arg(&path).status().is_ok_and(|s| s.success());
            let chown = match &self.as_user {
                Some(user) => Command::new("chown").arg(user).arg(&path).status().is_ok_and(|s| s.success()),
                None => true,
            };
            if !chmod || !chown {
                return Err(format!("could not set the owner and mode of {}", path.display()));
            }
        }
        Ok(())
    }

    /// A hot standby of this cluster: `pg_basebackup -R` into a new data
    /// folder (streaming from this one), started on its own free port.
    pub fn start_standby(&self) -> Result<Self, String> {
        let (port, root) = fresh_root("standby", self.as_user.as_deref())?;
        let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
        let standby = Self { url, port, root, bin: self.bin.clone(), as_user: self.as_user.clone(), tls: self.tls };
        let primary_port = self.port.to_string();
        let data = standby.data_dir();
        let args =
            ["-h", "127.0.0.1", "-p", &primary_port, "-U", "postgres", "-D", &data, "-R", "-X", "stream", "--no-sync"];
        let out = standby
            .command("pg_basebackup", &args)
            .output()
            .map_err(|e| format!("could not run pg_basebackup: {e}"))?;
        if !out.status.success() {
            return Err(format!("pg_basebackup failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        standby.up()?;
        Ok(standby)
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
        let mut options = format!(
            "-c port={} -c unix_socket_directories={} -c fsync=off -c max_connections=200",
            self.port,
            self.root.display()
        );
        if self.tls {
            options.push_str(" -c listen_addresses=127.0.0.1,127.0.0.2 -c ssl=on");
        } else {
            options.push_str(" -c listen_addresses=127.0.0.1");
        }
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
