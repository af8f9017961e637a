//! A session over Server-Sent Events. Frames: `event: event` with `id:` the
//! event's index (so a browser's `Last-Event-ID` resumes exactly after it),
//! `event: presence` (the snapshot, first, when asked) and `event: patch`
//! (one field's change), neither with an `id:`; `event: error` before the
//! stream ends on a failure. Each frame is read from the store only when
//! the previous one was written, so a slow client costs a page, not a queue.

use std::convert::Infallible;
use std::sync::Arc;

use a2_engine::{A2Error, EventStream, FeedItem, PresenceFeed};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as Frame, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;

use crate::error::WireError;
use crate::routes::{index_param, with_header, Params};
use crate::wire::{event_to_wire, presence_patch_to_wire, presence_snapshot_to_wire};
use crate::Wire;

pub(crate) async fn stream(
    State(wire): State<Arc<Wire>>,
    Path((contract, id)): Path<(String, String)>,
    headers: HeaderMap,
    Query(params): Params,
) -> Result<Response, WireError> {
    let server = wire.server(&contract)?;
    let session = server.session(&id)?;
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
    if presence && !server.contract().declares_presence() {
        return Err(A2Error::PresenceNotSupported { contract: contract.clone() }.into());
    }
    let keep_alive = KeepAlive::new().interval(wire.options.keep_alive).text("ping");
    let response = if presence {
        Sse::new(feed_frames(session.stream_with_presence(after))).keep_alive(keep_alive).into_response()
    } else {
        Sse::new(event_frames(session.stream(after))).keep_alive(keep_alive).into_response()
    };
    // Buffering proxies (nginx) would hold frames back.
    Ok(with_header(response, "x-accel-buffering", "no"))
}

fn event_frame(event: &a2_store::Event) -> Frame {
    Frame::default().event("event").id(event.index.to_string()).data(event_to_wire(event).to_string())
}

fn error_frame(error: A2Error) -> Frame {
    let error = WireError::from(error);
    debug_assert_ne!(error.status, StatusCode::OK);
    Frame::default().event("error").data(error.body().to_string())
}

fn event_frames(stream: EventStream) -> impl Stream<Item = Result<Frame, Infallible>> {
    futures_util::stream::unfold(Some(stream), |state| async move {
        let mut stream = state?;
        Some(match stream.next().await {
            Ok(event) => (Ok(event_frame(&event)), Some(stream)),
            Err(error) => (Ok(error_frame(error)), None),
        })
    })
}

fn feed_frames(feed: PresenceFeed) -> impl Stream<Item = Result<Frame, Infallible>> {
    futures_util::stream::unfold(Some(feed), |state| async move {
        let mut feed = state?;
        Some(match feed.next().await {
            Ok(FeedItem::Event(event)) => (Ok(event_frame(&event)), Some(feed)),
            Ok(FeedItem::Snapshot(map)) => {
                (Ok(Frame::default().event("presence").data(presence_snapshot_to_wire(&map).to_string())), Some(feed))
            }
            Ok(FeedItem::Presence(change)) => {
                (Ok(Frame::default().event("patch").data(presence_patch_to_wire(&change).to_string())), Some(feed))
            }
            Err(error) => (Ok(error_frame(error)), None),
        })
    })
}
