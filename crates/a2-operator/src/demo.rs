//! The demo store: a `shop` contract with every kind of consumer, seeded
//! through the engine (no SQL), so the Studio and the CLI have something
//! real to show — heads that retried, dead letters, a cleared session.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use a2_engine::{AppendInput, BoxError, Consumer, Contract, DrainTimings, PresencePatch, Reducer, Server, Timing};
use a2_store::{AuditList, Backoff, Store};
use serde::Deserialize;
use serde_json::json;

use crate::{Operator, OperatorError};

pub const CONTRACT: &str = "shop";

#[derive(Deserialize)]
#[allow(dead_code)]
struct Placed {
    customer: String,
    amount: u64,
}

/// How the demo behaves: which share of events fail, deterministically from the seed.
#[derive(Debug, Clone, Copy)]
pub struct DemoOptions {
    pub sessions: usize,
    pub seed: u64,
    /// Share of events whose first attempt fails (retried), and a third of it
    /// that always fails (dead-lettered).
    pub fail_rate: f64,
    /// Append only (10 events a session, no consumers run): for scale tests.
    pub bulk: bool,
}

impl Default for DemoOptions {
    fn default() -> Self {
        Self { sessions: 40, seed: 7, fail_rate: 0.1, bulk: false }
    }
}

/// A number in [0, 1) from the seed and a text, the same on every run.
fn chance(seed: u64, text: &str) -> f64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash >> 11) as f64 / (1u64 << 53) as f64
}

/// How long after an order the demo's payment reminder is due.
pub const REMINDER_DELAY: &str = "1d";

/// How long a support agent's presence on an order lasts without a refresh.
pub const PRESENCE_TTL: Duration = Duration::from_secs(600);

fn contract() -> Result<Contract, OperatorError> {
    let any = |_: &serde_json::Value| Ok(());
    let totals = Reducer::new("totals", json!({ "orders": 0, "amount": 0 }), |state, event| {
        let orders = state["orders"].as_u64().unwrap_or(0);
        let amount = state["amount"].as_u64().unwrap_or(0);
        match event.event_type.as_str() {
            "order.placed" => {
                json!({ "orders": orders + 1, "amount": amount + event.payload["amount"].as_u64().unwrap_or(0) })
            }
            _ => state,
        }
    });
    Ok(Contract::new(CONTRACT)?
        .event::<Placed>("order.placed")?
        .event_with("payment.captured", any)?
        .event_with("order.shipped", any)?
        .event_with("email.sent", any)?
        .event_with("payment.reminder", any)?
        // Which support agents have an order open, and whether they are writing to its customer.
        .presence::<String>("viewing")?
        .presence::<bool>("typing")?
        .reducer(totals)?)
}

/// Fails an attempt when the event is one the seed picked: on the first
/// attempt only (it retries), or always (it dead-letters).
/// The roll keys on the session and index, not the (random) event id, so a
/// seed picks the same failing events on every run.
fn fails(options: &DemoOptions, consumer: &str, event: &a2_store::Event, attempt: u32) -> Option<String> {
    let event_id = &event.id;
    let roll = chance(options.seed, &format!("{consumer}/{}/{}", event.session, event.index));
    if roll < options.fail_rate / 3.0 {
        return Some(format!("{consumer}: the upstream service refused event {event_id} (poison)"));
    }
    (roll < options.fail_rate && attempt == 1).then(|| format!("{consumer}: timeout talking to the upstream service"))
}

fn consumers(options: DemoOptions) -> Result<Vec<Consumer>, OperatorError> {
    let charger = Consumer::builder("charger").types(["order.placed"]).run(move |ctx| async move {
        if let Some(error) = fails(&options, "charger", &ctx.event, ctx.attempt) {
            return Err::<AppendInput, BoxError>(error.into());
        }
        Ok(AppendInput::new("payment.captured", json!({ "amount": ctx.event.payload["amount"] })))
    })?;
    let fulfilment = Consumer::builder("fulfilment")
        .types(["payment.captured"])
        .lane_fn(|session, _| Some(format!("warehouse-{}", session.len() % 3)))
        .run(|_| async { Ok::<_, BoxError>(AppendInput::new("order.shipped", json!({ "carrier": "post" }))) })?;
    let mailer = Consumer::builder("mailer").lane("main").types(["order.placed", "order.shipped"]).run(
        move |ctx| async move {
            if let Some(error) = fails(&options, "mailer", &ctx.event, ctx.attempt) {
                return Err::<AppendInput, BoxError>(error.into());
            }
            Ok(AppendInput::new("email.sent", json!({ "about": ctx.event.event_type })))
        },
    )?;
    let ledger = Consumer::builder("ledger").lane("books").backfill().run(|ctx| async move {
        ctx.session.state("totals", None).await?;
        Ok::<(), BoxError>(())
    })?;
    // A day after each order, a reminder to pay: the Timers view's pending work.
    let reminders = Consumer::builder("reminders").types(["order.placed"]).run(|ctx| async move {
        let reminder = AppendInput::new("payment.reminder", json!({ "order": ctx.event.id }));
        ctx.session.schedule("payment-reminder", Timing::delay(REMINDER_DELAY), vec![reminder]).await?;
        Ok::<(), BoxError>(())
    })?;
    Ok(vec![charger, fulfilment, mailer, ledger, reminders])
}

/// A server for the demo contract on `store`; `background`: its consumers
/// drain on every append (the Studio's demo traffic), else only when asked.
pub fn server(store: Arc<dyn Store>, options: DemoOptions, background: bool) -> Result<Server, OperatorError> {
    // Demo retries are quick, so a poison event dead-letters in seconds, not minutes.
    let timings = DrainTimings { backoff: Backoff { base_ms: 50, max_ms: 2_000 }, ..DrainTimings::default() };
    Ok(Server::builder(contract()?, store)
        .consumers(consumers(options)?)
        .timings(timings)
        .presence_ttl(PRESENCE_TTL)
        .run_in_background(background)
        .build()?)
}

/// Seed the demo; returns how many events were appended. Sessions are
/// seeded by 16 tasks at once.
pub async fn seed(store: Arc<dyn Store>, options: DemoOptions) -> Result<u64, OperatorError> {
    const WRITERS: usize = 16;
    let mut tasks = tokio::task::JoinSet::new();
    for writer in 0..WRITERS {
        let store = store.clone();
        tasks.spawn(async move { seed_part(store, options, writer, WRITERS).await });
    }
    let mut appended = 0;
    while let Some(done) = tasks.join_next().await {
        appended += done.map_err(|e| OperatorError::invalid(format!("a seeding task failed: {e}")))??;
    }
    if options.sessions > 0 && !options.bulk {
        // One cleared session, to show the boundary.
        server(store, options, false)?.session("order-00000")?.clear(None).await?;
    }
    Ok(appended)
}

/// One session of `events` shipped orders, appended through the engine in
/// batches and handled by no one yet: the Studio's scrolling test at scale.
/// Only log cursors follow `order.shipped`, so the store grows by events alone.
pub async fn seed_long_session(store: Arc<dyn Store>, id: &str, events: u64) -> Result<u64, OperatorError> {
    const BATCH: u64 = 1_000;
    let server = Server::builder(contract()?, store)
        .consumers(consumers(DemoOptions::default())?)
        .run_in_background(false)
        .build()?;
    let session = server.session(id)?;
    let mut appended = 0;
    while appended < events {
        let batch = (appended..(appended + BATCH).min(events))
            .map(|n| {
                AppendInput::new(
                    "order.shipped",
                    json!({ "carrier": "post", "parcel": n, "weight_g": 9_007_199_254_740_993u64 - n }),
                )
            })
            .collect();
        appended += session.append(batch).await?.len() as u64;
    }
    Ok(appended)
}

/// One session whose charger has run `attempts` times (each order placed,
/// charged once, in claims of 500): the timeline's test at scale. Written
/// through the store, not the engine, so no other consumer runs and the
/// history holds exactly these attempts.
pub async fn seed_long_history(store: Arc<dyn Store>, id: &str, attempts: u64) -> Result<u64, OperatorError> {
    const BATCH: u64 = 500;
    let key = a2_store::session_key(CONTRACT, id);
    let charger = a2_store::StoreConsumer::targeted("charger");
    let mut done = 0;
    while done < attempts {
        let events = (done..(done + BATCH).min(attempts))
            .map(|n| a2_store::NewEvent {
                id: format!("{id}-{n}"),
                event_type: "order.placed".into(),
                payload: json!({ "customer": "customer-0", "amount": 10 + n % 90 }),
                cause: None,
                scheduled_by: None,
                targets: vec![a2_store::Target { consumer: "charger".into(), lane: None }],
            })
            .collect();
        let append = a2_store::EventAppend { session: key.clone(), events, consumers: Vec::new(), origin_index: None };
        store.event_append(append).await?;
        let claim = a2_store::HeadClaim {
            session: key.clone(),
            holder: format!("history-seed-{done}"),
            ttl_ms: 30_000,
            consumers: vec![charger.clone()],
            through: None,
            exclude: Vec::new(),
            max_failures: 10,
            limit: u32::try_from(BATCH).unwrap_or(u32::MAX),
            range: 1,
        };
        let claimed = store.head_claim(claim).await?;
        let heads =
            claimed.heads.into_iter().map(|h| a2_store::HeldHead { head: h.head, attempt: h.attempt }).collect();
        done +=
            store.head_complete_many(a2_store::HeadCompleteMany { session: key.clone(), heads }).await?.len() as u64;
    }
    Ok(done)
}

/// Sessions `writer`, `writer + writers`, … of the demo.
async fn seed_part(
    store: Arc<dyn Store>,
    options: DemoOptions,
    writer: usize,
    writers: usize,
) -> Result<u64, OperatorError> {
    // Quick retries, so poison events dead-letter during seeding.
    let timings = DrainTimings { backoff: Backoff { base_ms: 1, max_ms: 5 }, ..DrainTimings::default() };
    let server = Server::builder(contract()?, store.clone())
        .consumers(consumers(options)?)
        .timings(timings)
        .presence_ttl(PRESENCE_TTL)
        .run_in_background(false)
        .build()?;
    let mut appended = 0;
    for i in (writer..options.sessions).step_by(writers) {
        let session = server.session(&format!("order-{i:05}"))?;
        let customer = format!("customer-{}", i % 17);
        let orders = if options.bulk { 10 } else { 1 + (i % 3) };
        let batch = (0..orders)
            .map(|n| AppendInput::new("order.placed", json!({ "customer": customer, "amount": 10 + (i * 7 + n) % 90 })))
            .collect();
        appended += session.append(batch).await?.len() as u64;
        if options.bulk {
            continue;
        }
        if i % 4 == 3 {
            // A support agent has this order open: the Presence tab's live map.
            let agent = PresencePatch::new(format!("agent-{}", i % 3)).value("viewing", json!("payment"));
            session.set_presence(agent.value("typing", json!(i % 8 == 3))).await?;
        }
        for _ in 0..200 {
            let drained = session.drain().await?;
            if drained.outcome == a2_engine::DrainOutcome::Settled {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        if i % 8 == 7 {
            // An order that has just arrived: its consumers have not run yet, so the store shows lag.
            let late = json!({ "customer": customer, "amount": 10 + (i * 11) % 90 });
            appended += session.append(vec![AppendInput::new("order.placed", late)]).await?.len() as u64;
        }
    }
    Ok(appended)
}

/// Demo orders being appended every 1.5 s, mostly to existing orders and now
/// and then a new one. Dropping it stops them (each append is one
/// transaction, so stopping between or inside one loses nothing half-written).
pub struct DemoTraffic {
    appended: Arc<AtomicU32>,
    task: tokio::task::JoinHandle<()>,
    /// The server its consumers run on: stopped with it.
    server: Server,
}

impl DemoTraffic {
    /// Stop appending and stop its server, its registry row removed: for a
    /// process about to exit (dropping it stops the appends alone).
    pub async fn stop(self) {
        self.task.abort();
        self.server.stop().await;
    }

    /// Orders appended so far.
    pub fn appended(&self) -> u32 {
        self.appended.load(Ordering::Relaxed)
    }
}

impl Drop for DemoTraffic {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Operator {
    /// Seed the demo contract into this store; returns the events appended.
    pub async fn demo_seed(&self, options: DemoOptions) -> Result<u64, OperatorError> {
        self.writable("demo.seed")?;
        self.demo_may_seed().await?;
        let parameters = serde_json::json!({
            "sessions": options.sessions, "seed": options.seed, "fail_rate": options.fail_rate, "bulk": options.bulk,
        });
        let seeded = seed(self.attached.store.clone(), options).await;
        // Seeding writes sessions and runs consumers: on record like every other write, failed or not.
        let mut entry = self.wide_entry("demo.seed", Some(CONTRACT), parameters);
        entry.outcome = match &seeded {
            Ok(events) => serde_json::json!({ "events": events }),
            Err(error) => serde_json::json!({ "error": error.to_string() }),
        };
        self.store().audit_append(entry).await?;
        seeded
    }

    /// Whether this store is the demo's: empty, or seeded or served by it
    /// before (its `demo.seed` or `demo.serve` entry is in the audit log). The demo's consumers run on
    /// every `shop` session, so they are seeded and hosted on no other store.
    pub async fn demo_owns_store(&self) -> Result<bool, OperatorError> {
        if self.store().contract_list().await?.is_empty() {
            return Ok(true);
        }
        for action in ["demo.seed", "demo.serve"] {
            let claimed = AuditList { before: None, limit: 1, action: Some(action.into()) };
            if !self.store().audit_list(claimed).await?.is_empty() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// `NOT_A_DEMO_STORE` unless [`Operator::demo_owns_store`].
    async fn demo_may_seed(&self) -> Result<(), OperatorError> {
        self.demo_may_run("seed").await
    }

    /// `NOT_A_DEMO_STORE` unless [`Operator::demo_owns_store`]; `doing`
    /// names what was refused, for the message.
    async fn demo_may_run(&self, doing: &str) -> Result<(), OperatorError> {
        if self.demo_owns_store().await? {
            return Ok(());
        }
        let contracts = self.store().contract_list().await?;
        Err(OperatorError::NotADemoStore {
            why: format!(
                "this store holds sessions ({}) and the demo never seeded it; the demo will only {doing} an empty store or its own",
                contracts.join(", ")
            ),
        })
    }

    /// One demo session of `events` shipped orders (the Studio's scrolling test at scale).
    pub async fn demo_seed_long_session(&self, id: &str, events: u64) -> Result<u64, OperatorError> {
        self.writable("demo.seed")?;
        self.demo_may_seed().await?;
        seed_long_session(self.attached.store.clone(), id, events).await
    }

    /// One demo session with `attempts` completed charger attempts (the timeline's test at scale).
    pub async fn demo_seed_long_history(&self, id: &str, attempts: u64) -> Result<u64, OperatorError> {
        self.writable("demo.seed")?;
        self.demo_may_seed().await?;
        seed_long_history(self.attached.store.clone(), id, attempts).await
    }

    /// Run the demo contract's consumers in this process when asked (`consume`).
    pub fn demo_host(&mut self) -> Result<(), OperatorError> {
        let server = server(self.attached.store.clone(), DemoOptions::default(), false)?;
        self.host(server);
        Ok(())
    }

    /// The demo contract's server on this store, its consumers draining in
    /// this process: what `a2 serve-app` serves over the wire. Only on a
    /// store the demo owns (`NOT_A_DEMO_STORE` otherwise): its handlers would
    /// run on every session of a `shop` contract that is not the demo's.
    pub async fn demo_server(&self) -> Result<Server, OperatorError> {
        self.writable("serve-app")?;
        if self.store().contract_list().await?.is_empty() {
            // Pushes make `shop` sessions of an empty store: on record, so it stays the demo's to serve again.
            let entry = self.wide_entry("demo.serve", Some(CONTRACT), serde_json::json!({}));
            self.store().audit_append(entry).await?;
        } else {
            self.demo_may_run("serve the demo app on").await?;
        }
        server(self.attached.store.clone(), DemoOptions::default(), true)
    }

    /// Start appending demo orders, their consumers draining in this process.
    pub fn demo_traffic(&self) -> Result<DemoTraffic, OperatorError> {
        self.writable("demo traffic")?;
        let server = server(self.attached.store.clone(), DemoOptions::default(), true)?;
        let appended = Arc::new(AtomicU32::new(0));
        let counter = appended.clone();
        let traffic_server = server.clone();
        let task = tokio::spawn(async move {
            let mut n: u64 = 0;
            loop {
                n += 1;
                let id = if n.is_multiple_of(5) { format!("live-{n:05}") } else { format!("order-{:05}", 1 + n % 39) };
                let order = json!({ "customer": format!("customer-{}", n % 17), "amount": 10 + n % 90 });
                if let Ok(session) = server.session(&id) {
                    if session.append(vec![AppendInput::new("order.placed", order)]).await.is_ok() {
                        counter.fetch_add(1, Ordering::Relaxed);
                    }
                    // An agent follows the new order; a missed write only means their mark fades later.
                    let agent = PresencePatch::new(format!("agent-{}", n % 3)).value("viewing", json!("order"));
                    let _ = session.set_presence(agent.value("typing", json!(n % 2 == 0))).await;
                }
                tokio::time::sleep(Duration::from_millis(1_500)).await;
            }
        });
        Ok(DemoTraffic { appended, task, server: traffic_server })
    }
}
