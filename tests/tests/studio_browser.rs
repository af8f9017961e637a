//! The Studio's web mode end to end in a real browser: `a2 serve` on a
//! seeded demo store (SQLite, and Postgres), driven by `ui/e2e/browser.mjs`
//! (playwright-core with Debian's Chromium), read-write and read-only.
//! Needs the built UI, Node and Chromium: `cargo xtask test` provides them
//! and sets `A2_E2E_REQUIRED`, without which a machine lacking them skips.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::Shared;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `a2` binary beside this test's own build.
fn a2_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("no current exe: {e}"));
    let dir = exe.parent().and_then(Path::parent).unwrap_or_else(|| panic!("odd test path {}", exe.display()));
    dir.join("a2")
}

/// What is missing to run a browser here, if anything.
fn missing() -> Option<String> {
    let ui = workspace().join("ui");
    let built = std::fs::read_to_string(ui.join("dist/index.html")).unwrap_or_default();
    if !built.contains("/assets/") {
        return Some("the UI is not built (ui/dist)".into());
    }
    if !ui.join("node_modules/playwright-core").exists() {
        return Some("ui/node_modules lacks playwright-core (npm ci)".into());
    }
    if !Path::new("/usr/bin/chromium").exists() {
        return Some("/usr/bin/chromium is not installed".into());
    }
    if !a2_binary().exists() {
        return Some(format!("{} is not built", a2_binary().display()));
    }
    None
}

fn ready() -> bool {
    match missing() {
        None => true,
        Some(reason) if std::env::var_os("A2_E2E_REQUIRED").is_some() => {
            panic!("browser end-to-end cannot run: {reason}")
        }
        Some(reason) => {
            eprintln!("skipping the browser end-to-end: {reason} (cargo xtask test runs it)");
            false
        }
    }
}

fn a2(url: &str, args: &[&str]) {
    let output = Command::new(a2_binary())
        .args(["--store", url])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running a2: {e}"));
    assert!(output.status.success(), "a2 {args:?}: {}", String::from_utf8_lossy(&output.stderr));
}

/// `a2 serve`, and the URL it printed.
struct Served(Child, String);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(url: &str, read_only: bool) -> Served {
    serve_with(url, read_only, &[])
}

fn serve_with(url: &str, read_only: bool, extra: &[&str]) -> Served {
    let config = std::env::temp_dir().join(format!("a2-studio-config-{}", std::process::id()));
    let mut command = Command::new(a2_binary());
    command.args(["--store", url, "--json"]);
    // Postgres opens read-only unless asked: the read-write run asks.
    command.arg(if read_only { "--read-only" } else { "--read-write" });
    command
        .args(["serve", "--port", "0", "--export-dir"])
        .arg(std::env::temp_dir().join(format!("a2-browser-exports-{}", std::process::id())))
        .args(extra)
        .env("A2_STUDIO_CONFIG_DIR", config);
    let served = spawn_printing_url(command);
    assert!(
        served.1.starts_with("http://127.0.0.1:") && served.1.contains("/?code=") && !served.1.contains("token="),
        "{}",
        served.1
    );
    served
}

/// Start an `a2` server with `--json`, and the URL it printed first.
fn spawn_printing_url(mut command: Command) -> Served {
    let mut child = command.stdout(Stdio::piped()).spawn().unwrap_or_else(|e| panic!("starting {command:?}: {e}"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap_or_else(|e| panic!("reading {command:?}: {e}"));
    let printed: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    let served = printed["url"].as_str().unwrap_or_else(|| panic!("no url in {line}")).to_owned();
    Served(child, served)
}

fn browse(url: &str, mode: &str) {
    let mut node = Command::new("node");
    node.args(["e2e/browser.mjs", url, mode]).current_dir(workspace().join("ui"));
    // The README's pictures are rewritten only when asked (`cargo xtask screenshots`):
    // a test run leaves the checkout clean.
    if std::env::var_os("A2_SCREENSHOTS").is_some_and(|v| v == "1") {
        node.env("A2_SCREENSHOT_DIR", workspace().join("docs/screenshots"));
    }
    let status = node.status().unwrap_or_else(|e| panic!("running node: {e}"));
    assert!(status.success(), "the browser end-to-end ({mode}) failed");
}

fn run_both(url: &str) {
    a2(url, &["--read-write", "demo"]);
    {
        let served = serve(url, true);
        browse(&served.1, "ro");
    }
    let served = serve(url, false);
    browse(&served.1, "rw");
}

#[test]
fn the_web_mode_works_in_a_browser_on_sqlite() {
    if !ready() {
        return;
    }
    run_both(&Shared::sqlite("browser").url);
}

/// Pause and resume from the overview while demo traffic flows in the
/// serving process: the lag grows while paused and drains after.
#[test]
fn pausing_a_consumer_works_in_a_browser() {
    if !ready() {
        return;
    }
    let url = Shared::sqlite("browser-ops").url;
    a2(&url, &["--read-write", "demo"]);
    let served = serve_with(&url, false, &["--demo-traffic"]);
    browse(&served.1, "ops");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_web_mode_works_in_a_browser_on_postgres() {
    if !ready() {
        return;
    }
    let shared = Shared::postgres("browser");
    shared.open().await;
    let separator = if shared.url.contains('?') { '&' } else { '?' };
    let schema = shared.schema.clone().unwrap_or_default();
    let url = format!("{}{separator}options=-c%20search_path%3D{schema}", shared.url);
    tokio::task::spawn_blocking(move || run_both(&url)).await.unwrap_or_else(|e| panic!("{e}"));
    shared.remove().await;
}

/// `a2 serve-app` on a demo store, and its printed URL.
fn serve_app(url: &str) -> Served {
    let config = std::env::temp_dir().join(format!("a2-studio-config-{}", std::process::id()));
    let mut command = Command::new(a2_binary());
    command
        .args(["--store", url, "--json", "--read-write", "serve-app", "--port", "0"])
        .env("A2_STUDIO_CONFIG_DIR", config);
    spawn_printing_url(command)
}

/// The wire in a browser: two clients of `a2 serve-app`'s page follow one
/// session over SSE while one pushes; the Studio on the same store shows
/// the pusher in the session's Presence tab.
#[test]
fn the_wire_works_in_a_browser() {
    if !ready() {
        return;
    }
    let url = Shared::sqlite("browser-wire").url;
    a2(&url, &["--read-write", "demo", "--sessions", "3"]);
    let app = serve_app(&url);
    let studio = serve(&url, true);
    let status = Command::new("node")
        .args(["e2e/wire.mjs", &app.1, &studio.1])
        .current_dir(workspace().join("ui"))
        .status()
        .unwrap_or_else(|e| panic!("running node: {e}"));
    assert!(status.success(), "the wire's browser end-to-end failed");
}
