//! Support for A2's cross-crate tests: opening any store by URL, the
//! `chaos` contract and its consumers that the worker process runs, and the
//! checks that every event was handled exactly once.

pub mod cluster;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use a2_engine::{AppendInput, BoxError, Consumer, Contract, DrainOutcome, DrainTimings, Server};
pub use a2_store::OpenOptions;
use a2_store::{session_key, Backoff, Event, EventList, Store, StoreError, SystemClock};
use serde_json::json;

pub const CONTRACT: &str = "chaos";
/// The two consumers every worker runs: an ordered log consumer and a concurrent one.
pub const CONSUMERS: [&str; 2] = ["ordered", "parallel"];

/// Open a store: `sqlite:PATH`, `postgres://…` (in `schema` when given) or `memory:`.
pub async fn open_store(url: &str, schema: Option<&str>) -> Result<Arc<dyn Store>, StoreError> {
    open_with(url, OpenOptions { schema: schema.map(str::to_owned), ..OpenOptions::default() }).await
}

/// Open a store through the one URL registry, on the system clock.
pub async fn open_with(url: &str, options: OpenOptions) -> Result<Arc<dyn Store>, StoreError> {
    Ok(a2_store::OpenedStore::store(&a2_store_registry::open(url, &options, Arc::new(SystemClock)).await?))
}

pub fn contract() -> Contract {
    let any = |_: &serde_json::Value| Ok(());
    Contract::new(CONTRACT)
        .and_then(|c| c.event_with("work", any))
        .and_then(|c| c.event_with("handled", any))
        .and_then(|c| c.event_with("audit", any))
        .unwrap_or_else(|e| panic!("the chaos contract is valid: {e}"))
}

/// A consumer that, for each `work` event, appends an `audit` event inline
/// (deterministic id: a re-run appends nothing new) and returns a `handled`
/// event with a random id (so a second completion would show as a duplicate).
fn worker_consumer(name: &'static str, ordered: bool, delay: Duration) -> Consumer {
    let builder = Consumer::builder(name).types(["work"]);
    let builder = if ordered { builder.lane("main").backfill() } else { builder };
    builder
        .run(move |ctx| async move {
            tokio::time::sleep(delay).await;
            let of = ctx.event.index;
            ctx.session.append("audit", vec![AppendInput::new("audit", json!({ "of": of, "consumer": name }))]).await?;
            let id = uuid::Uuid::new_v4().to_string();
            Ok::<_, BoxError>(AppendInput::new("handled", json!({ "of": of, "consumer": name })).with_id(id))
        })
        .unwrap_or_else(|e| panic!("consumer {name}: {e}"))
}

pub fn consumers(delay: Duration) -> Vec<Consumer> {
    vec![worker_consumer(CONSUMERS[0], true, delay), worker_consumer(CONSUMERS[1], false, delay)]
}

pub fn timings(ttl: Duration) -> DrainTimings {
    DrainTimings {
        claim_ttl: ttl,
        claim_heartbeat: ttl / 3,
        backoff: Backoff { base_ms: 10, max_ms: 200 },
        watchdog_grace: Duration::from_millis(20),
        consume_wait_min: Duration::from_millis(5),
        consume_wait_max: Duration::from_millis(100),
        ..DrainTimings::default()
    }
}

/// A server that runs the chaos consumers, draining only when told to.
pub fn server(store: Arc<dyn Store>, delay: Duration, ttl: Duration) -> Server {
    Server::builder(contract(), store)
        .consumers(consumers(delay))
        .timings(timings(ttl))
        .run_in_background(false)
        .build()
        .unwrap_or_else(|e| panic!("server: {e}"))
}

pub fn session_ids(prefix: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}{i:04}")).collect()
}

/// Deliver the due scheduled tasks, then drain every session, many at once,
/// until a whole pass finds nothing to deliver or do anywhere.
pub async fn drain_all(server: &Server, sessions: &[String]) -> Result<u64, a2_engine::A2Error> {
    let in_flight = Arc::new(tokio::sync::Semaphore::new(32));
    let mut processed = 0;
    // A retryable error (a claim slower than a lease on a loaded machine) is tried again next pass,
    // as a worker would; this many passes in a row failing that way is a store that is down.
    let mut retryable_in_a_row = 0;
    loop {
        let delivered = server.deliver_due().await?;
        let mut pass = tokio::task::JoinSet::new();
        for id in sessions {
            let session = server.session(id)?;
            let in_flight = in_flight.clone();
            pass.spawn(async move {
                let _slot = in_flight.acquire_owned().await;
                session.drain().await
            });
        }
        let mut idle = delivered == 0;
        let mut retried = false;
        while let Some(joined) = pass.join_next().await {
            let drained = joined
                .map_err(|e| a2_engine::A2Error::InvalidArgument { message: format!("a drain task failed: {e}") })?;
            match drained {
                Ok(result) => {
                    processed += result.processed;
                    if result.processed > 0 || result.outcome != DrainOutcome::Settled {
                        idle = false;
                    }
                }
                Err(error) if error.is_retryable() && retryable_in_a_row < 200 => {
                    eprintln!("a2-worker: {error} ({}); draining again", error.code());
                    retried = true;
                    idle = false;
                }
                Err(error) => return Err(error),
            }
        }
        retryable_in_a_row = if retried { retryable_in_a_row + 1 } else { 0 };
        if idle {
            return Ok(processed);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Every event of a session, in index order.
pub async fn all_events(store: &dyn Store, session: &str) -> Result<Vec<Event>, StoreError> {
    let key = session_key(CONTRACT, session);
    let mut events = Vec::new();
    loop {
        let after = events.last().map(|e: &Event| e.index);
        let page = store
            .event_list(EventList { session: key.clone(), after, before: None, limit: 500, newest_first: false })
            .await?;
        if page.is_empty() {
            return Ok(events);
        }
        events.extend(page);
    }
}

/// What the checks found in one session.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    pub work: usize,
    pub handled: usize,
    pub dead_lettered: usize,
    /// Heads completed by a later attempt than the first: work a killed holder left.
    pub retried: usize,
    /// Problems, each a sentence.
    pub faults: Vec<String>,
}

/// Every `work` event handled exactly once per consumer or dead-lettered;
/// no `audit` or `handled` event twice; the ordered consumer in index order;
/// nothing left pending but dead letters.
pub async fn verify(store: &dyn Store, session: &str) -> Result<Verdict, StoreError> {
    let events = all_events(store, session).await?;
    let key = session_key(CONTRACT, session);
    let dead = store
        .dead_letter_list(a2_store::DeadLetterList { session: Some(key.clone()), limit: 500, ..Default::default() })
        .await?;
    let mut verdict = Verdict::default();
    let mut counts: BTreeMap<(&str, &str, u64), usize> = BTreeMap::new();
    let mut ordered_seen = Vec::new();
    for event in &events {
        match event.event_type.as_str() {
            "work" => verdict.work += 1,
            kind @ ("handled" | "audit") => {
                let of = event.payload["of"].as_u64().unwrap_or(0);
                let consumer = event.payload["consumer"].as_str().unwrap_or("?");
                let consumer = CONSUMERS.iter().find(|c| **c == consumer).copied().unwrap_or("?");
                *counts.entry((kind, consumer, of)).or_default() += 1;
                if kind == "handled" && consumer == "ordered" {
                    ordered_seen.push(of);
                }
                if kind == "handled" && event.cause.as_ref().is_some_and(|c| c.attempt > 1) {
                    verdict.retried += 1;
                }
            }
            other => verdict.faults.push(format!("{session}: unexpected event type {other}")),
        }
    }
    for event in events.iter().filter(|e| e.event_type == "work") {
        for consumer in CONSUMERS {
            let is_dead = dead.iter().any(|d| d.consumer == consumer && d.index == event.index);
            let handled = counts.get(&("handled", consumer, event.index)).copied().unwrap_or(0);
            let audits = counts.get(&("audit", consumer, event.index)).copied().unwrap_or(0);
            if is_dead {
                verdict.dead_lettered += 1;
            } else if handled == 1 {
                verdict.handled += 1;
            }
            if handled > 1 {
                verdict.faults.push(format!("{session}: {consumer} completed event {} {handled} times", event.index));
            }
            if handled == 0 && !is_dead {
                verdict.faults.push(format!("{session}: {consumer} never handled event {}", event.index));
            }
            if audits > 1 {
                verdict.faults.push(format!(
                    "{session}: {consumer}'s audit of event {} was appended {audits} times",
                    event.index
                ));
            }
        }
    }
    if ordered_seen.windows(2).any(|w| w[0] >= w[1]) {
        verdict.faults.push(format!("{session}: the ordered consumer ran out of index order: {ordered_seen:?}"));
    }
    for head in store.head_list(&key).await? {
        if head.lag > 0 && head.status.failed_at.is_none() {
            verdict
                .faults
                .push(format!("{session}: {} still has {} pending at {}", head.consumer, head.lag, head.next_index));
        }
    }
    Ok(verdict)
}

/// Seed `count` sessions with `events` work events each, in batches.
pub async fn seed(server: &Server, sessions: &[String], events: usize) -> Result<(), a2_engine::A2Error> {
    for id in sessions {
        let batch = (0..events).map(|n| AppendInput::new("work", json!({ "n": n }))).collect();
        server.session(id)?.append(batch).await?;
    }
    Ok(())
}
