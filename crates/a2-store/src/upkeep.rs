//! The upkeep lease: among the servers of a contract on one store, one
//! leads the store-wide upkeep (the kept-totals refresh, the attempt and
//! presence prunes), so upkeep does not grow with the number of workers. A
//! lease row, not a session lock, so it holds through a transaction-mode
//! pooler: kept by its owner's renewals, taken over once it expires, its
//! generation bumped at every change of owner.

use serde::{Deserialize, Serialize};

use crate::types::Millis;

/// Take or keep the upkeep lease of `scope` (a contract) for `ttl_ms` on the
/// store's clock: its owner keeps it, anyone takes it once expired.
#[derive(Debug, Clone)]
pub struct UpkeepLease {
    pub scope: String,
    pub owner: String,
    pub ttl_ms: i64,
}

/// Let the lease go at once (a clean shutdown), if `owner` still holds it.
#[derive(Debug, Clone)]
pub struct UpkeepRelease {
    pub scope: String,
    pub owner: String,
}

/// Who leads a scope's upkeep, as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct UpkeepLeader {
    pub scope: String,
    pub owner: String,
    /// Bumped whenever the lease changes owner.
    pub generation: u64,
    pub expires_at: Millis,
}
