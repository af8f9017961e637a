//! `cargo xtask <command>`: the project's two set-up commands and its helpers.
//!
//! - `test`: every test there is: unit, conformance on every store, the UI's
//!   Vitest, the browser end-to-end and the desktop end-to-end (under Xvfb).
//! - `studio`: the desktop app on the embedded SQLite dev store, seeded with the demo when new.
//! - `bench`: throughput and read-latency figures from an optimised build.
//! - `bundle`: the `.deb` and `.rpm` (`--debug`: of the debug build, as the test makes them).
//! - `screenshots`: `test`, with the end-to-end tests rewriting `docs/screenshots/`
//!   (a plain `test` writes its screenshots to a scratch directory and leaves the checkout clean).
//!
//! Each installs what it needs: Debian packages (as root, else it prints the
//! command), the UI's npm packages, and a throwaway Postgres when none is reachable.

use std::process::{Command, ExitCode};

mod bundle;
mod postgres;
mod setup;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..], false),
        Some("screenshots") => test(&args[1..], true),
        Some("studio") => studio(&args[1..]),
        Some("bench") => bench(&args[1..]),
        Some("bundle") => bundle::bundle(args[1..].iter().any(|a| a == "--debug"), true).map(|_| ()),
        _ => {
            eprintln!("usage: cargo xtask <test|studio|bench|bundle|screenshots> [args]");
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

/// Every test in the workspace, with a Postgres server found or started for
/// the stores that need one, the UI built first (the app embeds it), and a
/// virtual display for the desktop end-to-end.
fn test(extra: &[String], screenshots: bool) -> Result<(), String> {
    setup::system_packages()?;
    setup::build_ui()?;
    setup::test_ui()?;
    let database = postgres::ensure()?;
    let display = setup::display()?;
    // Build every test first: the packaging test installs packages of these very binaries.
    let cargo_args: Vec<&String> = extra.iter().take_while(|a| *a != "--").collect();
    let mut build = cargo();
    build.args(["test", "--workspace", "--all-targets", "--no-run"]).args(&cargo_args);
    run(build)?;
    let packages = bundle::bundle(true, false)?;
    let mut command = cargo();
    command.args(["test", "--workspace", "--all-targets"]).args(extra);
    for (var, extension) in [("A2_BUNDLE_DEB", "deb"), ("A2_BUNDLE_RPM", "rpm")] {
        if let Some(path) = packages.iter().find(|p| p.extension().is_some_and(|e| e == extension)) {
            command.env(var, path);
        }
    }
    command.env("A2_TEST_POSTGRES_URL", database.url());
    command.env("DISPLAY", &display.name);
    // The browser and desktop end-to-end must run here, not skip.
    command.env("A2_E2E_REQUIRED", "1");
    if screenshots {
        command.env("A2_SCREENSHOTS", "1");
    }
    // The soak's figures (dead letters the kills caused, lost, doubled) are
    // printed on every run, not only when the soak fails.
    let target = setup::target_dir()?;
    let soak_figures = target.join("tmp").join("a2-soak-figures.txt");
    let _ = std::fs::remove_file(&soak_figures);
    let result = run(command);
    match std::fs::read_to_string(&soak_figures) {
        Ok(figures) => eprint!("xtask: the soak's figures:\n{figures}"),
        Err(_) => eprintln!("xtask: the soak wrote no figures (it did not run, or did not finish)"),
    }
    drop(display);
    drop(database);
    result
}

/// Throughput and read-latency figures, from an optimised build, against
/// the Postgres the tests use; then the Studio's UI figures. `--studio-only`
/// skips the engine's.
fn bench(extra: &[String]) -> Result<(), String> {
    let studio_only = extra.iter().any(|a| a == "--studio-only");
    if extra.iter().any(|a| a == "--peers") {
        // The peers' own run: graphile-worker and pg-boss beside ours, nothing else.
        setup::bench_peers()?;
        return engine_bench(&[], extra);
    }
    if extra.iter().any(|a| a == "--pooled") {
        // Through a PgBouncer in transaction mode beside direct, nothing else.
        return engine_bench(&[], extra);
    }
    if extra.iter().any(|a| a == "--sse") {
        // The wire's fan-out alone: 1,000 SSE clients on one session, each store.
        return engine_bench(&[], extra);
    }
    if !studio_only {
        engine_bench(&["--reads"], extra)?;
    }
    studio_bench()
}

/// `a2-bench`, optimised, against the tests' Postgres (a throwaway one when none is reachable).
fn engine_bench(args: &[&str], extra: &[String]) -> Result<(), String> {
    let database = postgres::ensure()?;
    let mut command = cargo();
    command
        .args(["run", "--release", "--quiet", "-p", "a2-e2e", "--bin", "a2-bench", "--"])
        .args(["--postgres", database.url()])
        .args(args)
        .args(extra);
    let result = run(command);
    drop(database);
    result
}

/// The Studio in Chromium and in its window on a store with a 1M-event
/// session: first paint of the session list and scrolling (printed, not asserted).
fn studio_bench() -> Result<(), String> {
    setup::system_packages()?;
    setup::build_ui()?;
    let mut build = cargo();
    build.args(["build", "--release", "--quiet", "-p", "a2-cli"]);
    run(build)?;
    let root = setup::workspace();
    // The binary this build made, wherever cargo put it (not a stale one under ./target).
    let target = setup::target_dir()?;
    let a2 = target.join("release/a2");
    // Named for what it holds: a store seeded before the history session existed is seeded anew.
    let dir = target.join("a2-bench-studio-2");
    let store = format!("sqlite:{}", dir.join("long.sqlite").display());
    if !dir.join("long.sqlite").exists() {
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut seed = Command::new(&a2);
        seed.args([
            "--store",
            &store,
            "demo",
            "--sessions",
            "200",
            "--long-session",
            "1000000",
            "--long-history",
            "100000",
        ]);
        run(seed)?;
    }
    let mut serve = Command::new(&a2)
        .args(["--store", &store, "--read-only", "--json", "serve"])
        .env("A2_STUDIO_CONFIG_DIR", dir.join("config"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting a2 serve: {e}"))?;
    let url = serve_url(&mut serve);
    let result = url.and_then(|url| {
        let mut browser = Command::new("node");
        browser.args(["e2e/bench.mjs", &url, "shop", "long-00000", "history-00000"]).current_dir(root.join("ui"));
        run(browser)
    });
    // The server's peak resident memory over the scroll (target: under 300 MB).
    let status = std::fs::read_to_string(format!("/proc/{}/status", serve.id())).unwrap_or_default();
    let peak_kb = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).map(|v| v.trim().trim_end_matches("kB").trim());
    if let Some(kb) = peak_kb.and_then(|kb| kb.parse::<f64>().ok()) {
        println!("bench memory studio_web_server session_events=1000000 rss_mb_peak={:.0}", kb / 1024.0);
    }
    let _ = serve.kill();
    let _ = serve.wait();
    result?;
    let display = setup::display()?;
    let mut desktop = cargo();
    desktop
        .args(["test", "--quiet", "-p", "a2-studio", "--test", "desktop", "--", "--ignored", "--nocapture"])
        .arg("bench_launch_to_first_session_list")
        .env("A2_BENCH_STORE", &store)
        .env("DISPLAY", &display.name);
    run(desktop)
}

/// The URL `a2 serve --json` prints first.
fn serve_url(serve: &mut std::process::Child) -> Result<String, String> {
    use std::io::BufRead;
    let stdout = serve.stdout.take().ok_or("a2 serve has no stdout")?;
    let mut line = String::new();
    std::io::BufReader::new(stdout).read_line(&mut line).map_err(|e| format!("reading a2 serve: {e}"))?;
    let start = line.find("http://").ok_or_else(|| format!("a2 serve printed no URL: {line:?}"))?;
    Ok(line[start..].trim_end().trim_end_matches(['"', '}']).to_owned())
}

/// The desktop app on `.a2/dev.sqlite` (seeded with the demo when new).
/// `--demo-traffic` keeps demo orders flowing; other arguments go to `a2-studio`.
fn studio(extra: &[String]) -> Result<(), String> {
    setup::system_packages()?;
    setup::build_ui()?;
    let store = setup::workspace().join(".a2/dev.sqlite");
    if !setup::has_display() {
        return Err(format!(
            "no display to open the Studio's window on (DISPLAY is unset or unreachable).\n  \
             For the same Studio in a browser: cargo run -p a2-cli -- --store sqlite:{0} serve\n  \
             (or, seeding the demo when the file is new: cargo run -p a2-studio -- --dev-store {0} --serve)\n  \
             (or start Xvfb and set DISPLAY)",
            store.display()
        ));
    }
    let mut command = cargo();
    command.args(["run", "-p", "a2-studio", "--"]).args(["--dev-store", &store.display().to_string()]).args(extra);
    run(command)
}
