//! How a drain ended: its outcome, and its own task's end told apart from
//! the store's failures (a drain runs in a task of its own, `spawn_drain`,
//! so a panic in the engine or a runtime shutting down reaches the caller as
//! what it is). A leaf: the drain loop and its callers read it.

use a2_store::Millis;

use crate::A2Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrainOutcome {
    /// Nothing actionable is left (work blocked behind a dead letter included).
    Settled,
    /// Another holder owns work; look again at `retry_at`.
    Busy,
    /// A failure waits out its backoff until `retry_at`.
    Stalled,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrainResult {
    pub outcome: DrainOutcome,
    pub retry_at: Option<Millis>,
    /// Heads completed by this drain.
    pub processed: u64,
}

/// What a drain's task ended with: a task that panicked is the engine's
/// error (`DRAIN_PANICKED`), one cancelled (its runtime shutting down) a cancellation;
/// neither is the store's.
pub(crate) fn drain_joined(
    session_id: &str,
    joined: Result<Result<DrainResult, A2Error>, tokio::task::JoinError>,
) -> Result<DrainResult, A2Error> {
    joined.unwrap_or_else(|join| {
        Err(if join.is_panic() {
            A2Error::DrainPanicked { session: session_id.to_owned(), message: panic_text(join.into_panic()) }
        } else {
            A2Error::Cancelled {
                message: format!("the drain of session '{session_id}' was stopped before it finished"),
            }
        })
    })
}

/// A panic's message, when it carried text.
fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(text) => *text,
        Err(payload) => {
            payload.downcast_ref::<&str>().map_or_else(|| "a panic without a message".into(), |t| (*t).to_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A drain task that panicked is the engine's error with the panic's
    /// text, one stopped is a cancellation: neither claims the store failed.
    #[tokio::test]
    async fn a_drain_task_that_died_is_not_the_stores_error() {
        let panicked = tokio::spawn(async { panic!("an engine bug") }).await;
        let panicked: Result<Result<DrainResult, A2Error>, _> = panicked.map(|()| unreachable!());
        match drain_joined("s", panicked) {
            Err(A2Error::DrainPanicked { session, message }) => {
                assert_eq!((session.as_str(), message.as_str()), ("s", "an engine bug"))
            }
            other => panic!("expected DRAIN_PANICKED, got {other:?}"),
        }
        let stopped = tokio::spawn(std::future::pending::<Result<DrainResult, A2Error>>());
        stopped.abort();
        assert_eq!(drain_joined("s", stopped.await).map_err(|e| e.code()).err(), Some("CANCELLED"));
    }
}
