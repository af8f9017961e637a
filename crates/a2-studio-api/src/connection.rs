//! One open store: its operator, what the UI is told about it, the task
//! that turns store notifications into change ticks, and the demo traffic.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2_engine::AppendInput;
use a2_operator::demo::{self, DemoOptions};
use a2_operator::Operator;
use serde_json::json;
use tokio::task::JoinHandle;

use crate::{ApiError, ConnectionInfo, DemoTrafficState};

pub(crate) struct Connection {
    pub operator: Operator,
    pub info: ConnectionInfo,
    listener: Option<JoinHandle<()>>,
    demo: Mutex<Option<DemoRun>>,
}

/// Demo orders being appended; dropping it stops them (each append is one
/// transaction, so stopping between or inside one loses nothing half-written).
struct DemoRun {
    appended: Arc<AtomicU32>,
    task: JoinHandle<()>,
}

impl Drop for DemoRun {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Connection {
    pub fn new(operator: Operator, info: ConnectionInfo, versions: tokio::sync::watch::Sender<u32>) -> Self {
        let listener = operator.attached().store.changes().map(|mut changes| {
            tokio::spawn(async move {
                // A lagged receiver missed some notices: that is still a change.
                while let Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) = changes.recv().await {
                    versions.send_modify(|v| *v = v.wrapping_add(1));
                }
            })
        });
        Self { operator, info, listener, demo: Mutex::new(None) }
    }

    /// Start or stop appending demo orders (their consumers run in this
    /// process), so an operator sees heads move, retry and dead-letter.
    pub fn demo_traffic(&self, on: Option<bool>) -> Result<DemoTrafficState, ApiError> {
        let mut demo = self.demo.lock().map_err(|_| ApiError::new("INTERNAL", "demo lock poisoned"))?;
        if on == Some(true) && demo.is_none() {
            self.operator.writable("demo traffic")?;
            if !self.info.hosts_demo {
                return Err(ApiError::invalid("this store has no demo contract: seed it with `a2 demo` first"));
            }
            let server = demo::server(self.operator.attached().store.clone(), DemoOptions::default(), true)?;
            let appended = Arc::new(AtomicU32::new(0));
            let task_appended = appended.clone();
            let task = tokio::spawn(async move {
                let mut n: u64 = 0;
                loop {
                    n += 1;
                    // Mostly existing orders, now and then a new one.
                    let id =
                        if n.is_multiple_of(5) { format!("live-{n:05}") } else { format!("order-{:05}", 1 + n % 39) };
                    let order = json!({ "customer": format!("customer-{}", n % 17), "amount": 10 + n % 90 });
                    if let Ok(session) = server.session(&id) {
                        if session.append(vec![AppendInput::new("order.placed", order)]).await.is_ok() {
                            task_appended.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(1_500)).await;
                }
            });
            *demo = Some(DemoRun { appended, task });
        } else if on == Some(false) {
            if let Some(run) = demo.take() {
                return Ok(DemoTrafficState { on: false, appended: run.appended.load(Ordering::Relaxed) });
            }
        }
        let appended = demo.as_ref().map_or(0, |run| run.appended.load(Ordering::Relaxed));
        Ok(DemoTrafficState { on: demo.is_some(), appended })
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
    }
}
