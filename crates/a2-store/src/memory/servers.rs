//! The process registry in memory: one record a server id.

use std::collections::BTreeMap;

use crate::servers::{HeadsLeased, LeasedHead, ServerBeat, ServerList, ServerRecord, SERVER_KEPT_MS};
use crate::store::page_size;
use crate::types::HeadInfo;
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

/// The heads among `heads` leased now under the prefix, a page at most.
pub(super) fn leased(heads: Vec<HeadInfo>, params: &HeadsLeased, now: Millis) -> Vec<LeasedHead> {
    let live = heads.into_iter().filter_map(|h| {
        let holder = h.status.lease_holder.clone().filter(|holder| holder.starts_with(&params.holder_prefix))?;
        let until = h.status.lease_expires_at.filter(|until| *until > now)?;
        Some(LeasedHead {
            contract: h.contract,
            session_id: h.session_id,
            consumer: h.consumer,
            lane: h.lane,
            index: h.next_index,
            attempt: h.status.attempt_count,
            holder,
            lease_expires_at: until,
        })
    });
    live.take(page_size(params.limit)).collect()
}
