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

/// Every command the Studio serves, as `name(Request) -> Response;`, handed
/// to `$callback`: the shell and the web mode build their handlers from
/// this one list, so they cannot drift apart.
#[macro_export]
macro_rules! studio_commands {
    ($callback:ident) => {
        $callback! {
            connection_default(ConnectionDefaultRequest) -> ConnectionDefault;
            connection_open(ConnectionOpen) -> ConnectionInfo;
            dev_store_open(NoArgs) -> ConnectionInfo;
            connection_get(NoArgs) -> Option<ConnectionInfo>;
            connection_close(NoArgs) -> bool;
            profile_list(NoArgs) -> ProfileList;
            profile_save(ProfileSave) -> Profile;
            profile_delete(ProfileRef) -> bool;
            contract_list(NoArgs) -> Vec<String>;
            consumer_overview(TotalsQuery) -> TotalsSnapshot;
            session_list(SessionListRequest) -> SessionPage;
            session_get(SessionRef) -> SessionSummary;
            event_list(EventQuery) -> Vec<EventView>;
            head_list(SessionRef) -> Vec<HeadView>;
            dead_letter_list(DeadLetterQuery) -> DeadLetterPage;
            dead_letter_groups(DeadLetterGroupQuery) -> Vec<DeadLetterGroup>;
            attempt_list(AttemptQuery) -> AttemptPage;
            attempt_rates(ThroughputQuery) -> Vec<AttemptRate>;
            snapshot_list(SessionRef) -> Vec<SnapshotView>;
            audit_list(AuditQuery) -> Vec<AuditView>;
            dead_letter_redrive(Redrive) -> Redriven;
            dead_letter_redrive_many(RedriveMany) -> JobProgress;
            job_redrive_all(RedriveAll) -> JobView;
            job_get(JobRef) -> JobView;
            job_cancel(JobRef) -> JobView;
            consume_preview(ConsumeRequest) -> ConsumePreview;
            session_consume(ConsumeRequest) -> Consumed;
            session_clear(ClearSession) -> Cleared;
            consumer_pause(PauseRequest) -> PausedConsumer;
            consumer_resume(ConsumerRef) -> bool;
            consumer_pause_list(PauseQuery) -> Vec<PausedConsumer>;
            session_export(SessionRef) -> String;
            session_import(ImportRequest) -> ImportOutcome;
            session_copy(CopyRequest) -> ImportOutcome;
            session_search(SearchRequest) -> SearchPage;
            event_filter(EventFilterRequest) -> EventFilterView;
            payload_index(NoArgs) -> bool;
            change_wait(ChangeWait) -> ChangeTick;
            demo_traffic(DemoTraffic) -> DemoTrafficState;
            demo_seed(DemoSeed) -> DemoSeeded;
            reader_role_grant(ReaderGrant) -> bool;
            timer_list(TimerQuery) -> TimerPage;
            timer_deliver(TimerRef) -> TimerDelivered;
            timer_cancel(TimerRef) -> TimerView;
            presence_list(SessionRef) -> Vec<PresenceCellView>;
            presence_sessions(NoArgs) -> Vec<ContractPresence>;
            process_list(ProcessQuery) -> Vec<ProcessView>;
            process_heads(ProcessRef) -> Vec<LeasedHead>;
        }
    };
}
