//! Why a run's token was cancelled: set by whoever cancels it first (the
//! drain, an `abort_on` watch, the run's own clear), read by the run.

use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

/// Why a run's token was cancelled: the run may clean up, and a lapsed or
/// superseded one is given `DrainTimings::cancel_grace` to return before it is stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelReason {
    /// Its lease lapsed before it was renewed (by the holder's own estimate).
    ClaimExpired,
    /// A newer attempt holds the head (found by a renewal, or a re-claim).
    SupersededAttempt,
    /// An `abort_on` event landed after its trigger.
    AbortOn,
    /// The session was cleared through its trigger.
    Cleared,
    /// The server shut down.
    Shutdown,
    /// The `abort_on` watch could not read the session: the attempt fails (and
    /// is retried), as the seeds fail it, since an abort may have gone unseen.
    AbortMonitorFailed,
}

impl CancelReason {
    /// The seeds' code for it.
    pub fn code(self) -> &'static str {
        match self {
            Self::ClaimExpired => "CLAIM_EXPIRED",
            Self::SupersededAttempt => "SUPERSEDED_ATTEMPT",
            Self::AbortOn => "ABORTED",
            Self::Cleared => "SESSION_CLEARED",
            Self::Shutdown => "SHUTDOWN",
            Self::AbortMonitorFailed => "ABORT_MONITOR_FAILED",
        }
    }
}

/// The first reason a run was cancelled for, shared by whoever may cancel it.
pub(crate) type CancelCause = Arc<OnceLock<CancelReason>>;

/// Record why, then cancel: a run that sees its token cancelled finds the reason set.
pub(crate) fn cancel_for(cause: &CancelCause, token: &CancellationToken, reason: CancelReason) {
    let _ = cause.set(reason);
    token.cancel();
}
