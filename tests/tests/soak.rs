//! The crash soak: 4 `a2-worker drain` processes on a Postgres cluster this
//! test starts; a random one is SIGKILLed and restarted every 0.1–0.5 s
//! (200 kills, `A2_SOAK_KILLS` to change) while more work arrives, and the
//! cluster itself crashes (`pg_ctl -m immediate stop`) and starts again
//! halfway. Then the test's own SQL checks every `work` event was handled
//! exactly once per consumer, only `work` events were handled, indexes have
//! no gaps and nothing is left pending.

mod common;

use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2_e2e::cluster::Cluster;
use common::Shared;
use sqlx::Row;

/// The file under the test temp directory the soak writes its figures to.
const SOAK_FIGURES: &str = "a2-soak-figures.txt";

const SESSIONS: usize = 32;
const EVENTS: usize = 150;
const SCHEMA: &str = "a2_soak";

/// A small deterministic generator, seeded from the clock and printed, so a failing run can be replayed.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below.max(1)
    }
}

fn kills() -> u64 {
    std::env::var("A2_SOAK_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(200)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_kills_and_restart() {
    let cluster = match Cluster::start() {
        Ok(cluster) => cluster,
        Err(why) if std::env::var_os("A2_E2E_REQUIRED").is_none() => {
            println!("skipped: no Postgres cluster of the test's own could start: {why}");
            return;
        }
        Err(why) => panic!("the soak needs a Postgres cluster of its own: {why}"),
    };
    let shared = Shared { url: cluster.url.clone(), schema: Some(SCHEMA.into()) };
    let store = shared.open().await;
    let sessions = a2_e2e::session_ids("s", SESSIONS);
    let seeding = a2_e2e::server(store.clone(), Duration::ZERO, Duration::from_secs(30));
    a2_e2e::seed(&seeding, &sessions, EVENTS).await.unwrap_or_else(|e| panic!("seeding: {e}"));
    drop((seeding, store));

    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(7, |d| d.as_nanos() as u64);
    println!("soak: seed {seed}");
    let mut rng = Lcg(seed);
    let args = ["drain", "--prefix", "s", "--sessions", "32", "--delay-ms", "3", "--ttl-ms", "1500"];
    let mut workers: Vec<Child> = (0..4).map(|_| shared.worker(&args)).collect();
    let timers = Timers::default();
    let feeder = tokio::spawn(feed(shared.url.clone(), sessions.clone(), timers.clone()));
    let started = Instant::now();
    let total = kills();
    let mut restarted_at = None;
    for kill in 0..total {
        tokio::time::sleep(Duration::from_millis(100 + rng.next(400))).await;
        let victim = rng.next(4) as usize;
        // Child::kill is SIGKILL: no destructor, no rollback, no goodbye.
        let _ = workers[victim].kill();
        let _ = workers[victim].wait();
        workers[victim] = shared.worker(&args);
        if kill == total / 2 {
            cluster.crash().unwrap_or_else(|e| panic!("{e}"));
            tokio::time::sleep(Duration::from_millis(500)).await;
            cluster.up().unwrap_or_else(|e| panic!("{e}"));
            restarted_at = Some(started.elapsed());
        }
        // A worker that found nothing to do, or lost its database, has ended: start it again.
        for worker in &mut workers {
            if worker.try_wait().ok().flatten().is_some() {
                *worker = shared.worker(&args);
            }
        }
    }
    feeder.abort();
    let chaos = started.elapsed();
    for worker in &mut workers {
        let _ = worker.kill();
        let _ = worker.wait();
    }
    // Kills charge lapses: a head held through ten of them is dead-lettered, as it should be.
    // An operator retries every one of those (page by page: there can be
    // thousands when the machine is slow and heads are held longer), then a
    // worker runs them; until a worker's pass leaves no dead letter behind.
    let store = shared.open().await;
    let mut redriven = 0;
    for pass in 0.. {
        let mut last = shared.worker(&args);
        let status = last.wait().unwrap_or_else(|e| panic!("{e}"));
        assert!(status.success(), "the final worker failed: {status}");
        let mut dead = Vec::new();
        let mut after = None;
        loop {
            let page = a2_store::DeadLetterList {
                contract: Some(a2_e2e::CONTRACT.into()),
                after: after.clone(),
                limit: 500,
                ..Default::default()
            };
            let letters = store.dead_letter_list(page).await.unwrap_or_else(|e| panic!("{e}"));
            let Some(last) = letters.last() else { break };
            after = Some(last.key());
            dead.extend(letters);
        }
        let list = a2_store::TaskList { limit: 1, ..Default::default() };
        let undelivered = store.task_list(list).await.unwrap_or_else(|e| panic!("{e}"));
        if dead.is_empty() && undelivered.is_empty() {
            break;
        }
        if dead.is_empty() {
            // A timer held by a killed worker waits out its lease before the next worker takes it.
            tokio::time::sleep(Duration::from_millis(1_600)).await;
        }
        assert!(pass < 20, "{} dead letters are still there after 20 retries of them all", dead.len());
        for letter in dead {
            let redrive = a2_store::DeadLetterRedrive {
                session: a2_store::session_key(&letter.contract, &letter.session_id),
                consumer: letter.consumer,
                index: letter.index,
                action: a2_store::RedriveAction::Retry,
                audit: None,
            };
            redriven += u32::from(store.dead_letter_redrive(redrive).await.unwrap_or_else(|e| panic!("{e}")));
        }
    }
    let figures = check(&cluster.url).await;
    let timer_figures = check_timers(&cluster.url, &timers).await;
    let report = format!(
        "soak: {redriven} heads were dead-lettered by the kills and retried\n\
         soak: {total} SIGKILLs and one Postgres crash-restart (at {:.1} s) in {:.1} s; then drained in {:.1} s; {figures}; {timer_figures}\n",
        restarted_at.map_or(0.0, |d| d.as_secs_f64()),
        chaos.as_secs_f64(),
        (started.elapsed() - chaos).as_secs_f64()
    );
    print!("{report}");
    // Beside the captured output: `cargo xtask test` prints it after the run, pass or fail.
    let figures_file = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(SOAK_FIGURES);
    if let Err(error) = std::fs::write(&figures_file, &report) {
        println!("soak: could not write {}: {error}", figures_file.display());
    }
}

/// The timers the feeder scheduled: those the store confirmed, and those whose
/// answer was lost (the cluster went down): kept or not, never delivered twice.
#[derive(Clone, Default)]
struct Timers {
    confirmed: Arc<Mutex<Vec<usize>>>,
    unconfirmed: Arc<Mutex<Vec<usize>>>,
}

/// More work while the kills go on: one event to one session every 20 ms, through a store of its own,
/// and every tenth a timer due 300 ms later that appends one more, delivered by whichever worker claims it.
async fn feed(url: String, sessions: Vec<String>, timers: Timers) {
    let mut n = 0usize;
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let Ok(store) = a2_e2e::open_store(&url, Some(SCHEMA)).await else { continue };
        let server = a2_e2e::server(store, Duration::ZERO, Duration::from_secs(30));
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let Ok(session) = server.session(&sessions[n % sessions.len()]) else { return };
            let event = a2_engine::AppendInput::new("work", serde_json::json!({ "fed": n }));
            // The cluster may be down: try again with a new connection.
            if session.append(vec![event]).await.is_err() {
                break;
            }
            if n.is_multiple_of(10) {
                let scheduled = a2_engine::AppendInput::new("work", serde_json::json!({ "scheduled": n }));
                let done =
                    session.schedule(&format!("timer-{n}"), a2_engine::Timing::delay("300ms"), vec![scheduled]).await;
                let list = if done.is_ok() { &timers.confirmed } else { &timers.unconfirmed };
                list.lock().unwrap_or_else(|p| p.into_inner()).push(n);
            }
            n += 1;
        }
    }
}

/// The checks, in SQL of the test's own; returns the figures.
async fn check(url: &str) -> String {
    let pool = sqlx::PgPool::connect(url).await.unwrap_or_else(|e| panic!("{e}"));
    let rows = |sql: String| {
        let pool = pool.clone();
        async move { sqlx::query(&sql.replace("§", SCHEMA)).fetch_all(&pool).await.unwrap_or_else(|e| panic!("{e}")) }
    };
    let gaps = rows(
        "SELECT e.session, count(*) AS n, min(e.idx) AS lo, max(e.idx) AS hi, max(s.head) AS head \
         FROM §.a2_events e JOIN §.a2_sessions s USING (session) GROUP BY e.session \
         HAVING count(*) <> max(e.idx) OR min(e.idx) <> 1 OR max(e.idx) <> max(s.head)"
            .into(),
    )
    .await;
    assert!(gaps.is_empty(), "{} sessions have gaps in their indexes", gaps.len());
    let wrong = rows(
        "SELECT r.session, r.type, r.payload->>'consumer' AS consumer, r.payload->>'of' AS of, e.type AS trigger \
         FROM §.a2_events r JOIN §.a2_events e ON e.session = r.session AND e.idx = (r.payload->>'of')::bigint \
         WHERE r.type IN ('handled', 'audit') AND e.type <> 'work'"
            .into(),
    )
    .await;
    let described: Vec<String> = wrong
        .iter()
        .map(|r| {
            let text = |c: &str| r.try_get::<String, _>(c).unwrap_or_default();
            format!(
                "{} {} of {} ({}) by {}",
                text("session"),
                text("type"),
                text("of"),
                text("trigger"),
                text("consumer")
            )
        })
        .collect();
    assert!(described.is_empty(), "events of a type the consumer does not take were handled: {described:#?}");
    let not_once = rows(
        "SELECT e.session, e.idx, c.consumer, count(h.idx) AS handled \
         FROM §.a2_events e CROSS JOIN (VALUES ('ordered'), ('parallel')) AS c(consumer) \
         LEFT JOIN §.a2_events h ON h.session = e.session AND h.type = 'handled' \
           AND h.payload->>'consumer' = c.consumer AND (h.payload->>'of')::bigint = e.idx \
         WHERE e.type = 'work' \
         GROUP BY e.session, e.idx, c.consumer HAVING count(h.idx) <> 1"
            .into(),
    )
    .await;
    let sample: Vec<String> = not_once
        .iter()
        .take(12)
        .map(|r| {
            let session = r.try_get::<String, _>("session").unwrap_or_default();
            let idx = r.try_get::<i64, _>("idx").unwrap_or(-1);
            let consumer = r.try_get::<String, _>("consumer").unwrap_or_default();
            let handled = r.try_get::<i64, _>("handled").unwrap_or(-1);
            format!("{session} {idx} {consumer}: handled {handled} times")
        })
        .collect();
    assert!(
        not_once.is_empty(),
        "{} (event, consumer) pairs were not handled exactly once: {sample:#?}",
        not_once.len()
    );
    let pending = rows(
        "SELECT h.session, h.consumer, h.idx FROM §.a2_heads h JOIN §.a2_sessions s USING (session) \
         WHERE h.kind <> 0 OR h.idx <= s.head"
            .into(),
    )
    .await;
    assert!(pending.is_empty(), "{} heads were left pending or dead", pending.len());
    let figures = rows(
        "SELECT (SELECT count(*) FROM §.a2_events WHERE type = 'work') AS work, \
           (SELECT count(*) FROM §.a2_events WHERE type = 'handled') AS handled, \
           (SELECT count(*) FROM §.a2_events WHERE type = 'handled' AND (cause->>'attempt')::int > 1) AS retried, \
           (SELECT count(*) FROM §.a2_heads WHERE failed_at IS NOT NULL) AS dead"
            .into(),
    )
    .await;
    let n = |c: &str| figures.first().and_then(|r| r.try_get::<i64, _>(c).ok()).unwrap_or(-1);
    pool.close().await;
    format!(
        "{} work events, {} handled exactly once, {} of them by a later attempt, {} dead-lettered",
        n("work"),
        n("handled"),
        n("retried"),
        n("dead")
    )
}

/// Every timer the store confirmed was delivered exactly once (its event is
/// in the log once, and was handled like any work); one whose answer was
/// lost, at most once; none is left. Returns the figures.
async fn check_timers(url: &str, timers: &Timers) -> String {
    let pool = sqlx::PgPool::connect(url).await.unwrap_or_else(|e| panic!("{e}"));
    let sql = "SELECT (payload->>'scheduled')::bigint AS n, count(*) AS copies FROM §.a2_events \
               WHERE type = 'work' AND payload ? 'scheduled' GROUP BY 1"
        .replace("§", SCHEMA);
    let rows = sqlx::query(&sql).fetch_all(&pool).await.unwrap_or_else(|e| panic!("{e}"));
    let left: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM {SCHEMA}.a2_scheduled"))
        .fetch_one(&pool)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    pool.close().await;
    let copies: std::collections::HashMap<usize, i64> = rows
        .iter()
        .map(|r| (r.try_get::<i64, _>("n").unwrap_or(-1) as usize, r.try_get::<i64, _>("copies").unwrap_or(-1)))
        .collect();
    let confirmed = timers.confirmed.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let unconfirmed = timers.unconfirmed.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert!(!confirmed.is_empty(), "the feeder scheduled timers");
    let missing: Vec<usize> = confirmed.iter().filter(|n| copies.get(n) != Some(&1)).copied().collect();
    assert!(missing.is_empty(), "confirmed timers not delivered exactly once: {missing:?} ({copies:?})");
    let twice: Vec<(&usize, &i64)> = copies.iter().filter(|(_, c)| **c != 1).collect();
    assert!(twice.is_empty(), "timers delivered more than once: {twice:?}");
    assert_eq!(left, 0, "timers left undelivered");
    let lost_delivered = unconfirmed.iter().filter(|n| copies.contains_key(n)).count();
    format!(
        "{} timers scheduled and delivered exactly once ({} more whose answer was lost: {lost_delivered} delivered)",
        confirmed.len(),
        unconfirmed.len()
    )
}
