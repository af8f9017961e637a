//! Group commit. Appends, for a backend whose statements are cheap and whose
//! commit is not (SQLite: in-process statements, one fsync a commit): those
//! that arrive while a flush runs wait for the next one, which runs them all
//! in one transaction and one commit — one fsync. Every append stays atomic
//! with its own outcome: when one is refused the whole transaction rolls back
//! and each append of it runs again alone. Completions, on every SQL
//! backend: the heads that returned nothing, from every session a process
//! drains, settle in one transaction (one statement where the backend has
//! arrays) instead of one commit a session.

use std::collections::{HashMap, HashSet, VecDeque};

use a2_store::codec::to_i64;
use a2_store::{Appended, EventAppend, HeadCompleteMany, HeadRef, HeldHead, StoreError};
use tokio::sync::{mpsc, oneshot};

use crate::each::run_each;
use crate::rows::head_ref;
use crate::statements::RowsStatement;
use crate::steps::{held_head_args, AppendRows};
use crate::value::Arg;
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
pub(crate) type AppendBatcher = Batcher<EventAppend, Result<Appended, StoreError>>;

/// Start grouping `store`'s appends (the store given must not itself group, or it would wait on itself).
pub(crate) fn start_append_batcher<B: SqlBackend + Clone>(store: SqlStore<B>) -> AppendBatcher {
    // One writer connection: one flush at a time.
    Batcher::start(MAX_BATCH, 1, move |batch| {
        let store = store.clone();
        async move { store.flush_appends(batch).await }
    })
}

impl<B: SqlBackend + Clone> SqlStore<B> {
    async fn flush_appends(&self, batch: Vec<EventAppend>) -> Vec<Result<Appended, StoreError>> {
        if batch.len() > 1 {
            if let Ok(outcomes) = self.append_batch(&batch).await {
                for (params, appended) in batch.iter().zip(&outcomes) {
                    if !appended.duplicate {
                        self.backend.announce(&params.session);
                    }
                }
                return outcomes.into_iter().map(Ok).collect();
            }
        }
        // One append, or the shared transaction failed (an append of it was refused, or begin or
        // commit failed): each on its own, so only a refused append fails, with its own error.
        let mut outcomes = Vec::with_capacity(batch.len());
        for params in batch {
            outcomes.push(self.append_single(params).await);
        }
        outcomes
    }

    /// Every append of `batch` in one transaction. The first append of each
    /// session goes in with the others (one statement of each kind, where the
    /// backend has `sessions_open_many`), the rest one by one after them. Any
    /// failure — a refused append, an id already present (an idempotent
    /// re-append included) — rolls the whole transaction back, and the caller
    /// runs each append alone, which tells them apart (refusals are rare; a
    /// savepoint an append cost two statements each time).
    async fn append_batch(&self, batch: &[EventAppend]) -> Result<Vec<Appended>, StoreError> {
        let now = self.now();
        let mut tx = self.backend.begin().await?;
        let mut outcomes: Vec<Option<Appended>> = vec![None; batch.len()];
        if let Some(open_many) = &self.sql().sessions_open_many {
            let mut seen = HashSet::new();
            let firsts: Vec<usize> = (0..batch.len()).filter(|&i| seen.insert(batch[i].session.as_str())).collect();
            let counts: Vec<Vec<Arg>> = firsts
                .iter()
                .map(|&i| vec![Arg::text(&batch[i].session), Arg::Int(to_i64(batch[i].events.len() as u64))])
                .collect();
            let mut heads = HashMap::with_capacity(firsts.len());
            for row in run_each(tx.as_mut(), open_many, &[Arg::Int(now)], &counts).await? {
                heads.insert(row.text("session")?, (row.u64("head")?, row.u64("clear_index")?));
            }
            let mut rows = AppendRows::default();
            for &i in &firsts {
                let params = &batch[i];
                let Some(&(after, clear)) = heads.get(params.session.as_str()) else {
                    return Err(StoreError::unavailable(format!("no head came back for session {}", params.session)));
                };
                let before = after.saturating_sub(params.events.len() as u64);
                outcomes[i] =
                    Some(rows.push(&params.session, (before, clear), params.events.clone(), &params.consumers, now)?);
            }
            rows.write(self, tx.as_mut(), now).await?;
        }
        for (params, outcome) in batch.iter().zip(outcomes.iter_mut()) {
            if outcome.is_none() {
                let events = params.events.clone();
                *outcome = Some(
                    self.append_in_tx(
                        tx.as_mut(),
                        &params.session,
                        events,
                        &params.consumers,
                        params.origin_index,
                        now,
                    )
                    .await?,
                );
            }
        }
        tx.commit().await?;
        Ok(outcomes.into_iter().flatten().collect())
    }
}

/// Completions, grouped into shared transactions.
pub(crate) type CompletionBatcher = Batcher<HeadCompleteMany, Result<Vec<HeadRef>, StoreError>>;

/// Start grouping `store`'s completions, `in_flight` flushes at once (the store given must not itself group them).
pub(crate) fn start_completion_batcher<B: SqlBackend + Clone>(
    store: SqlStore<B>,
    in_flight: usize,
) -> CompletionBatcher {
    Batcher::start(MAX_BATCH, in_flight, move |batch| {
        let store = store.clone();
        async move { store.flush_completions(batch).await }
    })
}

impl<B: SqlBackend> SqlStore<B> {
    async fn flush_completions(&self, batch: Vec<HeadCompleteMany>) -> Vec<Result<Vec<HeadRef>, StoreError>> {
        if batch.len() > 1 {
            if let Ok(settled) = self.complete_batch(&batch).await {
                return settled.into_iter().map(Ok).collect();
            }
        }
        // One request, or the shared transaction failed (a deadlock, a lost connection): each on its own.
        let mut outcomes = Vec::with_capacity(batch.len());
        for params in &batch {
            outcomes.push(
                self.complete_batch(std::slice::from_ref(params))
                    .await
                    .map(|one| one.into_iter().next().unwrap_or_default()),
            );
        }
        outcomes
    }

    /// Every head of `batch`, whatever its session, settled in one transaction
    /// under its attempt fence; each request's settled heads, in its order.
    pub(crate) async fn complete_batch(&self, batch: &[HeadCompleteMany]) -> Result<Vec<Vec<HeadRef>>, StoreError> {
        // In key order, so two transactions settling the same heads queue rather than deadlock.
        let mut held: Vec<(&str, &HeldHead)> =
            batch.iter().flat_map(|p| p.heads.iter().map(move |h| (p.session.as_str(), h))).collect();
        held.sort_by(|a, b| (a.0, &a.1.head, a.1.attempt).cmp(&(b.0, &b.1.head, b.1.attempt)));
        held.dedup();
        if held.is_empty() {
            return Ok(vec![Vec::new(); batch.len()]);
        }
        let rows: Vec<Vec<Arg>> = held
            .iter()
            .map(|(session, h)| std::iter::once(Arg::text(*session)).chain(held_head_args(h)).collect())
            .collect();
        let leading = [Arg::Int(self.now())];
        let returned = match self.sql().heads_complete {
            // One statement over every row is atomic alone: no BEGIN and COMMIT round trips around it.
            [only @ (RowsStatement::Lists(_) | RowsStatement::JsonRows(_))] => {
                run_each(self.backend.write().await?.as_mut(), only, &leading, &rows).await?
            }
            steps => {
                let mut tx = self.backend.begin().await?;
                let mut returned = Vec::new();
                for step in steps {
                    returned.extend(run_each(tx.as_mut(), step, &leading, &rows).await?);
                }
                tx.commit().await?;
                returned
            }
        };
        let mut settled: HashMap<String, HashSet<HeldHead>> = HashMap::new();
        for row in &returned {
            let attempt = u32::try_from(row.int("attempt")?).unwrap_or(u32::MAX);
            settled.entry(row.text("session")?).or_default().insert(HeldHead { head: head_ref(row)?, attempt });
        }
        Ok(batch
            .iter()
            .map(|p| {
                let Some(done) = settled.get(p.session.as_str()) else { return Vec::new() };
                p.heads.iter().filter(|h| done.contains(*h)).map(|h| h.head.clone()).collect()
            })
            .collect())
    }
}
