//! Group commit for a backend whose statements are cheap and whose commit is
//! not (SQLite: in-process statements, one fsync a commit). Appends that
//! arrive while a flush runs wait for the next one, which runs them all in
//! one transaction, each under a savepoint: every append stays atomic with
//! its own outcome (one that fails rolls back to its savepoint alone), and
//! one commit — one fsync — serves them all.

use std::collections::VecDeque;

use a2_store::{Appended, EventAppend, StoreError};
use tokio::sync::{mpsc, oneshot};

use crate::{SqlBackend, SqlStore};

/// Appends a flush takes at most: enough to share one commit widely, few
/// enough that one flush stays short.
pub const MAX_BATCH: usize = 256;

type Waiting<T, R> = (T, oneshot::Sender<R>);

/// Requests that arrive while flushes run wait for the next flush, which
/// takes them all (up to `max`), with at most `in_flight` flushes running at
/// once. `flush` answers a batch in its order. The task ends when every
/// clone is dropped.
pub struct Batcher<T, R> {
    queue: mpsc::UnboundedSender<Waiting<T, R>>,
}

impl<T, R> Clone for Batcher<T, R> {
    fn clone(&self) -> Self {
        Self { queue: self.queue.clone() }
    }
}

impl<T, R> std::fmt::Debug for Batcher<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Batcher")
    }
}

impl<T: Send + 'static, R: Send + 'static> Batcher<T, R> {
    pub fn start<F, Fut>(max: usize, in_flight: usize, flush: F) -> Self
    where
        F: Fn(Vec<T>) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Vec<R>> + Send + 'static,
    {
        let (queue, mut waiting) = mpsc::unbounded_channel::<Waiting<T, R>>();
        let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(in_flight.max(1)));
        tokio::spawn(async move {
            let mut queued: VecDeque<Waiting<T, R>> = VecDeque::new();
            loop {
                // Wait for a free flush first: what arrives meanwhile joins the next batch.
                let Ok(permit) = permits.clone().acquire_owned().await else { return };
                if queued.is_empty() {
                    match waiting.recv().await {
                        Some(first) => queued.push_back(first),
                        None => return,
                    }
                }
                while queued.len() < max {
                    match waiting.try_recv() {
                        Ok(next) => queued.push_back(next),
                        Err(_) => break,
                    }
                }
                let take = queued.len().min(max);
                let (items, replies): (Vec<T>, Vec<oneshot::Sender<R>>) = queued.drain(..take).unzip();
                let flushing = flush(items);
                tokio::spawn(async move {
                    for (reply, answer) in replies.into_iter().zip(flushing.await) {
                        let _ = reply.send(answer);
                    }
                    drop(permit);
                });
            }
        });
        Self { queue }
    }

    /// Wait for `item`'s turn and its answer; `None` if the task has stopped.
    pub async fn submit(&self, item: T) -> Option<R> {
        let (reply, answer) = oneshot::channel();
        self.queue.send((item, reply)).ok()?;
        answer.await.ok()
    }
}

/// Appends, grouped into shared transactions.
pub(crate) type Grouped = Batcher<EventAppend, Result<Appended, StoreError>>;

/// Start grouping `store`'s appends (the store given must not itself group, or it would wait on itself).
pub(crate) fn start<B: SqlBackend + Clone>(store: SqlStore<B>) -> Grouped {
    // One writer connection: one flush at a time.
    Batcher::start(MAX_BATCH, 1, move |batch| {
        let store = store.clone();
        async move { store.flush(batch).await }
    })
}

impl<B: SqlBackend + Clone> SqlStore<B> {
    async fn flush(&self, batch: Vec<EventAppend>) -> Vec<Result<Appended, StoreError>> {
        if batch.len() > 1 {
            if let Ok(outcomes) = self.append_together(&batch).await {
                for (params, outcome) in batch.iter().zip(&outcomes) {
                    if outcome.as_ref().is_ok_and(|a| !a.duplicate) {
                        self.backend.announce(&params.session);
                    }
                }
                return outcomes;
            }
        }
        // One append, or the shared transaction itself failed (begin or commit): each on its own.
        let mut outcomes = Vec::with_capacity(batch.len());
        for params in batch {
            outcomes.push(self.append_alone(params).await);
        }
        outcomes
    }

    /// Every append of `batch` in one transaction, each under a savepoint.
    async fn append_together(&self, batch: &[EventAppend]) -> Result<Vec<Result<Appended, StoreError>>, StoreError> {
        let mut tx = self.backend.begin().await?;
        let mut outcomes = Vec::with_capacity(batch.len());
        for params in batch {
            tx.execute("SAVEPOINT a2_append", Vec::new()).await?;
            let appended = async {
                let (events, duplicate) = self
                    .append_in(tx.as_mut(), &params.session, params.events.clone(), &params.consumers, self.now())
                    .await?;
                let head = self.session_row(tx.as_mut(), &params.session).await?.map_or(0, |(h, _)| h);
                Ok::<_, StoreError>(Appended { head, events, duplicate })
            }
            .await;
            if appended.is_err() {
                tx.execute("ROLLBACK TO SAVEPOINT a2_append", Vec::new()).await?;
            }
            tx.execute("RELEASE SAVEPOINT a2_append", Vec::new()).await?;
            outcomes.push(appended);
        }
        tx.commit().await?;
        Ok(outcomes)
    }
}
