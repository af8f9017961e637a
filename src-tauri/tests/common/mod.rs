//! The desktop end-to-end harness: WebKitWebDriver launching an `a2-studio`
//! binary (the one built, or one installed from a package) and fantoccini
//! driving it.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};

pub const WAIT: Duration = Duration::from_secs(30);

pub fn missing() -> Option<String> {
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
pub struct Driver(Child, PathBuf);

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
pub fn app_processes(dir: &Path) -> Vec<String> {
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

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

/// The element `css` selects, once it is there.
pub async fn find(client: &Client, css: &str) -> fantoccini::elements::Element {
    client.wait().at_most(WAIT).for_element(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css}: {e}"))
}

pub async fn click(client: &Client, css: &str) {
    find(client, css).await.click().await.unwrap_or_else(|e| panic!("clicking {css}: {e}"));
}

pub async fn count(client: &Client, css: &str) -> usize {
    client.find_all(Locator::Css(css)).await.map(|v| v.len()).unwrap_or(0)
}

/// The `a2-studio` this test crate was built with.
pub const BUILT: &str = env!("CARGO_BIN_EXE_a2-studio");

/// Start WebKitWebDriver, and through it the `a2-studio` at `binary` with
/// `args`; its config and data directories (dev stores) are under `dir`.
pub async fn launch(binary: &str, dir: &Path, args: Vec<String>) -> (Client, Driver) {
    let port = free_port();
    let driver = Driver(
        Command::new("/usr/bin/WebKitWebDriver")
            .arg(format!("--port={port}"))
            .env("TAURI_WEBVIEW_AUTOMATION", "true")
            .env("A2_STUDIO_CONFIG_DIR", dir.join("config"))
            .env("XDG_DATA_HOME", dir.join("data"))
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting WebKitWebDriver: {e}")),
        dir.to_path_buf(),
    );
    let capabilities = serde_json::json!({
        "webkitgtk:browserOptions": {
            "binary": binary,
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

pub fn ready(what: &str) -> bool {
    match missing() {
        None => true,
        Some(reason) if std::env::var_os("A2_E2E_REQUIRED").is_some() => panic!("{what} cannot run: {reason}"),
        Some(reason) => {
            eprintln!("skipping the {what}: {reason}");
            false
        }
    }
}
