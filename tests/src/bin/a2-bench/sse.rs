//! `--sse`: many Server-Sent-Event clients on one session while a burst is
//! pushed, against a server process of its own (`--sse-server`), so the
//! server's resident memory is its alone. Prints the clients that received
//! every event, the delivery delay (push commit to client read) as p50/p99/
//! max, and the server's peak and final RSS. Printed, never asserted.

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use a2_e2e::{open_with, OpenOptions};
use a2_engine::Server;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::contract;

/// Delays are counted in 1 ms buckets up to this; later ones land in the last.
const BUCKETS: usize = 120_000;
const BATCH: usize = 100;

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> Result<T, String> {
    match args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)) {
        Some(text) => text.parse().map_err(|_| format!("{name} takes a number, not {text:?}")),
        None => Ok(default),
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// The server side: the bench contract over the wire on `store`, its port on stdout.
pub async fn server(args: &[String], url: &str) -> Result<(), String> {
    let kind = args.iter().position(|a| a == "--sse-server").and_then(|i| args.get(i + 1)).cloned().unwrap_or_default();
    let store: Arc<dyn a2_store::Store> = match kind.as_str() {
        "memory" => Arc::new(a2_store::memory::MemoryStore::default()),
        "sqlite" => {
            let dir = std::env::temp_dir().join(format!("a2-bench-sse-{}", std::process::id()));
            let _ = std::fs::create_dir_all(&dir);
            open_with(&format!("sqlite:{}", dir.join("sse.sqlite").display()), OpenOptions::default())
                .await
                .map_err(|e| e.to_string())?
        }
        "postgres" => {
            let schema = format!("a2_bench_{}", std::process::id());
            let options = OpenOptions { schema: Some(schema), max_connections: Some(32), ..OpenOptions::default() };
            open_with(url, options).await.map_err(|e| e.to_string())?
        }
        other => return Err(format!("--sse-server takes memory, sqlite or postgres, not {other:?}")),
    };
    let server = Server::builder(contract().map_err(|e| e.to_string())?, store).build().map_err(|e| e.to_string())?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| e.to_string())?;
    println!("{}", listener.local_addr().map_err(|e| e.to_string())?.port());
    let router = a2_http::router([server]).map_err(|e| e.to_string())?;
    axum::serve(listener, router).await.map_err(|e| e.to_string())
}

fn rss_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One client: follow the session, count events and their delays until `events` came.
async fn follow(port: u16, events: u64, connected: Arc<AtomicU64>, delays: Arc<Vec<AtomicU64>>) -> Result<u64, String> {
    let mut socket = TcpStream::connect(("127.0.0.1", port)).await.map_err(|e| e.to_string())?;
    let request = "GET /bench/sessions/burst/stream HTTP/1.0\r\nHost: bench\r\n\r\n";
    socket.write_all(request.as_bytes()).await.map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(socket);
    let mut line = String::new();
    reader.read_line(&mut line).await.map_err(|e| e.to_string())?;
    if !line.contains(" 200 ") {
        return Err(format!("the stream answered {line:?}"));
    }
    connected.fetch_add(1, Ordering::SeqCst);
    let mut received = 0;
    while received < events {
        line.clear();
        if reader.read_line(&mut line).await.map_err(|e| e.to_string())? == 0 {
            break;
        }
        if let Some(at) = line.find("\"createdAt\":") {
            let digits: String = line[at + 12..].chars().take_while(char::is_ascii_digit).collect();
            let created: i64 = digits.parse().unwrap_or(0);
            let delay = usize::try_from((now_ms() - created).max(0)).unwrap_or(0).min(BUCKETS - 1);
            delays[delay].fetch_add(1, Ordering::Relaxed);
            received += 1;
        }
    }
    Ok(received)
}

fn percentile(delays: &[AtomicU64], total: u64, p: f64) -> usize {
    let wanted = ((total as f64) * p).ceil() as u64;
    let mut seen = 0;
    for (ms, count) in delays.iter().enumerate() {
        seen += count.load(Ordering::Relaxed);
        if seen >= wanted.max(1) {
            return ms;
        }
    }
    BUCKETS
}

/// The client side: start the server, connect, push the burst, wait, print.
pub async fn run(args: &[String], url: &str) -> Result<(), String> {
    let clients: usize = arg(args, "--sse-clients", 1000)?;
    let events: u64 = arg(args, "--sse-events", 10_000)?;
    let kinds: Vec<String> = match args.iter().position(|a| a == "--sse-store").and_then(|i| args.get(i + 1)) {
        Some(kind) => vec![kind.clone()],
        None => vec!["memory".into(), "sqlite".into(), "postgres".into()],
    };
    for kind in kinds {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut child = Command::new(exe)
            .args(["--postgres", url, "--sse-server", &kind])
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting the SSE server: {e}"))?;
        let stdout = child.stdout.take().ok_or("the SSE server has no stdout")?;
        let child = Killed(child);
        let mut port = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut port).map_err(|e| e.to_string())?;
        let port: u16 = port.trim().parse().map_err(|_| format!("the SSE server printed {port:?}, not a port"))?;
        let pid = child.0.id();
        let idle_kb = rss_kb(pid, "VmRSS:");

        let connected = Arc::new(AtomicU64::new(0));
        let delays: Arc<Vec<AtomicU64>> = Arc::new((0..BUCKETS).map(|_| AtomicU64::new(0)).collect());
        let followers: Vec<_> =
            (0..clients).map(|_| tokio::spawn(follow(port, events, connected.clone(), delays.clone()))).collect();
        let waiting = Instant::now();
        while connected.load(Ordering::SeqCst) < clients as u64 {
            if waiting.elapsed() > Duration::from_secs(60) {
                return Err(format!("only {} of {clients} clients connected", connected.load(Ordering::SeqCst)));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let connected_kb = rss_kb(pid, "VmRSS:");

        let started = Instant::now();
        let mut pushed = 0;
        while pushed < events {
            let batch = (events - pushed).min(BATCH as u64);
            let body = json!({ "events": (0..batch).map(|i| json!({ "type": "job", "payload": { "n": pushed + i } })).collect::<Vec<_>>() }).to_string();
            let mut socket = TcpStream::connect(("127.0.0.1", port)).await.map_err(|e| e.to_string())?;
            let request = format!(
                "POST /bench/sessions/burst/push HTTP/1.0\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            socket.write_all(request.as_bytes()).await.map_err(|e| e.to_string())?;
            let mut answer = String::new();
            socket.read_to_string(&mut answer).await.map_err(|e| e.to_string())?;
            if !answer.starts_with("HTTP/1.0 200") && !answer.starts_with("HTTP/1.1 200") {
                return Err(format!("a push answered {}", answer.lines().next().unwrap_or("")));
            }
            pushed += batch;
        }
        let pushed_ms = started.elapsed().as_millis();
        let mut complete = 0;
        for follower in followers {
            if let Ok(Ok(got)) =
                tokio::time::timeout(Duration::from_secs(600), follower).await.map(|r| r.unwrap_or(Ok(0)))
            {
                complete += u64::from(got == events);
            }
        }
        let all_ms = started.elapsed().as_millis();
        let total: u64 = delays.iter().map(|d| d.load(Ordering::Relaxed)).sum();
        println!(
            "bench {kind} sse clients={clients} events={events} complete_clients={complete} pushed_ms={pushed_ms} all_delivered_ms={all_ms} delay_p50_ms={} delay_p99_ms={} delay_max_ms={} server_rss_idle_mb={:.1} server_rss_connected_mb={:.1} server_rss_peak_mb={:.1}",
            percentile(&delays, total, 0.5),
            percentile(&delays, total, 0.99),
            percentile(&delays, total, 1.0),
            idle_kb as f64 / 1024.0,
            connected_kb as f64 / 1024.0,
            rss_kb(pid, "VmHWM:") as f64 / 1024.0,
        );
        if kind == "postgres" {
            super::drop_schema(url, &format!("a2_bench_{pid}")).await;
        }
    }
    Ok(())
}
