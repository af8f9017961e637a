//! Signs that a session may have grown: an append in this process, the
//! store's change feed from other processes, a lagged feed, or, where there
//! is no feed, the poll interval. Whoever waits re-reads the store after a
//! sign, so a notice never has to carry the events and a lost one costs nothing.

use a2_store::SessionKey;
use std::time::Duration;

use tokio::sync::broadcast;

/// Sent to every listener when a session's log grows.
#[derive(Debug, Clone)]
pub(crate) struct AppendNotice {
    pub session: String,
}

pub(crate) struct SessionSignals {
    notices: broadcast::Receiver<AppendNotice>,
    changes: Option<broadcast::Receiver<String>>,
    key: SessionKey,
    poll: Duration,
}

impl SessionSignals {
    /// Signs for the session `key` from receivers subscribed by the caller
    /// before it reads, so nothing appended after that is missed.
    pub fn new(
        notices: broadcast::Receiver<AppendNotice>,
        changes: Option<broadcast::Receiver<String>>,
        key: SessionKey,
        poll: Duration,
    ) -> Self {
        Self { notices, changes, key, poll }
    }

    /// Wait until the session may have grown.
    pub async fn next(&mut self) {
        let poll = tokio::time::sleep(self.poll);
        tokio::pin!(poll);
        loop {
            let change = async {
                match self.changes.as_mut() {
                    Some(changes) => changes.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                notice = self.notices.recv() => match notice {
                    Ok(n) if n.session != self.key.as_str() => continue,
                    Err(broadcast::error::RecvError::Closed) => return poll.await,
                    _ => return,
                },
                change = change => match change {
                    Ok(changed) if changed != self.key.as_str() => continue,
                    Err(broadcast::error::RecvError::Closed) => self.changes = None,
                    _ => return,
                },
                () = &mut poll => return,
            }
        }
    }
}
