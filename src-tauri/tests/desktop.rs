//! The real desktop app end to end: `a2-studio` launched on a fresh demo
//! store through WebKitWebDriver (Tauri's WebKitGTK automation), driven by
//! fantoccini. It opens the dead letters, redrives one, and takes the
//! screenshots of the main screens the README shows (`docs/screenshots/`).
//! Needs a display (Xvfb) and WebKitWebDriver: `cargo xtask test` provides
//! both and sets `A2_E2E_REQUIRED`; elsewhere it skips, saying why.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};

const WAIT: Duration = Duration::from_secs(30);

fn missing() -> Option<String> {
    if std::env::var_os("DISPLAY").is_none() {
        return Some("no DISPLAY (run under Xvfb)".into());
    }
    if !Path::new("/usr/bin/WebKitWebDriver").exists() {
        return Some("WebKitWebDriver is not installed (Debian package webkit2gtk-driver)".into());
    }
    let dist =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../ui/dist/index.html")).unwrap_or_default();
    if !dist.contains("/assets/") {
        return Some("the UI is not built into ui/dist (the app embeds a placeholder)".into());
    }
    None
}

/// WebKitWebDriver, and the directory naming the app it launched.
struct Driver(Child, PathBuf);

impl Drop for Driver {
    fn drop(&mut self) {
        // SIGTERM, so WebKitWebDriver lets go of its port (see STACK.md).
        let _ = Command::new("kill").arg(self.0.id().to_string()).status();
        let _ = self.0.wait();
        // Closing the WebDriver session leaves the app running: end it too.
        for pid in app_processes(&self.1) {
            let _ = Command::new("kill").arg(pid).status();
        }
    }
}

/// Processes of `a2-studio` started for `dir` (their A2_STUDIO_CONFIG_DIR is in it).
fn app_processes(dir: &Path) -> Vec<String> {
    let marker = dir.display().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_string_lossy().into_owned();
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let environ = std::fs::read(entry.path().join("environ")).ok()?;
            let ours = String::from_utf8_lossy(&cmdline).contains("a2-studio")
                && String::from_utf8_lossy(&environ).contains(&marker);
            (pid.chars().all(|c| c.is_ascii_digit()) && ours).then_some(pid)
        })
        .collect()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

fn screenshots() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/screenshots"))
}

async fn shoot(client: &Client, name: &str) {
    // Let queries settle and the layout paint before the picture.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let png = client.screenshot().await.unwrap_or_else(|e| panic!("screenshot {name}: {e}"));
    std::fs::create_dir_all(screenshots()).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(screenshots().join(format!("{name}.png")), png).unwrap_or_else(|e| panic!("{e}"));
}

/// The element `css` selects, once it is there.
async fn find(client: &Client, css: &str) -> fantoccini::elements::Element {
    client.wait().at_most(WAIT).for_element(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css}: {e}"))
}

async fn click(client: &Client, css: &str) {
    find(client, css).await.click().await.unwrap_or_else(|e| panic!("clicking {css}: {e}"));
}

async fn count(client: &Client, css: &str) -> usize {
    client.find_all(Locator::Css(css)).await.map(|v| v.len()).unwrap_or(0)
}

/// Start WebKitWebDriver, and through it `a2-studio` with `args`.
async fn launch(dir: &Path, args: Vec<String>) -> (Client, Driver) {
    let port = free_port();
    let driver = Driver(
        Command::new("/usr/bin/WebKitWebDriver")
            .arg(format!("--port={port}"))
            .env("TAURI_WEBVIEW_AUTOMATION", "true")
            .env("A2_STUDIO_CONFIG_DIR", dir.join("config"))
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting WebKitWebDriver: {e}")),
        dir.to_path_buf(),
    );
    let capabilities = serde_json::json!({
        "webkitgtk:browserOptions": {
            "binary": env!("CARGO_BIN_EXE_a2-studio"),
            "args": args,
        }
    });
    let serde_json::Value::Object(capabilities) = capabilities else { panic!("capabilities are an object") };
    // Two rustls providers are linked (sqlx's ring, hyper-rustls's default): pick one before building.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut client = None;
    for _ in 0..50 {
        match ClientBuilder::rustls()
            .unwrap_or_else(|e| panic!("{e}"))
            .capabilities(capabilities.clone())
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
        {
            Ok(c) => {
                client = Some(c);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    (client.unwrap_or_else(|| panic!("could not start a2-studio through WebKitWebDriver")), driver)
}

fn ready(what: &str) -> bool {
    match missing() {
        None => true,
        Some(reason) if std::env::var_os("A2_E2E_REQUIRED").is_some() => panic!("{what} cannot run: {reason}"),
        Some(reason) => {
            eprintln!("skipping the {what}: {reason}");
            false
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_desktop_app_redrives_a_dead_letter() {
    if !ready("desktop end-to-end") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("a2-desktop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = dir.join("dev.sqlite");
    let (client, driver) = launch(&dir, vec!["--dev-store".into(), store.display().to_string()]).await;

    // The app opens on the seeded demo store: the overview.
    find(&client, "[data-testid=consumers-table] tbody tr").await;
    shoot(&client, "overview").await;

    click(&client, "a[href='#/sessions/shop']").await;
    find(&client, "[data-testid=sessions-table] tbody tr").await;
    shoot(&client, "sessions").await;

    click(&client, "a[href='#/session/shop/order-00010/events']").await;
    click(&client, ".event-row").await;
    find(&client, ".detail .json").await;
    shoot(&client, "session-events").await;
    click(&client, "a[role=tab][href$='/consumers']").await;
    find(&client, "[data-testid=head-row]").await;
    shoot(&client, "session-consumers").await;

    // The dead letters: open one, redrive it.
    click(&client, "nav.side a[href='#/dead-letters']").await;
    find(&client, "[data-testid=dead-letter-row]").await;
    let before = count(&client, "[data-testid=dead-letter-row]").await;
    click(&client, "[data-testid=dead-letter-row] [data-testid=open-dead-letter]").await;
    find(&client, "[data-testid=dead-letter-detail]").await;
    shoot(&client, "dead-letters").await;
    click(&client, "[data-testid=dead-letter-row] [data-testid=retry-one]").await;
    find(&client, "[role=dialog]").await;
    shoot(&client, "redrive-confirm").await;
    click(&client, "[role=dialog] button.primary").await;
    let outcome = find(&client, "[data-testid=outcome]").await;
    let text = outcome.text().await.unwrap_or_default();
    assert!(text.starts_with("Redriven"), "{text}");
    click(&client, "[role=dialog] button[data-autofocus]").await;
    let mut after = before;
    for _ in 0..50 {
        after = count(&client, "[data-testid=dead-letter-row]").await;
        if after < before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(after, before - 1, "the redriven dead letter left the list");

    click(&client, "nav.side a[href='#/audit']").await;
    let audit = find(&client, "[data-testid=audit-row]").await;
    assert!(audit.text().await.unwrap_or_default().contains("redrive.retry"));
    shoot(&client, "audit").await;

    click(&client, "nav.side a[href='#/connect']").await;
    find(&client, "[data-testid=connect]").await;
    shoot(&client, "connect").await;

    let _ = client.close().await;
    drop(driver);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Launch to the first rendered session list, three launches on a store
/// named by `A2_BENCH_STORE` (`cargo xtask bench` seeds it): printed, not asserted.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a benchmark: cargo xtask bench runs it"]
async fn bench_launch_to_first_session_list() {
    let Some(store) = std::env::var_os("A2_BENCH_STORE") else {
        eprintln!("set A2_BENCH_STORE=sqlite:PATH (cargo xtask bench does)");
        return;
    };
    if !ready("desktop benchmark") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("a2-desktop-bench-{}", std::process::id()));
    let mut figures = Vec::new();
    for _ in 0..3 {
        let started = std::time::Instant::now();
        let (client, driver) = launch(&dir, vec!["--store".into(), store.to_string_lossy().into_owned()]).await;
        click(&client, "a[href='#/sessions/shop']").await;
        find(&client, "[data-testid=sessions-table] tbody tr").await;
        figures.push(started.elapsed().as_millis());
        let _ = client.close().await;
        drop(driver);
    }
    figures.sort_unstable();
    println!(
        "bench studio-desktop launch_to_first_session_list_ms p50={} max={} (debug build, through WebKitWebDriver)",
        figures[1], figures[2]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
