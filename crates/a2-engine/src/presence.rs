//! The presence plane, as the seeds have it: who is in a session and what
//! they show, per (participant, field), last writer winning by the sender's
//! stamp, expiring on the store's clock. Never an append: no log row, no
//! drain, no scheduler arm. A feed of a session paints one snapshot of the
//! map, then one-field patches interleaved with the events.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use a2_store::{Event, Millis, PresenceCell, SessionKey, Store};
use serde::Serialize;
use serde_json::Value;

use crate::history::History;
use crate::signals::SessionSignals;
use crate::A2Error;

/// How long a presence value lives without a refreshing write (the seeds' default).
pub const PRESENCE_TTL: std::time::Duration = std::time::Duration::from_secs(60);

/// Participant ids the engine keeps for itself: `*` (everyone, for a push
/// policy to name) and the `a2.` namespace (the engine's own, as its tasks are).
pub fn participant_reserved(participant: &str) -> bool {
    participant == "*" || participant.starts_with("a2.")
}

/// A participant's write: each field's value, or `null` to delete it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PresencePatch {
    pub participant: String,
    pub values: serde_json::Map<String, Value>,
    /// The log index the writer had seen (default: the trigger's index in a
    /// run, 0 outside one).
    pub seen: Option<u64>,
    /// The sender's stamp, epoch ms: what orders writes (default: receipt time).
    pub at: Option<Millis>,
}

impl PresencePatch {
    pub fn new(participant: impl Into<String>) -> Self {
        Self { participant: participant.into(), ..Self::default() }
    }

    pub fn value(mut self, field: impl Into<String>, value: Value) -> Self {
        self.values.insert(field.into(), value);
        self
    }

    pub fn at(mut self, at: Millis) -> Self {
        self.at = Some(at);
        self
    }

    pub fn seen(mut self, seen: u64) -> Self {
        self.seen = Some(seen);
        self
    }
}

/// One field's current value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PresenceValue {
    pub value: Value,
    pub seen: u64,
    pub at: Millis,
}

/// A session's presence: participant → field → value.
pub type PresenceMap = BTreeMap<String, BTreeMap<String, PresenceValue>>;

/// One field of one participant changed: `value: None` is gone (deleted or expired).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PresenceChange {
    pub participant: String,
    pub field: String,
    pub value: Option<Value>,
    pub seen: u64,
    pub at: Millis,
}

/// What a two-plane feed yields.
#[derive(Debug, Clone, PartialEq)]
pub enum FeedItem {
    /// The whole map, once, before anything else.
    Snapshot(PresenceMap),
    Presence(PresenceChange),
    Event(Event),
}

/// The live values of `cells` as a map (tombstones left out).
pub(crate) fn fold(cells: Vec<PresenceCell>) -> PresenceMap {
    let mut map = PresenceMap::new();
    for cell in cells {
        if let Some(value) = cell.value {
            let fields = map.entry(cell.participant).or_default();
            fields.insert(cell.field, PresenceValue { value, seen: cell.seen, at: cell.at });
        }
    }
    map
}

/// What a feed last showed of a cell: its stamps and its value's text (a
/// tie can replace a value without moving its stamps).
#[derive(Debug, Clone, PartialEq)]
struct Painted {
    seen: u64,
    at: Millis,
    value: String,
}

/// A session's events after a point with its presence beside them: first
/// one snapshot of the map, then the events and each field's changes as the
/// store shows them (a backlog of events is read a page at a time, presence
/// looked at between pages), re-read whenever the session may have changed (an
/// append or a presence write here, the store's feed from elsewhere) and at
/// the poll ceiling, so an expired value is painted gone while watched.
/// The store is the judge of who won: a write older than the painted value
/// lost there, so it never repaints the past.
pub struct PresenceFeed {
    store: Arc<dyn Store>,
    key: SessionKey,
    history: History,
    signals: SessionSignals,
    painted: BTreeMap<(String, String), Painted>,
    pending: VecDeque<FeedItem>,
    started: bool,
}

impl PresenceFeed {
    pub(crate) fn new(store: Arc<dyn Store>, key: SessionKey, history: History, signals: SessionSignals) -> Self {
        Self { store, key, history, signals, painted: BTreeMap::new(), pending: VecDeque::new(), started: false }
    }

    /// Read at most `events` a page of the log (see [`crate::EventStream::page_size`]).
    pub fn page_size(mut self, events: u32) -> Self {
        self.history.set_page_size(events);
        self
    }

    /// The next item: the snapshot first, then events and changes as they come.
    pub async fn next(&mut self) -> Result<FeedItem, A2Error> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Ok(item);
            }
            if !self.started {
                // The signals were subscribed before this read: a write after it wakes the feed.
                let cells = self.store.presence_read(&self.key).await?;
                self.started = true;
                for cell in &cells {
                    if let Some(value) = &cell.value {
                        let painted = Painted { seen: cell.seen, at: cell.at, value: value.to_string() };
                        self.painted.insert((cell.participant.clone(), cell.field.clone()), painted);
                    }
                }
                return Ok(FeedItem::Snapshot(fold(cells)));
            }
            if let Some(event) = self.history.next().await? {
                // As the seeds interleave the planes: a backlog does not hold presence back.
                // Between pages of it, the changes since the last look go first.
                if self.history.at_page_end() {
                    self.look().await?;
                }
                return Ok(FeedItem::Event(event));
            }
            self.history.done = false;
            self.look().await?;
            if self.pending.is_empty() {
                self.signals.next().await;
            }
        }
    }

    /// Read the session's presence and queue what changed since it was painted.
    async fn look(&mut self) -> Result<(), A2Error> {
        let cells = self.store.presence_read(&self.key).await?;
        self.repaint(cells);
        Ok(())
    }

    /// Queue a change for every cell that differs from what was painted: a
    /// new or changed value, a deletion (stamped by its sender, from the
    /// tombstone), or a value gone unseen (expired: stamped as last painted).
    fn repaint(&mut self, cells: Vec<PresenceCell>) {
        let mut live = std::collections::BTreeSet::new();
        for cell in cells {
            let key = (cell.participant.clone(), cell.field.clone());
            match cell.value {
                Some(value) => {
                    live.insert(key.clone());
                    let painted = Painted { seen: cell.seen, at: cell.at, value: value.to_string() };
                    if self.painted.get(&key) == Some(&painted) {
                        continue;
                    }
                    self.painted.insert(key, painted);
                    self.pending.push_back(FeedItem::Presence(PresenceChange {
                        participant: cell.participant,
                        field: cell.field,
                        value: Some(value),
                        seen: cell.seen,
                        at: cell.at,
                    }));
                }
                None => {
                    if self.painted.remove(&key).is_some() {
                        live.insert(key);
                        self.pending.push_back(FeedItem::Presence(PresenceChange {
                            participant: cell.participant,
                            field: cell.field,
                            value: None,
                            seen: cell.seen,
                            at: cell.at,
                        }));
                    }
                }
            }
        }
        let gone: Vec<_> = self.painted.keys().filter(|k| !live.contains(*k)).cloned().collect();
        for key in gone {
            if let Some(prior) = self.painted.remove(&key) {
                // Only senders' clocks order the plane: an expiry keeps the last stamp painted.
                self.pending.push_back(FeedItem::Presence(PresenceChange {
                    participant: key.0,
                    field: key.1,
                    value: None,
                    seen: prior.seen,
                    at: prior.at,
                }));
            }
        }
    }
}
