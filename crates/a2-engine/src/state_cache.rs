//! The seeds' state cache: the newest state each (session, reducer) was
//! folded to in this process. A read of a session that has not moved since
//! reads neither a snapshot nor the log; one that moved folds only what is
//! new; concurrent reads of one session take turns, so the second finds the
//! first one's fold. Bounded, and checked against the session's clear index
//! on every read, so a clear (here or in another process) invalidates it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};

use serde_json::Value;

/// How many (session, reducer) states one server keeps.
pub(crate) const STATE_CACHE_ENTRIES: usize = 1024;

/// A state this process folded.
#[derive(Debug, Clone)]
pub(crate) struct CachedState {
    /// The session's clear index when it was folded: another means a clear came since.
    pub clear_index: u64,
    pub index: u64,
    /// Shared: a read copies it outside the cache's lock.
    pub state: Arc<Value>,
    /// The newest snapshot known written at or below `index`: when the next
    /// one is due (`snapshot_every` folded past it), however many reads it takes.
    pub snapshot_at: u64,
}

type Key = (String, String);

#[derive(Default)]
struct Entries {
    states: HashMap<Key, CachedState>,
    /// Oldest first: the one to forget when full.
    order: VecDeque<Key>,
    turns: HashMap<Key, Weak<tokio::sync::Mutex<()>>>,
}

#[derive(Default)]
pub(crate) struct StateCache {
    entries: Mutex<Entries>,
}

impl StateCache {
    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn get(&self, session: &str, reducer: &str) -> Option<CachedState> {
        self.entries().states.get(&(session.to_owned(), reducer.to_owned())).cloned()
    }

    /// Keep `state` unless a newer one under the same clear is kept already.
    pub(crate) fn put(&self, session: &str, reducer: &str, state: CachedState) {
        let key = (session.to_owned(), reducer.to_owned());
        let mut entries = self.entries();
        match entries.states.get(&key) {
            Some(kept) if kept.clear_index == state.clear_index && kept.index > state.index => return,
            Some(_) => {}
            None => {
                entries.order.push_back(key.clone());
                while entries.order.len() > STATE_CACHE_ENTRIES {
                    if let Some(old) = entries.order.pop_front() {
                        entries.states.remove(&old);
                    }
                }
            }
        }
        entries.states.insert(key, state);
    }

    /// A snapshot at `index` was written: the next is due `snapshot_every` past it,
    /// unless the session was cleared or the kept state is older than the write.
    pub(crate) fn snapshot_written(&self, session: &str, reducer: &str, clear_index: u64, index: u64) {
        let key = (session.to_owned(), reducer.to_owned());
        if let Some(kept) = self.entries().states.get_mut(&key) {
            if kept.clear_index == clear_index && kept.index >= index && kept.snapshot_at < index {
                kept.snapshot_at = index;
            }
        }
    }

    /// This session's reads of `reducer` one at a time: held across a read.
    pub(crate) async fn turn(&self, session: &str, reducer: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let key = (session.to_owned(), reducer.to_owned());
        let turn = {
            let mut entries = self.entries();
            match entries.turns.get(&key).and_then(Weak::upgrade) {
                Some(turn) => turn,
                None => {
                    entries.turns.retain(|_, turn| turn.strong_count() > 0);
                    let turn = Arc::new(tokio::sync::Mutex::new(()));
                    entries.turns.insert(key, Arc::downgrade(&turn));
                    turn
                }
            }
        };
        turn.lock_owned().await
    }
}
