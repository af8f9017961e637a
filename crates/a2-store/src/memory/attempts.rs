//! The memory store's attempt history: its page reads, pruning and rates,
//! over the sessions map the caller holds locked.

use std::collections::BTreeMap;

use super::session::SessionRow;
use crate::attempts::*;
use crate::store::page_size;
use crate::types::*;

type Sessions = BTreeMap<SessionKey, SessionRow>;

pub(super) fn list(sessions: &Sessions, params: &AttemptList) -> Vec<Attempt> {
    let Some(row) = sessions.get(&params.session) else { return Vec::new() };
    let mut attempts: Vec<&Attempt> = row
        .attempts
        .values()
        .filter(|a| params.consumer.as_ref().is_none_or(|c| *c == a.consumer))
        .filter(|a| params.index.is_none_or(|i| i == a.index))
        .filter(|a| match &params.after {
            None => true,
            Some(after) if params.oldest_first => a.key() > *after,
            Some(after) => a.key() < *after,
        })
        .collect();
    attempts.sort_by_key(|a| a.key());
    if !params.oldest_first {
        attempts.reverse();
    }
    attempts.into_iter().take(page_size(params.limit)).cloned().collect()
}

pub(super) fn prune(sessions: &mut Sessions, params: &AttemptPrune) -> AttemptPruned {
    let keys: Vec<SessionKey> = super::contract_sessions(sessions, &params.contract, params.after.as_deref())
        .take(page_size(params.sessions))
        .map(|(key, _)| key.clone())
        .collect();
    let mut pruned = 0;
    for key in &keys {
        let Some(row) = sessions.get_mut(key) else { continue };
        let mut newest: BTreeMap<(String, Option<String>, u64), u32> = BTreeMap::new();
        for (consumer, lane, index, attempt) in row.attempts.keys() {
            let top = newest.entry((consumer.clone(), lane.clone(), *index)).or_default();
            *top = (*top).max(*attempt);
        }
        let doomed: Vec<_> = row
            .attempts
            .keys()
            .filter(|(consumer, lane, index, attempt)| {
                let top = newest.get(&(consumer.clone(), lane.clone(), *index)).copied().unwrap_or(0);
                *attempt + params.keep <= top && !row.is_dead(consumer, lane.as_deref(), *index)
            })
            .cloned()
            .collect();
        for id in doomed {
            row.attempts.remove(&id);
            pruned += 1;
        }
    }
    let next = keys
        .last()
        .filter(|_| keys.len() >= page_size(params.sessions))
        .map(|k| crate::split_session_key(k).1.to_owned());
    AttemptPruned { pruned, next }
}

pub(super) fn rates(sessions: &Sessions, params: &AttemptRates) -> Vec<AttemptRate> {
    let bucket_ms = params.bucket_ms.max(1);
    // Keyed oldest bucket first, then by name: the order every store answers in.
    let mut rates: BTreeMap<(Millis, String, String), AttemptRate> = BTreeMap::new();
    for (key, row) in sessions.iter() {
        let contract = crate::split_session_key(key).0;
        if params.contract.as_ref().is_some_and(|c| c != contract) {
            continue;
        }
        for attempt in row.attempts.values().filter(|a| a.ended_at >= params.since) {
            let bucket_start = attempt.ended_at.div_euclid(bucket_ms) * bucket_ms;
            let id = (bucket_start, contract.to_owned(), attempt.consumer.clone());
            let rate = rates.entry(id).or_insert_with(|| AttemptRate {
                contract: contract.to_owned(),
                consumer: attempt.consumer.clone(),
                bucket_start,
                completed: 0,
                failed: 0,
            });
            rate.completed += u64::from(attempt.outcome == AttemptOutcome::Completed);
            rate.failed += u64::from(attempt.outcome.is_failure());
        }
    }
    rates.into_values().collect()
}
