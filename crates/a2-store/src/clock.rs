use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Wall-clock milliseconds since the Unix epoch, the only time the stores and
/// the engine read. Injected so that leases, TTLs and backoff can be tested
/// on manual or paused time in milliseconds.
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now_ms(&self) -> i64;
}

fn system_now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)).unwrap_or(0)
}

/// The real clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        system_now_ms()
    }
}

/// A clock that moves only when told to; for store-level tests.
#[derive(Debug)]
pub struct ManualClock {
    now: AtomicI64,
}

impl ManualClock {
    pub fn new(start_ms: i64) -> Self {
        Self { now: AtomicI64::new(start_ms) }
    }
    pub fn advance(&self, ms: i64) {
        self.now.fetch_add(ms, Ordering::SeqCst);
    }
    pub fn set(&self, ms: i64) {
        self.now.store(ms, Ordering::SeqCst);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new(1_700_000_000_000)
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }
}

/// Wall time that follows tokio's clock: under `tokio::time::pause` it moves
/// with the runtime's auto-advance, so engine timers and stored timestamps
/// agree in paused-time tests.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    base_ms: i64,
    base: tokio::time::Instant,
}

impl TokioClock {
    pub fn new() -> Self {
        Self { base_ms: system_now_ms(), base: tokio::time::Instant::now() }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for TokioClock {
    fn now_ms(&self) -> i64 {
        let elapsed = tokio::time::Instant::now().saturating_duration_since(self.base);
        self.base_ms + i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX / 2)
    }
}
