//! `abort_on`: cancel a running attempt's token when a matching event lands
//! after its trigger — appended by this process or any other.

use a2_store::SessionKey;
use std::sync::{Arc, OnceLock};

use a2_store::{Event, EventList, Store};
use tokio_util::sync::CancellationToken;

use crate::cancel::{cancel_for, CancelCause, CancelReason};
use crate::guard::AbortOnDrop;
use crate::signals::SessionSignals;

/// Decides whether an event of the rule's type aborts a run: `(event, trigger, attempt)`.
pub type AbortPredicate = Arc<dyn Fn(&Event, &Event, u32) -> bool + Send + Sync>;

/// One `abort_on` entry: an event type, and optionally a predicate that
/// must hold too (targeted cancellation, e.g. `event.payload.of == trigger.id`).
#[derive(Clone)]
pub(crate) struct AbortRule {
    pub event_type: String,
    pub matches: Option<AbortPredicate>,
}

impl AbortRule {
    /// `trigger` carries the session's public id; a stored `event` is given it
    /// before a predicate sees it.
    fn fires(&self, event: &Event, trigger: &Event, attempt: u32) -> bool {
        if event.index <= trigger.index || event.event_type != self.event_type {
            return false;
        }
        self.matches.as_ref().is_none_or(|matches| {
            let public = Event { session: trigger.session.clone(), ..event.clone() };
            matches(&public, trigger, attempt)
        })
    }
}

/// Watch the session while a head runs. Any sign that it grew (an append
/// here, the store's change feed from other processes, a lagged feed, or the
/// poll interval where there is no feed) re-reads the events after the last
/// one seen, so no notice needs to carry the event itself and none lost matters.
pub(crate) struct AbortWatch {
    pub store: Arc<dyn Store>,
    /// Subscribed before the watch's first read.
    pub signals: SessionSignals,
    pub key: SessionKey,
    /// The session's public id: what a predicate sees in `event.session`, never the storage key.
    pub session_id: String,
    pub trigger: Event,
    pub attempt: u32,
    pub reason: CancelCause,
}

/// A running watch: its task, stopped when dropped, and why it failed, if it did.
pub(crate) struct Watching {
    _task: Option<AbortOnDrop<()>>,
    failure: Arc<OnceLock<String>>,
}

impl Watching {
    /// The store error that stopped the watch: the run's attempt fails with it.
    pub(crate) fn failure(&self) -> Option<&str> {
        self.failure.get().map(String::as_str)
    }
}

/// Watch for `rules` while a run goes. The events already past the trigger
/// are read before this returns, so a run whose cancelling event is already
/// in the log starts with its token cancelled; the watch then follows the
/// session. A read that fails ends the watch and cancels the run
/// (`ABORT_MONITOR_FAILED`): an abort it could not see must not go unheeded.
pub(crate) async fn watch(rules: &[AbortRule], watched: AbortWatch, token: CancellationToken) -> Option<Watching> {
    if rules.is_empty() {
        return None;
    }
    let rules = rules.to_vec();
    let AbortWatch { store, mut signals, key, session_id, mut trigger, attempt, reason } = watched;
    trigger.session = session_id;
    let mut seen = trigger.index;
    let fires = move |events: &[Event]| events.iter().any(|e| rules.iter().any(|r| r.fires(e, &trigger, attempt)));
    let failure = Arc::new(OnceLock::new());
    // The log as it stands before the run starts.
    match newer(&*store, &key, seen).await {
        Ok(events) if fires(&events) => {
            cancel_for(&reason, &token, CancelReason::AbortOn);
            return Some(Watching { _task: None, failure });
        }
        Ok(events) => seen = events.last().map_or(seen, |e| e.index),
        Err(error) => {
            monitor_failed(&error, &failure, &reason, &token);
            return Some(Watching { _task: None, failure });
        }
    }
    let failing = failure.clone();
    let handle = tokio::spawn(async move {
        loop {
            signals.next().await;
            match newer(&*store, &key, seen).await {
                Ok(events) => {
                    if fires(&events) {
                        cancel_for(&reason, &token, CancelReason::AbortOn);
                        return;
                    }
                    seen = events.last().map_or(seen, |e| e.index);
                }
                Err(error) => {
                    monitor_failed(&error, &failing, &reason, &token);
                    return;
                }
            }
        }
    });
    Some(Watching { _task: Some(AbortOnDrop(handle)), failure })
}

/// The watch could not read the session: say why, keep the reason for the
/// attempt's failure, and cancel the run.
fn monitor_failed(
    error: &a2_store::StoreError,
    failure: &OnceLock<String>,
    reason: &CancelCause,
    token: &CancellationToken,
) {
    tracing::warn!(%error, "abort_on could not read the session; the attempt fails");
    let _ = failure.set(error.to_string());
    cancel_for(reason, token, CancelReason::AbortMonitorFailed);
}

/// Every event after `after`, page by page.
async fn newer(store: &dyn Store, key: &SessionKey, mut after: u64) -> Result<Vec<Event>, a2_store::StoreError> {
    let mut events = Vec::new();
    loop {
        let params = EventList {
            session: key.clone(),
            after: Some(after),
            before: None,
            limit: a2_store::MAX_PAGE,
            newest_first: false,
        };
        let page = store.event_list(params).await?;
        let full = page.len() >= a2_store::MAX_PAGE as usize;
        after = page.last().map_or(after, |e| e.index);
        events.extend(page);
        if !full {
            return Ok(events);
        }
    }
}
