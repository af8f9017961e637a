//! One open store: its operator, what the UI is told about it, the task
//! that turns store notifications into change ticks, and the demo traffic.

use std::sync::Mutex;

use a2_operator::demo::DemoTraffic;
use a2_operator::Operator;
use tokio::task::JoinHandle;

use crate::ErrorCode;
use crate::{ApiError, ConnectionInfo, DemoTrafficState};

pub(crate) struct Connection {
    pub operator: Operator,
    pub info: ConnectionInfo,
    listener: Option<JoinHandle<()>>,
    demo: Mutex<Option<DemoTraffic>>,
}

impl Connection {
    pub fn new(operator: Operator, info: ConnectionInfo, versions: tokio::sync::watch::Sender<u32>) -> Self {
        let listener = operator.changes().map(|mut changes| {
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
        let mut demo = self.demo.lock().map_err(|_| ApiError::new(ErrorCode::Internal, "demo lock poisoned"))?;
        if on == Some(true) && demo.is_none() {
            // Read-only is the first refusal, whatever else is missing.
            self.operator.writable("demo traffic")?;
            if !self.info.hosts_demo {
                return Err(ApiError::invalid("this store has no demo contract: seed it with `a2 demo` first"));
            }
            *demo = Some(self.operator.demo_traffic()?);
        } else if on == Some(false) {
            if let Some(run) = demo.take() {
                return Ok(DemoTrafficState { on: false, appended: run.appended() });
            }
        }
        let appended = demo.as_ref().map_or(0, DemoTraffic::appended);
        Ok(DemoTrafficState { on: demo.is_some(), appended })
    }
}

impl Connection {
    /// Stop the demo traffic, if it runs, and wait until its server has left
    /// the process registry: what a process about to exit calls.
    pub async fn stop_demo_traffic(&self) {
        let running = self.demo.lock().map(|mut demo| demo.take()).unwrap_or(None);
        if let Some(traffic) = running {
            traffic.stop().await;
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
    }
}
