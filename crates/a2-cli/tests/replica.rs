//! Attaching to a hot standby, as production is usually inspected: a real
//! primary and a streaming replica (`pg_basebackup -R`) this test starts,
//! workers writing to the primary while the Studio and the CLI read the
//! replica.

use std::path::Path;
use std::time::{Duration, Instant};

use a2_studio_api::*;

mod common;

use common::cluster;

fn a2(store: &str, args: &[&str], config: &Path) -> (i32, String, String) {
    common::a2_with_config(store, args, config)
}

fn open(url: &str, read_only: Option<bool>) -> ConnectionOpen {
    ConnectionOpen { url: Some(url.to_owned()), profile: None, password: None, read_only }
}

async fn sessions(studio: &Studio) -> usize {
    let request = SessionListRequest {
        contract: "shop".into(),
        id_prefix: None,
        has_dead_letters: false,
        lagging: false,
        sort: SessionSort::Id,
        after: None,
        limit: 500,
    };
    studio.session_list(request).await.map(|page| page.items.len()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hot_standby_is_read_polled_and_refuses_actions_naming_the_replica() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("a2-replica-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let primary = cluster::Cluster::start().unwrap_or_else(|e| panic!("{e}"));
    let standby = primary.start_standby().unwrap_or_else(|e| panic!("{e}"));

    // Workers write to the primary: the demo, with its dead letters, and kept totals refreshed there.
    let (code, _, err) = a2(&primary.url, &["--read-write", "demo", "--sessions", "6", "--fail-rate", "0.8"], &dir);
    assert_eq!(code, 0, "{err}");
    let writer = Studio::new(&dir);
    writer.connection_open(open(&primary.url, Some(false))).await.unwrap_or_else(|e| panic!("{e}"));
    let refreshed =
        writer.consumer_overview(TotalsQuery { contract: None, max_age_ms: 0, live: false, recompute: false }).await;
    let refreshed = refreshed.unwrap_or_else(|e| panic!("{e}"));

    // The Studio on the standby, even asked read-write: read-only, polled, and how far behind.
    let studio = Studio::new(&dir);
    let deadline = Instant::now() + Duration::from_secs(20);
    let info = loop {
        match studio.connection_open(open(&standby.url, Some(false))).await {
            Ok(info) if sessions(&studio).await == 6 => break info,
            _ if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
            other => panic!("the standby never showed the primary's sessions: {other:?}"),
        }
    };
    assert!(info.replica && info.read_only && !info.live, "{info:?}");
    let now = studio.connection_get(NoArgs {}).await.unwrap_or_else(|e| panic!("{e}"));
    let delay = now.and_then(|i| i.replica_delay_ms);
    assert!(delay.is_some_and(|ms| (0..10_000).contains(&ms)), "the header's 'N s behind': {delay:?}");

    // Every read works there.
    assert_eq!(studio.contract_list(NoArgs {}).await.unwrap_or_else(|e| panic!("{e}")), vec!["shop".to_owned()]);
    let order = SessionRef { contract: "shop".into(), session: "order-00001".into() };
    studio.session_get(order.clone()).await.unwrap_or_else(|e| panic!("{e}"));
    studio.head_list(order.clone()).await.unwrap_or_else(|e| panic!("{e}"));
    studio.snapshot_list(order.clone()).await.unwrap_or_else(|e| panic!("{e}"));
    let events = EventQuery {
        contract: "shop".into(),
        session: "order-00001".into(),
        after: None,
        before: None,
        newest_first: false,
        limit: 50,
    };
    assert!(!studio.event_list(events).await.unwrap_or_else(|e| panic!("{e}")).is_empty());
    let all_dead =
        DeadLetterQuery { contract: None, session: None, consumer: None, cause: None, after: None, limit: 100 };
    let dead = studio.dead_letter_list(all_dead).await.unwrap_or_else(|e| panic!("{e}"));
    studio.audit_list(AuditQuery { before: None, limit: 10 }).await.unwrap_or_else(|e| panic!("{e}"));
    // Kept totals as the primary last refreshed them: asked fresher, they come back stale rather than refreshed.
    let kept = loop {
        let kept = studio
            .consumer_overview(TotalsQuery { contract: None, max_age_ms: 0, live: false, recompute: false })
            .await;
        let kept = kept.unwrap_or_else(|e| panic!("{e}"));
        if kept.computed_at == refreshed.computed_at || Instant::now() > deadline {
            break kept;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(kept.computed_at, refreshed.computed_at, "the primary's kept totals, not a refresh");

    // An append on the primary shows on the standby within the poll interval plus the replay delay.
    let tick =
        studio.change_wait(ChangeWait { since: u32::MAX, timeout_ms: 10 }).await.unwrap_or_else(|e| panic!("{e}"));
    let started = Instant::now();
    let (code, _, err) = a2(&primary.url, &["--read-write", "demo", "--sessions", "8", "--seed", "9"], &dir);
    assert_eq!(code, 0, "{err}");
    let polled = studio
        .change_wait(ChangeWait { since: tick.version, timeout_ms: 5_000 })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(polled.version, tick.version, "a standby is polled");
    assert!(started.elapsed() < Duration::from_secs(10), "polled every 2 s: {:?}", started.elapsed());
    let seen = loop {
        let seen = sessions(&studio).await;
        if seen == 8 || started.elapsed() > Duration::from_secs(10) {
            break seen;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(seen, 8, "the primary's new sessions reached the standby");

    // Actions are refused before the database, naming the replica.
    let letter = dead.items.first().unwrap_or_else(|| panic!("the demo has dead letters"));
    let target = DeadLetterRef {
        contract: letter.contract.clone(),
        session: letter.session_id.clone(),
        consumer: letter.consumer.clone(),
        index: letter.index,
    };
    let refused = studio.dead_letter_redrive(Redrive { target, action: RedriveAction::Retry }).await.err();
    let refused = refused.unwrap_or_else(|| panic!("a redrive on a replica went through"));
    assert_eq!(refused.code, ErrorCode::ReadOnly, "{refused}");
    assert!(refused.message.contains("replica"), "{refused}");

    // The CLI says the same, in its header and its refusal.
    let (code, out, err) = a2(&standby.url, &["consumers"], &dir);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("replica,") && out.contains("behind"), "{out}");
    let index = letter.index.to_string();
    let redrive = [
        "--read-write",
        "redrive",
        "--contract",
        &letter.contract,
        "--session",
        &letter.session_id,
        "--consumer",
        &letter.consumer,
        "--index",
        &index,
        "--action",
        "retry",
    ];
    let (code, _, err) = a2(&standby.url, &redrive, &dir);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("replica") && err.contains("READ_ONLY"), "{err}");
    drop(standby);
    drop(primary);
    let _ = std::fs::remove_dir_all(dir);
}
