//! The A2 engine: contracts with validated payloads, sessions with
//! append-only logs, consumers with durable positions, and the drain loop
//! that runs them with leases, fencing, backoff and dead letters over any
//! [`a2_store::Store`].

mod abort;
mod background;
mod cancel;
mod consume;
mod consume_waits;
mod consumer;
mod contract;
mod drain;
mod drain_task;
mod error;
mod guard;
mod history;
mod host;
pub mod ids;
mod presence;
mod presence_set;
mod push;
mod push_apply;
mod registry;
mod run;
mod schedule;
mod scheduler;
mod server;
mod server_core;
mod signals;
mod state_cache;
mod timings;
mod write_back;

pub use abort::AbortPredicate;
pub use cancel::CancelReason;
pub use consumer::{
    validate_consumer_name, AppendInput, BoxError, Consumer, ConsumerBuilder, ConsumerContext, ConsumerSession, Lane,
    Returned,
};
pub use contract::{Contract, Reducer, StateAt};
pub use drain_task::{DrainOutcome, DrainResult};
pub use error::A2Error;
pub use history::{DeadHead, DeadHeads, EventRange, EventStream, History};
pub use presence::{
    participant_reserved, FeedItem, PresenceChange, PresenceFeed, PresenceMap, PresencePatch, PresenceValue,
    PRESENCE_TTL,
};
pub use push::{Push, PushContext, PushFuture, PushValidator};
pub use scheduler::{Scheduler, SchedulerFuture, StoreScheduler, Timing};
pub use server::{Server, ServerBuilder, Session};
pub use timings::{DrainTimings, MAX_FAILURES};
