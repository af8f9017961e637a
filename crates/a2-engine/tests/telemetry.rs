//! The spans of one append → drain → dead letter → redrive, with their attributes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2_engine::{AppendInput, BoxError, Consumer, Contract, Server};
use a2_store::memory::MemoryStore;
use a2_store::{RedriveAction, TokioClock};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;

type Fields = BTreeMap<String, String>;

#[derive(Clone, Default)]
struct Captured {
    spans: Arc<Mutex<Vec<(String, Fields)>>>,
}

struct Visitor<'a>(&'a mut Fields);

impl Visit for Visitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}").trim_matches('"').to_owned());
    }
}

/// Index of each span in `spans`, kept in the span's extensions.
struct Slot(usize);

impl<S> Layer<S> for Captured
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::new();
        attrs.record(&mut Visitor(&mut fields));
        let Ok(mut spans) = self.spans.lock() else { return };
        spans.push((attrs.metadata().name().to_owned(), fields));
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Slot(spans.len() - 1));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let Some(slot) = span.extensions().get::<Slot>().map(|s| s.0) else { return };
        if let Ok(mut spans) = self.spans.lock() {
            values.record(&mut Visitor(&mut spans[slot].1));
        }
    }
}

#[tokio::test(start_paused = true)]
async fn spans_of_append_drain_dead_letter_and_redrive() {
    let captured = Captured::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(captured.clone()));

    let contract = Contract::new("shop").and_then(|c| c.event_with("order.placed", |_| Ok(()))).expect("contract");
    let failing = Consumer::builder("charger")
        .lane("main")
        .run(|_| async { Err::<(), BoxError>("card declined".into()) })
        .expect("consumer");
    let store = Arc::new(MemoryStore::new(Arc::new(TokioClock::new())));
    let server = Server::builder(contract, store).consumer(failing).build().expect("server");
    let session = server.session("o-1").expect("session");
    session.append(vec![AppendInput::new("order.placed", json!({ "total": 5 }))]).await.expect("append");
    for _ in 0..2_000 {
        if !session.dead_letters().await.expect("dead letters").is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert!(session.redrive("charger", 1, RedriveAction::Skip).await.expect("redrive"));

    let spans = captured.spans.lock().map(|s| s.clone()).expect("spans");
    let named = |name: &str| spans.iter().filter(|(n, _)| n == name).map(|(_, f)| f.clone()).collect::<Vec<_>>();
    let get =
        |fields: &Fields, key: &str| fields.get(key).cloned().unwrap_or_else(|| panic!("{key} missing in {fields:?}"));

    let appends = named("a2.append");
    assert_eq!(appends.len(), 1);
    assert_eq!(get(&appends[0], "a2.contract"), "shop");
    assert_eq!(get(&appends[0], "a2.session_id"), "o-1");
    assert_eq!(get(&appends[0], "a2.append.count"), "1");
    assert_eq!(get(&appends[0], "a2.append.source"), "external");
    assert_eq!(get(&appends[0], "a2.append.head"), "1");
    assert_eq!(get(&appends[0], "a2.append.types"), "order.placed");
    assert_eq!(get(&appends[0], "a2.append.mode"), "inline");

    let drains = named("a2.drain");
    assert!(drains.len() >= 10, "a drain per retry: {}", drains.len());
    assert!(drains.iter().all(|d| d.contains_key("a2.drain.holder") && get(d, "a2.session_id") == "o-1"));

    let claims = named("a2.claim");
    assert!(claims.iter().any(|c| get(c, "a2.claim.count") == "1" && get(c, "a2.claim.outcome") == "claimed"));

    let events = named("a2.event");
    assert_eq!(events.len(), 10, "ten attempts");
    for (n, event) in events.iter().enumerate() {
        assert_eq!(get(event, "a2.event.type"), "order.placed");
        assert_eq!(get(event, "a2.event.index"), "1");
        assert_eq!(get(event, "a2.event.consumer"), "charger");
        assert_eq!(get(event, "a2.event.attempt"), (n + 1).to_string());
        assert_eq!(get(event, "a2.event.lag"), "0");
        assert!(get(event, "a2.event.age_ms").parse::<i64>().is_ok_and(|age| age >= 0));
        assert!(event.contains_key("a2.event.id"));
        let outcome = if n == 9 { "dead_lettered" } else { "failed" };
        assert_eq!(get(event, "a2.event.outcome"), outcome);
    }
    let commits = named("a2.commit");
    assert_eq!(commits.iter().filter(|c| get(c, "a2.commit.outcome") == "failed").count(), 9);
    assert_eq!(commits.iter().filter(|c| get(c, "a2.commit.outcome") == "dead_lettered").count(), 1);
    assert!(commits.iter().all(|c| get(c, "a2.contract") == "shop" && get(c, "a2.session_id") == "o-1"));

    let redrives = named("a2.redrive");
    assert_eq!(redrives.len(), 1);
    assert_eq!(get(&redrives[0], "a2.redrive.consumer"), "charger");
    assert_eq!(get(&redrives[0], "a2.redrive.index"), "1");
    assert_eq!(get(&redrives[0], "a2.redrive.action"), "skip", "the seeds' value");
    assert_eq!(get(&redrives[0], "a2.redrive.redriven"), "true");
}

#[tokio::test(start_paused = true)]
async fn state_spans_say_whether_a_snapshot_served_them() {
    let captured = Captured::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(captured.clone()));
    let count = a2_engine::Reducer::new("count", json!(0), |state, _| json!(state.as_u64().unwrap_or(0) + 1));
    let contract = Contract::new("shop")
        .and_then(|c| c.event_with("tick", |_| Ok(())))
        .and_then(|c| c.reducer(count))
        .expect("contract");
    let store = Arc::new(MemoryStore::new(Arc::new(TokioClock::new())));
    let server = Server::builder(contract.clone(), store.clone()).snapshot_every(2).build().expect("server");
    let session = server.session("s").expect("session");
    session.append((0..3).map(|n| AppendInput::new("tick", json!({ "n": n }))).collect()).await.expect("append");
    assert_eq!(session.state("count", None).await.expect("state").index, 3);
    assert_eq!(session.state("count", None).await.expect("state").state, json!(3));
    server.snapshots_written().await;
    // Another server (process) has no fold of its own: the snapshot serves it.
    let other = Server::builder(contract, store).run_in_background(false).build().expect("server");
    assert_eq!(other.session("s").expect("session").state("count", None).await.expect("state").state, json!(3));
    let spans = captured.spans.lock().map(|s| s.clone()).expect("spans");
    let states: Vec<&Fields> = spans.iter().filter(|(n, _)| n == "a2.state").map(|(_, f)| f).collect();
    let seen: Vec<(&str, &str, &str)> = states
        .iter()
        .map(|f| {
            let get = |k: &str| f.get(k).map(String::as_str).unwrap_or("missing");
            (get("a2.state.snapshot"), get("a2.state.folded"), get("a2.state.index"))
        })
        .collect();
    assert_eq!(seen, vec![("miss", "3", "3"), ("memory", "0", "3"), ("hit", "0", "3")]);
}
