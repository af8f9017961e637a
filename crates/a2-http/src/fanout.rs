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
    newest: watch::Sender<u64>,
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
        self.newest.subscribe()
    }

    fn push(&self, index: u64, frame: Arc<str>) {
        let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        if ring.frames.back().is_some_and(|(last, _)| *last >= index) || index <= ring.base {
            return;
        }
        ring.chars += frame.len();
        ring.frames.push_back((index, frame));
        while ring.frames.len() > self.limits.events || (ring.chars > self.limits.chars && ring.frames.len() > 1) {
            if let Some((dropped, frame)) = ring.frames.pop_front() {
                ring.base = dropped;
                ring.chars -= frame.len();
            }
        }
        drop(ring);
        self.newest.send_replace(index);
    }
}

/// The tails of every followed session of one router.
#[derive(Default)]
pub(crate) struct Hub {
    tails: Mutex<HashMap<(String, String), Weak<Tail>>>,
}

impl Hub {
    /// The session's tail, started from its current head when nobody follows it yet.
    pub(crate) async fn tail(
        &self,
        server: &Server,
        session: &Session,
        limits: RingLimits,
    ) -> Result<Arc<Tail>, A2Error> {
        let key = (server.contract().name().to_owned(), session.id().to_owned());
        if let Some(tail) = self.lookup(&key) {
            return Ok(tail);
        }
        let head =
            server.store().session_get(&a2_store::session_key(&key.0, &key.1)).await?.map_or(0, |summary| summary.head);
        let mut tails = self.tails.lock().unwrap_or_else(|e| e.into_inner());
        // Another follower may have started it while the head was read.
        if let Some(tail) = tails.get(&key).and_then(Weak::upgrade) {
            return Ok(tail);
        }
        tails.retain(|_, tail| tail.strong_count() > 0);
        let stop = CancellationToken::new();
        let tail = Arc::new(Tail {
            ring: Mutex::new(Ring { base: head, frames: VecDeque::new(), chars: 0 }),
            limits,
            newest: watch::Sender::new(head),
            _reader: stop.clone().drop_guard(),
        });
        tails.insert(key, Arc::downgrade(&tail));
        tokio::spawn(read_into(Arc::downgrade(&tail), session.stream(head), stop));
        Ok(tail)
    }

    fn lookup(&self, key: &(String, String)) -> Option<Arc<Tail>> {
        self.tails.lock().unwrap_or_else(|e| e.into_inner()).get(key).and_then(Weak::upgrade)
    }
}

/// The reader: the session's new events into the ring until nobody follows.
async fn read_into(tail: Weak<Tail>, mut stream: EventStream, stop: CancellationToken) {
    loop {
        let next = tokio::select! {
            () = stop.cancelled() => return,
            next = stream.next() => next,
        };
        match next {
            Ok(event) => {
                let Some(tail) = tail.upgrade() else { return };
                tail.push(event.index, Arc::from(event_to_wire(&event).to_string()));
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
