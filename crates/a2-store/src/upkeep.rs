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

/// The lease a refresh is done under: its writes commit only while `owner`
/// still holds `scope` at `generation`, so a leader that lost its lease (a
/// long pause, a partition) cannot overwrite its successor's upkeep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpkeepFence {
    pub scope: String,
    pub owner: String,
    pub generation: u64,
}

/// Bring the kept consumer totals up to date.
#[derive(Debug, Clone)]
pub struct TotalsRefresh {
    /// One contract's totals, or every contract's.
    pub contract: Option<String>,
    /// A full pass over every cursor (the repair path, `a2 consumers
    /// --recompute`) instead of folding in only the sessions that changed.
    pub full: bool,
    /// Commit only while this lease holds (the upkeep leader's refresh).
    pub fence: Option<UpkeepFence>,
    /// Sessions re-checked besides the changed ones, the next slice of a
    /// walk over every session ([`TOTALS_SWEEP_SESSIONS`] by default).
    pub sweep: u32,
}

impl Default for TotalsRefresh {
    fn default() -> Self {
        Self { contract: None, full: false, fence: None, sweep: TOTALS_SWEEP_SESSIONS }
    }
}

/// What a refresh did, besides the totals it kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TotalsRefreshed {
    pub snapshot: crate::TotalsSnapshot,
    /// Sessions whose part was recomputed (every session on a full pass).
    pub sessions_folded: u64,
    /// Contracts recomputed by a full pass (asked for, or nothing kept yet).
    pub full_passes: u32,
}

/// How far back a refresh looks for changes before its previous one: a
/// write stamped just before that refresh may commit just after it, and
/// servers' clocks differ a little. A session missed anyway is caught by the
/// rolling sweep ([`TotalsRefresh::sweep`]).
pub const TOTALS_SETTLE_MS: i64 = 2_000;

/// How stale a session's `updated_at` may be after an append where the
/// store restamps it at most this often (Postgres: so the session row's
/// update changes no indexed column and stays HOT). A refresh's change query
/// looks back this much further than [`TOTALS_SETTLE_MS`].
pub const SESSION_RESTAMP_MS: i64 = 1_000;

/// Sessions each incremental refresh re-checks in key order whether they
/// changed or not, so kept totals heal from any missed change within one
/// walk of the store.
pub const TOTALS_SWEEP_SESSIONS: u32 = 250;
