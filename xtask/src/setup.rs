//! What the Studio's build and tests need beyond Rust: Debian packages
//! (WebKitGTK for Tauri, Chromium, Xvfb, WebKitWebDriver), the UI's npm
//! packages and its Vite build, and a virtual display.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use crate::run;

/// The one apt line that brings every system package the Studio uses.
const PACKAGES: &[&str] = &[
    "build-essential",
    "curl",
    "wget",
    "file",
    "pkg-config",
    "libssl-dev",
    "libgtk-3-dev",
    "libwebkit2gtk-4.1-dev",
    "libayatana-appindicator3-dev",
    "librsvg2-dev",
    "libxdo-dev",
    "xvfb",
    "xauth",
    "webkit2gtk-driver",
    "chromium",
    "imagemagick",
    "x11-apps",
    "fonts-dejavu-core",
    // `rpm -qlp`: the packaging test reads the .rpm it built.
    "rpm",
    // A transaction-mode pooler in front of the test Postgres (production behind PgBouncer).
    "pgbouncer",
];

pub fn workspace() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    root.canonicalize().unwrap_or(root)
}

/// Where cargo puts what it builds, as cargo itself says (`CARGO_TARGET_DIR`,
/// `build.target-dir` in a config, or `target/`), so a binary run after a
/// build is the one that build made.
pub fn target_dir() -> Result<PathBuf, String> {
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(workspace())
        .output()
        .map_err(|e| format!("running cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!("cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr)));
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|e| format!("cargo metadata printed no JSON: {e}"))?;
    metadata["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| "cargo metadata named no target_directory".to_owned())
}

fn apt_line() -> String {
    format!(
        "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends {}",
        PACKAGES.join(" ")
    )
}

fn installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
}

/// Install the missing system packages (as root), or say exactly how.
pub fn system_packages() -> Result<(), String> {
    if Command::new("dpkg-query").arg("--version").output().is_err() {
        eprintln!("xtask: not a Debian system: install WebKitGTK 4.1, Chromium, Xvfb and WebKitWebDriver yourself");
        return Ok(());
    }
    let missing: Vec<&str> = PACKAGES.iter().copied().filter(|p| !installed(p)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    if !crate::postgres::is_root() {
        return Err(format!(
            "system packages are missing ({}): run as root:\n  sudo sh -c '{}'",
            missing.join(" "),
            apt_line()
        ));
    }
    eprintln!("xtask: installing system packages: {}", missing.join(" "));
    let mut command = Command::new("sh");
    command.args(["-c", &apt_line()]);
    run(command)
}

fn npm(args: &[&str]) -> Command {
    npm_in("ui", args)
}

fn npm_in(dir: &str, args: &[&str]) -> Command {
    let mut command = Command::new("npm");
    command.args(args).current_dir(workspace().join(dir));
    command
}

/// `npm ci` in `dir` unless its installed packages are already the lockfile's.
fn npm_ci(dir: &str) -> Result<(), String> {
    let root = workspace().join(dir);
    let lock = root.join("package-lock.json");
    let installed = root.join("node_modules/.package-lock.json");
    let fresh = match (
        std::fs::metadata(&lock).and_then(|m| m.modified()),
        std::fs::metadata(&installed).and_then(|m| m.modified()),
    ) {
        (Ok(lock), Ok(installed)) => installed >= lock,
        _ => false,
    };
    if !fresh {
        run(npm_in(dir, &["ci", "--no-audit", "--no-fund"]))?;
    }
    Ok(())
}

/// The UI's packages, then the type check and the Vite build into `ui/dist` (what the app embeds).
pub fn build_ui() -> Result<(), String> {
    npm_ci("ui")?;
    run(npm(&["run", "build"]))
}

/// graphile-worker and pg-boss, pinned by `bench/peers/package-lock.json`.
pub fn bench_peers() -> Result<(), String> {
    npm_ci("bench/peers")
}

/// The UI's lint (zero warnings) and its Vitest tests, unit and component.
pub fn test_ui() -> Result<(), String> {
    run(npm(&["run", "lint"]))?;
    run(npm(&["test"]))
}

/// A virtual display for the desktop tests, unless one is set.
pub struct Display {
    pub name: String,
    server: Option<Child>,
}

impl Drop for Display {
    fn drop(&mut self) {
        if let Some(server) = &mut self.server {
            // SIGTERM, so Xvfb removes its socket and lock file.
            let _ = Command::new("kill").arg(server.id().to_string()).status();
            let _ = server.wait();
        }
    }
}

fn x_socket(n: u32) -> PathBuf {
    PathBuf::from(format!("/tmp/.X11-unix/X{n}"))
}

pub fn display() -> Result<Display, String> {
    if let Ok(name) = std::env::var("DISPLAY") {
        if !name.is_empty() {
            return Ok(Display { name, server: None });
        }
    }
    let n = (99..140)
        .find(|n| !x_socket(*n).exists() && !Path::new(&format!("/tmp/.X{n}-lock")).exists())
        .ok_or("no free X display number between :99 and :139")?;
    let server = Command::new("Xvfb")
        .args([format!(":{n}").as_str(), "-screen", "0", "1280x800x24", "-nolisten", "tcp"])
        .spawn()
        .map_err(|e| format!("could not start Xvfb (package xvfb): {e}"))?;
    for _ in 0..100 {
        if x_socket(n).exists() {
            return Ok(Display { name: format!(":{n}"), server: Some(server) });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("Xvfb :{n} did not come up"))
}

/// Whether a display this process could open a window on is reachable.
pub fn has_display() -> bool {
    if std::env::var_os("WAYLAND_DISPLAY").is_some() {
        return true;
    }
    let Ok(name) = std::env::var("DISPLAY") else { return false };
    let Some(n) = name.strip_prefix(':').and_then(|d| d.split('.').next()).and_then(|d| d.parse::<u32>().ok()) else {
        // A remote display (host:n): trust it.
        return !name.is_empty();
    };
    x_socket(n).exists()
        || TcpStream::connect_timeout(&SocketAddr::from(([127, 0, 0, 1], 6000 + n as u16)), Duration::from_millis(200))
            .is_ok()
}
