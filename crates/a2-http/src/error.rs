//! Errors on the wire: an HTTP status and `{ "error": { "code", "message",
//! "retryable" } }`, with the engine's stable codes, so a client branches on
//! the code and retries only what says it may succeed later.

use a2_engine::A2Error;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// A refusal or failure as a client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    pub status: StatusCode,
    pub code: String,
    pub message: String,
    pub retryable: bool,
}

impl WireError {
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        Self { status, code: code.to_owned(), message: message.into(), retryable: false }
    }

    pub fn invalid_payload(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "INVALID_PAYLOAD", message)
    }

    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", message)
    }

    /// The JSON body, also sent as an SSE `error` frame when a stream fails.
    pub fn body(&self) -> serde_json::Value {
        json!({ "error": { "code": self.code, "message": self.message, "retryable": self.retryable } })
    }
}

/// The status a code answers with: the caller's mistake (400), a refusal by
/// policy (403), a conflict with what is stored (409), a store that may
/// answer later (503); anything else is the server's fault (500).
pub fn error_status(code: &str, retryable: bool) -> StatusCode {
    match code {
        "INVALID_PAYLOAD"
        | "UNKNOWN_EVENT_TYPE"
        | "UNKNOWN_PRESENCE_FIELD"
        | "INVALID_EVENT_ID"
        | "INVALID_SESSION_ID"
        | "INVALID_ARGUMENT"
        | "UNKNOWN_REDUCER"
        | "PRESENCE_NOT_SUPPORTED"
        | "INVALID_INPUT" => StatusCode::BAD_REQUEST,
        "PUSH_REFUSED" | "READ_ONLY" => StatusCode::FORBIDDEN,
        "PARTIAL_DUPLICATE_BATCH" | "SESSION_CLEARED" => StatusCode::CONFLICT,
        "NOT_FOUND" => StatusCode::NOT_FOUND,
        _ if retryable => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl From<A2Error> for WireError {
    fn from(error: A2Error) -> Self {
        let code = error.code();
        let retryable = error.is_retryable();
        let status = error_status(code, retryable);
        // A store's own words can name hosts and SQL: a client is told what
        // kind of failure it was, the server's log gets the rest.
        let message = match status {
            StatusCode::INTERNAL_SERVER_ERROR => {
                tracing::error!(code, %error, "a wire request failed");
                "the server failed to answer; its log says why".to_owned()
            }
            StatusCode::SERVICE_UNAVAILABLE => {
                tracing::warn!(code, %error, "a wire request met an unavailable store");
                "the store is unavailable for now; try again".to_owned()
            }
            _ => error.to_string(),
        };
        Self { status, code: code.to_owned(), message, retryable }
    }
}

impl IntoResponse for WireError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        if self.retryable {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}
