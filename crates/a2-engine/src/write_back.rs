//! Snapshot write-back off the read's path (the seeds: a snapshot is a
//! disposable cache). A read that folded far enough hands its states here and
//! answers at once; a bounded number of writes run at a time, and one that
//! finds no room is dropped, because the next read that folds past it writes it.

use std::sync::Arc;

use a2_store::{SnapshotPut, Store};
use tokio::sync::Semaphore;
use tracing::Instrument;

/// Snapshot writes in flight at once per server: past this a write is skipped.
pub(crate) const WRITE_BACKS_IN_FLIGHT: u32 = 32;

/// A write that has not answered by now is given up (the next fold writes
/// it), so a stalled store cannot hold a slot for ever.
pub(crate) const WRITE_BACK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

pub(crate) struct WriteBacks {
    slots: Arc<Semaphore>,
}

impl Default for WriteBacks {
    fn default() -> Self {
        Self { slots: Arc::new(Semaphore::new(WRITE_BACKS_IN_FLIGHT as usize)) }
    }
}

impl WriteBacks {
    /// Write `puts` in the background, in order; `written` hears each index
    /// the store took. It may race a pinned write of the same snapshot: the
    /// store merges pins on conflict, so none is lost.
    pub(crate) fn start(&self, store: Arc<dyn Store>, puts: Vec<SnapshotPut>, written: impl Fn(u64) + Send + 'static) {
        if puts.is_empty() {
            return;
        }
        let Ok(slot) = self.slots.clone().try_acquire_owned() else {
            tracing::debug!("{WRITE_BACKS_IN_FLIGHT} snapshot writes in flight; this one is left to the next fold");
            return;
        };
        tokio::spawn(
            async move {
                for put in puts {
                    let index = put.index;
                    match tokio::time::timeout(WRITE_BACK_TIMEOUT, store.snapshot_put(put)).await {
                        Ok(Ok(())) => written(index),
                        Ok(Err(error)) => {
                            tracing::warn!(code = error.code(), %error, "could not write a snapshot; the next fold tries again");
                        }
                        Err(_) => tracing::warn!(
                            "a snapshot write took over {} s; given up, the next fold tries again",
                            WRITE_BACK_TIMEOUT.as_secs()
                        ),
                    }
                }
                drop(slot);
            }
            .in_current_span(),
        );
    }

    /// Resolves once every write started before the call has ended (each
    /// gives up after `WRITE_BACK_TIMEOUT`, so this does too).
    pub(crate) async fn settled(&self) {
        // Every slot free means nothing is in flight; closed never happens, so an error is moot.
        let _all = self.slots.acquire_many(WRITE_BACKS_IN_FLIGHT).await;
    }
}
