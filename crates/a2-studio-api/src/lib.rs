//! The Studio's command surface. One list of commands ([`studio_commands!`])
//! is served three ways with no logic of their own: as Tauri commands by the
//! desktop shell, over HTTP by the web mode ([`web`]), and as TypeScript by
//! tauri-specta. Every command is a method of [`Studio`] taking one request
//! struct and calling the operator API.

pub mod app;
mod commands;
mod connection;
mod error;
mod jobs;
pub mod profiles;
mod search;
mod takeout;
mod transfer;
mod types;
pub mod web;

pub use a2_operator::model::{
    Access, Attempt, AttemptKey, AttemptOutcome, AttemptRate, Cause, Cleared, ConsumerTotal, DeadLetter,
    DeadLetterGroup, HeadKey, HeadKind, HeadRef, LeasedHead, RedriveAction, Serving, SessionSummary, TotalsOrigin,
    TotalsSnapshot,
};
pub use a2_operator::{
    default_mode, ConsumeMode, Consumed, ContractPresence, HeadView, JobProgress, Mode, PresenceCellView, ProcessView,
    Redriven, StoreKind, TimerCursor, TimerDelivered, TimerQuery, TimerRef, TimerView,
};
pub use a2_store_registry::sqlite_url;
pub use commands::{Limits, Studio};

/// `0.1.0 (commit 1a2b3c4d5e6f)`: what `--version` prints in every shell.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("A2_COMMIT"), ")");
pub use error::{ApiError, ErrorCode};
pub use takeout::{Takeout, TAKEOUTS_FILE};
pub use types::*;

mod command_list;
