//! The memory store's presence plane: cells by session, then (participant,
//! field), under one lock, so a patch is written whole or not at all.

use std::collections::BTreeMap;

use crate::presence::*;
use crate::types::Millis;

#[derive(Debug, Default)]
pub(super) struct Presence(BTreeMap<String, BTreeMap<(String, String), PresenceCell>>);

impl Presence {
    pub(super) fn set(&mut self, params: PresenceSet, now: Millis) -> Vec<String> {
        let cells = self.0.entry(params.session.to_string()).or_default();
        let mut changed = Vec::new();
        for (field, value) in params.values {
            let key = (params.participant.clone(), field.clone());
            if cells.get(&key).is_some_and(|kept| !presence_write_wins(kept, params.at, now)) {
                continue;
            }
            let cell = PresenceCell {
                participant: params.participant.clone(),
                field: field.clone(),
                value,
                seen: params.seen,
                at: params.at,
                expires_at: now.saturating_add(params.ttl_ms),
            };
            cells.insert(key, cell);
            changed.push(field);
        }
        changed
    }

    pub(super) fn read(&self, session: &str, now: Millis) -> Vec<PresenceCell> {
        self.0
            .get(session)
            .into_iter()
            .flat_map(|cells| cells.values())
            .filter(|c| c.expires_at > now)
            .cloned()
            .collect()
    }

    pub(super) fn prune(&mut self, limit: u32, now: Millis) -> u64 {
        let mut left = u64::from(limit.max(1));
        let mut pruned = 0;
        self.0.retain(|_, cells| {
            cells.retain(|_, c| {
                let keep = c.expires_at > now || left == 0;
                if !keep {
                    left -= 1;
                    pruned += 1;
                }
                keep
            });
            !cells.is_empty()
        });
        pruned
    }

    /// Sessions with a live value, counted by contract.
    pub(super) fn sessions(&self, now: Millis) -> Vec<(String, u64)> {
        let mut by_contract: BTreeMap<String, u64> = BTreeMap::new();
        for (session, cells) in &self.0 {
            if cells.values().any(|c| c.value.is_some() && c.expires_at > now) {
                *by_contract.entry(crate::split_session_key(session).0.to_owned()).or_default() += 1;
            }
        }
        by_contract.into_iter().collect()
    }
}
