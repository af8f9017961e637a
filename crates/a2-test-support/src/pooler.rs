//! A PgBouncer in transaction mode in front of the test Postgres, started
//! once per test process and stopped with it, so the pooled tests never
//! depend on a pooler the machine happens to run.

use std::io::Write as _;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::postgres_url;

/// Where Debian's package puts it (not on a non-root PATH).
const CANDIDATES: [&str; 3] = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer", "/usr/local/bin/pgbouncer"];

/// The test Postgres through this process's PgBouncer, with `pgbouncer=true`.
/// Panics, saying what to install, where PgBouncer is missing: a pooled test
/// that quietly ran direct would prove nothing.
pub fn pooled_postgres_url() -> String {
    static URL: OnceLock<Result<String, String>> = OnceLock::new();
    match URL.get_or_init(|| pooler_in_front_of(&postgres_url())) {
        Ok(url) => url.clone(),
        Err(why) => panic!("{why}"),
    }
}

/// The host, port and database of a Postgres URL, and its user, as the driver reads them.
fn target(url: &str) -> Result<(String, u16, String, String), String> {
    let options: sqlx::postgres::PgConnectOptions = url.parse().map_err(|e| format!("{url}: {e}"))?;
    let database = options.get_database().unwrap_or("postgres").to_owned();
    Ok((options.get_host().to_owned(), options.get_port(), database, options.get_username().to_owned()))
}

/// Start a PgBouncer in transaction mode in front of the Postgres `url`
/// names, stopped when this process ends; its URL, with `pgbouncer=true`.
pub fn pooler_in_front_of(url: &str) -> Result<String, String> {
    start_pgbouncer(url, "transaction", "")
}

/// A PgBouncer in session mode in front of `url` that drops the `options`
/// startup parameter, as a proxy that passes no session settings does: its
/// URL without `pgbouncer=true`, so a client takes it for the server itself
/// (and a read-only attach's `default_transaction_read_only` never arrives).
pub fn settings_dropping_proxy_in_front_of(url: &str) -> Result<String, String> {
    let proxy = start_pgbouncer(url, "session", "ignore_startup_parameters = options,extra_float_digits\n")?;
    Ok(proxy.replace("?pgbouncer=true", ""))
}

/// A PgBouncer in `mode` in front of `url`, with `extra` lines of configuration.
fn start_pgbouncer(url: &str, mode: &str, extra: &str) -> Result<String, String> {
    let binary = CANDIDATES
        .iter()
        .map(Path::new)
        .find(|p| p.exists())
        .ok_or("pgbouncer is not installed: apt-get install pgbouncer (cargo xtask test installs it)")?;
    let (host, port, database, user) = target(url)?;
    let listen = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
    // A directory of this process's own, made anew (not one someone left or linked in the temp dir).
    let dir = std::env::temp_dir().join(format!("a2-pgbouncer-{}-{listen}", std::process::id()));
    {
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new().mode(0o700).create(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let as_root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let users = dir.join("users.txt");
    std::fs::write(&users, format!("\"{user}\" \"\"\n")).map_err(|e| e.to_string())?;
    let config = dir.join("pgbouncer.ini");
    let mut file = std::fs::File::create(&config).map_err(|e| e.to_string())?;
    write!(
        file,
        "[databases]\n* = host={host} port={port}\n\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {listen}\n\
         unix_socket_dir =\nauth_type = trust\nauth_file = {users}\npool_mode = {mode}\n\
         max_client_conn = 2000\ndefault_pool_size = 20\nlogfile = {log}\npidfile = {pid}\n{extra}",
        users = users.display(),
        log = dir.join("pgbouncer.log").display(),
        pid = dir.join("pgbouncer.pid").display(),
    )
    .map_err(|e| e.to_string())?;
    if as_root {
        // PgBouncer will not run as root: it runs as `postgres`, which reads its config and writes its log here.
        let owned = Command::new("chown").args(["-R", "postgres"]).arg(&dir).status();
        if !owned.is_ok_and(|s| s.success()) {
            return Err(format!("could not hand {} to the postgres user for PgBouncer", dir.display()));
        }
    }
    // A shell minds it: when this test process is gone, PgBouncer is stopped and its directory removed.
    let user_flag = if as_root { "-u postgres" } else { "" };
    let minder = format!(
        "{binary} {user_flag} \"$1\" & child=$!; \
         while kill -0 \"$2\" 2>/dev/null && kill -0 $child 2>/dev/null; do sleep 0.5; done; \
         kill $child 2>/dev/null; wait; rm -rf \"$3\"",
        binary = binary.display()
    );
    Command::new("sh")
        .args(["-c", &minder, "sh"])
        .arg(&config)
        .arg(std::process::id().to_string())
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("starting {}: {e}", binary.display()))?;
    let deadline = Instant::now() + Duration::from_secs(15);
    while TcpStream::connect(("127.0.0.1", listen)).is_err() {
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(dir.join("pgbouncer.log")).unwrap_or_default();
            return Err(format!("PgBouncer did not listen on {listen} within 15 s: {log}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(format!("postgres://{user}@127.0.0.1:{listen}/{database}?pgbouncer=true"))
}
