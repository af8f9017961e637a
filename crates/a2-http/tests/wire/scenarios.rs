//! The wire's scenarios, each over a real TCP socket to a served router on
//! one store; `wire.rs` stamps them on memory, SQLite and Postgres.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use a2_engine::{Contract, PushContext, Reducer, Server};
use a2_store::Store;
use serde::Deserialize;
use serde_json::{json, Value};

use super::client::{get, push, send, Sse};

#[derive(Deserialize)]
#[allow(dead_code)]
struct Count {
    n: u64,
}

/// What the test's `validate_push` was shown, plane by plane.
type Seen = Arc<Mutex<Vec<PushContext>>>;

pub struct Served {
    pub addr: SocketAddr,
    pub seen: Seen,
}

fn notes() -> Contract {
    let total = Reducer::new("total", json!(0), |state, event| {
        json!(state.as_u64().unwrap_or(0) + event.payload["n"].as_u64().unwrap_or(0))
    });
    let built = Contract::new("notes")
        .and_then(|c| c.event_with("note", |_| Ok(())))
        .and_then(|c| c.event::<Count>("count"))
        .and_then(|c| c.presence::<u64>("cursor"))
        .and_then(|c| c.presence::<bool>("typing"))
        .and_then(|c| c.reducer(total));
    built.unwrap_or_else(|e| panic!("the test contract: {e}"))
}

fn plain() -> Contract {
    Contract::new("plain").and_then(|c| c.event_with("note", |_| Ok(()))).unwrap_or_else(|e| panic!("{e}"))
}

/// Serve `notes` (with a `validate_push` that refuses secrets and mallory)
/// and `plain` on `store`, on a free port of 127.0.0.1.
pub async fn serve(store: Arc<dyn Store>) -> Served {
    serve_with(store, a2_http::WireOptions::default()).await
}

pub async fn serve_with(store: Arc<dyn Store>, options: a2_http::WireOptions) -> Served {
    let seen: Seen = Arc::default();
    let record = seen.clone();
    let notes = Server::builder(notes(), store.clone())
        .validate_push(move |context: Arc<PushContext>| {
            let record = record.clone();
            async move {
                record.lock().unwrap_or_else(|e| e.into_inner()).push((*context).clone());
                if context.events.iter().any(|e| e.payload.get("secret").is_some()) {
                    return Err("secrets are not pushed".to_owned());
                }
                if context.presence.as_ref().is_some_and(|p| p.participant == "mallory") {
                    return Err("mallory may not be present".to_owned());
                }
                Ok(())
            }
        })
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let plain = Server::builder(plain(), store).build().unwrap_or_else(|e| panic!("{e}"));
    let router = a2_http::router_with([notes, plain], options).unwrap_or_else(|e| panic!("{e}"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("bind: {e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let served = router.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, served).await });
    Served { addr, seen }
}

const NOTES: &str = "/notes/sessions/s-1";

async fn history_len(addr: SocketAddr, session: &str) -> usize {
    let answer = get(addr, &format!("{session}/history")).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.json()["events"].as_array().map_or(0, Vec::len)
}

/// A UUIDv5-shaped id is the engine's (a consumer's derived id): a client
/// giving one could collide with it, so the envelope refuses it, any case,
/// anywhere in the batch, and nothing of the batch is written.
pub async fn push_refuses_derived_ids(store: Arc<dyn Store>) {
    let served = serve(store).await;
    let derived = a2_engine::ids::appended_event_id("trigger", "name", 0, "consumer");
    for id in [derived.clone(), derived.to_uppercase()] {
        let body = json!({ "events": [{ "type": "note", "id": "mine-1" }, { "type": "note", "id": id }] });
        let answer = push(served.addr, &format!("{NOTES}/push"), &body).await;
        assert_eq!(answer.status, 400, "{}", answer.body);
        assert_eq!(answer.code(), "INVALID_PAYLOAD");
        assert!(answer.body.contains("events[1].id is shaped like the ids A2 derives"), "{}", answer.body);
    }
    assert_eq!(history_len(served.addr, NOTES).await, 0, "a refused batch writes nothing");
    // A random UUID (v4) is a client's own, and a retry of it is the same event.
    let own = "6f1c1e1e-3d3b-4c4a-9b9b-2a2a2a2a2a2a";
    for _ in 0..2 {
        let answer =
            push(served.addr, &format!("{NOTES}/push"), &json!({ "events": [{ "type": "note", "id": own }] })).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(answer.json()["events"][0]["id"], own);
        assert_eq!(answer.json()["events"][0]["sessionId"], "s-1");
        assert_eq!(answer.json()["events"][0]["index"], 1);
    }
    assert_eq!(history_len(served.addr, NOTES).await, 1);
}

fn frame_index(frame: &super::client::Frame) -> u64 {
    frame.data["index"].as_u64().unwrap_or_else(|| panic!("no index in {frame:?}"))
}

/// `id:` is the event's index, so a browser's reconnect (`Last-Event-ID`)
/// resumes exactly after the last event it got; the header wins over `startAfter`.
pub async fn stream_resumes_after_last_event_id(store: Arc<dyn Store>) {
    let served = serve(store).await;
    let events: Vec<Value> = (1..=4).map(|n| json!({ "type": "note", "payload": { "n": n } })).collect();
    let answer = push(served.addr, &format!("{NOTES}/push"), &json!({ "events": events })).await;
    assert_eq!(answer.status, 200, "{}", answer.body);

    let mut resumed = Sse::open(served.addr, &format!("{NOTES}/stream"), &[("Last-Event-ID", "2")]).await;
    assert_eq!(resumed.status, 200);
    assert!(resumed.headers.contains("text/event-stream"), "{}", resumed.headers);
    let third = resumed.next_event().await;
    assert_eq!((third.id.as_deref(), frame_index(&third)), (Some("3"), 3));
    assert_eq!(third.data["sessionId"], "s-1");
    assert_eq!(third.data["payload"], json!({ "n": 3 }));
    assert_eq!(frame_index(&resumed.next_event().await), 4);

    let mut after = Sse::open(served.addr, &format!("{NOTES}/stream?startAfter=3"), &[]).await;
    assert_eq!(frame_index(&after.next_event().await), 4);
    let mut header_wins =
        Sse::open(served.addr, &format!("{NOTES}/stream?startAfter=3"), &[("Last-Event-ID", "1")]).await;
    assert_eq!(frame_index(&header_wins.next_event().await), 2);

    // Live: an event pushed now reaches the streams already open.
    let answer = push(served.addr, &format!("{NOTES}/push"), &json!({ "events": [{ "type": "note" }] })).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(resumed.next_event().await.id.as_deref(), Some("5"));
    assert_eq!(frame_index(&after.next_event().await), 5);

    let bad = get(served.addr, &format!("{NOTES}/stream?startAfter=-1")).await;
    assert_eq!((bad.status, bad.code()), (400, "INVALID_ARGUMENT".to_owned()));
    let bad = send(served.addr, "GET", &format!("{NOTES}/stream"), &[("Last-Event-ID", "x")], b"").await;
    assert_eq!((bad.status, bad.code()), (400, "INVALID_ARGUMENT".to_owned()));
}

/// Followers of one session share one reader and a short ring of recent
/// events; one that resumes from further back than the ring reads the gap
/// from the store and then joins the ring, each event once and in order.
pub async fn followers_share_a_tail_and_catch_up_from_the_store(store: Arc<dyn Store>) {
    let options = a2_http::WireOptions { ring_events: 3, stream_page: 2, ..a2_http::WireOptions::default() };
    let served = serve_with(store, options).await;
    let mut early = Sse::open(served.addr, &format!("{NOTES}/stream"), &[]).await;
    let mut alongside = Sse::open(served.addr, &format!("{NOTES}/stream"), &[]).await;
    let events: Vec<Value> = (1..=10).map(|n| json!({ "type": "note", "payload": n })).collect();
    assert_eq!(push(served.addr, &format!("{NOTES}/push"), &json!({ "events": events })).await.status, 200);
    let mut late = Sse::open(served.addr, &format!("{NOTES}/stream"), &[("Last-Event-ID", "2")]).await;
    assert_eq!(
        push(served.addr, &format!("{NOTES}/push"), &json!({ "events": [{ "type": "note", "payload": 11 }] }))
            .await
            .status,
        200
    );
    for (name, follower, from) in [("early", &mut early, 1), ("alongside", &mut alongside, 1), ("late", &mut late, 3)] {
        let mut got = Vec::new();
        while got.len() < (12 - from) as usize {
            let frame = follower.next_event().await;
            assert_eq!(frame.data["payload"], json!(frame_index(&frame)), "{name}: {frame:?}");
            got.push(frame_index(&frame));
        }
        assert_eq!(got, (from..=11).collect::<Vec<u64>>(), "{name} got each event once, in order");
    }
}

/// A clear takes its events off the wire too: a client that resumes below
/// the boundary is not sent them, though the session's shared tail had them.
pub async fn cleared_events_are_never_streamed(store: Arc<dyn Store>) {
    let served = serve(store.clone()).await;
    let mut watching = Sse::open(served.addr, &format!("{NOTES}/stream"), &[]).await;
    let events: Vec<Value> = (1..=3).map(|n| json!({ "type": "note", "payload": n })).collect();
    assert_eq!(push(served.addr, &format!("{NOTES}/push"), &json!({ "events": events })).await.status, 200);
    for index in 1..=3 {
        assert_eq!(frame_index(&watching.next_event().await), index);
    }
    let other = Server::builder(notes(), store).run_in_background(false).build().unwrap_or_else(|e| panic!("{e}"));
    other.session("s-1").unwrap_or_else(|e| panic!("{e}")).clear(None).await.unwrap_or_else(|e| panic!("{e}"));
    let mut resumed = Sse::open(served.addr, &format!("{NOTES}/stream"), &[("Last-Event-ID", "1")]).await;
    assert_eq!(
        push(served.addr, &format!("{NOTES}/push"), &json!({ "events": [{ "type": "note", "payload": 4 }] }))
            .await
            .status,
        200
    );
    assert_eq!(frame_index(&resumed.next_event().await), 4, "events 2 and 3 were cleared");
    assert_eq!(frame_index(&watching.next_event().await), 4);
}

/// One client pushes events and presence; another, following the session
/// with the presence plane, gets the snapshot first, then each in order.
pub async fn pushed_events_and_presence_reach_another_stream(store: Arc<dyn Store>) {
    let served = serve(store).await;
    let mut follower = Sse::open(served.addr, &format!("{NOTES}/stream?presence=1"), &[]).await;
    let snapshot = follower.next().await.unwrap_or_else(|| panic!("no snapshot"));
    assert_eq!((snapshot.event.as_str(), &snapshot.data), ("presence", &json!({ "snapshot": {} })));

    let body = json!({
        "events": [{ "type": "note", "payload": "hello" }],
        "presence": { "participant": "ann", "values": { "cursor": 1 }, "at": 100 },
    });
    let answer = push(served.addr, &format!("{NOTES}/push"), &body).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    // The two planes interleave as they land; which of the two comes first is not promised.
    let mut frames = [follower.next().await, follower.next().await].map(|f| f.unwrap_or_else(|| panic!("ended")));
    frames.sort_by(|a, b| a.event.cmp(&b.event));
    let [event, patch] = frames;
    assert_eq!((event.event.as_str(), event.data["payload"].clone()), ("event", json!("hello")));
    assert_eq!(patch.event, "patch");
    assert_eq!(patch.id, None, "presence frames leave the resume point alone");
    assert_eq!(patch.data, json!({ "participant": "ann", "values": { "cursor": 1 }, "seen": 0, "at": 100 }));

    let typing = json!({ "presence": { "participant": "ann", "values": { "typing": true }, "at": 200, "seen": 1 } });
    assert_eq!(push(served.addr, &format!("{NOTES}/push"), &typing).await.status, 200);
    let patch = follower.next().await.unwrap_or_else(|| panic!("ended"));
    assert_eq!(patch.data, json!({ "participant": "ann", "values": { "typing": true }, "seen": 1, "at": 200 }));
    assert_eq!(
        push(served.addr, &format!("{NOTES}/push"), &json!({ "events": [{ "type": "note" }] })).await.status,
        200
    );
    assert_eq!(frame_index(&follower.next_event().await), 2);

    // A client that joins now is painted the map whole, then only new events.
    let mut late = Sse::open(served.addr, &format!("{NOTES}/stream?presence=1&startAfter=2"), &[]).await;
    let snapshot = late.next().await.unwrap_or_else(|| panic!("no snapshot"));
    assert_eq!(snapshot.data["snapshot"]["ann"]["cursor"], json!({ "value": 1, "seen": 0, "at": 100 }));
    assert_eq!(snapshot.data["snapshot"]["ann"]["typing"]["value"], json!(true));
    let delete = json!({ "presence": { "participant": "ann", "values": { "typing": null }, "at": 300 } });
    assert_eq!(push(served.addr, &format!("{NOTES}/push"), &delete).await.status, 200);
    let gone = late.next().await.unwrap_or_else(|| panic!("ended"));
    assert_eq!(gone.data["values"], json!({ "typing": null }));
}

/// Every refusal answers its status and code, and nothing of the push is
/// written: `validate_push` sees each plane before any write.
pub async fn push_refusals_write_nothing(store: Arc<dyn Store>) {
    let options = a2_http::WireOptions { body_limit: 4096, ..a2_http::WireOptions::default() };
    let served = serve_with(store, options).await;
    let url = format!("{NOTES}/push");
    let good = json!({ "type": "note", "payload": 1 });
    let cases = [
        (json!({ "events": [good, { "type": "note", "payload": { "secret": true } }] }), 403, "PUSH_REFUSED"),
        (
            json!({ "events": [good], "presence": { "participant": "mallory", "values": { "typing": true } } }),
            403,
            "PUSH_REFUSED",
        ),
        (
            json!({ "events": [good], "presence": { "participant": "ann", "values": { "cursor": "x" } } }),
            400,
            "INVALID_PAYLOAD",
        ),
        (
            json!({ "events": [good], "presence": { "participant": "ann", "values": { "mood": 1 } } }),
            400,
            "UNKNOWN_PRESENCE_FIELD",
        ),
        (
            json!({ "events": [good], "presence": { "participant": "*", "values": { "typing": true } } }),
            400,
            "INVALID_ARGUMENT",
        ),
        (json!({ "events": [good, { "type": "nope" }] }), 400, "UNKNOWN_EVENT_TYPE"),
        (json!({ "events": [good, { "type": "count", "payload": { "n": "one" } }] }), 400, "INVALID_PAYLOAD"),
        (
            json!({ "events": [good], "presence": { "participant": "ann", "values": {}, "at": -0.5 } }),
            400,
            "INVALID_PAYLOAD",
        ),
        // A good patch beside a bad event: neither is written.
        (
            json!({ "events": [{ "type": "nope" }], "presence": { "participant": "ann", "values": { "typing": true } } }),
            400,
            "UNKNOWN_EVENT_TYPE",
        ),
        (
            json!({ "events": [{ "type": "note", "payload": { "secret": true } }], "presence": { "participant": "ann", "values": { "typing": true } } }),
            403,
            "PUSH_REFUSED",
        ),
        (
            json!({ "events": [{ "type": "note", "id": "twice" }, { "type": "note", "id": "twice" }], "presence": { "participant": "ann", "values": { "typing": true } } }),
            409,
            "PARTIAL_DUPLICATE_BATCH",
        ),
    ];
    for (body, status, code) in cases {
        let answer = push(served.addr, &url, &body).await;
        assert_eq!((answer.status, answer.code()), (status, code.to_owned()), "{body}: {}", answer.body);
    }
    assert_eq!(history_len(served.addr, NOTES).await, 0, "no refused push wrote an event");
    let mut follower = Sse::open(served.addr, &format!("{NOTES}/stream?presence=1"), &[]).await;
    assert_eq!(follower.next().await.map(|f| f.data), Some(json!({ "snapshot": {} })), "no refused patch was written");

    // The validator saw one plane at a time: events alone, the patch alone.
    let seen = served.seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mallory = seen.iter().find(|c| c.presence.as_ref().is_some_and(|p| p.participant == "mallory"));
    assert!(mallory.is_some_and(|c| c.events.is_empty() && c.session_id == "s-1"), "{seen:?}");
    assert!(seen.iter().any(|c| c.presence.is_none() && c.events.len() == 2));

    let text = send(served.addr, "POST", &url, &[("Content-Type", "text/plain")], b"{}").await;
    assert_eq!((text.status, text.code()), (415, "UNSUPPORTED_MEDIA_TYPE".to_owned()));
    let big = json!({ "events": [{ "type": "note", "payload": "z".repeat(5000) }] });
    let answer = push(served.addr, &url, &big).await;
    assert_eq!((answer.status, answer.code()), (413, "PAYLOAD_TOO_LARGE".to_owned()));
    // A body of no declared length is cut off where it passes the limit.
    let chunked = super::client::chunked_push(served.addr, &url, big.to_string().as_bytes()).await;
    assert_eq!((chunked.status, chunked.code()), (413, "PAYLOAD_TOO_LARGE".to_owned()));
    let wrong = send(served.addr, "GET", &url, &[], b"").await;
    assert_eq!((wrong.status, wrong.code()), (405, "METHOD_NOT_ALLOWED".to_owned()));
    let garbled = get(served.addr, "/notes/sessions/%FF/history").await;
    assert_eq!((garbled.status, garbled.code()), (400, "INVALID_ARGUMENT".to_owned()));
    let answer = push(served.addr, "/nobody/sessions/s-1/push", &json!({ "events": [good] })).await;
    assert_eq!((answer.status, answer.code()), (404, "UNKNOWN_CONTRACT".to_owned()));
    let answer = push(served.addr, "/notes/sessions/a%1Fb/push", &json!({ "events": [good] })).await;
    assert_eq!((answer.status, answer.code()), (400, "INVALID_SESSION_ID".to_owned()));
    let answer =
        push(served.addr, "/plain/sessions/s-1/push", &json!({ "presence": { "participant": "ann", "values": {} } }))
            .await;
    assert_eq!((answer.status, answer.code()), (400, "PRESENCE_NOT_SUPPORTED".to_owned()));
    let answer = get(served.addr, "/notes/sessions/s-1/elsewhere").await;
    assert_eq!((answer.status, answer.code()), (404, "NOT_FOUND".to_owned()));
    assert_eq!(history_len(served.addr, NOTES).await, 0);
}

/// History pages through a session; state folds a reducer through an index.
pub async fn history_and_state_read_as_json(store: Arc<dyn Store>) {
    let served = serve(store).await;
    let events: Vec<Value> = (1..=5).map(|n| json!({ "type": "count", "payload": { "n": n } })).collect();
    assert_eq!(push(served.addr, &format!("{NOTES}/push"), &json!({ "events": events })).await.status, 200);

    let page = get(served.addr, &format!("{NOTES}/history?limit=2")).await.json();
    let indexes: Vec<u64> =
        page["events"].as_array().into_iter().flatten().filter_map(|e| e["index"].as_u64()).collect();
    assert_eq!((indexes, page["next"].clone()), (vec![1, 2], json!(3)));
    let page = get(served.addr, &format!("{NOTES}/history?gte=3&lte=4")).await.json();
    assert_eq!(page["events"].as_array().map(Vec::len), Some(2));
    assert_eq!(page["next"], Value::Null);
    let bad = get(served.addr, &format!("{NOTES}/history?gte=4&lte=3")).await;
    assert_eq!((bad.status, bad.code()), (400, "INVALID_ARGUMENT".to_owned()));

    assert_eq!(get(served.addr, &format!("{NOTES}/state")).await.json(), json!({ "state": 15, "index": 5 }));
    assert_eq!(get(served.addr, &format!("{NOTES}/state?through=2")).await.json(), json!({ "state": 3, "index": 2 }));
    let bad = get(served.addr, &format!("{NOTES}/state?reducer=nope")).await;
    assert_eq!((bad.status, bad.code()), (400, "UNKNOWN_REDUCER".to_owned()));
    let described = get(served.addr, "/notes").await.json();
    assert_eq!(described["presenceFields"], json!(["cursor", "typing"]));
    assert_eq!(described["reducers"], json!(["total"]));
}

/// The seeds' envelope as a newer client may send it: keys this server does
/// not know at every level (ignored, as the seeds do, not refused) and a
/// fractional `at` (a browser's clock), kept to the millisecond.
pub async fn push_accepts_seed_envelope_with_fractional_at_and_extra_keys(store: Arc<dyn Store>) {
    let served = serve(store).await;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let body = json!({
        "version": 2,
        "events": [{ "type": "note", "payload": "hi", "id": "n-1", "meta": { "trace": "t-1" } }],
        "presence": { "participant": "ann", "values": { "cursor": 3 }, "at": now as f64 + 0.75, "device": "phone" },
    });
    let answer = push(served.addr, &format!("{NOTES}/push"), &body).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.json()["events"][0]["id"], "n-1");
    assert_eq!(history_len(served.addr, NOTES).await, 1);
    let mut follower = Sse::open(served.addr, &format!("{NOTES}/stream?presence=1"), &[]).await;
    let snapshot = follower.next().await.unwrap_or_else(|| panic!("no snapshot"));
    assert_eq!(snapshot.data["snapshot"]["ann"]["cursor"], json!({ "value": 3, "seen": 0, "at": now }));
}

/// A stream that asks for presence on a contract that declares none is the
/// events plane alone, as the seeds serve it: no refusal, no snapshot frame.
pub async fn stream_without_presence_fields_serves_events(store: Arc<dyn Store>) {
    let served = serve(store).await;
    let plain = "/plain/sessions/s-1";
    let mut follower = Sse::open(served.addr, &format!("{plain}/stream?presence=1"), &[]).await;
    let answer =
        push(served.addr, &format!("{plain}/push"), &json!({ "events": [{ "type": "note", "payload": 1 }] })).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let first = follower.next().await.unwrap_or_else(|| panic!("the stream ended"));
    assert_eq!(first.event, "event", "events first, no presence snapshot: {first:?}");
    assert_eq!(frame_index(&first), 1);
}

/// DNS rebinding: a page of another site that reached a server bound to
/// 127.0.0.1 names its own host, and is refused (403 `FORBIDDEN_HOST`) on
/// every route; loopback names answer, and so do hosts the options name. A
/// push from a page of another origin is refused (403 `FORBIDDEN_ORIGIN`)
/// and writes nothing, unless the options name that origin.
pub async fn wire_refuses_a_foreign_host_header(store: Arc<dyn Store>) {
    let options = a2_http::WireOptions {
        allowed_hosts: vec!["app.example".into()],
        allowed_origins: vec!["https://web.example".into()],
        ..a2_http::WireOptions::default()
    };
    let served = serve_with(store, options).await;
    let url = format!("{NOTES}/push");
    let note = json!({ "events": [{ "type": "note" }] }).to_string();
    let json = ("Content-Type", "application/json");
    for host in
        ["evil.example", "evil.example:80", "127.0.0.1.evil.example", "app.example.evil", "[::1]x", "[::1].evil"]
    {
        let answer = send(served.addr, "GET", "/notes", &[("Host", host)], b"").await;
        assert_eq!((answer.status, answer.code()), (403, "FORBIDDEN_HOST".to_owned()), "{host}");
        let answer = send(served.addr, "POST", &url, &[("Host", host), json], note.as_bytes()).await;
        assert_eq!((answer.status, answer.code()), (403, "FORBIDDEN_HOST".to_owned()), "{host}");
        let answer = send(served.addr, "GET", &format!("{NOTES}/stream"), &[("Host", host)], b"").await;
        assert_eq!(answer.status, 403, "{host}: a stream too");
    }
    for host in
        ["127.0.0.1:8080", "localhost", "localhost.:80", "LOCALHOST:1", "[::1]:9", "app.example", "App.Example:443"]
    {
        let answer = send(served.addr, "GET", "/notes", &[("Host", host)], b"").await;
        assert_eq!(answer.status, 200, "{host}: {}", answer.body);
    }
    assert_eq!(history_len(served.addr, NOTES).await, 0, "no refused push wrote an event");
    for origin in ["http://evil.example", "null", "http://localhost"] {
        let headers = [("Host", "127.0.0.1"), ("Origin", origin), json];
        let answer = send(served.addr, "POST", &url, &headers, note.as_bytes()).await;
        assert_eq!((answer.status, answer.code()), (403, "FORBIDDEN_ORIGIN".to_owned()), "{origin}");
    }
    assert_eq!(history_len(served.addr, NOTES).await, 0, "no cross-origin push wrote an event");
    for (host, origin) in [("127.0.0.1:4000", "http://127.0.0.1:4000"), ("app.example", "https://web.example")] {
        let headers = [("Host", host), ("Origin", origin), json];
        let answer = send(served.addr, "POST", &url, &headers, note.as_bytes()).await;
        assert_eq!(answer.status, 200, "{host} from {origin}: {}", answer.body);
    }
    assert_eq!(history_len(served.addr, NOTES).await, 2);
}

/// One client (a peer address) holds at most `max_streams_per_client`
/// streams (429 `TOO_MANY_STREAMS`) while another client still gets one, up
/// to `max_streams` in all (503); a client's place comes back when it goes.
pub async fn one_client_cannot_take_every_stream(store: Arc<dyn Store>) {
    use std::net::Ipv4Addr;
    let options = a2_http::WireOptions {
        max_streams: 3,
        max_streams_per_client: 2,
        // A gone client is noticed at its next ping's write.
        keep_alive: std::time::Duration::from_millis(50),
        ..a2_http::WireOptions::default()
    };
    let served = serve_with(store, options).await;
    let path = format!("{NOTES}/stream");
    let (one, other, third) = (Ipv4Addr::new(127, 0, 0, 1), Ipv4Addr::new(127, 0, 0, 2), Ipv4Addr::new(127, 0, 0, 3));
    let first = Sse::open_from(Some(one), served.addr, &path, &[]).await;
    let second = Sse::open_from(Some(one), served.addr, &path, &[]).await;
    assert_eq!((first.status, second.status), (200, 200));
    let mut refused = Sse::open_from(Some(one), served.addr, &path, &[]).await;
    assert_eq!(refused.status, 429, "{}", refused.headers);
    let body = refused.body().await;
    assert!(body.contains("TOO_MANY_STREAMS") && body.contains("at most 2"), "{body}");
    let elsewhere = Sse::open_from(Some(other), served.addr, &path, &[]).await;
    assert_eq!(elsewhere.status, 200, "another client is not held up by the first");
    let full = Sse::open_from(Some(third), served.addr, &path, &[]).await;
    assert_eq!(full.status, 503, "three streams in all: {}", full.headers);
    // The first client lets one go: its place (and the total's) comes back once the server notices.
    drop(first);
    let mut again = None;
    for _ in 0..200 {
        let tried = Sse::open_from(Some(one), served.addr, &path, &[]).await;
        if tried.status == 200 {
            again = Some(tried);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(again.is_some(), "a closed stream gives its client's place back");
    drop((second, elsewhere, full));
}

/// What one client may ask is bounded, each bound with its typed refusal and
/// nothing written: a session id of more than `MAX_SESSION_ID` characters
/// (400 `INVALID_SESSION_ID`), a push of more than `MAX_PUSHED_EVENTS`
/// events (413 `TOO_LARGE`), and a `/state` past `state_chars` (413).
pub async fn push_bounds_ids_events_and_sizes(store: Arc<dyn Store>) {
    let options = a2_http::WireOptions { state_chars: 3, ..a2_http::WireOptions::default() };
    let served = serve_with(store, options).await;
    let note = json!({ "events": [{ "type": "note" }] });
    let longest = "s".repeat(a2_http::MAX_SESSION_ID);
    let answer = push(served.addr, &format!("/notes/sessions/{longest}/push"), &note).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let over = format!("{longest}x");
    for path in [format!("/notes/sessions/{over}/push"), format!("/notes/sessions/{over}/history")] {
        let answer =
            if path.ends_with("push") { push(served.addr, &path, &note).await } else { get(served.addr, &path).await };
        assert_eq!((answer.status, answer.code()), (400, "INVALID_SESSION_ID".to_owned()), "{path}");
    }
    let events = |n: usize| json!({ "events": vec![json!({ "type": "count", "payload": { "n": 1 } }); n] });
    let answer = push(served.addr, &format!("{NOTES}/push"), &events(a2_http::MAX_PUSHED_EVENTS + 1)).await;
    assert_eq!((answer.status, answer.code()), (413, "TOO_LARGE".to_owned()));
    assert_eq!(history_len(served.addr, NOTES).await, 0, "a refused push wrote nothing");
    let answer = push(served.addr, &format!("{NOTES}/push"), &events(999)).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    // The total is 999: three characters of JSON, at the bound. One more is past it.
    let answer = get(served.addr, &format!("{NOTES}/state?reducer=total")).await;
    assert_eq!((answer.status, answer.json()["state"].clone()), (200, json!(999)), "{}", answer.body);
    assert_eq!(push(served.addr, &format!("{NOTES}/push"), &events(1)).await.status, 200);
    let answer = get(served.addr, &format!("{NOTES}/state?reducer=total")).await;
    assert_eq!((answer.status, answer.code()), (413, "TOO_LARGE".to_owned()), "{}", answer.body);
}
