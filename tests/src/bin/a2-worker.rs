//! A worker process for A2's multi-process, crash and durability tests.
//!
//! `a2-worker drain  --store URL [--schema S] --prefix P --sessions N [--delay-ms D] [--ttl-ms T]`
//!   runs the chaos consumers over sessions P0000…, until a pass finds nothing to do.
//! `a2-worker seed   --store URL [--schema S] --prefix P --sessions N --events M`
//!   appends M work events to each of N sessions, one batch per session.
//! `a2-worker append --store URL [--schema S] --session S --count N`
//!   appends N events one by one, printing `ack <n>` after each, then waits to be killed.

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use a2_engine::AppendInput;
use serde_json::json;

fn flags(args: &[String]) -> Result<HashMap<String, String>, String> {
    let mut map = HashMap::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let name = flag.strip_prefix("--").ok_or_else(|| format!("unexpected argument {flag:?}"))?;
        let value = it.next().ok_or_else(|| format!("--{name} needs a value"))?;
        map.insert(name.to_owned(), value.clone());
    }
    Ok(map)
}

fn number(flags: &HashMap<String, String>, name: &str, default: Option<u64>) -> Result<u64, String> {
    match flags.get(name) {
        Some(v) => v.parse().map_err(|_| format!("--{name} must be a whole number, not {v:?}")),
        None => default.ok_or_else(|| format!("--{name} is required")),
    }
}

async fn run(args: Vec<String>) -> Result<(), String> {
    let (command, rest) = args.split_first().ok_or("usage: a2-worker <drain|append> --store URL …")?;
    let flags = flags(rest)?;
    let url = flags.get("store").ok_or("--store is required")?;
    let store = a2_e2e::open_store(url, flags.get("schema").map(String::as_str)).await.map_err(|e| e.to_string())?;
    match command.as_str() {
        "drain" => {
            let prefix = flags.get("prefix").ok_or("--prefix is required")?;
            let count = number(&flags, "sessions", None)? as usize;
            let delay = Duration::from_millis(number(&flags, "delay-ms", Some(0))?);
            let ttl = Duration::from_millis(number(&flags, "ttl-ms", Some(30_000))?);
            let server = a2_e2e::server(store, delay, ttl);
            let sessions = a2_e2e::session_ids(prefix, count);
            let processed = a2_e2e::drain_all(&server, &sessions).await.map_err(|e| e.to_string())?;
            println!("processed {processed}");
            Ok(())
        }
        "seed" => {
            let prefix = flags.get("prefix").ok_or("--prefix is required")?;
            let count = number(&flags, "sessions", None)? as usize;
            let events = number(&flags, "events", None)? as usize;
            let server = a2_e2e::server(store, Duration::ZERO, Duration::from_secs(30));
            a2_e2e::seed(&server, &a2_e2e::session_ids(prefix, count), events).await.map_err(|e| e.to_string())
        }
        "append" => {
            let session = flags.get("session").ok_or("--session is required")?;
            let count = number(&flags, "count", None)?;
            let server = a2_e2e::server(store, Duration::ZERO, Duration::from_secs(30));
            let session = server.session(session).map_err(|e| e.to_string())?;
            let mut out = std::io::stdout();
            for n in 1..=count {
                let event = AppendInput::new("work", json!({ "n": n })).with_id(format!("ack-{n}"));
                session.append(vec![event]).await.map_err(|e| e.to_string())?;
                writeln!(out, "ack {n}").and_then(|()| out.flush()).map_err(|e| e.to_string())?;
            }
            std::future::pending::<()>().await;
            Ok(())
        }
        other => Err(format!("unknown command {other:?}")),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("a2-worker: {error}");
            ExitCode::FAILURE
        }
    }
}
