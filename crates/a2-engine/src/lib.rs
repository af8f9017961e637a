//! The A2 engine: contracts with validated payloads, sessions with
//! append-only logs, consumers with durable positions, and the drain loop
//! that runs them with leases, fencing, backoff and dead letters over any
//! [`a2_store::Store`].

mod abort;
mod consume;
mod consumer;
mod context;
mod contract;
mod drain;
mod environment;
mod error;
mod guard;
mod history;
pub mod ids;
mod inner;
mod run;
mod server;
mod signals;

pub use abort::AbortPredicate;
pub use consumer::{validate_consumer_name, AppendInput, BoxError, Consumer, ConsumerBuilder, Lane, Returned};
pub use context::{ConsumerContext, ConsumerSession};
pub use contract::{Contract, Reducer};
pub use drain::{DrainOutcome, DrainResult, DrainTimings, MAX_FAILURES};
pub use environment::{dev_store_path, resolve_store, Environment};
pub use error::A2Error;
pub use history::{DeadHead, EventRange, EventStream, History};
pub use inner::StateAt;
pub use server::{Server, ServerBuilder, Session};
