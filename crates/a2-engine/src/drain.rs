//! The drain loop: claim runnable heads in batches, run them, renew their
//! leases while they run, and complete or fail each under its attempt fence.

use a2_store::SessionKey;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use a2_store::{Claimed, ClaimedHead, HeadClaim, HeadRef, HeadRenew, HeldHead, Millis, StoreError};
use tokio::sync::{AcquireError, OwnedSemaphorePermit};
use tokio::task::{AbortHandle, JoinSet};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::cancel::{cancel_for, CancelCause, CancelReason};
pub(crate) use crate::drain_task::{drain_joined, DrainOutcome, DrainResult};
use crate::guard::AbortOnDrop;
use crate::run::{event_span, run_head, spawn_settler, Fence, HeadOutcome, RangeStep, SettlerSender};
use crate::server_core::ServerCore;
use crate::timings::{millis, MAX_FAILURES, MIN_CLAIM};
use crate::{A2Error, Consumer};

#[derive(Debug, Default)]
pub(crate) struct DrainOptions {
    /// Claim and run only this consumer's heads (for `consume`).
    pub only: Option<Consumer>,
    /// With `only`: claim no head past this index.
    pub through: Option<u64>,
    /// Started by a run (`ctx.session.consume`): its heads run without taking
    /// a run permit, since the run waiting on them already holds one.
    pub nested: bool,
    /// Told once the drain's first claim answered, whether it succeeded: a
    /// watchdog task is settled only after the drain it delivers has claimed.
    pub first_claim: Option<tokio::sync::oneshot::Sender<bool>>,
}

/// What the next claim may take: a head is leased only when it can start at
/// once, so no lease waits for a run permit. A lease that waited was charged
/// as a lapse when its process died, and one waiting behind a run that
/// consumes it never started (`docs/head-lifecycle.md`, *Permits*).
enum Grant {
    /// A nested consume's heads run on the permit of the run that waits on them.
    Unpermitted(u32),
    /// As many heads as these permits.
    Permits(OwnedSemaphorePermit),
}

impl Grant {
    fn limit(&self) -> u32 {
        match self {
            Self::Unpermitted(limit) => *limit,
            Self::Permits(permits) => u32::try_from(permits.num_permits()).unwrap_or(u32::MAX),
        }
    }

    /// The permit for one claimed head.
    fn take_one(&mut self) -> Option<OwnedSemaphorePermit> {
        match self {
            Self::Unpermitted(_) => None,
            Self::Permits(permits) => permits.split(1),
        }
    }
}

type PermitWait =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<OwnedSemaphorePermit, AcquireError>> + Send>>;

struct Active {
    attempt: u32,
    cancel: CancellationToken,
    abort: AbortHandle,
    /// Set once its outcome is being written: the store's fence decides from
    /// there, so a renewal that finds the head already moved must not kill it.
    completing: Arc<AtomicBool>,
    /// Local lease estimate (claim request time + ttl): at or before the store's.
    expires_at: Millis,
    reason: CancelCause,
}

impl Active {
    /// Give the head up: its run sees the cancellation, with its reason, and
    /// is stopped where it awaits after `grace` unless it returned, or unless
    /// it is already writing its outcome: then the store's fence decides, and
    /// the drain waits for the answer (`false`).
    fn abandon(&self, reason: CancelReason, grace: Duration) -> bool {
        cancel_for(&self.reason, &self.cancel, reason);
        if self.completing.load(Ordering::SeqCst) {
            return false;
        }
        if grace.is_zero() {
            self.abort.abort();
        } else {
            let abort = self.abort.clone();
            let completing = self.completing.clone();
            tokio::spawn(async move {
                tokio::time::sleep(grace).await;
                // A run that returned within its grace writes an outcome the store fences.
                if !completing.load(Ordering::SeqCst) {
                    abort.abort();
                }
            });
        }
        true
    }
}

pub(crate) async fn run_drain(
    core: &Arc<ServerCore>,
    session_id: &str,
    options: DrainOptions,
) -> Result<DrainResult, A2Error> {
    drain_joined(session_id, spawn_drain(core, session_id, options).await)
}

/// Start a drain in a task of its own: dropping the caller's future (a
/// cancelled `drain()` or `consume()`) must not kill the heads it runs.
pub(crate) fn spawn_drain(
    core: &Arc<ServerCore>,
    session_id: &str,
    options: DrainOptions,
) -> tokio::task::JoinHandle<Result<DrainResult, A2Error>> {
    let holder = format!("{}{}", core.holder_prefix(), uuid::Uuid::new_v4());
    let span = tracing::info_span!(
        "a2.drain",
        a2.contract = %core.contract().name(),
        a2.session_id = %session_id,
        a2.drain.holder = %holder,
        a2.drain.only = options.only.as_ref().map(|c| c.name().to_owned()),
        a2.drain.processed = tracing::field::Empty,
        a2.drain.outcome = tracing::field::Empty,
    );
    let drain = Drain::new(core.clone(), session_id.to_owned(), holder, options);
    tokio::spawn(
        async move {
            let result = drain.run().await;
            if let Ok(result) = &result {
                let span = tracing::Span::current();
                span.record("a2.drain.processed", result.processed);
                span.record("a2.drain.outcome", format!("{:?}", result.outcome).to_lowercase());
            }
            result
        }
        .instrument(span),
    )
}

struct Drain {
    core: Arc<ServerCore>,
    session_id: String,
    key: SessionKey,
    holder: String,
    consumers: Vec<Consumer>,
    through: Option<u64>,
    background_after: bool,
    nested: bool,
    first_claim: Option<tokio::sync::oneshot::Sender<bool>>,
    active: HashMap<HeadRef, Active>,
    tasks: JoinSet<(HeadRef, u32, HeadOutcome, Option<OwnedSemaphorePermit>)>,
    /// The rest of each log cursor's range, in order, behind its running position.
    ranges: RangeQueues,
    excluded: Vec<HeadRef>,
    processed: u64,
    failure_retry_at: Option<Millis>,
    store_error: Option<StoreError>,
    /// A claim failed: claim no more, let the running heads settle, then report it.
    claim_error: Option<A2Error>,
    /// A head this drain gave up when its lease lapsed is still to be done after this.
    lapsed_until: Option<Millis>,
    /// The last claim took as many heads as it could: more may be waiting.
    saturated: bool,
    /// A head ended (or another holder took it) since the last claim, so the
    /// drain looks once more before it finishes: work may have arrived, and
    /// only a claim that takes nothing reports what the session waits for.
    ended_since_claim: bool,
    settle: SettlerSender,
    _settler: AbortOnDrop<()>,
}

impl Drain {
    fn new(core: Arc<ServerCore>, session_id: String, holder: String, options: DrainOptions) -> Self {
        let background_after = options.only.is_some();
        let key = core.key(&session_id);
        let (settle, settler) = spawn_settler(&core, key.clone());
        let consumers = match options.only {
            Some(only) => vec![only],
            None => core.consumers().to_vec(),
        };
        Self {
            core,
            session_id,
            key,
            holder,
            consumers,
            through: options.through,
            background_after,
            nested: options.nested,
            first_claim: options.first_claim,
            active: HashMap::new(),
            tasks: JoinSet::new(),
            ranges: HashMap::new(),
            excluded: Vec::new(),
            processed: 0,
            failure_retry_at: None,
            store_error: None,
            claim_error: None,
            lapsed_until: None,
            saturated: false,
            ended_since_claim: false,
            settle,
            _settler: settler,
        }
    }

    async fn run(mut self) -> Result<DrainResult, A2Error> {
        if self.consumers.is_empty() {
            return Ok(DrainResult { outcome: DrainOutcome::Settled, retry_at: None, processed: 0 });
        }
        let timings = self.core.timings().clone();
        let mut heartbeat =
            tokio::time::interval_at(tokio::time::Instant::now() + timings.claim_heartbeat, timings.claim_heartbeat);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut claim_again = true;
        let mut last = Claimed::default();
        // Permits the drain waits for before it claims (none were free).
        let mut waiting: Option<PermitWait> = None;
        let mut granted: Option<OwnedSemaphorePermit> = None;
        loop {
            if claim_again && self.claim_error.is_none() && waiting.is_none() {
                // A stopping server leases nothing more: permits its abandoned runs gave back
                // would start heads no run ever begins, and their lapses would be charged.
                if self.core.stopping().is_cancelled() {
                    return Err(self.stop());
                }
                match self.reserve(granted.take()) {
                    Ok(grant) => {
                        claim_again = false;
                        self.ended_since_claim = false;
                        let answer = self.claim(grant).await;
                        if let Some(first_claim) = self.first_claim.take() {
                            // Nobody waiting is fine: the delivery gave up on its wait.
                            let _ = first_claim.send(answer.is_ok());
                        }
                        match answer {
                            Ok(claimed) => {
                                last = claimed;
                                // Took all it could, and the batch has room: claim again as soon as
                                // permits come back (a run's permit returns before its outcome is
                                // written, so waiting for an outcome would leave permits idle).
                                claim_again = self.refill_due();
                            }
                            Err(error) => {
                                tracing::warn!(code = error.code(), %error, "a claim failed; the running heads finish first");
                                self.claim_error = Some(error);
                            }
                        }
                    }
                    Err(wait) => waiting = Some(wait),
                }
            }
            if self.active.is_empty() && waiting.is_none() {
                if let Some(error) = self.claim_error.take() {
                    self.wake_if_moved();
                    // Runs given up and still in their grace end by themselves.
                    self.tasks.detach_all();
                    return Err(error);
                }
                // One more look before settling: work may have arrived since the last claim.
                if self.ended_since_claim {
                    claim_again = true;
                    continue;
                }
                // Runs given up and still in their grace end by themselves.
                self.tasks.detach_all();
                return self.finish(&last);
            }
            let lapse_in = self.next_lapse_in();
            let permits = async {
                match waiting.as_mut() {
                    Some(wait) => wait.await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                acquired = permits => {
                    waiting = None;
                    match acquired {
                        Ok(permits) => granted = Some(permits),
                        // The server's permits are gone only when it is: claim nothing more.
                        Err(_) => claim_again = false,
                    }
                }
                joined = self.tasks.join_next(), if !self.tasks.is_empty() => {
                    let Some(joined) = joined else { continue };
                    match joined {
                        Ok((head, attempt, outcome, permit)) => {
                            if self.active.get(&head).is_none_or(|a| a.attempt != attempt) {
                                continue;
                            }
                            let Some(ended) = self.active.remove(&head) else { continue };
                            self.ended_since_claim = true;
                            // A range that goes on needs no claim for its lane; what its runs append may.
                            let went_on = self.range_goes_on(&head, &outcome, permit, ended.expires_at);
                            let opens = self.record(head, outcome);
                            claim_again |= went_on.unwrap_or(opens) || self.refill_due();
                        }
                        Err(error) if error.is_cancelled() => {}
                        Err(error) => tracing::error!(%error, "a head's task failed; its lease will lapse"),
                    }
                }
                () = self.core.stopping().cancelled() => return Err(self.stop()),
                _ = heartbeat.tick() => {
                    if !self.renew().await {
                        // Try again soon, spread out so holders that lost the store together do not return together.
                        heartbeat.reset_after(jitter(timings.claim_heartbeat / 4));
                    }
                }
                () = tokio::time::sleep(lapse_in) => self.fence_lapsed(),
            }
        }
    }

    /// The server shuts down: give up every running head (its lease lapses,
    /// and the next holder charges it to the attempt that ran) and say so.
    fn stop(&mut self) -> A2Error {
        let heads: Vec<HeadRef> = self.active.keys().cloned().collect();
        for head in &heads {
            self.give_up(head, CancelReason::Shutdown);
        }
        if !heads.is_empty() {
            tracing::warn!(
                a2.session_id = %self.session_id,
                abandoned = heads.len(),
                "the server is shutting down: {} running head(s) abandoned, their leases lapse",
                heads.len()
            );
        }
        A2Error::Cancelled {
            message: format!(
                "the server shut down while draining session '{}': {} running head(s) abandoned",
                self.session_id,
                heads.len()
            ),
        }
    }

    /// Time until the earliest local lease estimate of a running head lapses.
    fn next_lapse_in(&self) -> Duration {
        let now = self.core.clock().now_ms();
        let Some(next) = self.active.values().map(|a| a.expires_at).min() else {
            return self.core.timings().claim_ttl;
        };
        Duration::from_millis(u64::try_from(next - now).unwrap_or(0))
    }

    /// Await a store call while still fencing: a head whose lease lapses is
    /// abandoned on time however long the call hangs, and the call itself
    /// gives up after a lease's length (`None`), when its answer is moot.
    async fn fenced_call<T>(&mut self, call: impl std::future::Future<Output = T>) -> Option<T> {
        let deadline = tokio::time::Instant::now() + self.core.timings().claim_ttl;
        tokio::pin!(call);
        loop {
            let lapse_in = self.next_lapse_in();
            tokio::select! {
                out = &mut call => return Some(out),
                () = tokio::time::sleep(lapse_in), if !self.active.is_empty() => self.fence_lapsed(),
                () = tokio::time::sleep_until(deadline) => return None,
            }
        }
    }

    /// Record how a head ended; whether to claim again.
    fn record(&mut self, head: HeadRef, outcome: HeadOutcome) -> bool {
        match outcome {
            HeadOutcome::Processed { opens, appended_work, .. } => {
                self.processed += 1;
                // This drain claims what it opened in the session; a drain of one consumer
                // (`consume`) leaves what others take to the background drains, at once.
                if appended_work && self.background_after {
                    self.core.wake(&self.session_id);
                }
                opens
            }
            HeadOutcome::Failed { retry_at } => {
                self.excluded.push(head);
                self.failure_retry_at = Some(self.failure_retry_at.map_or(retry_at, |r| r.min(retry_at)));
                false
            }
            HeadOutcome::DeadLettered | HeadOutcome::Superseded | HeadOutcome::Surrendered => false,
            HeadOutcome::StoreFailed(error) => {
                self.store_error = Some(error);
                false
            }
        }
    }

    /// A drain of one consumer (`consume`) that moved anything may have opened
    /// work for the others: the background drains look, when the server has
    /// them; on every way out, an error's included.
    fn wake_if_moved(&self) {
        if self.background_after && self.processed > 0 {
            self.core.wake(&self.session_id);
        }
    }

    fn finish(&mut self, last: &Claimed) -> Result<DrainResult, A2Error> {
        self.wake_if_moved();
        if let Some(error) = self.store_error.take() {
            return Err(error.into());
        }
        let processed = self.processed;
        let (outcome, retry_at) = if let Some(at) = min_opt(last.busy_until, self.lapsed_until) {
            (DrainOutcome::Busy, Some(at))
        } else if let Some(at) = min_opt(last.retry_at, self.failure_retry_at) {
            (DrainOutcome::Stalled, Some(at))
        } else {
            (DrainOutcome::Settled, None)
        };
        Ok(DrainResult { outcome, retry_at, processed })
    }

    async fn claim(&mut self, mut grant: Grant) -> Result<Claimed, A2Error> {
        let timings = self.core.timings().clone();
        let span = tracing::info_span!(
            "a2.claim",
            a2.contract = %self.core.contract().name(),
            a2.session_id = %self.session_id,
            a2.claim.count = tracing::field::Empty,
            a2.claim.exhausted = tracing::field::Empty,
            a2.claim.outcome = tracing::field::Empty,
        );
        let requested_at = self.core.clock().now_ms();
        let params = HeadClaim {
            session: self.key.clone(),
            holder: self.holder.clone(),
            ttl_ms: millis(timings.claim_ttl),
            consumers: self.consumers.iter().map(Consumer::store_consumer).collect(),
            through: self.through,
            exclude: self.excluded.clone(),
            max_failures: MAX_FAILURES,
            limit: grant.limit(),
            range: timings.log_range,
        };
        let limit = params.limit as usize;
        let store = self.core.store().clone();
        let claimed = match self.fenced_call(store.head_claim(params).instrument(span.clone())).await {
            Some(claimed) => claimed?,
            None => {
                return Err(A2Error::Store(StoreError::unavailable(format!(
                    "a claim in session '{}' took longer than a lease; gave up on it",
                    self.session_id
                ))))
            }
        };
        // A lane's first position starts now; the rest of its range waits behind it, in order.
        let mut starting = Vec::new();
        let mut ranges = RangeQueues::new();
        for head in &claimed.heads {
            let lane = (head.head.consumer.clone(), head.head.lane.clone());
            if head.head.lane.is_some()
                && starting.iter().any(|s: &ClaimedHead| (&s.head.consumer, &s.head.lane) == (&lane.0, &lane.1))
            {
                ranges.entry(lane).or_default().push_back((head.clone(), claimed.session_head));
            } else {
                starting.push(head.clone());
            }
        }
        // A lane claimed anew starts a range of its own: no earlier queue of it is still to run.
        for head in &starting {
            self.ranges.remove(&(head.head.consumer.clone(), head.head.lane.clone()));
        }
        self.ranges.extend(ranges);
        self.saturated = starting.len() >= limit;
        span.record("a2.claim.count", claimed.heads.len());
        span.record("a2.claim.exhausted", claimed.exhausted.len());
        let outcome = if !claimed.heads.is_empty() {
            "claimed"
        } else if claimed.busy_until.is_some() {
            "busy"
        } else if claimed.retry_at.is_some() {
            "stalled"
        } else {
            "settled"
        };
        span.record("a2.claim.outcome", outcome);
        for exhausted in &claimed.exhausted {
            self.report_exhausted(exhausted, claimed.session_head);
        }
        let expires_at = requested_at + millis(timings.claim_ttl);
        // As the seeds: a claim that took heads arms the watchdog past its leases; one that
        // found them busy, past the other holder's lease; one that waits for a retry, past it.
        if !claimed.heads.is_empty() {
            self.core.arm_watchdog(&self.session_id, expires_at);
        } else if let Some(at) = min_opt(claimed.busy_until, claimed.retry_at) {
            self.core.arm_watchdog(&self.session_id, at);
        }
        for head in starting {
            let permit = grant.take_one();
            let lane = (head.head.consumer.clone(), head.head.lane.clone());
            let range = self.ranges.contains_key(&lane).then_some(true);
            self.start(head, permit, expires_at, claimed.session_head, range);
        }
        // Permits left over (fewer heads than asked for) go back now, with `grant`.
        Ok(claimed)
    }

    /// A saturated drain refills once half its batch is free, not after every
    /// head: that took one or two heads a claim (49,400 claims for 100k jobs).
    fn refill_due(&self) -> bool {
        self.saturated && self.active.len() <= (self.core.timings().claim_batch / 2) as usize
    }

    /// Room in the batch for the next claim: never more heads than
    /// `claim_batch` at once (at least one, so a claim always looks).
    fn claim_room(&self) -> u32 {
        let batch = self.core.timings().claim_batch.max(1);
        batch.saturating_sub(u32::try_from(self.active.len()).unwrap_or(u32::MAX)).max(1)
    }

    /// The grant for the next claim, or the wait for permits when none can be
    /// had now. A drain waits for a handful ([`MIN_CLAIM`], or every permit
    /// there is when fewer) rather than claiming one head at a time when many
    /// sessions share the permits, and takes more if they are free.
    fn reserve(&self, granted: Option<OwnedSemaphorePermit>) -> Result<Grant, PermitWait> {
        let room = self.claim_room();
        if self.nested {
            return Ok(Grant::Unpermitted(room));
        }
        let permits = self.core.run_permits().clone();
        let top_up = |mut held: OwnedSemaphorePermit| {
            let more = room.saturating_sub(u32::try_from(held.num_permits()).unwrap_or(u32::MAX));
            let free = u32::try_from(permits.available_permits()).unwrap_or(u32::MAX).min(more);
            if free > 0 {
                if let Ok(extra) = permits.clone().try_acquire_many_owned(free) {
                    held.merge(extra);
                }
            }
            held
        };
        if let Some(held) = granted {
            return Ok(Grant::Permits(top_up(held)));
        }
        let least = room.min(MIN_CLAIM).min(self.core.max_running()).max(1);
        if u32::try_from(permits.available_permits()).unwrap_or(u32::MAX) >= least {
            if let Ok(held) = permits.clone().try_acquire_many_owned(least) {
                return Ok(Grant::Permits(top_up(held)));
            }
        }
        Err(Box::pin(permits.acquire_many_owned(least)))
    }

    fn report_exhausted(&self, head: &ClaimedHead, session_head: u64) {
        let span = event_span(&self.core, &self.session_id, head, session_head);
        span.record("a2.event.outcome", "dead_lettered");
        tracing::warn!(parent: &span, consumer = %head.head.consumer, index = head.head.index, "dead-lettered on takeover: its lapsed attempts used up the budget");
    }

    fn start(
        &mut self,
        claimed: ClaimedHead,
        permit: Option<OwnedSemaphorePermit>,
        expires_at: Millis,
        session_head: u64,
        range: Option<bool>,
    ) {
        let Some(consumer) = self.consumers.iter().find(|c| c.name() == claimed.head.consumer).cloned() else {
            return;
        };
        let head = claimed.head.clone();
        // Re-claiming a head this drain still tracks proves the old attempt lost.
        if let Some(previous) = self.active.remove(&head) {
            previous.abandon(CancelReason::SupersededAttempt, self.core.timings().cancel_grace);
        }
        let cancel = CancellationToken::new();
        let completing = Arc::new(AtomicBool::new(false));
        let reason = CancelCause::default();
        let attempt = claimed.attempt;
        let fence = Fence {
            cancel: cancel.clone(),
            completing: completing.clone(),
            settle: self.settle.clone(),
            permit,
            reason: reason.clone(),
            range: range.map(|lease_next| RangeStep { holder: self.holder.clone(), lease_next }),
        };
        let task = run_head(self.core.clone(), consumer, claimed, self.session_id.to_owned(), fence, session_head);
        let task_head = head.clone();
        let abort = self.tasks.spawn(async move {
            let (outcome, permit) = task.await;
            (task_head, attempt, outcome, permit)
        });
        self.active.insert(head, Active { attempt, cancel, abort, expires_at, completing, reason });
    }

    /// A position of a range ended. When its completion leased the next one,
    /// that one starts now on the same permit and lease (`Some(appended_work)`:
    /// whether the ended run appended work that needs a claim); otherwise the
    /// rest of its range, if still queued, is dropped unrun (`None`).
    fn range_goes_on(
        &mut self,
        head: &HeadRef,
        outcome: &HeadOutcome,
        permit: Option<OwnedSemaphorePermit>,
        expires_at: Millis,
    ) -> Option<bool> {
        let lane = (head.consumer.clone(), head.lane.clone());
        let HeadOutcome::Processed { holds_next: true, appended_work, .. } = outcome else {
            self.drop_range_after(head);
            return None;
        };
        // Only the queue that continues from `head` is its range's: a head
        // given up while it wrote its outcome may hear of it after a later
        // range of its lane was claimed, and that one is left alone.
        let queue = self.ranges.get_mut(&lane).filter(|queue| follows(queue, head))?;
        let (next, session_head) = queue.pop_front()?;
        let more = !queue.is_empty();
        if !more {
            self.ranges.remove(&lane);
        }
        self.start(next, permit, expires_at, session_head, Some(more));
        Some(*appended_work)
    }

    /// Drop the unrun rest of the range `head` runs in, if it is still queued.
    /// A lane's queue may already be a later range's: the cursor moved on when
    /// `head` committed, and the drain can claim again before it hears so.
    fn drop_range_after(&mut self, head: &HeadRef) {
        let lane = (head.consumer.clone(), head.lane.clone());
        if self.ranges.get(&lane).is_some_and(|queue| follows(queue, head)) {
            self.ranges.remove(&lane);
        }
    }

    /// Self-fencing: a head whose local lease estimate passed is abandoned with no I/O.
    fn fence_lapsed(&mut self) {
        let now = self.core.clock().now_ms();
        let lapsed: Vec<HeadRef> =
            self.active.iter().filter(|(_, a)| a.expires_at <= now).map(|(h, _)| h.clone()).collect();
        for head in lapsed {
            // Its store lease ends about now: the head is another holder's (or a later drain's) to take.
            self.lapsed_until = Some(self.lapsed_until.map_or(now, |at| at.max(now)));
            tracing::warn!(
                code = "CLAIM_EXPIRED",
                "the claim on event {} for consumer '{}' in session '{}' lapsed without renewal",
                head.index,
                head.consumer,
                self.session_id
            );
            self.give_up(&head, CancelReason::ClaimExpired);
        }
    }

    /// Abandon a head; one already writing its outcome stays tracked (with no
    /// further lapse) until that outcome arrives.
    fn give_up(&mut self, head: &HeadRef, reason: CancelReason) {
        let grace = if reason == CancelReason::Shutdown { Duration::ZERO } else { self.core.timings().cancel_grace };
        // The rest of its range never runs: its lease lapses on the position the cursor stands on.
        self.drop_range_after(head);
        let Some(active) = self.active.get_mut(head) else { return };
        if active.abandon(reason, grace) {
            self.active.remove(head);
        } else {
            active.expires_at = Millis::MAX;
        }
    }

    /// Renew the leases of running heads; `false` when the store did not answer in time.
    async fn renew(&mut self) -> bool {
        if self.active.is_empty() {
            return true;
        }
        let requested_at = self.core.clock().now_ms();
        let ttl_ms = millis(self.core.timings().claim_ttl);
        let heads = self
            .active
            .iter()
            .filter(|(_, a)| !a.cancel.is_cancelled())
            .map(|(head, a)| HeldHead { head: head.clone(), attempt: a.attempt })
            .collect();
        let params = HeadRenew { session: self.key.clone(), holder: self.holder.clone(), ttl_ms, heads };
        let store = self.core.store().clone();
        let renewed = match self.fenced_call(store.head_renew(params)).await {
            Some(Ok(renewed)) => renewed,
            Some(Err(error)) => {
                tracing::warn!(%error, "lease renewal failed; heads self-fence if it keeps failing");
                return false;
            }
            None => {
                tracing::warn!("lease renewal took longer than a lease; heads self-fence if it keeps failing");
                return false;
            }
        };
        if !renewed.renewed.is_empty() {
            // The beat moved the leases: a watchdog for the new expiry is armed (the earlier one still fires, a drain that finds nothing).
            self.core.arm_watchdog(&self.session_id, requested_at + ttl_ms);
        }
        for head in renewed.renewed {
            if let Some(active) = self.active.get_mut(&head) {
                active.expires_at = requested_at + ttl_ms;
            }
        }
        for head in renewed.superseded {
            // A head that is writing its outcome may already have moved on: that is its own completion.
            if self.active.get(&head).is_some_and(|a| a.completing.load(Ordering::SeqCst)) {
                continue;
            }
            // Another holder has it now: look again before finishing, to learn what the session waits for.
            self.ended_since_claim = true;
            tracing::info!(
                code = "SUPERSEDED_ATTEMPT",
                "a newer attempt owns event {} for consumer '{}' in session '{}'",
                head.index,
                head.consumer,
                self.session_id
            );
            self.give_up(&head, CancelReason::SupersededAttempt);
        }
        true
    }
}

/// The unrun rest of each lane's range, by (consumer, lane): each position
/// with the session head its claim read.
type RangeQueues = HashMap<(String, Option<String>), VecDeque<(ClaimedHead, u64)>>;

/// Whether a lane's range queue goes on from `head` (its next position first).
fn follows(queue: &VecDeque<(ClaimedHead, u64)>, head: &HeadRef) -> bool {
    queue.front().is_some_and(|(next, _)| next.head.index == head.index + 1)
}

/// A random pause of up to `max`.
fn jitter(max: Duration) -> Duration {
    let spread = u64::try_from(max.as_millis()).unwrap_or(u64::MAX).max(1);
    Duration::from_millis((uuid::Uuid::new_v4().as_u128() % u128::from(spread)) as u64)
}

fn min_opt(a: Option<Millis>, b: Option<Millis>) -> Option<Millis> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
