//! `consume`: move one log consumer through an index, waiting on whoever
//! holds its head, refusing waits that would close a cycle.

use std::sync::Arc;

use a2_store::CursorWake;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::drain::DrainOptions;
use crate::inner::Inner;
use crate::{A2Error, Consumer};

/// A run's wait in `consume`, recorded while it lasts. One that would close
/// a cycle is not recorded: it may only return what is already done.
pub(crate) struct ConsumeWait {
    inner: Arc<Inner>,
    session: String,
    recorded: Option<String>,
    /// The waiter, when waiting would close a cycle.
    pub cycle: Option<String>,
}

impl ConsumeWait {
    fn record(inner: &Arc<Inner>, session_id: &str, waiter: Option<&str>, target: &str) -> Self {
        let mut wait = Self { inner: inner.clone(), session: session_id.to_owned(), recorded: None, cycle: None };
        let Some(waiter) = waiter else { return wait };
        let mut all = inner.consume_waits.lock().unwrap_or_else(|p| p.into_inner());
        let waits = all.entry(session_id.to_owned()).or_default();
        let mut next = Some(target.to_owned());
        while let Some(name) = next {
            if name == waiter {
                wait.cycle = Some(waiter.to_owned());
                return wait;
            }
            next = waits.get(&name).cloned();
        }
        waits.insert(waiter.to_owned(), target.to_owned());
        wait.recorded = Some(waiter.to_owned());
        wait
    }
}

impl Drop for ConsumeWait {
    fn drop(&mut self) {
        let Some(waiter) = self.recorded.take() else { return };
        let mut all = self.inner.consume_waits.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(waits) = all.get_mut(&self.session) {
            waits.remove(&waiter);
            if waits.is_empty() {
                all.remove(&self.session);
            }
        }
    }
}

impl Inner {
    pub(crate) async fn consume(
        self: &Arc<Self>,
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
        consumer.check_against(&self.contract)?;
        if let Some(own) = self.consumers.iter().find(|c| c.name() == consumer.name()) {
            if !Arc::ptr_eq(&own.def, &consumer.def) {
                return Err(A2Error::invalid_consumer(format!(
                    "this server runs a different consumer named '{}'",
                    consumer.name()
                )));
            }
        }
        // Checked and recorded before any await, so two runs cannot both pass.
        let wait = ConsumeWait::record(self, session_id, waiter, consumer.name());
        let span = tracing::info_span!(
            "a2.consume",
            a2.contract = %self.contract.name(),
            a2.session_id = %session_id,
            a2.consume.consumer = %consumer.name(),
            a2.consume.through = tracing::field::Empty,
            a2.consume.index = tracing::field::Empty,
            a2.consume.drains = tracing::field::Empty,
        );
        let nested = waiter.is_some();
        let result = self.consume_loop(session_id, consumer, through, &wait, nested, cancel).instrument(span).await;
        drop(wait);
        result
    }

    async fn consume_loop(
        self: &Arc<Self>,
        session_id: &str,
        consumer: &Consumer,
        through: Option<u64>,
        wait_record: &ConsumeWait,
        nested: bool,
        cancel: Option<CancellationToken>,
    ) -> Result<u64, A2Error> {
        let cancelled = || async {
            match &cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let wake = CursorWake { session: self.key(session_id), consumer: consumer.store_consumer() };
        let mut woken = self.store.cursor_wake(wake.clone()).await?;
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
        let mut wait = self.timings.consume_wait_min;
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
            if woken.failed_at.is_some() {
                return Err(A2Error::ConsumerDeadLettered {
                    consumer: consumer.name().to_owned(),
                    session: session_id.to_owned(),
                    index: woken.next.unwrap_or(0),
                    last_error: woken
                        .last_error
                        .clone()
                        .unwrap_or_else(|| "every attempt ended before it finished".into()),
                });
            }
            drains += 1;
            let options = DrainOptions { only: Some(consumer.clone()), through: Some(through), nested };
            let mut drain = crate::drain::spawn_drain(self, session_id, options);
            tokio::select! {
                joined = &mut drain => {
                    crate::drain::drain_joined(joined)?;
                }
                () = cancelled() => {
                    // The wait stops; the drain and its running heads carry on, and what they
                    // append still reaches the server's consumers.
                    let inner = self.clone();
                    let id = session_id.to_owned();
                    tokio::spawn(async move {
                        let _ = drain.await;
                        inner.schedule_drain(&id);
                    });
                    return Err(A2Error::Cancelled { message: format!("consume of '{}' was cancelled", consumer.name()) });
                }
            }
            let before = woken;
            woken = self.store.cursor_wake(wake.clone()).await?;
            let moved = woken.next != before.next || woken.attempt_count != before.attempt_count;
            if done(woken.next) || moved {
                wait = self.timings.consume_wait_min;
                continue;
            }
            // Another invocation holds the head, or it waits out a failure.
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = cancelled() => {}
            }
            wait = (wait * 2).min(self.timings.consume_wait_max);
        }
        if drains > 0 {
            self.schedule_drain(session_id);
        }
        let index = woken.next.map_or(woken.session_head, |n| n - 1);
        let span = tracing::Span::current();
        span.record("a2.consume.index", index);
        span.record("a2.consume.drains", drains);
        Ok(index)
    }
}
