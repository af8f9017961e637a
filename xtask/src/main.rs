//! `cargo xtask <command>`: the project's two set-up commands and its helpers.
//!
//! - `test`: every test there is (unit, conformance on every store, property, telemetry).
//! - `studio`: the desktop app on the embedded SQLite dev store (not built yet).
//! - `bench`: throughput figures from an optimised build (append vs raw INSERT, drain).

use std::process::{Command, ExitCode};

mod postgres;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("studio") => studio(),
        Some("bench") => bench(&args[1..]),
        _ => {
            eprintln!("usage: cargo xtask <test|studio|bench> [args]");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask: {error}");
            ExitCode::FAILURE
        }
    }
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn run(mut command: Command) -> Result<(), String> {
    eprintln!("xtask: running {command:?}");
    let status = command.status().map_err(|e| format!("could not start {command:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed with {status}"))
    }
}

/// Every test in the workspace, with a Postgres server found or started for the stores that need one.
fn test(extra: &[String]) -> Result<(), String> {
    let database = postgres::ensure()?;
    let mut command = cargo();
    command.args(["test", "--workspace", "--all-targets"]).args(extra);
    command.env("A2_TEST_POSTGRES_URL", database.url());
    let result = run(command);
    drop(database);
    result
}

/// Throughput figures, from an optimised build, against the Postgres the tests use.
fn bench(extra: &[String]) -> Result<(), String> {
    let database = postgres::ensure()?;
    let mut command = cargo();
    command
        .args([
            "run",
            "--release",
            "--quiet",
            "-p",
            "a2-e2e",
            "--bin",
            "a2-bench",
            "--",
            "--postgres",
            database.url(),
            "--reads",
        ])
        .args(extra);
    let result = run(command);
    drop(database);
    result
}

fn studio() -> Result<(), String> {
    Err("the Studio desktop app is not built yet (tracked by the Studio issue); \
         the engine and its stores are tested by `cargo xtask test`"
        .into())
}
