//! `consume`: move one log consumer through an index, waiting on whoever
//! holds its head, refusing waits that would close a cycle.

use std::sync::Arc;

use a2_store::CursorWake;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::consume_waits::ConsumeWait;
use crate::drain::{drain_joined, spawn_drain, DrainOptions};
use crate::server_core::ServerCore;
use crate::{A2Error, Consumer};

/// Run `consumer` (a log consumer) until its cursor passes `through`
/// (default: the head now); `waiter` is the running consumer that waits, if any.
pub(crate) async fn consume(
    core: &Arc<ServerCore>,
    session_id: &str,
    consumer: &Consumer,
    through: Option<u64>,
    waiter: Option<&str>,
    cancel: Option<CancellationToken>,
) -> Result<u64, A2Error> {
    if !consumer.is_log() {
        return Err(A2Error::invalid_consumer(format!(
            "consumer '{}' needs a string lane to be consumed: only then does it have one position",
            consumer.name()
        )));
    }
    consumer.check_against(core.contract())?;
    let own = core.consumers().iter().find(|c| c.name() == consumer.name());
    if let Some(own) = own {
        if !Arc::ptr_eq(&own.def, &consumer.def) {
            return Err(A2Error::invalid_consumer(format!(
                "this server runs a different consumer named '{}'",
                consumer.name()
            )));
        }
    }
    // Checked and recorded before any await, so two runs cannot both pass.
    let wait = core.consume_waits().record(session_id, waiter, consumer.name());
    let span = tracing::info_span!(
        "a2.consume",
        a2.contract = %core.contract().name(),
        a2.session_id = %session_id,
        a2.consume.consumer = %consumer.name(),
        a2.consume.through = tracing::field::Empty,
        a2.consume.index = tracing::field::Empty,
        a2.consume.drains = tracing::field::Empty,
    );
    let nested = waiter.is_some();
    let own = own.is_some();
    let how = ConsumeHow { nested, own, cancel };
    let result = consume_loop(core, session_id, consumer, through, &wait, how).instrument(span).await;
    drop(wait);
    result
}

/// How a consume runs: from a run (`nested`), of a consumer this server runs
/// (`own`), with a cancellable wait.
struct ConsumeHow {
    nested: bool,
    own: bool,
    cancel: Option<CancellationToken>,
}

async fn consume_loop(
    core: &Arc<ServerCore>,
    session_id: &str,
    consumer: &Consumer,
    through: Option<u64>,
    wait_record: &ConsumeWait,
    how: ConsumeHow,
) -> Result<u64, A2Error> {
    let ConsumeHow { nested, own, cancel } = how;
    let cancelled = || async {
        match &cancel {
            Some(token) => token.cancelled().await,
            None => std::future::pending().await,
        }
    };
    let wake = CursorWake { session: core.key(session_id), consumer: consumer.store_consumer() };
    let mut woken = core.store().cursor_wake(wake.clone()).await?;
    // The seeds' `own && woken.cursor.head !== null`: this server's own consumer
    // behind the head gets a background drain, whatever this consume waits for.
    if own && woken.next.is_some() {
        core.wake(session_id);
    }
    let through = through.unwrap_or(woken.session_head).min(woken.session_head);
    tracing::Span::current().record("a2.consume.through", through);
    let done = |next: Option<u64>| next.is_none_or(|n| n > through);
    if let Some(waiter) = wait_record.cycle.as_deref() {
        if !done(woken.next) {
            return Err(A2Error::ConsumeCycle {
                waiter: waiter.to_owned(),
                consumer: consumer.name().to_owned(),
                session: session_id.to_owned(),
                through,
            });
        }
    }
    let mut drains = 0u32;
    let mut wait = core.timings().consume_wait_min;
    while !done(woken.next) {
        if cancel.as_ref().is_some_and(CancellationToken::is_cancelled) {
            return Err(A2Error::Cancelled { message: format!("consume of '{}' was cancelled", consumer.name()) });
        }
        if woken.paused {
            return Err(A2Error::ConsumerPaused {
                consumer: consumer.name().to_owned(),
                session: session_id.to_owned(),
            });
        }
        if woken.status.failed_at.is_some() {
            return Err(A2Error::ConsumerDeadLettered {
                consumer: consumer.name().to_owned(),
                session: session_id.to_owned(),
                index: woken.next.unwrap_or(0),
                last_error: woken
                    .status
                    .last_error
                    .clone()
                    .unwrap_or_else(|| "every attempt ended before it finished".into()),
            });
        }
        drains += 1;
        let options = DrainOptions { only: Some(consumer.clone()), through: Some(through), nested, first_claim: None };
        let mut drain = spawn_drain(core, session_id, options);
        tokio::select! {
            joined = &mut drain => {
                drain_joined(session_id, joined)?;
            }
            () = cancelled() => {
                // The wait stops; the drain and its running heads carry on, and what they
                // append still reaches the server's consumers.
                let core = core.clone();
                let id = session_id.to_owned();
                tokio::spawn(async move {
                    let _ = drain.await;
                    core.wake(&id);
                });
                return Err(A2Error::Cancelled { message: format!("consume of '{}' was cancelled", consumer.name()) });
            }
        }
        let before = woken;
        woken = core.store().cursor_wake(wake.clone()).await?;
        let moved = woken.next != before.next || woken.status.attempt_count != before.status.attempt_count;
        if done(woken.next) || moved {
            wait = core.timings().consume_wait_min;
            continue;
        }
        // Another invocation holds the head, or it waits out a failure.
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = cancelled() => {}
        }
        wait = (wait * 2).min(core.timings().consume_wait_max);
    }
    if drains > 0 {
        core.wake(session_id);
    }
    let index = woken.next.map_or(woken.session_head, |n| n - 1);
    let span = tracing::Span::current();
    span.record("a2.consume.index", index);
    span.record("a2.consume.drains", drains);
    Ok(index)
}
