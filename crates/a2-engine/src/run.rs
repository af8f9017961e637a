//! Running one head and settling its outcome: the run in a task of its own
//! (a panic is a failed attempt), its `abort_on` watch, and the completion,
//! failure or batched settle that records how it ended under its attempt fence.

use a2_store::SessionKey;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use a2_store::{
    Cause, ClaimedHead, CompleteOutcome, FailOutcome, HeadComplete, HeadCompleteMany, HeadFail, HeldHead, Millis,
    StoreError,
};
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::abort::AbortWatch;
use crate::cancel::{CancelCause, CancelReason};
use crate::guard::AbortOnDrop;
use crate::server_core::ServerCore;
use crate::timings::MAX_FAILURES;
use crate::{ids, A2Error, Consumer, ConsumerContext, ConsumerSession};

/// How one run of a head ended.
#[derive(Debug)]
pub(crate) enum HeadOutcome {
    /// `opens`: it may have made another head runnable (a cursor moved, a
    /// lane's next head, or events it appended); `appended_work`: it appended
    /// events some consumer of the server takes (the drain decides who runs them).
    /// `holds_next`: the completion leased the next position of its range
    /// to this holder, for the drain to run next.
    Processed {
        opens: bool,
        appended_work: bool,
        holds_next: bool,
    },
    Failed {
        retry_at: Millis,
    },
    DeadLettered,
    Superseded,
    /// Its claim lapsed or was taken over and the run gave up with an error:
    /// as the seeds have it, no failure is written; the lease runs out and
    /// the claim that takes the head over counts the lapse.
    Surrendered,
    /// The store could not record the outcome; the lease lapses and the next claim counts it.
    StoreFailed(StoreError),
}

pub(crate) fn event_span(core: &ServerCore, session_id: &str, head: &ClaimedHead, session_head: u64) -> tracing::Span {
    let age_ms = (core.clock().now_ms() - head.event.created_at).max(0);
    tracing::info_span!(
        "a2.event",
        a2.contract = %core.contract().name(),
        a2.session_id = %session_id,
        a2.event.type = %head.event.event_type,
        a2.event.index = head.event.index,
        a2.event.id = %head.event.id,
        a2.event.consumer = %head.head.consumer,
        a2.event.lane = head.head.lane.clone(),
        a2.event.attempt = head.attempt,
        a2.event.handled = true,
        a2.event.lag = session_head.saturating_sub(head.event.index),
        a2.event.age_ms = age_ms,
        a2.event.outcome = tracing::field::Empty,
        a2.event.aborted = tracing::field::Empty,
    )
}

/// What a running head's task shares with its drain.
pub(crate) struct Fence {
    pub cancel: CancellationToken,
    pub completing: Arc<AtomicBool>,
    pub settle: SettlerSender,
    /// The run permit the drain reserved for this head before it leased it,
    /// held until the run returns; `None` for a nested consume's heads,
    /// whose waiting run holds one for them.
    pub permit: Option<OwnedSemaphorePermit>,
    /// Why the run was cancelled, set by whoever cancels it first.
    pub reason: CancelCause,
    /// A position of a log cursor's range: completed under the holder's
    /// fence, asking for the next position when more of the range waits.
    pub range: Option<RangeStep>,
}

/// How a position of a range is completed.
#[derive(Debug, Clone)]
pub(crate) struct RangeStep {
    pub holder: String,
    /// More of the range waits: the completion leases the next position, and
    /// the run's permit is handed to it rather than given back.
    pub lease_next: bool,
}

type SettleReply = tokio::sync::oneshot::Sender<Result<bool, StoreError>>;
pub(crate) type SettlerSender = tokio::sync::mpsc::UnboundedSender<(HeldHead, SettleReply)>;

/// Settles a drain's heads that returned nothing: whatever queued while one
/// write was in flight goes in the next, so under load many heads share a
/// transaction and at rest none waits.
pub(crate) fn spawn_settler(core: &Arc<ServerCore>, key: SessionKey) -> (SettlerSender, AbortOnDrop<()>) {
    let (queue, mut incoming) = tokio::sync::mpsc::unbounded_channel::<(HeldHead, SettleReply)>();
    let store = core.store().clone();
    let task = tokio::spawn(async move {
        while let Some(first) = incoming.recv().await {
            let mut batch = vec![first];
            while batch.len() < 512 {
                match incoming.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            let heads = batch.iter().map(|(held, _)| held.clone()).collect();
            let settled = store
                .head_complete_many(HeadCompleteMany { session: key.clone(), heads })
                .await
                .map(|done| done.into_iter().collect::<std::collections::HashSet<_>>());
            for (held, reply) in batch {
                let _ = reply.send(settled.as_ref().map(|done| done.contains(&held.head)).map_err(Clone::clone));
            }
        }
    });
    (queue, AbortOnDrop(task))
}

pub(crate) async fn run_head(
    core: Arc<ServerCore>,
    consumer: Consumer,
    claimed: ClaimedHead,
    session_id: String,
    fence: Fence,
    session_head: u64,
) -> (HeadOutcome, Option<OwnedSemaphorePermit>) {
    let span = event_span(&core, &session_id, &claimed, session_head);
    async {
        let (outcome, permit) = run_and_settle(&core, &consumer, &claimed, &session_id, fence).await;
        let name = match &outcome {
            HeadOutcome::Processed { .. } => "processed",
            HeadOutcome::Failed { .. } => "failed",
            HeadOutcome::DeadLettered => "dead_lettered",
            HeadOutcome::Superseded => "superseded",
            HeadOutcome::Surrendered => "surrendered",
            HeadOutcome::StoreFailed(_) => "store_failed",
        };
        tracing::Span::current().record("a2.event.outcome", name);
        (outcome, permit)
    }
    .instrument(span)
    .await
}

async fn run_and_settle(
    core: &Arc<ServerCore>,
    consumer: &Consumer,
    claimed: &ClaimedHead,
    session_id: &str,
    fence: Fence,
) -> (HeadOutcome, Option<OwnedSemaphorePermit>) {
    // Held while the run runs: the drain leased this head only once it had the permit.
    let mut running = fence.permit;
    let run_token = fence.cancel.child_token();
    // Subscribed before the watch's first read, and only for a consumer with `abort_on` rules.
    let abort_watch = if consumer.def.abort_on.is_empty() {
        None
    } else {
        let watched = AbortWatch {
            store: core.store().clone(),
            signals: core.signals(SessionKey::from_stored(claimed.event.session.clone())),
            key: SessionKey::from_stored(claimed.event.session.clone()),
            session_id: session_id.to_owned(),
            trigger: claimed.event.clone(),
            attempt: claimed.attempt,
            reason: fence.reason.clone(),
        };
        crate::abort::watch(&consumer.def.abort_on, watched, run_token.clone()).await
    };
    let mut event = claimed.event.clone();
    event.session = session_id.to_owned();
    let ctx = ConsumerContext {
        event,
        attempt: claimed.attempt,
        session: ConsumerSession {
            host: core.clone(),
            session_id: session_id.to_owned(),
            trigger_id: claimed.event.id.clone(),
            trigger_created_at: claimed.event.created_at,
            head: claimed.head.clone(),
            attempt: claimed.attempt,
            cancel: run_token.clone(),
            reason: fence.reason.clone(),
        },
        cancel: run_token.clone(),
        reason: fence.reason.clone(),
    };
    // The seeds fail an attempt whose abort monitor failed, whatever the run
    // returned, and do not start one whose monitor could not make its first read.
    let monitor_failure = || {
        let failed = fence.reason.get() == Some(&CancelReason::AbortMonitorFailed);
        abort_watch.as_ref().and_then(|w| w.failure()).filter(|_| failed).map(|failure| -> crate::BoxError {
            format!("the abort_on monitor could not read the session: {failure}").into()
        })
    };
    let result = match monitor_failure() {
        Some(failure) => Err(failure),
        None => {
            // Run in its own task so a panic is a failed attempt, not a lost drain.
            let mut task = AbortOnDrop(tokio::spawn((consumer.def.run)(ctx)));
            let result = match (&mut task.0).await {
                Ok(result) => result,
                Err(join) => Err(format!("consumer '{}' panicked: {join}", consumer.name()).into()),
            };
            monitor_failure().map_or(result, Err)
        }
    };
    // The run is over: its permit goes back now, not once its outcome is
    // written, so the next head starts while this one's commit waits on the
    // disk (`max_running` bounds running code; the drain's batch bounds the
    // outcomes in flight). The head stays leased and renewed until then.
    // A range's next position cannot start before this commit: it takes the permit over.
    if !fence.range.as_ref().is_some_and(|r| r.lease_next) {
        running = None;
    }
    // A failed monitor's cancel is a failure of the attempt, not an abort.
    let aborted = run_token.is_cancelled() && fence.reason.get() != Some(&CancelReason::AbortMonitorFailed);
    // Lost its claim and gave up with that very loss (the seeds' `surrendered`:
    // the error is the abort's own reason): nothing to write. Any other error,
    // even after the loss, is the run's own and is written, fenced as any.
    let claim_lost =
        aborted && matches!(fence.reason.get(), Some(CancelReason::ClaimExpired | CancelReason::SupersededAttempt));
    let gave_up = result
        .as_ref()
        .err()
        .and_then(|e| e.downcast_ref::<A2Error>())
        .is_some_and(|e| matches!(e, A2Error::ClaimExpired { .. } | A2Error::SupersededAttempt { .. }));
    if claim_lost && gave_up {
        return (HeadOutcome::Surrendered, None);
    }
    let result = result.map_err(|e| error_with_sources(&*e));
    // As the seeds: marked on a run that goes on to an outcome.
    if aborted {
        tracing::Span::current().record("a2.event.aborted", true);
    }
    let returned = result.and_then(|returned| returned_events(core, consumer, claimed, session_id, returned));
    fence.completing.store(true, Ordering::SeqCst);
    let outcome = match returned {
        Ok(events) if events.is_empty() && fence.range.is_none() => settle(claimed, &fence.settle).await,
        Ok(events) => match complete(core, claimed, events, fence.range.as_ref()).await {
            Err(StoreError::PartialDuplicateBatch { session, ids }) => {
                let message = StoreError::PartialDuplicateBatch { session, ids }.to_string();
                fail(core, claimed, message, false).await
            }
            Err(error) => HeadOutcome::StoreFailed(error),
            Ok(outcome) => outcome,
        },
        Err(message) => fail(core, claimed, message, aborted).await,
    };
    let holds_next = matches!(outcome, HeadOutcome::Processed { holds_next: true, .. });
    (outcome, running.filter(|_| holds_next))
}

/// What a run threw, with every error in its source chain on a line of its
/// own: the attempt history keeps it whole, dead letters group on its first line.
fn error_with_sources(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str("\ncaused by: ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Give ids and causes to what a run returned, validated like any append.
fn returned_events(
    core: &ServerCore,
    consumer: &Consumer,
    claimed: &ClaimedHead,
    session_id: &str,
    returned: crate::Returned,
) -> Result<Vec<a2_store::NewEvent>, String> {
    let cause = Cause {
        consumer: claimed.head.consumer.clone(),
        lane: claimed.head.lane.clone(),
        index: claimed.head.index,
        attempt: claimed.attempt,
        batch_size: None,
    };
    let inputs = returned.0;
    // The rule of `ConsumerSession::append`: any id of 1-256 characters, a derived one included.
    for id in inputs.iter().filter_map(|e| e.id.as_deref()) {
        ids::validate_event_id(id).map_err(|e| format!("{} ({})", e, e.code()))?;
    }
    let trigger = &claimed.event.id;
    let id_for = |ordinal| ids::returned_event_id(trigger, ordinal, consumer.name());
    core.new_events(session_id, inputs, Some(&cause), None, &id_for).map_err(|e| format!("{} ({})", e, e.code()))
}

/// Complete a head with the events it returned. What they open, in this
/// session, the drain that owns the session claims next (`opens`).
async fn complete(
    core: &ServerCore,
    claimed: &ClaimedHead,
    events: Vec<a2_store::NewEvent>,
    range: Option<&RangeStep>,
) -> Result<HeadOutcome, StoreError> {
    let span = commit_span(claimed, "complete");
    let key = SessionKey::from_stored(claimed.event.session.clone());
    let work = core.has_work(&events);
    let params = HeadComplete {
        session: key.clone(),
        head: claimed.head.clone(),
        attempt: claimed.attempt,
        events,
        consumers: core.store_consumers().to_vec(),
        holder: range.map(|r| r.holder.clone()),
        lease_next: range.is_some_and(|r| r.lease_next),
    };
    let outcome = core.store().head_complete(params).instrument(span.clone()).await?;
    Ok(match outcome {
        CompleteOutcome::Completed { appended, holds_next, .. } => {
            span.record("a2.commit.outcome", "completed");
            if !appended.is_empty() {
                core.notify(&key);
            }
            HeadOutcome::Processed { opens: true, appended_work: work && !appended.is_empty(), holds_next }
        }
        CompleteOutcome::Superseded => {
            span.record("a2.commit.outcome", "superseded");
            HeadOutcome::Superseded
        }
    })
}

/// The `a2.commit` span of a head's outcome, named by its contract and session.
fn commit_span(claimed: &ClaimedHead, kind: &'static str) -> tracing::Span {
    let (contract, session_id) = a2_store::split_session_key(&claimed.event.session);
    tracing::info_span!(
        "a2.commit",
        a2.contract = %contract,
        a2.session_id = %session_id,
        a2.commit.kind = kind,
        a2.commit.outcome = tracing::field::Empty,
    )
}

/// Complete a head that returned nothing through the drain's settler.
async fn settle(claimed: &ClaimedHead, queue: &SettlerSender) -> HeadOutcome {
    let span = commit_span(claimed, "complete");
    let (reply, answer) = tokio::sync::oneshot::channel();
    let held = HeldHead { head: claimed.head.clone(), attempt: claimed.attempt };
    if queue.send((held, reply)).is_err() {
        return HeadOutcome::StoreFailed(StoreError::unavailable("the drain ended before the completion was written"));
    }
    let outcome = match answer.instrument(span.clone()).await {
        Ok(Ok(true)) => {
            HeadOutcome::Processed { opens: claimed.head.lane.is_some(), appended_work: false, holds_next: false }
        }
        Ok(Ok(false)) => HeadOutcome::Superseded,
        Ok(Err(error)) => HeadOutcome::StoreFailed(error),
        Err(_) => {
            HeadOutcome::StoreFailed(StoreError::unavailable("the drain ended before the completion was written"))
        }
    };
    span.record(
        "a2.commit.outcome",
        if matches!(outcome, HeadOutcome::Processed { .. }) { "completed" } else { "superseded" },
    );
    outcome
}

async fn fail(core: &ServerCore, claimed: &ClaimedHead, error: String, aborted: bool) -> HeadOutcome {
    let span = commit_span(claimed, "fail");
    let params = HeadFail {
        session: SessionKey::from_stored(claimed.event.session.clone()),
        head: claimed.head.clone(),
        attempt: claimed.attempt,
        error,
        aborted,
        max_failures: MAX_FAILURES,
        backoff: core.timings().backoff,
    };
    match core.store().head_fail(params).instrument(span.clone()).await {
        Ok(FailOutcome::Failed { retry_at, .. }) => {
            span.record("a2.commit.outcome", "failed");
            HeadOutcome::Failed { retry_at }
        }
        Ok(FailOutcome::DeadLettered { .. }) => {
            span.record("a2.commit.outcome", "dead_lettered");
            HeadOutcome::DeadLettered
        }
        Ok(FailOutcome::Superseded) => {
            span.record("a2.commit.outcome", "superseded");
            HeadOutcome::Superseded
        }
        Err(error) => HeadOutcome::StoreFailed(error),
    }
}

#[cfg(test)]
mod tests {
    use super::error_with_sources;

    #[derive(Debug)]
    struct Wrapped(&'static str, Option<Box<Wrapped>>);

    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
        }
    }

    #[test]
    fn a_run_error_keeps_its_source_chain() {
        let error = Wrapped(
            "charge failed",
            Some(Box::new(Wrapped("gateway said no", Some(Box::new(Wrapped("timeout", None)))))),
        );
        assert_eq!(error_with_sources(&error), "charge failed\ncaused by: gateway said no\ncaused by: timeout");
        assert_eq!(error_with_sources(&Wrapped("plain", None)), "plain");
    }
}
