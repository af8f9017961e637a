//! Reading a session's past: its events in any index range, however many,
//! and its dead letters with the events they hold up.

use a2_store::SessionKey;
use std::collections::VecDeque;
use std::sync::Arc;

use a2_store::{DeadLetter, DeadLetterList, Event, EventList, Millis, Store};
use serde_json::Value;

use crate::signals::SessionSignals;
use crate::A2Error;

/// Which events to read: indexes from `gte` through `lte`, both inclusive
/// and both optional (events at or below the clear boundary are gone).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventRange {
    pub gte: Option<u64>,
    pub lte: Option<u64>,
}

impl EventRange {
    /// Every event the session still has.
    pub fn all() -> Self {
        Self::default()
    }

    /// Every event after `index`.
    pub fn after(index: u64) -> Self {
        Self { gte: Some(index + 1), lte: None }
    }
}

/// A session's events in a range, oldest first, read a page at a time as
/// they are asked for, so any length can be walked in bounded memory.
pub struct History {
    store: Arc<dyn Store>,
    key: SessionKey,
    session_id: String,
    after: u64,
    lte: Option<u64>,
    buffer: VecDeque<Event>,
    pub(crate) done: bool,
    /// Events read a page: what a reader that stalls holds at most.
    page: u32,
}

impl History {
    /// The events of `range`; a range whose `gte` is past its `lte` is refused.
    pub(crate) fn new(
        store: Arc<dyn Store>,
        key: SessionKey,
        session_id: String,
        range: EventRange,
    ) -> Result<Self, A2Error> {
        if let (Some(gte), Some(lte)) = (range.gte, range.lte) {
            if gte > lte {
                return Err(A2Error::InvalidArgument {
                    message: format!("history range gte {gte} is past its lte {lte}"),
                });
            }
        }
        Ok(Self {
            store,
            key,
            session_id,
            after: range.gte.unwrap_or(1).saturating_sub(1),
            lte: range.lte,
            buffer: VecDeque::new(),
            done: false,
            page: a2_store::MAX_PAGE,
        })
    }

    /// Every event after `after`, with no end.
    pub(crate) fn after(store: Arc<dyn Store>, key: SessionKey, session_id: String, after: u64) -> Self {
        Self {
            store,
            key,
            session_id,
            after,
            lte: None,
            buffer: VecDeque::new(),
            done: false,
            page: a2_store::MAX_PAGE,
        }
    }

    /// Read at most `events` a page (default the store's largest page).
    pub(crate) fn set_page_size(&mut self, events: u32) {
        self.page = events.clamp(1, a2_store::MAX_PAGE);
    }

    /// Whether the next `next` reads a new page: the page read last was full
    /// and has been handed out.
    pub(crate) fn at_page_end(&self) -> bool {
        self.buffer.is_empty() && !self.done
    }

    /// The next event, or `None` past the range's end.
    pub async fn next(&mut self) -> Result<Option<Event>, A2Error> {
        if self.buffer.is_empty() && !self.done {
            let params = EventList {
                session: self.key.clone(),
                after: Some(self.after),
                before: self.lte.map(|lte| lte.saturating_add(1)),
                limit: self.page,
                newest_first: false,
            };
            let page = self.store.event_list(params).await?;
            self.done = page.len() < self.page as usize;
            self.after = page.last().map_or(self.after, |e| e.index);
            self.buffer.extend(page.into_iter().map(|mut e| {
                e.session = self.session_id.clone();
                e
            }));
        }
        Ok(self.buffer.pop_front())
    }

    /// The whole range at once (mind its length).
    pub async fn collect(mut self) -> Result<Vec<Event>, A2Error> {
        let mut events = Vec::new();
        while let Some(event) = self.next().await? {
            events.push(event);
        }
        Ok(events)
    }
}

/// Every event of a session after a point, in order, waiting for new ones.
/// It holds the store, not the server: a stream kept after its server is
/// dropped still reads, and hears of appends by polling.
pub struct EventStream {
    history: History,
    signals: SessionSignals,
}

impl EventStream {
    /// Every event of the session `key` after `after`, woken by `signals` (subscribed by the caller).
    pub(crate) fn after(
        store: Arc<dyn Store>,
        key: SessionKey,
        session_id: String,
        after: u64,
        signals: SessionSignals,
    ) -> Self {
        Self { history: History::after(store, key, session_id, after), signals }
    }

    /// Read at most `events` a page: a stream whose reader stalls (a slow
    /// client on the wire) holds that many events, not a whole page.
    pub fn page_size(mut self, events: u32) -> Self {
        self.history.set_page_size(events);
        self
    }

    /// The next event; waits for an append here or (by the store's feed or a poll) elsewhere.
    pub async fn next(&mut self) -> Result<Event, A2Error> {
        loop {
            if let Some(event) = self.history.next().await? {
                return Ok(event);
            }
            // Past the end for now: the next page starts where this one stopped.
            self.history.done = false;
            self.signals.next().await;
        }
    }
}

/// A dead head with the event it is stuck on.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadHead {
    pub letter: DeadLetter,
    pub payload: Value,
    /// When the event it is stuck on was appended.
    pub created_at: Millis,
}

/// A session's dead heads, a page at a time, however many there are.
pub struct DeadHeads {
    store: Arc<dyn Store>,
    key: SessionKey,
    limit: u32,
    after: Option<a2_store::HeadKey>,
    done: bool,
}

impl DeadHeads {
    pub(crate) fn new(store: Arc<dyn Store>, key: SessionKey, limit: u32) -> Self {
        Self { store, key, limit: limit.clamp(1, a2_store::MAX_PAGE), after: None, done: false }
    }

    /// The next page (empty once every dead head was read).
    pub async fn next_page(&mut self) -> Result<Vec<DeadHead>, A2Error> {
        if self.done {
            return Ok(Vec::new());
        }
        let page = DeadLetterList {
            session: Some(self.key.clone()),
            after: self.after.clone(),
            limit: self.limit,
            ..DeadLetterList::default()
        };
        let letters = self.store.dead_letter_list(page).await?;
        self.done = letters.len() < self.limit as usize;
        self.after = letters.last().map(DeadLetter::key);
        let mut heads = Vec::with_capacity(letters.len());
        for letter in letters {
            let params = EventList {
                session: self.key.clone(),
                after: Some(letter.index - 1),
                before: Some(letter.index + 1),
                limit: 1,
                newest_first: false,
            };
            // A letter's event is above the clear boundary (clearing drops dead letters below it).
            let Some(event) = self.store.event_list(params).await?.pop() else { continue };
            heads.push(DeadHead { letter, payload: event.payload, created_at: event.created_at });
        }
        Ok(heads)
    }

    /// Every page at once (mind how many there are).
    pub async fn collect(mut self) -> Result<Vec<DeadHead>, A2Error> {
        let mut all = Vec::new();
        loop {
            let page = self.next_page().await?;
            if page.is_empty() {
                return Ok(all);
            }
            all.extend(page);
        }
    }
}
