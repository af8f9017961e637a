//! Pushes: events and a presence patch that arrived from outside (the wire),
//! as the seeds take them, and the hook that may refuse them (written by
//! `push_apply`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::presence::PresencePatch;
use crate::AppendInput;

/// What a client pushed to one session: events, a presence patch, or both.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Push {
    pub events: Vec<AppendInput>,
    pub presence: Option<PresencePatch>,
}

/// What `validate_push` is shown, once per plane: the events (presence
/// `None`), or the patch (events empty), as the seeds call it. Shared and
/// immutable: an authorization hook cannot rewrite what it authorizes.
#[derive(Debug, Clone, PartialEq)]
pub struct PushContext {
    pub session_id: String,
    pub events: Vec<AppendInput>,
    pub presence: Option<PresencePatch>,
}

pub type PushFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// A server's check of every push before it is written: `Err(reason)`
/// refuses it whole (`PUSH_REFUSED`), and nothing of it is written.
pub type PushValidator = Arc<dyn Fn(Arc<PushContext>) -> PushFuture + Send + Sync>;
