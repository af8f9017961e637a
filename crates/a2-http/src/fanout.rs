//! One reader per followed session, however many clients follow it: the
//! reader tails the session from the store into a bounded ring of encoded
//! frames, and every client sends from the ring. A client behind the ring
//! (it resumed from far back, or stalled past the ring's length) reads its
//! own way from the store, a small page at a time, until it reaches the
//! ring. So a thousand clients cost one store read per page of events, and
//! a slow one holds a cursor, never a queue.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use a2_engine::{A2Error, EventStream, Server, Session};
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::wire::event_to_wire;

/// An event as the stream sends it: its index and its JSON.
pub(crate) type EncodedEvent = (u64, Arc<str>);

/// What the ring keeps at most, in events and in JSON text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RingLimits {
    pub events: usize,
    pub chars: usize,
}

struct Ring {
    /// Every event after this index and up to the newest is in `frames`
    /// (those that exist: a clear leaves gaps).
    base: u64,
    frames: VecDeque<EncodedEvent>,
    chars: usize,
}

/// A followed session's shared tail.
pub(crate) struct Tail {
    ring: Mutex<Ring>,
    limits: RingLimits,
    /// The newest index in the ring. Its sender is the reader's own: when
    /// the reader ends (a panic included), followers hear the channel close.
    newest: watch::Receiver<u64>,
    /// Stops the reader when the last follower lets go of the tail.
    _reader: DropGuard,
}

/// Where a follower at `after` stands against the ring.
pub(crate) enum Next {
    Ready(EncodedEvent),
    /// The events after `after` left the ring (or were never in it): read them from the store.
    Behind,
    /// Nothing newer yet.
    Wait,
}

impl Tail {
    pub(crate) fn after(&self, after: u64) -> Next {
        let ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        if after < ring.base {
            return Next::Behind;
        }
        let at = ring.frames.partition_point(|(index, _)| *index <= after);
        match ring.frames.get(at) {
            Some(frame) => Next::Ready(frame.clone()),
            None => Next::Wait,
        }
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.newest.clone()
    }

    /// Whether its reader still runs.
    fn alive(&self) -> bool {
        self.newest.has_changed().is_ok()
    }

    /// A clear through `clear` was seen: its events leave the ring, and a
    /// follower that was behind them reads on from the store.
    fn forget_through(&self, clear: u64) {
        let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        if clear <= ring.base {
            return;
        }
        while ring.frames.front().is_some_and(|(index, _)| *index <= clear) {
            if let Some((_, frame)) = ring.frames.pop_front() {
                ring.chars -= frame.len();
            }
        }
        ring.base = clear;
    }

    /// Keep a frame the reader read; whether it was new to the ring.
    fn push(&self, index: u64, frame: Arc<str>) -> bool {
        let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        if ring.frames.back().is_some_and(|(last, _)| *last >= index) || index <= ring.base {
            return false;
        }
        ring.chars += frame.len();
        ring.frames.push_back((index, frame));
        while ring.frames.len() > self.limits.events || (ring.chars > self.limits.chars && ring.frames.len() > 1) {
            if let Some((dropped, frame)) = ring.frames.pop_front() {
                ring.base = dropped;
                ring.chars -= frame.len();
            }
        }
        true
    }
}

/// The tails of every followed session of one router.
#[derive(Default)]
pub(crate) struct Hub {
    tails: Mutex<HashMap<(String, String), Weak<Tail>>>,
}

impl Hub {
    /// The session's tail (started from its current head when nobody
    /// follows it yet, or its reader ended), and the session's clear index:
    /// a follower starts no earlier, as a read of the store would.
    pub(crate) async fn tail(
        &self,
        server: &Server,
        session: &Session,
        limits: RingLimits,
    ) -> Result<(Arc<Tail>, u64), A2Error> {
        let key = (server.contract().name().to_owned(), session.id().to_owned());
        let summary = server.store().session_get(&a2_store::session_key(&key.0, &key.1)).await?;
        let (head, clear) = summary.map_or((0, 0), |s| (s.head, s.clear_index));
        let mut tails = self.tails.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tail) = tails.get(&key).and_then(Weak::upgrade).filter(|tail| tail.alive()) {
            tail.forget_through(clear);
            return Ok((tail, clear));
        }
        tails.retain(|_, tail| tail.upgrade().is_some_and(|tail| tail.alive()));
        let stop = CancellationToken::new();
        let (newest, follows) = watch::channel(head);
        let tail = Arc::new(Tail {
            ring: Mutex::new(Ring { base: head, frames: VecDeque::new(), chars: 0 }),
            limits,
            newest: follows,
            _reader: stop.clone().drop_guard(),
        });
        tails.insert(key, Arc::downgrade(&tail));
        tokio::spawn(read_into(Arc::downgrade(&tail), newest, session.stream(head), stop));
        Ok((tail, clear))
    }
}

/// The reader: the session's new events into the ring until nobody follows.
async fn read_into(tail: Weak<Tail>, newest: watch::Sender<u64>, mut stream: EventStream, stop: CancellationToken) {
    loop {
        let next = tokio::select! {
            () = stop.cancelled() => return,
            next = stream.next() => next,
        };
        match next {
            Ok(event) => {
                let Some(tail) = tail.upgrade() else { return };
                // Kept before it is announced: a follower woken by it finds it.
                if tail.push(event.index, Arc::from(event_to_wire(&event).to_string())) {
                    newest.send_replace(event.index);
                }
            }
            Err(error) => {
                // The followers wait meanwhile; the stream resumes where it stopped.
                tracing::warn!(code = error.code(), %error, "a followed session could not be read; retrying");
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
        }
    }
}
