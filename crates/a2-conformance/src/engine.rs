//! Engine scenarios: a real server over the backend, on tokio's paused clock
//! (leases, heartbeats and backoff take no wall time).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2_engine::*;
use a2_store::{Clock, RedriveAction, SnapshotPut, Store, TokioClock};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::{Barrier, Notify};

use crate::StoreFactory;

pub use crate::adapters::{
    append_dispatch_arms_the_scheduler_instead_of_draining, append_dispatch_without_a_scheduler_is_refused,
    custom_scheduler_task_is_delivered_through_the_append_path,
    schedule_marks_any_scheduler_error_as_scheduler_send_failed, scheduled_task_for_another_contract_is_refused,
};
pub use crate::healing::*;
pub use crate::leases::*;
pub use crate::permits::*;
pub use crate::presence_feed::*;
pub use crate::range_drain::*;
pub use crate::reads::*;
pub use crate::registry::consumer_catalog_lists_idle_consumers;
pub use crate::run_context::*;
pub use crate::run_fidelity::*;
pub use crate::scheduling::*;
pub use crate::semantics::*;
pub use crate::upkeep::{one_upkeep_leader_at_a_time, upkeep_leadership_moves_when_the_leader_dies};
pub use crate::watchdogs::*;

/// A presence field of the test contract: where a participant points.
#[derive(Deserialize)]
#[allow(dead_code)]
pub(crate) struct Cursor {
    x: i64,
    y: i64,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Order {
    customer: String,
    amount: u64,
}

pub(crate) fn contract() -> Contract {
    let any = |_: &Value| Ok(());
    Contract::new("shop")
        .and_then(|c| c.event::<Order>("order.placed"))
        .and_then(|c| c.event_with("tick", any))
        .and_then(|c| c.event_with("tock", any))
        .and_then(|c| c.event_with("stop", any))
        .and_then(|c| c.presence::<Cursor>("cursor"))
        .and_then(|c| c.presence::<bool>("typing"))
        .and_then(|c| {
            c.reducer(
                Reducer::new("count", json!(0), |state, event| {
                    let n = state.as_u64().unwrap_or(0);
                    json!(n + u64::from(event.event_type == "tick"))
                })
                .with_state_type::<u64>(),
            )
        })
        .unwrap_or_else(|e| panic!("test contract: {e}"))
}

pub(crate) async fn open(factory: &dyn StoreFactory) -> Arc<dyn Store> {
    let clock: Arc<dyn Clock> = Arc::new(TokioClock::new());
    factory.open(clock).await
}

/// How an engine scenario's time passes: tokio's paused clock (memory), or
/// real time with short timings (SQL backends, whose I/O would let a paused
/// clock leap past every lease while a query runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    Paused,
    Realtime,
}

impl Pace {
    pub fn timings(self) -> DrainTimings {
        match self {
            Self::Paused => DrainTimings::default(),
            Self::Realtime => DrainTimings {
                claim_ttl: Duration::from_secs(3),
                claim_heartbeat: Duration::from_millis(750),
                backoff: a2_store::Backoff { base_ms: 10, max_ms: 80 },
                watchdog_grace: Duration::from_millis(50),
                consume_wait_min: Duration::from_millis(5),
                consume_wait_max: Duration::from_millis(50),
                stream_poll: Duration::from_millis(100),
                rescue_every: Duration::from_millis(200),
                scheduler_poll: Duration::from_millis(50),
                ..DrainTimings::default()
            },
        }
    }

    /// Long enough for anything still due to have happened.
    pub(crate) fn settle(self) -> Duration {
        match self {
            Self::Paused => Duration::from_secs(5),
            Self::Realtime => Duration::from_millis(400),
        }
    }
}

pub(crate) fn server(pace: Pace, store: Arc<dyn Store>, consumers: Vec<Consumer>) -> Server {
    server_with(pace, store, consumers, |b| b)
}

/// A server of the test contract on the pace's timings, built the way `configure` says.
pub(crate) fn server_with(
    pace: Pace,
    store: Arc<dyn Store>,
    consumers: Vec<Consumer>,
    configure: impl FnOnce(ServerBuilder) -> ServerBuilder,
) -> Server {
    configure(Server::builder(contract(), store).consumers(consumers).timings(pace.timings()))
        .build()
        .unwrap_or_else(|e| panic!("server: {e}"))
}

/// A server that appends but never drains: a process that dies before it
/// does, or one that only moves consumers by hand.
pub(crate) fn quiet_server(pace: Pace, store: Arc<dyn Store>, consumers: Vec<Consumer>) -> Server {
    server_with(pace, store, consumers, |b| b.run_in_background(false))
}

pub(crate) fn tick(n: u64) -> AppendInput {
    AppendInput::new("tick", json!({ "n": n }))
}

fn order(customer: &str, n: u64) -> AppendInput {
    AppendInput::new("order.placed", json!({ "customer": customer, "amount": n }))
}

pub(crate) type Seen = Arc<Mutex<Vec<(String, u64)>>>;

pub(crate) fn seen() -> Seen {
    Arc::new(Mutex::new(Vec::new()))
}

pub(crate) fn snapshot(seen: &Seen) -> Vec<(String, u64)> {
    seen.lock().map(|v| v.clone()).unwrap_or_default()
}

pub(crate) fn record(seen: &Seen, name: &str, index: u64) {
    if let Ok(mut v) = seen.lock() {
        v.push((name.to_owned(), index));
    }
}

/// A consumer that records each event it handles.
pub(crate) fn recorder(builder: ConsumerBuilder, name: &'static str, seen: &Seen) -> Consumer {
    let seen = seen.clone();
    builder
        .run(move |ctx| {
            let seen = seen.clone();
            async move {
                record(&seen, name, ctx.event.index);
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("consumer: {e}"))
}

/// A consumer of `tick`s whose runs count themselves in `started` and never
/// return: a process that dies with its heads leased.
pub(crate) fn hanging(name: &str, started: Arc<AtomicU32>) -> Consumer {
    Consumer::builder(name)
        .types(["tick"])
        .run(move |_| {
            let started = started.clone();
            async move {
                started.fetch_add(1, Ordering::SeqCst);
                std::future::pending::<()>().await;
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("consumer: {e}"))
}

/// Wait (on paused time) until `check` holds.
pub(crate) async fn eventually<F: FnMut() -> bool>(what: &str, mut check: F) {
    for _ in 0..20_000 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting until {what}");
}

/// Every event the session still has.
pub(crate) async fn all_events(session: &Session) -> Vec<a2_store::Event> {
    let history = session.history(EventRange::all()).unwrap_or_else(|e| panic!("{e}"));
    history.collect().await.unwrap_or_else(|e| panic!("{e}"))
}

pub(crate) async fn dead_letters(session: &Session) -> Vec<a2_store::DeadLetter> {
    let heads = session.dead_letters().await.unwrap_or_else(|e| panic!("dead letters: {e}"));
    heads.into_iter().map(|h| h.letter).collect()
}

pub async fn engine_runs_each_consumer_kind(factory: &dyn StoreFactory, pace: Pace) {
    let seen = seen();
    let consumers = vec![
        recorder(Consumer::builder("log").lane("main"), "log", &seen),
        recorder(
            Consumer::builder("laned").lane_fn(|_, e| e.payload["customer"].as_str().map(str::to_owned)),
            "laned",
            &seen,
        ),
        recorder(Consumer::builder("par").types(["order.placed"]), "par", &seen),
    ];
    let server = server(pace, open(factory).await, consumers);
    let session = server.session("o-1").unwrap_or_else(|e| panic!("{e}"));
    let appended = session
        .append(vec![order("ann", 1), order("bob", 2), tick(3), order("ann", 4)])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(appended.iter().map(|e| e.index).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
    eventually("every consumer handled its events", || snapshot(&seen).len() == 4 + 4 + 3).await;
    tokio::time::sleep(pace.settle()).await;
    let all = snapshot(&seen);
    let of = |name: &str| all.iter().filter(|(n, _)| n == name).map(|(_, i)| *i).collect::<Vec<_>>();
    assert_eq!(of("log"), vec![1, 2, 3, 4], "the log consumer ran every event once, in order");
    let mut laned = of("laned");
    laned.sort_unstable();
    assert_eq!(laned, vec![1, 2, 3, 4], "the event with no lane ran concurrently");
    let mut par = of("par");
    par.sort_unstable();
    assert_eq!(par, vec![1, 2, 4], "the typed consumer took only its type");
    let drained = session.drain().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(drained.outcome, DrainOutcome::Settled);
}

pub async fn engine_rejects_unknown_types_and_invalid_payloads(factory: &dyn StoreFactory, pace: Pace) {
    let server = server(pace, open(factory).await, vec![]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    let code = |r: Result<Vec<a2_store::Event>, A2Error>| r.map(|_| ()).map_err(|e| e.code());
    assert_eq!(code(session.append(vec![AppendInput::new("nope", json!({}))]).await), Err("UNKNOWN_EVENT_TYPE"));
    assert_eq!(
        code(session.append(vec![order("ann", 1), AppendInput::new("order.placed", json!({ "amount": "x" }))]).await),
        Err("INVALID_PAYLOAD")
    );
    let v5 = ids::appended_event_id("t", "n", 0, "c");
    assert_eq!(code(session.append(vec![tick(1).with_id(v5)]).await), Err("INVALID_EVENT_ID"));
    assert!(all_events(&session).await.is_empty(), "a refused batch wrote nothing");
    assert_eq!(server.session("a\u{1f}b").map(|_| ()).map_err(|e| e.code()), Err("INVALID_SESSION_ID"));
    assert_eq!(server.session("").map(|_| ()).map_err(|e| e.code()), Err("INVALID_SESSION_ID"));
    let build = |b: ConsumerBuilder| b.run(|_| async { Ok::<(), BoxError>(()) }).map(|_| ()).map_err(|e| e.code());
    assert_eq!(build(Consumer::builder("a2.mine")), Err("INVALID_CONSUMER"));
    assert_eq!(build(Consumer::builder("")), Err("INVALID_CONSUMER"));
    assert_eq!(build(Consumer::builder("x").types(Vec::<String>::new())), Err("INVALID_CONSUMER"));
    assert_eq!(build(Consumer::builder("x").backfill()), Err("INVALID_CONSUMER"));
    assert_eq!(build(Consumer::builder("x").lane("main").backfill().abort_on(["stop"])), Err("INVALID_CONSUMER"));
    let unknown_type = Consumer::builder("x").types(["nope"]).run(|_| async { Ok::<(), BoxError>(()) });
    let unknown_type = unknown_type.unwrap_or_else(|e| panic!("{e}"));
    let built = Server::builder(contract(), open(factory).await).consumer(unknown_type).build();
    assert_eq!(built.map(|_| ()).map_err(|e| e.code()), Err("INVALID_CONSUMER"));
}

pub async fn engine_retries_with_backoff_then_dead_letters(factory: &dyn StoreFactory, pace: Pace) {
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let times = attempts.clone();
    let failing = Consumer::builder("flaky")
        .lane("main")
        .run(move |ctx| {
            let times = times.clone();
            async move {
                if let Ok(mut t) = times.lock() {
                    t.push((ctx.attempt, tokio::time::Instant::now()));
                }
                Err::<(), BoxError>(format!("no luck on attempt {}", ctx.attempt).into())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = server(pace, open(factory).await, vec![failing]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    let mut letters = Vec::new();
    for _ in 0..20_000 {
        letters = dead_letters(&session).await;
        if !letters.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(letters.len(), 1, "dead-lettered after its budget");
    assert_eq!((letters[0].failure_count, letters[0].index), (10, 1));
    assert!(letters[0].last_error.as_deref().is_some_and(|e| e.contains("no luck on attempt 10")));
    let attempts = attempts.lock().map(|a| a.clone()).unwrap_or_default();
    assert_eq!(attempts.iter().map(|(a, _)| *a).collect::<Vec<_>>(), (1..=10).collect::<Vec<u32>>());
    let backoff = pace.timings().backoff;
    for (n, pair) in attempts.windows(2).enumerate() {
        let gap = pair[1].1.duration_since(pair[0].1).as_millis() as i64;
        let want = backoff.delay_ms(n as u32 + 1);
        assert!(gap >= want && gap <= want + 2_000, "gap after failure {} was {gap} ms, backoff says {want} ms", n + 1);
    }
}

/// A consumer that fails on index 1 while `fail` is set, counting its runs.
fn switchable(builder: ConsumerBuilder, fail: &Arc<AtomicBool>, runs: &Arc<AtomicU32>) -> Consumer {
    let (fail, runs) = (fail.clone(), runs.clone());
    builder
        .run(move |ctx| {
            let (fail, runs) = (fail.clone(), runs.clone());
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                if fail.load(Ordering::SeqCst) && ctx.event.index == 1 {
                    return Err::<(), BoxError>("switched to fail".into());
                }
                Ok(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"))
}

pub async fn engine_redrive_retry_runs_once_more(factory: &dyn StoreFactory, pace: Pace) {
    let fail = Arc::new(AtomicBool::new(true));
    let runs = Arc::new(AtomicU32::new(0));
    let server = server(pace, open(factory).await, vec![switchable(Consumer::builder("worker"), &fail, &runs)]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("ten runs", || runs.load(Ordering::SeqCst) == 10).await;
    tokio::time::sleep(pace.settle()).await;
    assert_eq!(dead_letters(&session).await.len(), 1);
    fail.store(false, Ordering::SeqCst);
    assert!(session.redrive("worker", 1, RedriveAction::Retry).await.unwrap_or_else(|e| panic!("{e}")));
    eventually("the retried run", || runs.load(Ordering::SeqCst) == 11).await;
    tokio::time::sleep(pace.settle()).await;
    assert_eq!(runs.load(Ordering::SeqCst), 11, "retry runs exactly once more");
    assert!(dead_letters(&session).await.is_empty());
    assert!(
        !session.redrive("worker", 1, RedriveAction::Retry).await.unwrap_or_else(|e| panic!("{e}")),
        "nothing dead to redrive"
    );
    let zero = session.redrive("worker", 0, RedriveAction::Retry).await;
    assert_eq!(zero.map_err(|e| e.code()), Err("INVALID_ARGUMENT"));
}

pub async fn engine_redrive_skip_moves_on(factory: &dyn StoreFactory, pace: Pace) {
    let fail = Arc::new(AtomicBool::new(true));
    let runs = Arc::new(AtomicU32::new(0));
    let seen = seen();
    let server = server(
        pace,
        open(factory).await,
        vec![
            switchable(Consumer::builder("worker").lane("main"), &fail, &runs),
            recorder(Consumer::builder("after").lane("main"), "after", &seen),
        ],
    );
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1), tick(2)]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("dead letter", || runs.load(Ordering::SeqCst) == 10).await;
    tokio::time::sleep(pace.settle()).await;
    assert_eq!(runs.load(Ordering::SeqCst), 10, "index 2 waits behind the dead head");
    assert_eq!(snapshot(&seen).len(), 2, "another consumer of the same events went on");
    assert!(session.redrive("worker", 1, RedriveAction::Skip).await.unwrap_or_else(|e| panic!("{e}")));
    eventually("index 2 ran", || runs.load(Ordering::SeqCst) == 11).await;
    tokio::time::sleep(pace.settle()).await;
    assert_eq!(runs.load(Ordering::SeqCst), 11, "skip settled index 1 without running it");
    assert!(!session.redrive("worker", 1, RedriveAction::Skip).await.unwrap_or_else(|e| panic!("{e}")));
}

pub async fn engine_consume_through_an_index(factory: &dyn StoreFactory, pace: Pace) {
    let seen = seen();
    let exporter = recorder(Consumer::builder("exporter").lane("main").backfill(), "exporter", &seen);
    let server = server(pace, open(factory).await, vec![]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append((1..=5).map(tick).collect()).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(session.consume(&exporter, Some(3)).await.unwrap_or_else(|e| panic!("{e}")), 3);
    assert_eq!(snapshot(&seen).iter().map(|(_, i)| *i).collect::<Vec<_>>(), vec![1, 2, 3]);
    assert_eq!(session.consume(&exporter, Some(2)).await.unwrap_or_else(|e| panic!("{e}")), 3, "already past it");
    assert_eq!(
        session.consume(&exporter, Some(99)).await.unwrap_or_else(|e| panic!("{e}")),
        5,
        "past the head counts as the head"
    );
    assert_eq!(session.consume(&exporter, None).await.unwrap_or_else(|e| panic!("{e}")), 5);
    assert_eq!(snapshot(&seen).iter().map(|(_, i)| *i).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5], "each event once");
    let concurrent = recorder(Consumer::builder("par"), "par", &seen);
    assert_eq!(session.consume(&concurrent, None).await.map_err(|e| e.code()), Err("INVALID_CONSUMER"));
}

pub async fn engine_consume_waits_for_a_held_head(factory: &dyn StoreFactory, pace: Pace) {
    let gate = Arc::new(Notify::new());
    let started = Arc::new(AtomicU32::new(0));
    let (g, s) = (gate.clone(), started.clone());
    let slow = Consumer::builder("slow")
        .lane("main")
        .backfill()
        .run(move |_| {
            let (gate, started) = (g.clone(), s.clone());
            async move {
                started.fetch_add(1, Ordering::SeqCst);
                gate.notified().await;
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = server(pace, open(factory).await, vec![]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    let (first_session, first_consumer) = (session.clone(), slow.clone());
    let first = tokio::spawn(async move { first_session.consume(&first_consumer, Some(1)).await });
    eventually("the first consume holds the head", || started.load(Ordering::SeqCst) == 1).await;
    let (second_session, second_consumer) = (session.clone(), slow.clone());
    let second = tokio::spawn(async move { second_session.consume(&second_consumer, Some(1)).await });
    tokio::time::sleep(pace.settle()).await;
    assert!(!second.is_finished(), "the second consume waits for the held head");
    gate.notify_one();
    let first = first.await.map_err(|e| e.to_string()).and_then(|r| r.map_err(|e| e.to_string()));
    let second = second.await.map_err(|e| e.to_string()).and_then(|r| r.map_err(|e| e.to_string()));
    assert_eq!((first, second), (Ok(1), Ok(1)));
    assert_eq!(started.load(Ordering::SeqCst), 1, "the head ran once");
}

pub async fn engine_consume_on_a_dead_head_is_dead_lettered(factory: &dyn StoreFactory, pace: Pace) {
    let fail = Arc::new(AtomicBool::new(true));
    let runs = Arc::new(AtomicU32::new(0));
    let consumer = switchable(Consumer::builder("doomed").lane("main").backfill(), &fail, &runs);
    let server = Server::builder(contract(), open(factory).await)
        .timings(pace.timings())
        .run_in_background(false)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    let error = session.consume(&consumer, None).await.expect_err("dead-lettered");
    assert_eq!(error.code(), "CONSUMER_DEAD_LETTERED");
    assert!(error.to_string().contains("'doomed'") && error.to_string().contains("event 1"), "{error}");
    assert_eq!(runs.load(Ordering::SeqCst), 10);
    let again = session.consume(&consumer, None).await.expect_err("still dead");
    assert_eq!(again.code(), "CONSUMER_DEAD_LETTERED");
    assert_eq!(runs.load(Ordering::SeqCst), 10, "a dead head is not run by consume");
}

pub async fn engine_lane_function_keeps_order_per_lane(factory: &dyn StoreFactory, pace: Pace) {
    let seen = seen();
    let s = seen.clone();
    let laned = Consumer::builder("laned")
        .lane_fn(|_, e| e.payload["customer"].as_str().map(str::to_owned))
        .run(move |ctx| {
            let seen = s.clone();
            async move {
                let customer = ctx.event.payload["customer"].as_str().unwrap_or_default().to_owned();
                tokio::time::sleep(Duration::from_millis(10 * (ctx.event.index % 4))).await;
                record(&seen, &customer, ctx.event.index);
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = server(pace, open(factory).await, vec![laned]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    let customers = ["ann", "bob", "cy"];
    session
        .append((0..12).map(|i| order(customers[i % 3], i as u64)).collect())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    eventually("all twelve handled", || snapshot(&seen).len() == 12).await;
    let all = snapshot(&seen);
    for (k, customer) in customers.iter().enumerate() {
        let lane: Vec<u64> = all.iter().filter(|(c, _)| c == customer).map(|(_, i)| *i).collect();
        let want: Vec<u64> = (0..4).map(|j| (j * 3 + k + 1) as u64).collect();
        assert_eq!(lane, want, "lane {customer} ran in index order");
    }
}

pub async fn engine_concurrent_consumers_run_in_parallel(factory: &dyn StoreFactory, pace: Pace) {
    let barrier = Arc::new(Barrier::new(4));
    let done = Arc::new(AtomicU32::new(0));
    let (b, d) = (barrier.clone(), done.clone());
    let parallel = Consumer::builder("par")
        .run(move |_| {
            let (barrier, done) = (b.clone(), d.clone());
            async move {
                // Only passes when all four heads run at once.
                barrier.wait().await;
                done.fetch_add(1, Ordering::SeqCst);
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = server(pace, open(factory).await, vec![parallel]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append((1..=4).map(tick).collect()).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("four heads ran together", || done.load(Ordering::SeqCst) == 4).await;
}

pub async fn engine_deterministic_ids_survive_a_rerun(factory: &dyn StoreFactory, pace: Pace) {
    let crashed = Arc::new(AtomicBool::new(false));
    let c = crashed.clone();
    let notifier = Consumer::builder("notifier")
        .types(["order.placed"])
        .run(move |ctx| {
            let crashed = c.clone();
            async move {
                ctx.session
                    .append(
                        "notes",
                        vec![
                            AppendInput::new("tock", json!({ "note": 1 })),
                            AppendInput::new("tock", json!({ "note": 2 })),
                        ],
                    )
                    .await?;
                if !crashed.swap(true, Ordering::SeqCst) {
                    return Err::<Returned, BoxError>("crashed after its side effect".into());
                }
                Ok(AppendInput::new("tick", json!({ "done": true })).into())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = server(pace, open(factory).await, vec![notifier]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    let trigger = session.append(vec![order("ann", 1)]).await.unwrap_or_else(|e| panic!("{e}")).remove(0);
    for _ in 0..4_000 {
        if all_events(&session).await.len() >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(pace.settle()).await;
    let history = all_events(&session).await;
    assert_eq!(history.len(), 4, "trigger, two notes once, one returned event: {history:#?}");
    assert_eq!(history[1].id, ids::appended_event_id(&trigger.id, "notes", 0, "notifier"));
    assert_eq!(history[2].id, ids::appended_event_id(&trigger.id, "notes", 1, "notifier"));
    assert_eq!(history[3].id, ids::returned_event_id(&trigger.id, 0, "notifier"));
    let cause = history[3].cause.clone().unwrap_or_else(|| panic!("returned events carry a cause"));
    assert_eq!((cause.consumer.as_str(), cause.index, cause.attempt), ("notifier", 1, 2));
    assert_eq!(history[1].cause.as_ref().map(|c| c.attempt), Some(1), "the notes were first appended by attempt 1");
}

pub async fn engine_state_folds_and_snapshots(factory: &dyn StoreFactory, pace: Pace) {
    let store = open(factory).await;
    let gate = Arc::new(Notify::new());
    let observed = Arc::new(Mutex::new(Vec::new()));
    let (g, o) = (gate.clone(), observed.clone());
    let reader = Consumer::builder("reader")
        .lane("main")
        .types(["stop"])
        .run(move |ctx| {
            let (gate, observed) = (g.clone(), o.clone());
            async move {
                // Through its trigger, asked in so many words: pinned while this head runs.
                let state = ctx.session.state("count", Some(ctx.event.index)).await?;
                if let Ok(mut o) = observed.lock() {
                    o.push(state.state);
                }
                gate.notified().await;
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    // A snapshot on every read that folds anything, so each step below leaves one to look at.
    let server = server_with(pace, store.clone(), vec![reader], |b| b.snapshot_every(1));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append((1..=5).map(tick).collect()).await.unwrap_or_else(|e| panic!("{e}"));
    let state = |through| {
        let session = session.clone();
        async move { session.state("count", through).await.unwrap_or_else(|e| panic!("{e}")).state }
    };
    assert_eq!(state(None).await, json!(5));
    assert_eq!(state(Some(3)).await, json!(3));
    server.snapshots_written().await;
    let key = a2_store::session_key("shop", "s");
    let snapshots = store.snapshot_list(&key).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(snapshots.iter().any(|s| s.index == 5 && s.state == json!(5)));
    store
        .snapshot_put(SnapshotPut {
            session: key.clone(),
            reducer: "count".into(),
            index: 5,
            state: json!("garbage"),
            pin: None,
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // This server answers from memory now; another process reads the store.
    let elsewhere = quiet_server(pace, store.clone(), vec![]);
    let refolded = elsewhere.session("s").unwrap_or_else(|e| panic!("{e}")).state("count", None).await;
    assert_eq!(refolded.map(|r| r.state).ok(), Some(json!(5)), "a snapshot failing the state check is refolded");
    assert_eq!(state(None).await, json!(5));
    session.append(vec![AppendInput::new("stop", json!({})), tick(7)]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("the reader read its state", || observed.lock().map(|o| o.len() == 1).unwrap_or(false)).await;
    assert_eq!(observed.lock().map(|o| o[0].clone()).unwrap_or_default(), json!(5), "state through the trigger");
    assert_eq!(state(None).await, json!(6));
    server.snapshots_written().await;
    let pinned = store.snapshot_list(&key).await.unwrap_or_else(|e| panic!("{e}"));
    let pin = pinned.iter().find(|s| s.index == 6).map(|s| s.pins.clone()).unwrap_or_default();
    assert_eq!(
        pin.iter().map(|p| (p.consumer.as_str(), p.index)).collect::<Vec<_>>(),
        vec![("reader", 6)],
        "the running head pins its snapshot: {pinned:?}"
    );
    assert!(pinned.iter().any(|s| s.index == 7), "a newer snapshot sits beside the pinned one");
    assert_eq!(session.state("nope", None).await.map_err(|e| e.code()), Err("UNKNOWN_REDUCER"));
    gate.notify_one();
}

pub async fn engine_clear_supersedes_running_attempts(factory: &dyn StoreFactory, pace: Pace) {
    let gate = Arc::new(Notify::new());
    let started = Arc::new(AtomicU32::new(0));
    let (g, s) = (gate.clone(), started.clone());
    let echo = Consumer::builder("echo")
        .lane("main")
        .types(["tick"])
        .run(move |ctx| {
            let (gate, started) = (g.clone(), s.clone());
            async move {
                started.fetch_add(1, Ordering::SeqCst);
                if ctx.event.index == 1 {
                    gate.notified().await;
                }
                Ok::<_, BoxError>(AppendInput::new("tock", json!({ "echo": ctx.event.index })))
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let server = server(pace, open(factory).await, vec![echo]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("the head runs", || started.load(Ordering::SeqCst) == 1).await;
    let missed = session.clear(Some(7)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((missed.cleared, missed.index), (false, 1));
    let cleared = session.clear(Some(1)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((cleared.cleared, cleared.index), (true, 1));
    gate.notify_one();
    tokio::time::sleep(pace.settle()).await;
    assert!(all_events(&session).await.is_empty(), "the superseded run appended nothing");
    let appended = session.append(vec![tick(2)]).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(appended[0].index, 2, "indexes continue after the boundary");
    eventually("the echo of 2", || started.load(Ordering::SeqCst) == 2).await;
    tokio::time::sleep(pace.settle()).await;
    let history = all_events(&session).await;
    assert_eq!(
        history.iter().map(|e| (e.index, e.event_type.as_str())).collect::<Vec<_>>(),
        vec![(2, "tick"), (3, "tock")]
    );
}

pub async fn engine_stream_yields_new_events(factory: &dyn StoreFactory, pace: Pace) {
    let server = server(pace, open(factory).await, vec![]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1), tick(2)]).await.unwrap_or_else(|e| panic!("{e}"));
    let mut stream = session.stream(1);
    let next = stream.next().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(next.index, 2);
    assert_eq!(next.session, "s", "events carry the public session id");
    let later = session.clone();
    let writer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        later.append(vec![tick(3)]).await.map(|_| ())
    });
    let third = tokio::time::timeout(Duration::from_secs(10), stream.next()).await;
    let third = third.unwrap_or_else(|_| panic!("stream woke")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(third.index, 3);
    writer.await.unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|e| panic!("{e}"));
}

pub async fn engine_abort_on_cancels_a_running_attempt(factory: &dyn StoreFactory, pace: Pace) {
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicU32::new(0));
    let (seen, s) = (saw_cancel.clone(), started.clone());
    let watcher = Consumer::builder("watcher")
        .lane("main")
        .types(["tick"])
        .abort_on(["stop"])
        .run(move |ctx| {
            let (seen, started) = (seen.clone(), s.clone());
            async move {
                started.fetch_add(1, Ordering::SeqCst);
                tokio::select! {
                    () = ctx.cancel.cancelled() => seen.store(true, Ordering::SeqCst),
                    () = tokio::time::sleep(Duration::from_secs(3_600)) => {}
                }
                // Stopping cleanly after an abort still returns what it decided: two events.
                Ok::<_, BoxError>(vec![
                    AppendInput::new("tock", json!({ "why": "stopped" })),
                    AppendInput::new("tock", json!({ "n": 2 })),
                ])
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let store = open(factory).await;
    let server = server(pace, store.clone(), vec![watcher]);
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("the attempt runs", || started.load(Ordering::SeqCst) == 1).await;
    session.append(vec![AppendInput::new("stop", json!({}))]).await.unwrap_or_else(|e| panic!("{e}"));
    eventually("the stop event cancelled it", || saw_cancel.load(Ordering::SeqCst)).await;
    tokio::time::sleep(pace.settle()).await;
    let history = all_events(&session).await;
    let returned: Vec<_> = history.iter().filter(|e| e.event_type == "tock").collect();
    assert_eq!(returned.len(), 2, "a run returning a batch appends all of it: {history:#?}");
    assert!(returned.iter().all(|e| e.cause.as_ref().is_some_and(|c| c.consumer == "watcher" && c.index == 1)));
    // Its attempt is in the history: completed, with the ids of what it appended.
    let list = a2_store::AttemptList {
        session: a2_store::session_key("shop", "s"),
        consumer: Some("watcher".into()),
        index: Some(1),
        limit: 10,
        ..Default::default()
    };
    let attempts = store.attempt_list(list).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(attempts[0].outcome, a2_store::AttemptOutcome::Completed);
    let ids: Vec<&str> = returned.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(attempts[0].appended, ids, "the attempt names what it appended");
}

/// A server working in the background keeps the store's consumer totals fresh.
pub async fn engine_background_server_refreshes_kept_totals(factory: &dyn StoreFactory, pace: Pace) {
    let seen = seen();
    let store = open(factory).await;
    let timings = DrainTimings { totals_refresh: Duration::from_millis(300), ..pace.timings() };
    let server = Server::builder(contract(), store.clone())
        .consumer(recorder(Consumer::builder("log").lane("main"), "log", &seen))
        .timings(timings)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    server.session("s").unwrap_or_else(|e| panic!("{e}")).append(vec![tick(1)]).await.unwrap_or_else(|e| panic!("{e}"));
    let mut kept = None;
    for _ in 0..100 {
        kept = store.consumer_totals_snapshot(Some("shop")).await.unwrap_or_else(|e| panic!("{e}"));
        if kept.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let kept = kept.unwrap_or_else(|| panic!("the server kept consumer totals"));
    assert_eq!(kept.totals.iter().map(|t| t.consumer.as_str()).collect::<Vec<_>>(), vec!["log"]);
}
