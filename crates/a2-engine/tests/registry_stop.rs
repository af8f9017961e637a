//! A process that exits cleanly leaves the process registry: `Server::stop`
//! waits for its row's removal, which a bare `shutdown` leaves to a runtime
//! that may be gone a moment later.

use std::sync::Arc;
use std::time::Duration;

use a2_engine::{AppendInput, BoxError, Consumer, Contract, Server};
use a2_store::memory::MemoryStore;
use a2_store::{ServerList, Store, SystemClock};
use serde_json::json;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

/// A server started on its own runtime, registered; the caller ends it.
fn registered(store: Arc<MemoryStore>, rt: &tokio::runtime::Runtime) -> Server {
    rt.block_on(async {
        let contract = Contract::new("shop").and_then(|c| c.event_with("tick", |_| Ok(()))).expect("contract");
        let worker = Consumer::builder("worker").run(|_| async { Ok::<(), BoxError>(()) }).expect("consumer");
        let server = Server::builder(contract, store.clone()).consumer(worker).build().expect("server");
        server.session("s").expect("session").append(vec![AppendInput::new("tick", json!({}))]).await.expect("append");
        for _ in 0..500 {
            if !store.server_list(ServerList::default()).await.expect("list").is_empty() {
                return server;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the server never registered");
    })
}

fn kept(store: &Arc<MemoryStore>) -> usize {
    runtime().block_on(store.server_list(ServerList::default())).expect("list").len()
}

#[test]
fn a_stopped_server_leaves_the_registry_before_its_runtime_ends() {
    let store = Arc::new(MemoryStore::new(Arc::new(SystemClock)));
    let rt = runtime();
    let server = registered(store.clone(), &rt);
    rt.block_on(server.stop());
    drop(rt);
    assert_eq!(kept(&store), 0, "stop waited for the removal");

    // The contrast: shutdown alone, and the runtime ends at once.
    let rt = runtime();
    let server = registered(store.clone(), &rt);
    server.shutdown();
    drop(rt);
    assert_eq!(kept(&store), 1, "without stop, the row outlives the process until it goes stale");
}
