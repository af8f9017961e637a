//! What a consumer's `run` receives.

use std::sync::Arc;

use a2_store::{Cause, Cleared, Event, HeadRef, SessionClear};
use tokio_util::sync::CancellationToken;

use crate::inner::{Inner, StateAt};
use crate::{ids, A2Error, AppendInput, Consumer};

/// The triggering event, the attempt number, a consumer-scoped session and
/// a cancellation token (cancelled when the claim is lost or an `abort_on`
/// event arrives).
pub struct ConsumerContext {
    /// The event with its public session id.
    pub event: Event,
    /// 1-based attempt number of this head.
    pub attempt: u32,
    pub session: ConsumerSession,
    pub cancel: CancellationToken,
}

/// A session handle scoped to one running head: its appends carry the
/// head as their cause and get deterministic ids.
pub struct ConsumerSession {
    pub(crate) inner: Arc<Inner>,
    pub(crate) session_id: String,
    pub(crate) trigger_id: String,
    pub(crate) head: HeadRef,
    pub(crate) attempt: u32,
    /// The run's own token: clearing the session from the run ends the attempt.
    pub(crate) cancel: CancellationToken,
}

impl ConsumerSession {
    pub fn id(&self) -> &str {
        &self.session_id
    }

    fn cause(&self) -> Cause {
        Cause {
            consumer: self.head.consumer.clone(),
            lane: self.head.lane.clone(),
            index: self.head.index,
            attempt: self.attempt,
        }
    }

    /// Append events named `name`; events without an id get one derived from
    /// the trigger, the name, their position and this consumer, so a re-run
    /// appends nothing twice.
    pub async fn append(&self, name: &str, events: Vec<AppendInput>) -> Result<Vec<Event>, A2Error> {
        if name.is_empty() {
            return Err(A2Error::InvalidArgument { message: "consumer append name must be a non-empty string".into() });
        }
        self.check_trigger_not_cleared().await?;
        let events = events
            .into_iter()
            .enumerate()
            .map(|(ordinal, mut event)| {
                if event.id.is_none() {
                    event.id = Some(ids::appended_event_id(&self.trigger_id, name, ordinal, &self.head.consumer));
                }
                event
            })
            .collect();
        self.inner.append(&self.session_id, events, Some(self.cause()), true).await
    }

    /// The reducer's state through `through` (default: the trigger's index).
    /// The snapshot at the index read is pinned while this head runs, so a
    /// retry reads the same state without refolding.
    pub async fn state(&self, reducer: &str, through: Option<u64>) -> Result<StateAt, A2Error> {
        self.check_trigger_not_cleared().await?;
        let through = through.unwrap_or(self.head.index);
        self.inner.state(&self.session_id, reducer, Some(through), Some(self.head.clone())).await
    }

    /// Clear the session (see `Session::clear`). Clearing through its own
    /// trigger ends this attempt: its token is cancelled, later appends and
    /// reads fail with `SESSION_CLEARED`, and what it returns is not appended.
    pub async fn clear(&self, if_last_index: Option<u64>) -> Result<Cleared, A2Error> {
        let key = self.inner.key(&self.session_id);
        let cleared = self.inner.store.session_clear(SessionClear { session: key, if_last_index, audit: None }).await?;
        if cleared.cleared && cleared.index >= self.head.index {
            self.cancel.cancel();
        }
        Ok(cleared)
    }

    /// A run whose trigger lies at or below the clear boundary works on
    /// events that are gone: it may neither append nor read state.
    async fn check_trigger_not_cleared(&self) -> Result<(), A2Error> {
        let key = self.inner.key(&self.session_id);
        let clear_index = self.inner.store.session_bounds(&key).await?.clear_index;
        if clear_index >= self.head.index {
            return Err(A2Error::SessionCleared { session: self.session_id.clone(), index: clear_index });
        }
        Ok(())
    }

    /// Run another log consumer through an index (see `Session::consume`).
    pub async fn consume(&self, consumer: &Consumer, through: Option<u64>) -> Result<u64, A2Error> {
        if consumer.name() == self.head.consumer {
            return Err(A2Error::invalid_consumer(format!(
                "consumer '{}' can't consume itself: its own head is running",
                consumer.name()
            )));
        }
        self.inner.consume(&self.session_id, consumer, through, Some(&self.head.consumer), None).await
    }
}
