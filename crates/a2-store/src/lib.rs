//! The store seam of A2: every backend (memory here, SQLite and Postgres in
//! their own crates) implements [`Store`], and the conformance suite in
//! `a2-conformance` proves that they all behave the same.

mod actor;
mod attempts;
mod cause_column;
mod clock;
pub mod codec;
mod error;
mod keys;
pub mod memory;
mod opened;
mod presence;
pub mod range;
pub mod rules;
pub mod search;
mod server;
mod servers;
mod store;
mod tasks;
mod types;
mod upkeep;

pub use actor::Actor;
pub use attempts::*;
pub use cause_column::{CauseColumn, StoredCause};
pub use clock::{Clock, ManualClock, SystemClock, TokioClock};
pub use error::StoreError;
pub use keys::{check_session_key, session_key, split_session_key, validate_session_id, SessionKey, KEY_SEPARATOR};
pub use opened::{is_postgres_url, OpenOptions, OpenedStore, StoreKind, StoreOpener};
pub use presence::*;
pub use search::{EventFilter, EventFilterPage, EventMatch, SessionMatch, SessionSearch, SessionSearchPage};
pub use server::{DatabaseServer, TlsState};
pub use servers::*;
pub use store::{page_size, Store, MAX_PAGE};
pub use tasks::*;
pub use types::*;
pub use upkeep::*;
