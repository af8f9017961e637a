//! The process registry in memory: one record a server id.

use std::collections::BTreeMap;

use crate::servers::{ServerBeat, ServerList, ServerRecord, SERVER_KEPT_MS};
use crate::types::Millis;
use crate::StoreError;

#[derive(Debug, Default)]
pub(super) struct Servers {
    by_id: BTreeMap<String, ServerRecord>,
}

impl Servers {
    pub(super) fn beat(&mut self, beat: ServerBeat, now: Millis) -> Result<(), StoreError> {
        if beat.id.is_empty() || beat.info.contract.is_empty() {
            return Err(StoreError::invalid("a server beat needs the server's id and its contract"));
        }
        let prune_before = now.saturating_sub(SERVER_KEPT_MS);
        self.by_id.retain(|id, kept| *id == beat.id || kept.last_seen >= prune_before);
        self.by_id.insert(beat.id.clone(), ServerRecord { id: beat.id, info: beat.info, last_seen: now });
        Ok(())
    }

    pub(super) fn remove(&mut self, id: &str) -> bool {
        self.by_id.remove(id).is_some()
    }

    pub(super) fn list(&self, params: &ServerList) -> Vec<ServerRecord> {
        let mut kept: Vec<ServerRecord> = self
            .by_id
            .values()
            .filter(|r| params.contract.as_ref().is_none_or(|c| *c == r.info.contract))
            .cloned()
            .collect();
        kept.sort_by(|a, b| {
            (&a.info.contract, a.info.started_at, &a.id).cmp(&(&b.info.contract, b.info.started_at, &b.id))
        });
        kept
    }
}
