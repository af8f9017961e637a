//! The real desktop app end to end: `a2-studio` launched on a fresh demo
//! store through WebKitWebDriver (Tauri's WebKitGTK automation), driven by
//! fantoccini. It opens the dead letters, redrives one, and takes the
//! screenshots of the main screens the README shows: into `docs/screenshots/`
//! when asked (`A2_SCREENSHOTS=1`, as `cargo xtask screenshots` sets it), else
//! into a scratch directory, so a test run leaves the checkout clean.
//! Needs a display (Xvfb) and WebKitWebDriver: `cargo xtask test` provides
//! both and sets `A2_E2E_REQUIRED`; elsewhere it skips, saying why.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{click, count, find, launch, ready};
use fantoccini::Client;

fn screenshots() -> PathBuf {
    if std::env::var_os("A2_SCREENSHOTS").is_some_and(|v| v == "1") {
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/screenshots"))
    } else {
        std::env::temp_dir().join(format!("a2-desktop-screenshots-{}", std::process::id()))
    }
}

async fn shoot(client: &Client, name: &str) {
    // Let queries settle and the layout paint before the picture.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let png = client.screenshot().await.unwrap_or_else(|e| panic!("screenshot {name}: {e}"));
    std::fs::create_dir_all(screenshots()).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(screenshots().join(format!("{name}.png")), png).unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_desktop_app_redrives_a_dead_letter() {
    if !ready("desktop end-to-end") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("a2-desktop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = dir.join("dev.sqlite");
    let (client, driver) = launch(common::BUILT, &dir, vec!["--dev-store".into(), store.display().to_string()]).await;

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
        let (client, driver) =
            launch(common::BUILT, &dir, vec!["--store".into(), store.to_string_lossy().into_owned()]).await;
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
