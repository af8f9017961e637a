//! Signs that a session may have grown: an append in this process, the
//! store's change feed from other processes, a lagged feed, or, where there
//! is no feed, the poll interval. Whoever waits re-reads the store after a
//! sign, so a notice never has to carry the events and a lost one costs nothing.

use std::time::Duration;

use tokio::sync::broadcast;

use crate::inner::{AppendNotice, Inner};

pub(crate) struct SessionSignals {
    notices: broadcast::Receiver<AppendNotice>,
    changes: Option<broadcast::Receiver<String>>,
    key: String,
    poll: Duration,
}

impl SessionSignals {
    /// Subscribe now, so nothing appended after this call is missed.
    pub fn new(inner: &Inner, key: String) -> Self {
        Self {
            notices: inner.notices.subscribe(),
            changes: inner.store.changes(),
            key,
            poll: inner.timings.stream_poll,
        }
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
                    Ok(n) if n.session != self.key => continue,
                    Err(broadcast::error::RecvError::Closed) => return poll.await,
                    _ => return,
                },
                change = change => match change {
                    Ok(changed) if changed != self.key => continue,
                    Err(broadcast::error::RecvError::Closed) => self.changes = None,
                    _ => return,
                },
                () = &mut poll => return,
            }
        }
    }
}
