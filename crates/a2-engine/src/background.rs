//! The server's background work as one service with an explicit start and
//! shutdown: draining the sessions that were woken (one drain per session at
//! a time, a bounded number at once), the rescuer that looks for work a dead
//! process left, and the store's upkeep (kept totals, attempt pruning).
//! It stands above the drain: nothing below it schedules anything, it only
//! wakes the service through the core's wake channel.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use a2_store::TotalsRefresh;
use tokio::sync::{mpsc, Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::drain::{run_drain, DrainOptions, DrainOutcome, DrainResult};
use crate::server_core::ServerCore;
use crate::timings::{millis, DRAIN_ERROR_PAUSE};

/// One background drain per session at a time; wakes while it runs ask it to go again.
#[derive(Default)]
struct DrainSlot {
    again: AtomicBool,
    wake: Notify,
}

/// What the service's tasks share; they hold the core only while they work.
struct State {
    core: Weak<ServerCore>,
    shutdown: CancellationToken,
    drains: Mutex<HashMap<String, Arc<DrainSlot>>>,
    /// Sessions drained at once: a worker that finds thousands of sessions
    /// with work drains as many as it can run, and the rest wait as small
    /// tasks rather than as drains holding claims.
    draining: Arc<Semaphore>,
    /// The contract's upkeep lease while this server holds it: only then does
    /// its refresher refresh and prune (one leader, however many servers),
    /// and its refresh commits only while that generation of the lease holds.
    leading: Arc<Mutex<Option<a2_store::UpkeepFence>>>,
    /// Who holds the scheduled tasks this server claims to deliver.
    holder: String,
}

/// How long `stopped` waits for the registry row's removal.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The service. Stopping it stops every task it started; so does the end of
/// the core (its last server, session and run gone), whose drop cancels `shutdown`.
pub(crate) struct Background {
    state: Arc<State>,
    wakes: Mutex<Option<mpsc::UnboundedReceiver<String>>>,
    /// Whether the server runs consumers at all (a server with none has nothing to rescue).
    rescues: bool,
    /// The task that keeps this server's registry row: awaited by `stopped`,
    /// so a process that exits cleanly leaves no stale row behind.
    registry: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Background {
    /// `shutdown` is the token the core cancels when it is dropped.
    pub(crate) fn new(
        core: &Arc<ServerCore>,
        wakes: Option<mpsc::UnboundedReceiver<String>>,
        shutdown: CancellationToken,
        max_draining: usize,
    ) -> Self {
        let rescues = wakes.is_some() && !core.consumers().is_empty();
        Self {
            state: Arc::new(State {
                core: Arc::downgrade(core),
                shutdown,
                drains: Mutex::new(HashMap::new()),
                draining: Arc::new(Semaphore::new(max_draining)),
                leading: Arc::new(Mutex::new(None)),
                // Under the server's own prefix, so its leases name it in the registry.
                holder: format!("{}scheduler", core.holder_prefix()),
            }),
            wakes: Mutex::new(wakes),
            rescues,
            registry: Mutex::new(None),
        }
    }

    /// Start the service's tasks if they are not running yet and a runtime is
    /// at hand (a server built outside one starts at its first async call).
    /// They live on that runtime: a server must not outlive the runtime it
    /// first ran on (a short-lived `block_on` would take its background with it).
    pub(crate) fn ensure_started(&self) {
        if self.state.shutdown.is_cancelled() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let Some(wakes) = self.wakes.lock().unwrap_or_else(|p| p.into_inner()).take() else { return };
        tokio::spawn(dispatch(self.state.clone(), wakes));
        if let Some(core) = self.state.core.upgrade() {
            let (store, beat, every) =
                (core.store().clone(), crate::registry::beat_of(&core), core.timings().server_beat);
            let shutdown = self.state.shutdown.clone();
            let leading = self.state.leading.clone();
            let task = tokio::spawn(crate::registry::keep_registered(store, beat, every, shutdown, leading));
            *self.registry.lock().unwrap_or_else(|p| p.into_inner()) = Some(task);
            // From the start, not the first drain: the lease is taken from the start, and a
            // leader that never drained must still refresh and prune.
            start_refresher(&self.state);
        }
        if self.rescues {
            tokio::spawn(rescue_loop(self.state.clone()));
        }
        if self.state.core.upgrade().is_some_and(|core| core.scheduler().served_from_store()) {
            tokio::spawn(deliver_loop(self.state.clone()));
        }
    }

    /// The holder this server claims scheduled tasks as.
    pub(crate) fn holder(&self) -> &str {
        &self.state.holder
    }

    /// `shutdown`, then wait (at most `STOP_WAIT`) until the registry row is removed.
    pub(crate) async fn stopped(&self) {
        self.shutdown();
        let task = self.registry.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(task) = task {
            if tokio::time::timeout(STOP_WAIT, task).await.is_err() {
                tracing::warn!(
                    "this server's registry row was not removed in time: it shows as gone after three beats"
                );
            }
        }
    }

    /// Stop draining, rescuing and upkeep; running heads are abandoned and their leases lapse.
    pub(crate) fn shutdown(&self) {
        self.state.shutdown.cancel();
        // A service that never started drops its queue, so later wakes go nowhere rather than pile up.
        drop(self.wakes.lock().unwrap_or_else(|p| p.into_inner()).take());
    }
}

/// Turn wakes into drains until the service stops.
async fn dispatch(state: Arc<State>, mut wakes: mpsc::UnboundedReceiver<String>) {
    loop {
        tokio::select! {
            woken = wakes.recv() => match woken {
                Some(session_id) => schedule_drain(&state, &session_id),
                None => return,
            },
            () = state.shutdown.cancelled() => return,
        }
    }
}

/// Start (or re-arm) the background drain of a session.
fn schedule_drain(state: &Arc<State>, session_id: &str) {
    if state.shutdown.is_cancelled() {
        return;
    }
    let slot = {
        let mut drains = state.drains.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = drains.get(session_id) {
            slot.again.store(true, Ordering::SeqCst);
            slot.wake.notify_one();
            return;
        }
        let slot = Arc::new(DrainSlot::default());
        drains.insert(session_id.to_owned(), slot.clone());
        slot
    };
    let task_state = state.clone();
    let session_id = session_id.to_owned();
    tokio::spawn(async move {
        let shutdown = task_state.shutdown.clone();
        tokio::select! {
            () = keep_draining(task_state, session_id, slot) => {},
            () = shutdown.cancelled() => {},
        }
    });
}

/// Keep draining a session while wakes and retries call for it.
async fn keep_draining(state: Arc<State>, session_id: String, slot: Arc<DrainSlot>) {
    loop {
        // A turn among the sessions drained at once; waiting holds no claim and not the server.
        let Ok(turn) = state.draining.clone().acquire_owned().await else { return };
        let Some(core) = state.core.upgrade() else { return };
        slot.again.store(false, Ordering::SeqCst);
        let drained = run_drain(&core, &session_id, DrainOptions::default()).await;
        let next = match drained {
            Ok(DrainResult { outcome: DrainOutcome::Settled, .. }) => None,
            Ok(DrainResult { outcome: DrainOutcome::Busy, retry_at, .. }) => {
                retry_at.map(|at| at + millis(core.timings().watchdog_grace))
            }
            Ok(DrainResult { retry_at, .. }) => retry_at,
            Err(error) => {
                tracing::warn!(a2.session_id = %session_id, code = error.code(), %error, "drain failed; retrying");
                Some(core.clock().now_ms() + millis(DRAIN_ERROR_PAUSE))
            }
        };
        if slot.again.swap(false, Ordering::SeqCst) {
            continue;
        }
        let Some(at) = next else {
            let mut drains = state.drains.lock().unwrap_or_else(|p| p.into_inner());
            if slot.again.load(Ordering::SeqCst) {
                continue;
            }
            drains.remove(&session_id);
            return;
        };
        let wait = Duration::from_millis(u64::try_from(at - core.clock().now_ms()).unwrap_or(0));
        drop(core);
        // A session waiting for a retry gives its turn to one with work now.
        drop(turn);
        tokio::select! {
            () = tokio::time::sleep(wait) => {},
            () = slot.wake.notified() => {},
        }
    }
}

/// Look for work a dead process left, on start and every `rescue_every`,
/// and drain each session that has some. Holds the core only while it looks.
async fn rescue_loop(state: Arc<State>) {
    loop {
        let Some(core) = state.core.upgrade() else { return };
        rescue(&state, &core).await;
        let every = core.timings().rescue_every;
        drop(core);
        tokio::select! {
            () = tokio::time::sleep(every) => {},
            () = state.shutdown.cancelled() => return,
        }
    }
}

/// One pass of the rescuer: every session with runnable work gets a drain.
async fn rescue(state: &Arc<State>, core: &ServerCore) {
    let consumers: Vec<String> = core.consumers().iter().map(|c| c.name().to_owned()).collect();
    let mut after = None;
    loop {
        let params = a2_store::SessionsRunnable {
            contract: core.contract().name().to_owned(),
            consumers: consumers.clone(),
            after,
            limit: a2_store::MAX_PAGE,
        };
        let page = match core.store().session_list_runnable(params).await {
            Ok(page) => page,
            Err(error) => {
                tracing::warn!(code = error.code(), %error, "could not look for stranded work; trying again later");
                return;
            }
        };
        for session_id in &page.session_ids {
            schedule_drain(state, session_id);
        }
        match page.scanned_through {
            Some(through) => after = Some(through),
            None => return,
        }
    }
}

/// Deliver the contract's due scheduled tasks every `scheduler_poll`, or at
/// once when a task due sooner is scheduled here. Many servers on one store
/// share the work: a claim leases each task to one of them.
async fn deliver_loop(state: Arc<State>) {
    loop {
        let Some(core) = state.core.upgrade() else { return };
        core.delivery_pass_starts();
        if let Err(error) = core.deliver_due(&state.holder, None).await {
            tracing::warn!(code = error.code(), %error, "could not deliver due scheduled tasks; trying again later");
        }
        let wait = core.delivery_wait();
        let deliveries = core.deliveries();
        drop(core);
        tokio::select! {
            () = tokio::time::sleep(wait) => {},
            () = deliveries.notified() => {},
            () = state.shutdown.cancelled() => return,
        }
    }
}

/// Keep the contract's consumer totals fresh while this server works in the
/// background and leads its contract's upkeep (each refresh folds in what
/// changed since the last); prune every [`PRUNE_EVERY`].
fn start_refresher(state: &Arc<State>) {
    let state = state.clone();
    tokio::spawn(async move {
        let mut pruned_at: Option<tokio::time::Instant> = None;
        loop {
            let every = match state.core.upgrade() {
                Some(core) => core.timings().totals_refresh,
                None => return,
            };
            tokio::select! {
                () = tokio::time::sleep(every) => {},
                () = state.shutdown.cancelled() => return,
            }
            let Some(fence) = state.leading.lock().unwrap_or_else(|p| p.into_inner()).clone() else { continue };
            let Some(core) = state.core.upgrade() else { return };
            let refresh =
                TotalsRefresh { contract: Some(fence.scope.clone()), fence: Some(fence), ..TotalsRefresh::default() };
            match core.store().consumer_totals_refresh(refresh).await {
                Ok(_) => {}
                // Another server leads now: its refresh stands, this one wrote nothing.
                Err(error @ a2_store::StoreError::UpkeepLeaseLost { .. }) => {
                    tracing::debug!(code = error.code(), %error, "the upkeep lease moved on; not refreshing");
                    continue;
                }
                Err(error) => tracing::warn!(code = error.code(), %error, "could not refresh the kept consumer totals"),
            }
            // The prunes walk the contract's sessions: on their own slower turn, not every refresh.
            if pruned_at.is_none_or(|at| at.elapsed() >= PRUNE_EVERY) {
                pruned_at = Some(tokio::time::Instant::now());
                prune_attempts(&core).await;
                prune_presence(&core).await;
            }
        }
    });
}

/// How often the upkeep leader prunes attempt history and expired presence.
const PRUNE_EVERY: Duration = Duration::from_secs(30);

/// Delete expired presence (values and tombstones), a bounded batch a pass:
/// reads already leave it out, this keeps the table from growing.
async fn prune_presence(core: &ServerCore) {
    if !core.contract().declares_presence() {
        return;
    }
    // A page a statement, until a short one: at most 20 pages a pass, so one pass never holds the loop long.
    for _ in 0..20 {
        match core.store().presence_prune(a2_store::PresencePrune { limit: a2_store::MAX_PAGE }).await {
            Ok(pruned) if pruned < u64::from(a2_store::MAX_PAGE) => return,
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(code = error.code(), %error, "could not prune expired presence; trying again later");
                return;
            }
        }
    }
}

/// Keep the attempt history within its retention: each head its newest
/// attempts, a dead-lettered head all of its own; a page of sessions a call.
async fn prune_attempts(core: &ServerCore) {
    let mut after = None;
    loop {
        let params = a2_store::AttemptPrune {
            contract: core.contract().name().to_owned(),
            after,
            sessions: a2_store::MAX_PAGE,
            keep: a2_store::ATTEMPTS_KEPT_PER_HEAD,
        };
        match core.store().attempt_prune(params).await {
            Ok(a2_store::AttemptPruned { next: Some(next), .. }) => after = Some(next),
            Ok(_) => return,
            Err(error) => {
                tracing::warn!(code = error.code(), %error, "could not prune the attempt history; trying again later");
                return;
            }
        }
    }
}
