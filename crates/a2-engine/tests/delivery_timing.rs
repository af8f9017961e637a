//! When the background delivers a timer, on paused time: at its due time, not
//! at the scheduler's next poll.

use std::sync::Arc;
use std::time::Duration;

use a2_engine::{AppendInput, Contract, EventRange, Server, Session, Timing};
use a2_store::memory::MemoryStore;
use a2_store::TokioClock;
use serde_json::json;

#[tokio::test(start_paused = true)]
async fn a_timer_due_before_the_next_poll_lands_at_its_due_time() {
    let contract = Contract::new("shop").and_then(|c| c.event_with("tick", |_| Ok(()))).expect("contract");
    let store = Arc::new(MemoryStore::new(Arc::new(TokioClock::new())));
    let server = Server::builder(contract, store).build().expect("server");
    let session = server.session("s").expect("session");
    // The poll is a second: neither a 100 ms nor a 300 ms timer waits for it.
    session
        .schedule("soon", Timing::delay("300ms"), vec![AppendInput::new("tick", json!({}))])
        .await
        .expect("schedule");
    session
        .schedule("sooner", Timing::delay("100ms"), vec![AppendInput::new("tick", json!({}))])
        .await
        .expect("schedule");
    tokio::time::sleep(Duration::from_millis(150)).await;
    let names = |events: Vec<a2_store::Event>| {
        events.into_iter().filter_map(|e| e.scheduled_by.map(|b| b.name)).collect::<Vec<_>>()
    };
    assert_eq!(names(events(&session).await), ["sooner"], "the first at 100 ms, the second not before it is due");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(names(events(&session).await), ["sooner", "soon"], "the second at 300 ms, not at the next poll");
}

async fn events(session: &Session) -> Vec<a2_store::Event> {
    session.history(EventRange::all()).expect("history").collect().await.expect("events")
}
