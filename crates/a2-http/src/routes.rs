//! The route handlers: each reads its request, calls the session, and
//! answers JSON; no rule of A2's lives here.

use std::collections::HashMap;
use std::sync::Arc;

use a2_engine::{Server, Session};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Json, Router};
use http_body_util::BodyExt;
use serde_json::{json, Value};

use crate::envelope::parse_push_body;
use crate::error::WireError;
use crate::wire::event_to_wire;
use crate::Wire;

/// The longest session id a route takes (in characters): ids are keys of
/// every index, and Postgres's index rows have a limit.
pub const MAX_SESSION_ID: usize = 256;

/// The most events one history page answers.
pub const HISTORY_LIMIT: usize = 1000;

/// A history page stops once its payloads reach this much JSON text
/// (`next` says where to go on), so one answer stays a few MiB.
pub const HISTORY_CHARS: usize = 4 * 1024 * 1024;

pub(crate) fn routes(wire: Arc<Wire>) -> Router {
    Router::new()
        .route("/{contract}", get(describe))
        .route("/{contract}/sessions/{id}/push", post(push))
        .route("/{contract}/sessions/{id}/stream", get(crate::stream::stream))
        .route("/{contract}/sessions/{id}/history", get(history))
        .route("/{contract}/sessions/{id}/state", get(state))
        .fallback(|| async {
            WireError::new(StatusCode::NOT_FOUND, "NOT_FOUND", "no such route: see the a2-http crate's routes")
        })
        .method_not_allowed_fallback(|| async {
            WireError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "METHOD_NOT_ALLOWED",
                "push is POST; the other routes are GET",
            )
        })
        .layer(axum::middleware::from_fn_with_state(wire.clone(), crate::hosts::guard))
        .with_state(wire)
}

pub(crate) type SessionPath = Result<Path<(String, String)>, PathRejection>;

/// The contract and session of a path, or a JSON refusal (a path that is
/// not UTF-8 once decoded would otherwise answer axum's plain text).
fn session_path(path: SessionPath) -> Result<(String, String), WireError> {
    path.map(|Path(ids)| ids).map_err(|e| WireError::invalid_argument(format!("the path does not name a session: {e}")))
}

/// The server and session a route's path names, or why there is none.
pub(crate) fn session_of(wire: &Wire, path: SessionPath) -> Result<(&Server, Session), WireError> {
    let (contract, id) = session_path(path)?;
    let server = wire.server(&contract)?;
    let chars = id.chars().count();
    if chars > MAX_SESSION_ID {
        return Err(WireError::new(
            StatusCode::BAD_REQUEST,
            "INVALID_SESSION_ID",
            format!("a session id is at most {MAX_SESSION_ID} characters, not {chars}"),
        ));
    }
    Ok((server, server.session(&id)?))
}

pub(crate) type Params = Query<HashMap<String, String>>;

/// A query parameter as an index, or a typed refusal naming it.
pub(crate) fn index_param(params: &HashMap<String, String>, name: &str) -> Result<Option<u64>, WireError> {
    params
        .get(name)
        .map(|text| {
            text.parse::<u64>().map_err(|_| {
                WireError::invalid_argument(format!("{name} must be a non-negative integer, not {text:?}"))
            })
        })
        .transpose()
}

async fn describe(State(wire): State<Arc<Wire>>, Path(contract): Path<String>) -> Result<Json<Value>, WireError> {
    let contract = wire.server(&contract)?.contract();
    Ok(Json(json!({
        "name": contract.name(),
        "eventTypes": contract.event_types().collect::<Vec<_>>(),
        "presenceFields": contract.presence_fields().collect::<Vec<_>>(),
        "reducers": contract.reducer_names().collect::<Vec<_>>(),
    })))
}

async fn push(State(wire): State<Arc<Wire>>, path: SessionPath, request: Request) -> Result<Json<Value>, WireError> {
    let (_, session) = session_of(&wire, path)?;
    // JSON only: a cross-site form cannot send it without the browser asking first.
    let json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json")));
    if !json {
        return Err(WireError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UNSUPPORTED_MEDIA_TYPE",
            "a push is sent as Content-Type: application/json",
        ));
    }
    let body = read_body(request, wire.options.body_limit).await?;
    let push = parse_push_body(&body)?;
    let appended = session.push(push).await?;
    Ok(Json(json!({ "events": appended.iter().map(event_to_wire).collect::<Vec<_>>() })))
}

/// The body, refused unread past `limit` bytes (413) so a client cannot make
/// the server hold an arbitrary amount.
async fn read_body(request: Request, limit: usize) -> Result<Vec<u8>, WireError> {
    let too_large = || {
        WireError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
            format!("a push body is at most {limit} bytes; send fewer events at a time"),
        )
    };
    let declared = request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(too_large());
    }
    match http_body_util::Limited::new(request.into_body(), limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes().to_vec()),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(error) => Err(WireError::invalid_payload(format!("the push body could not be read: {error}"))),
    }
}

async fn history(
    State(wire): State<Arc<Wire>>,
    path: SessionPath,
    Query(params): Params,
) -> Result<Json<Value>, WireError> {
    let (_, session) = session_of(&wire, path)?;
    let gte = index_param(&params, "gte")?;
    let lte = index_param(&params, "lte")?;
    if let (Some(gte), Some(lte)) = (gte, lte) {
        if gte > lte {
            return Err(WireError::invalid_argument("gte must be less than or equal to lte"));
        }
    }
    let limit = index_param(&params, "limit")?.map_or(HISTORY_LIMIT, |l| (l as usize).clamp(1, HISTORY_LIMIT));
    let mut events = session.history(a2_engine::EventRange { gte, lte })?;
    let (mut page, mut chars, mut next) = (Vec::new(), 0, None);
    while let Some(event) = events.next().await? {
        if page.len() == limit || chars >= HISTORY_CHARS {
            next = Some(event.index);
            break;
        }
        chars += event.payload.to_string().len();
        page.push(event_to_wire(&event));
    }
    Ok(Json(json!({ "events": page, "next": next })))
}

async fn state(
    State(wire): State<Arc<Wire>>,
    path: SessionPath,
    Query(params): Params,
) -> Result<Json<Value>, WireError> {
    let (server, session) = session_of(&wire, path)?;
    let reducers: Vec<&str> = server.contract().reducer_names().collect();
    let reducer = match (params.get("reducer"), reducers.as_slice()) {
        (Some(reducer), _) => reducer.as_str(),
        (None, [only]) => only,
        (None, _) => {
            return Err(WireError::invalid_argument(format!(
                "name the reducer: reducer=… (this contract has: {})",
                reducers.join(", ")
            )))
        }
    };
    let through = match params.get("through").map(String::as_str) {
        None | Some("latest") => None,
        Some(_) => index_param(&params, "through")?,
    };
    let state = session.state(reducer, through).await?;
    let chars = state.state.to_string().chars().count();
    if chars > wire.options.state_chars {
        return Err(WireError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "TOO_LARGE",
            format!(
                "the state of '{reducer}' is {chars} characters of JSON; this route answers at most {}",
                wire.options.state_chars
            ),
        ));
    }
    Ok(Json(json!({ "state": state.state, "index": state.index })))
}

pub(crate) fn with_header(mut response: Response, name: &'static str, value: &'static str) -> Response {
    response.headers_mut().insert(name, axum::http::HeaderValue::from_static(value));
    response
}
