//! The wire: an A2 server's sessions over HTTP, for browser and service
//! clients. `router(servers)` mounts, per contract:
//!
//! - `POST /{contract}/sessions/{id}/push`: the seeds' envelope (events, a
//!   presence patch, or both) through [`parse_push_body`], then the server's
//!   `validate_push`, then the write; answers the appended events.
//! - `GET /{contract}/sessions/{id}/stream`: the session as Server-Sent
//!   Events after `startAfter` (or `Last-Event-ID`), with the presence plane
//!   when `presence=1`, keep-alive pings, and a slow client held by TCP's own
//!   backpressure (frames are read from the store only as they are sent).
//! - `GET /{contract}/sessions/{id}/history` and `/state`: JSON, a history
//!   page cut short at [`HISTORY_CHARS`] of payload text.
//! - `GET /{contract}`: what the contract takes.
//!
//! Reads carry no authentication of their own: mount the router behind the
//! app's (an axum layer); `validate_push` is where pushes are authorized.
//! Every route answers only the hosts it is told of (loopback by default)
//! and takes pushes only from its own origin or those it is told of
//! ([`WireOptions::allowed_hosts`], [`WireOptions::allowed_origins`]).

mod envelope;
mod error;
mod fanout;
mod hosts;
mod routes;
mod stream;
mod wire;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use a2_engine::{A2Error, Server};
use axum::Router;

pub use envelope::{parse_push_body, parse_push_events, EVENT_WRITE_CHARS, MAX_PUSHED_EVENTS, MAX_PUSHED_ID};
pub use error::{error_status, WireError};
pub use routes::MAX_SESSION_ID;
pub use routes::{HISTORY_CHARS, HISTORY_LIMIT};
pub use wire::{event_to_wire, presence_patch_to_wire, presence_snapshot_to_wire};

/// How the routes behave.
#[derive(Debug, Clone)]
pub struct WireOptions {
    /// How often an idle stream sends a `: ping` comment, so proxies and
    /// browsers keep it open and a dead client is noticed by a failed write.
    pub keep_alive: Duration,
    /// The largest push body read; a bigger one is refused unread (413).
    pub body_limit: usize,
    /// Streams open at once; one more is refused (503 `TOO_MANY_STREAMS`),
    /// so clients that connect and never read cannot hold memory without bound.
    pub max_streams: usize,
    /// Streams one client (one peer IP address) may hold at once; one more
    /// is refused (429 `TOO_MANY_STREAMS`), so one client cannot take all of
    /// `max_streams` from the rest. The router learns a peer's address when
    /// served with `into_make_service_with_connect_info::<SocketAddr>()` (as
    /// `a2 serve-app` serves it); without that, only `max_streams` holds.
    pub max_streams_per_client: usize,
    /// Events a stream reads from the store a page while it is behind the
    /// shared tail, and a presence stream always: what a stalled client holds.
    pub stream_page: u32,
    /// A followed session's shared tail keeps at most this many recent
    /// events, and this much of their JSON text; a client further behind
    /// reads from the store until it catches up.
    pub ring_events: usize,
    pub ring_chars: usize,
    /// The most JSON text a `/state` answer carries; a bigger state is
    /// refused (413 `TOO_LARGE`) rather than built into one response.
    pub state_chars: usize,
    /// Host names (no port) the routes answer besides this machine's
    /// loopback names (`localhost`, `127.0.0.1`, `[::1]`, any port); a
    /// request naming any other `Host` is refused (403 `FORBIDDEN_HOST`), so
    /// a page of another site cannot reach a server bound to 127.0.0.1
    /// through DNS rebinding. `"*"` answers every host (behind a proxy that checks).
    pub allowed_hosts: Vec<String>,
    /// Origins (`https://app.example`) whose pages may push, besides the
    /// server's own (an `Origin` naming the request's `Host`); a push from
    /// any other page is refused (403 `FORBIDDEN_ORIGIN`) before it is read.
    pub allowed_origins: Vec<String>,
}

impl Default for WireOptions {
    fn default() -> Self {
        Self {
            keep_alive: Duration::from_secs(15),
            body_limit: 1024 * 1024,
            max_streams: 4096,
            max_streams_per_client: 64,
            stream_page: 16,
            ring_events: 4096,
            ring_chars: 8 * 1024 * 1024,
            state_chars: 4 * 1024 * 1024,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
        }
    }
}

pub(crate) struct Wire {
    servers: BTreeMap<String, Server>,
    options: WireOptions,
    streams: Arc<tokio::sync::Semaphore>,
    /// Streams open per peer address.
    clients: Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>>,
    hub: fanout::Hub,
}

impl Wire {
    fn server(&self, contract: &str) -> Result<&Server, WireError> {
        self.servers.get(contract).ok_or_else(|| {
            WireError::new(
                axum::http::StatusCode::NOT_FOUND,
                "UNKNOWN_CONTRACT",
                format!(
                    "no contract named '{contract}' is served here (served: {})",
                    self.servers.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            )
        })
    }
}

/// The routes of every server's contract, with the default options; two
/// servers of one contract are refused (which would answer is not for a map to decide).
pub fn router(servers: impl IntoIterator<Item = Server>) -> Result<Router, A2Error> {
    router_with(servers, WireOptions::default())
}

/// [`router`] with options.
pub fn router_with(servers: impl IntoIterator<Item = Server>, options: WireOptions) -> Result<Router, A2Error> {
    let mut by_contract = BTreeMap::new();
    for server in servers {
        let name = server.contract().name().to_owned();
        if by_contract.insert(name.clone(), server).is_some() {
            return Err(A2Error::InvalidArgument {
                message: format!("two servers of contract '{name}' on one router"),
            });
        }
    }
    let streams = Arc::new(tokio::sync::Semaphore::new(options.max_streams.max(1)));
    let wire = Wire { servers: by_contract, options, streams, clients: Arc::default(), hub: fanout::Hub::default() };
    Ok(routes::routes(Arc::new(wire)))
}

/// A small page that pushes to and follows a session of the demo contract
/// (`a2 serve-app` serves it at `/`): the wire's browser client, by example.
pub const EXAMPLE_PAGE: &str = include_str!("page.html");
