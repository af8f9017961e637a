//! The packages `cargo xtask bundle` makes, tested by installing them: the
//! `.deb`'s control fields and files, unpacked into a scratch root (`dpkg -x`),
//! its `a2 --version`, and its `a2-studio` started from the menu (no
//! arguments: the connect screen, then *New dev store*) and with a `.sqlite`
//! file, painting the overview each time; the `.rpm`'s files and requirements.
//! `cargo xtask test` bundles the debug build first and names the packages in
//! `A2_BUNDLE_DEB` / `A2_BUNDLE_RPM`; elsewhere these skip, saying why.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{click, count, find, launch, ready};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The package `var` names, or `None` to skip (a failure under `cargo xtask test`).
fn package(var: &str) -> Option<PathBuf> {
    match std::env::var_os(var).map(PathBuf::from) {
        Some(path) if path.exists() => Some(path),
        _ if std::env::var_os("A2_E2E_REQUIRED").is_some() => {
            panic!("{var} names no package: cargo xtask test bundles one before the tests")
        }
        _ => {
            eprintln!("skipping: {var} is not set (cargo xtask bundle --debug, then set it)");
            None
        }
    }
}

fn output(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap_or_else(|e| panic!("running {program}: {e}"));
    assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What the package puts on a machine, whichever the format.
const FILES: [&str; 5] = [
    "/usr/bin/a2-studio",
    "/usr/bin/a2",
    "/usr/share/applications/a2-studio.desktop",
    "/usr/share/icons/hicolor/128x128/apps/a2-studio.png",
    "/usr/share/icons/hicolor/512x512/apps/a2-studio.png",
];

#[tokio::test(flavor = "multi_thread")]
async fn the_deb_installs_and_its_app_paints_the_overview() {
    let Some(deb) = package("A2_BUNDLE_DEB") else { return };
    let deb = deb.display().to_string();
    let field = |name: &str| output("dpkg-deb", &["-f", &deb, name]).trim().to_owned();
    assert_eq!(field("Package"), "a2-studio");
    assert_eq!(field("Version"), VERSION);
    assert_eq!(field("Architecture"), "amd64");
    let depends = field("Depends");
    assert!(depends.contains("libwebkit2gtk-4.1-0") && depends.contains("libgtk-3-0"), "Depends: {depends}");
    let listed = output("dpkg-deb", &["-c", &deb]);
    for file in FILES.iter().copied().chain(["/usr/share/doc/a2-studio/copyright"]) {
        let entry = file.trim_start_matches('/');
        assert!(
            listed.lines().any(|l| l.ends_with(&format!(" {entry}")) || l.ends_with(&format!(" ./{entry}"))),
            "the .deb lacks {file}:\n{listed}"
        );
    }
    for size in [16, 32, 64, 256] {
        assert!(listed.contains(&format!("{size}x{size}/apps/a2-studio.png")), "no {size}px icon");
    }

    let dir = std::env::temp_dir().join(format!("a2-package-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap_or_else(|e| panic!("{e}"));
    output("dpkg", &["-x", &deb, &root.display().to_string()]);
    let bin = |name: &str| root.join("usr/bin").join(name).display().to_string();
    let a2 = bin("a2");
    let version = output(&a2, &["--version"]);
    assert!(version.starts_with(&format!("a2 {VERSION} (commit ")), "a2 --version: {version}");
    let studio = bin("a2-studio");
    assert!(output(&studio, &["--version"]).starts_with(&format!("a2-studio {VERSION} (commit ")));
    let entry = std::fs::read_to_string(root.join("usr/share/applications/a2-studio.desktop")).unwrap_or_default();
    for line in ["Name=A2 Studio", "Exec=a2-studio %f", "Icon=a2-studio", "MimeType=application/vnd.sqlite3;"] {
        assert!(entry.lines().any(|l| l.starts_with(line)), "the desktop entry lacks {line}:\n{entry}");
    }

    if !ready("installed-package end-to-end") {
        return;
    }
    // From the menu: no arguments, the connect screen; New dev store opens the seeded demo.
    let (client, driver) = launch(&studio, &dir, Vec::new()).await;
    click(&client, "[data-testid=new-dev-store]").await;
    find(&client, "[data-testid=consumers-table] tbody tr").await;
    assert!(dir.join("data/a2-studio/dev.sqlite").exists(), "the dev store is the user's own");
    let _ = client.close().await;
    drop(driver);

    // From a file manager: `a2-studio FILE` opens that store read-only; writing is asked for.
    let file = dir.join("orders.sqlite");
    output(&a2, &["--store", &format!("sqlite:{}", file.display()), "demo", "--sessions", "5"]);
    let (client, driver) = launch(&studio, &dir, vec![file.display().to_string()]).await;
    find(&client, "[data-testid=read-only-badge]").await;
    click(&client, "[data-testid=open-read-write]").await;
    click(&client, ".modal button.primary").await;
    find(&client, "[data-testid=outcome]").await;
    click(&client, ".modal button[data-autofocus]").await;
    let row = find(&client, "[data-testid=consumers-table] tbody tr").await;
    assert_eq!(count(&client, "[data-testid=read-only-badge]").await, 0, "read-write once asked");
    assert!(row.text().await.unwrap_or_default().contains("shop"), "the overview of the file's store");
    let _ = client.close().await;
    drop(driver);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_rpm_holds_the_same_files_and_requires_webkitgtk() {
    let Some(rpm) = package("A2_BUNDLE_RPM") else { return };
    if !Path::new("/usr/bin/rpm").exists() {
        assert!(std::env::var_os("A2_E2E_REQUIRED").is_none(), "rpm is not installed (Debian package rpm)");
        return;
    }
    let rpm = rpm.display().to_string();
    let listed = output("rpm", &["-qlp", &rpm]);
    for file in FILES.iter().copied().chain(["/usr/share/licenses/a2-studio/LICENSE"]) {
        assert!(listed.lines().any(|l| l == file), "the .rpm lacks {file}:\n{listed}");
    }
    let requires = output("rpm", &["-qp", "--requires", &rpm]);
    assert!(requires.contains("webkit2gtk4.1") && requires.contains("gtk3"), "Requires: {requires}");
    let name = output("rpm", &["-qp", "--queryformat", "%{NAME} %{VERSION}", &rpm]);
    assert_eq!(name, format!("a2-studio {VERSION}"));
}
