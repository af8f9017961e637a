//! A session over Server-Sent Events. Frames: `event: event` with `id:` the
//! event's index (so a browser's `Last-Event-ID` resumes exactly after it),
//! `event: presence` (the snapshot, first, when asked) and `event: patch`
//! (one field's change), neither with an `id:`; `event: error` before the
//! stream ends on a failure. Event-only clients share one reader of the
//! session (`fanout`); a presence client reads its own two-plane feed. Each
//! frame is taken only when the previous one was written, so a slow client
//! costs a cursor or a small page, never a queue.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use a2_engine::{A2Error, EventStream, FeedItem, PresenceFeed, Session};
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as Frame, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use futures_util::Stream;
use tokio::sync::{watch, OwnedSemaphorePermit};

use crate::fanout::{Next, RingLimits, Tail};

use crate::error::WireError;
use crate::routes::{index_param, session_of, with_header, Params, SessionPath};
use crate::wire::{event_to_wire, presence_patch_to_wire, presence_snapshot_to_wire};
use crate::Wire;

pub(crate) async fn stream(
    State(wire): State<Arc<Wire>>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    path: SessionPath,
    headers: HeaderMap,
    Query(params): Params,
) -> Result<Response, WireError> {
    let (server, session) = session_of(&wire, path)?;
    // A reconnecting EventSource sends the last id it saw: that wins over the URL's.
    let after =
        match headers.get("last-event-id") {
            Some(value) => value.to_str().ok().and_then(|v| v.trim().parse::<u64>().ok()).ok_or_else(|| {
                WireError::invalid_argument("Last-Event-ID must be the index of the last event received")
            })?,
            None => index_param(&params, "startAfter")?.unwrap_or(0),
        };
    let presence = match params.get("presence").map(String::as_str) {
        None | Some("0" | "false") => false,
        Some("1" | "true") => true,
        Some(other) => return Err(WireError::invalid_argument(format!("presence is 1 or 0, not {other:?}"))),
    };
    // As the seeds: a contract without presence fields has no presence plane, so
    // asking for it serves the events plane alone rather than refusing the stream.
    let presence = presence && server.contract().declares_presence();
    // Held by the stream until its client goes: the caps on what one client, and all idle ones, hold.
    let client = match peer {
        Some(Extension(ConnectInfo(addr))) => Some(ClientSlot::take(&wire, addr.ip())?),
        None => None,
    };
    let total = wire.streams.clone().try_acquire_owned().map_err(|_| {
        let mut error = WireError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "TOO_MANY_STREAMS",
            format!("this server follows at most {} streams at once; try again later", wire.options.max_streams),
        );
        error.retryable = true;
        error
    })?;
    let permit = StreamSlot { _total: total, _client: client };
    let page = wire.options.stream_page;
    let keep_alive = KeepAlive::new().interval(wire.options.keep_alive).text("ping");
    let response = if presence {
        let feed = session.stream_with_presence(after).page_size(page);
        Sse::new(feed_frames(feed, permit)).keep_alive(keep_alive).into_response()
    } else {
        let limits = RingLimits { events: wire.options.ring_events, chars: wire.options.ring_chars };
        let (tail, clear) = wire.hub.tail(server, &session, limits).await?;
        // Events through a clear are gone: nobody is sent them, from the ring or the store.
        let follower =
            Follower { newest: tail.subscribe(), tail, after: after.max(clear), catchup: None, session, page };
        Sse::new(follower_frames(follower, permit)).keep_alive(keep_alive).into_response()
    };
    // Buffering proxies (nginx) would hold frames back.
    Ok(with_header(response, "x-accel-buffering", "no"))
}

/// What an open stream holds until its client goes: a place among all
/// streams, and one among its client's.
struct StreamSlot {
    _total: OwnedSemaphorePermit,
    _client: Option<ClientSlot>,
}

/// One of a peer address's streams; given back on drop.
struct ClientSlot {
    clients: Arc<Mutex<HashMap<IpAddr, usize>>>,
    ip: IpAddr,
}

impl ClientSlot {
    fn take(wire: &Wire, ip: IpAddr) -> Result<Self, WireError> {
        let mut clients = wire.clients.lock().unwrap_or_else(|p| p.into_inner());
        let open = clients.entry(ip).or_insert(0);
        let cap = wire.options.max_streams_per_client.max(1);
        if *open >= cap {
            let mut error = WireError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "TOO_MANY_STREAMS",
                format!("one client follows at most {cap} streams at once here; close one first"),
            );
            error.retryable = true;
            return Err(error);
        }
        *open += 1;
        Ok(Self { clients: wire.clients.clone(), ip })
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(open) = clients.get_mut(&self.ip) {
            *open = open.saturating_sub(1);
            if *open == 0 {
                clients.remove(&self.ip);
            }
        }
    }
}

fn event_frame(event: &a2_store::Event) -> Frame {
    Frame::default().event("event").id(event.index.to_string()).data(event_to_wire(event).to_string())
}

fn error_frame(error: A2Error) -> Frame {
    let error = WireError::from(error);
    Frame::default().event("error").data(error.body().to_string())
}

/// One client of a session's shared tail (see `fanout`).
struct Follower {
    tail: Arc<Tail>,
    newest: watch::Receiver<u64>,
    after: u64,
    /// The client's own read of the store while it is behind the ring.
    catchup: Option<EventStream>,
    session: Session,
    page: u32,
}

impl Follower {
    async fn next(&mut self) -> Result<Frame, A2Error> {
        loop {
            // Marked seen before the look: a newer event after it wakes the wait at once.
            self.newest.borrow_and_update();
            match self.tail.after(self.after) {
                Next::Ready((index, json)) => {
                    self.after = index;
                    self.catchup = None;
                    return Ok(Frame::default().event("event").id(index.to_string()).data(&*json));
                }
                Next::Behind => {
                    let (session, after, page) = (&self.session, self.after, self.page);
                    let stream = self.catchup.get_or_insert_with(|| session.stream(after).page_size(page));
                    let event = stream.next().await?;
                    self.after = event.index;
                    return Ok(event_frame(&event));
                }
                Next::Wait => {
                    // Closed when the session's reader ended: the client reconnects to a new one.
                    if self.newest.changed().await.is_err() {
                        return Err(A2Error::Cancelled { message: "the session's reader stopped".into() });
                    }
                }
            }
        }
    }
}

fn follower_frames(follower: Follower, permit: StreamSlot) -> impl Stream<Item = Result<Frame, Infallible>> {
    futures_util::stream::unfold(Some((follower, permit)), |state| async move {
        let (mut follower, permit) = state?;
        Some(match follower.next().await {
            Ok(frame) => (Ok(frame), Some((follower, permit))),
            Err(error) => (Ok(error_frame(error)), None),
        })
    })
}

fn feed_frames(feed: PresenceFeed, permit: StreamSlot) -> impl Stream<Item = Result<Frame, Infallible>> {
    futures_util::stream::unfold(Some((feed, permit)), |state| async move {
        let (mut feed, permit) = state?;
        let frame = match feed.next().await {
            Ok(FeedItem::Event(event)) => event_frame(&event),
            Ok(FeedItem::Snapshot(map)) => {
                Frame::default().event("presence").data(presence_snapshot_to_wire(&map).to_string())
            }
            Ok(FeedItem::Presence(change)) => {
                Frame::default().event("patch").data(presence_patch_to_wire(&change).to_string())
            }
            Err(error) => return Some((Ok(error_frame(error)), None)),
        };
        Some((Ok(frame), Some((feed, permit))))
    })
}
