use a2_operator::OperatorError;
use serde::{Deserialize, Serialize};

/// What every command fails with: a stable `code` the UI branches on
/// (`READ_ONLY`, `NOT_FOUND`, `INVALID_INPUT`, `NOT_CONNECTED`, the store's
/// and engine's codes…), a message for a person, and whether trying again
/// could help.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    pub code: String,
    pub message: String,
    pub retryable: bool,
}

impl ApiError {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self { code: code.to_owned(), message: message.into(), retryable: false }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new("INVALID_INPUT", message)
    }

    pub fn not_connected() -> Self {
        Self::new("NOT_CONNECTED", "no store is open: connect to one first")
    }
}

impl From<OperatorError> for ApiError {
    fn from(error: OperatorError) -> Self {
        Self { code: error.code().to_owned(), message: error.to_string(), retryable: error.is_retryable() }
    }
}
