//! The engine's clocks and policy constants: the floor every other module
//! stands on, so a timing or a limit is read from one place.

use std::time::Duration;

use a2_store::Backoff;

/// Failed attempts after which a head is dead-lettered.
pub const MAX_FAILURES: u32 = 10;

/// Heads a claim may take even when every run permit is in use: the claimed
/// wait for a permit under renewed leases. Claiming only as many as were free
/// took one or two heads a claim once many sessions drained at once.
pub(crate) const MIN_CLAIM: u32 = 16;

/// The drain's clocks. Defaults suit production; tests shrink them or run on paused time.
#[derive(Debug, Clone)]
pub struct DrainTimings {
    /// How long a claim's lease lasts without renewal.
    pub claim_ttl: Duration,
    /// How often a holder renews the leases of heads it runs.
    pub claim_heartbeat: Duration,
    /// Retry delays after failures.
    pub backoff: Backoff,
    /// Heads claimed at most in one claim.
    pub claim_batch: u32,
    /// Consecutive positions one claim of a log cursor may take (a range
    /// lease): they run one at a time, in order, each completion leasing the
    /// next, so an ordered lane claims once per range, not once per event.
    /// 1 claims each position alone.
    pub log_range: u32,
    /// Slack after a busy head's lease expiry before a background drain looks again.
    pub watchdog_grace: Duration,
    pub consume_wait_min: Duration,
    pub consume_wait_max: Duration,
    /// How often the upkeep leader folds what changed into the contract's
    /// kept consumer totals (what the Studio's overview reads): a refresh
    /// costs what changed, so kept totals stay a few seconds old.
    pub totals_refresh: Duration,
    /// How often a stream looks for appends made by other processes.
    pub stream_poll: Duration,
    /// How often a server working in the background looks for work a dead
    /// process left (lapsed leases, due retries, heads nobody claimed).
    pub rescue_every: Duration,
    /// Whether a claim arms a drain task at its lease's expiry plus
    /// `watchdog_grace` when a scheduler was configured (`ServerBuilder::scheduler`),
    /// so work a dead process held is retried then, not at the rescuer's next pass.
    pub watchdog: bool,
    /// How often a server working in the background looks for due scheduled
    /// tasks of its contract (a task scheduled by this server for sooner wakes it).
    pub scheduler_poll: Duration,
    /// How long a run whose lease lapsed or was superseded may take to return
    /// after its token is cancelled, before it is stopped where it awaits.
    pub cancel_grace: Duration,
    /// How often a server working in the background refreshes its row in the
    /// store's process registry (it is taken for gone after three missed beats).
    pub server_beat: Duration,
}

impl Default for DrainTimings {
    fn default() -> Self {
        Self {
            claim_ttl: Duration::from_secs(30),
            claim_heartbeat: Duration::from_secs(10),
            backoff: Backoff::default(),
            claim_batch: 64,
            log_range: 32,
            watchdog_grace: Duration::from_secs(1),
            consume_wait_min: Duration::from_millis(25),
            consume_wait_max: Duration::from_secs(1),
            stream_poll: Duration::from_secs(1),
            totals_refresh: Duration::from_secs(2),
            rescue_every: Duration::from_secs(5),
            scheduler_poll: Duration::from_secs(1),
            watchdog: true,
            cancel_grace: Duration::from_secs(1),
            server_beat: Duration::from_secs(10),
        }
    }
}

/// How long an external append waits for the watchdog it arms before it
/// answers anyway (the arm goes on; only the wait ends), as the seeds bound it.
pub(crate) const SCHEDULER_ARM_WAIT: Duration = Duration::from_secs(1);

/// A pause that a drain error waits before trying again.
pub(crate) const DRAIN_ERROR_PAUSE: Duration = Duration::from_secs(1);

/// A duration as the store's milliseconds, saturating.
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
