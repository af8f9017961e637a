//! The scheduler seam and its vocabulary, a leaf of the engine: when a task
//! is due ([`Timing`]), where tasks go ([`Scheduler`], the store-backed
//! [`StoreScheduler`] by default), and which run scheduled one.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use a2_store::{Millis, Store, TaskSchedule};

use crate::A2Error;

/// The largest time a task may be due at (JavaScript's `Date` range), so due
/// times survive every client and every sum with a delay or a grace.
pub(crate) const MAX_TIME_MS: i64 = 8_640_000_000_000_000;

/// When a scheduled task is due: a delay from the trigger (`"30s"`, `"500ms"`,
/// `"1.5h"`; units `ms`, `s`, `m`, `h`, `d`) or a wall-clock time in milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub enum Timing {
    Delay(String),
    At(Millis),
}

impl Timing {
    pub fn delay(delay: impl Into<String>) -> Self {
        Self::Delay(delay.into())
    }

    /// The due time, a delay counted from `base` (the trigger's creation
    /// inside a run, so a retried run computes the same time; now outside one).
    pub fn due_at(&self, base: Millis) -> Result<Millis, A2Error> {
        match self {
            // The seeds ask for a valid Date: JavaScript's range, ±8.64e15 ms from the epoch.
            Timing::At(at) if at.abs() <= MAX_TIME_MS => Ok(*at),
            Timing::At(at) => Err(A2Error::InvalidArgument {
                message: format!("schedule at {at} is not a time: it must be within ±{MAX_TIME_MS} ms of the epoch"),
            }),
            Timing::Delay(delay) => {
                let ms = delay_ms(delay).ok_or_else(|| A2Error::InvalidArgument {
                    message: format!(
                        "schedule delay {delay:?} must be positive and use ms, s, m, h, or d (for example '30s')"
                    ),
                })?;
                let due = base.saturating_add(ms);
                if due.abs() > MAX_TIME_MS {
                    return Err(A2Error::InvalidArgument {
                        message: format!("schedule delay {delay:?} ends past any time"),
                    });
                }
                Ok(due)
            }
        }
    }
}

/// `<amount><unit>`: an amount without sign or leading zeros (a fraction
/// allowed), then `ms|s|m|h|d`; `None` unless it is positive and finite.
fn delay_ms(delay: &str) -> Option<i64> {
    let unit_at = delay.find(|c: char| c.is_ascii_alphabetic())?;
    let (amount, unit) = delay.split_at(unit_at);
    let multiplier: f64 = match unit {
        "ms" => 1.0,
        "s" => 1_000.0,
        "m" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => 86_400_000.0,
        _ => return None,
    };
    let (whole, fraction) = amount.split_once('.').map_or((amount, None), |(w, f)| (w, Some(f)));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || (whole.len() > 1 && whole.starts_with('0')) || fraction.is_some_and(|f| !digits(f)) {
        return None;
    }
    let ms = amount.parse::<f64>().ok()? * multiplier;
    (ms.is_finite() && ms > 0.0 && ms < i64::MAX as f64).then(|| ms.round().max(1.0) as i64)
}

pub type SchedulerFuture<'a> = Pin<Box<dyn Future<Output = Result<(), A2Error>> + Send + 'a>>;

/// Where scheduled tasks go. The embedded default keeps them in the server's
/// store ([`StoreScheduler`]); a queue-backed one can be added beside it.
pub trait Scheduler: Send + Sync + std::fmt::Debug {
    /// Keep `task` until it is due. Scheduling a task id again is one task.
    fn schedule(&self, task: TaskSchedule) -> SchedulerFuture<'_>;

    /// Whether due tasks wait in the server's own store, for its background
    /// (and every other server of the contract on that store) to deliver.
    fn served_from_store(&self) -> bool {
        false
    }
}

/// The embedded scheduler: tasks in the store's `a2_scheduled`, delivered by
/// whichever server of the contract claims them first.
#[derive(Debug)]
pub struct StoreScheduler {
    store: Arc<dyn Store>,
}

impl StoreScheduler {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }
}

impl Scheduler for StoreScheduler {
    fn schedule(&self, task: TaskSchedule) -> SchedulerFuture<'_> {
        Box::pin(async move {
            self.store.task_schedule(task).await?;
            Ok(())
        })
    }

    fn served_from_store(&self) -> bool {
        true
    }
}

/// The run that schedules, when a consumer does.
#[derive(Debug, Clone)]
pub(crate) struct ScheduleOrigin {
    pub trigger_event_id: String,
    pub trigger_index: u64,
    pub trigger_created_at: Millis,
    pub consumer: String,
}
