//! The upkeep lease in memory: one leader a scope.

use std::collections::BTreeMap;

use crate::types::Millis;
use crate::upkeep::{UpkeepFence, UpkeepLeader, UpkeepLease, UpkeepRelease};
use crate::StoreError;

#[derive(Debug, Default)]
pub(super) struct Upkeep {
    by_scope: BTreeMap<String, UpkeepLeader>,
}

impl Upkeep {
    pub(super) fn lease(&mut self, params: UpkeepLease, now: Millis) -> Result<Option<u64>, StoreError> {
        if params.scope.is_empty() || params.owner.is_empty() || params.ttl_ms <= 0 {
            return Err(StoreError::invalid("an upkeep lease needs a scope, an owner and a positive ttl"));
        }
        let expires_at = now.saturating_add(params.ttl_ms);
        let leader = self.by_scope.entry(params.scope.clone()).or_insert_with(|| UpkeepLeader {
            scope: params.scope.clone(),
            owner: params.owner.clone(),
            generation: 0,
            expires_at: now,
        });
        if leader.generation > 0 && leader.owner != params.owner && leader.expires_at > now {
            return Ok(None);
        }
        if leader.generation == 0 || leader.owner != params.owner {
            leader.generation += 1;
            leader.owner = params.owner;
        }
        leader.expires_at = expires_at;
        Ok(Some(leader.generation))
    }

    pub(super) fn release(&mut self, params: &UpkeepRelease) -> bool {
        match self.by_scope.get_mut(&params.scope) {
            Some(leader) if leader.owner == params.owner => {
                leader.expires_at = 0;
                true
            }
            _ => false,
        }
    }

    pub(super) fn leaders(&self) -> Vec<UpkeepLeader> {
        self.by_scope.values().cloned().collect()
    }

    /// Refuse unless `fence` still names the live lease of its scope.
    pub(super) fn check(&self, fence: &UpkeepFence, now: Millis) -> Result<(), StoreError> {
        match self.by_scope.get(&fence.scope) {
            Some(l) if l.owner == fence.owner && l.generation == fence.generation && l.expires_at > now => Ok(()),
            _ => Err(StoreError::UpkeepLeaseLost {
                scope: fence.scope.clone(),
                owner: fence.owner.clone(),
                generation: fence.generation,
            }),
        }
    }
}
