use a2_engine::A2Error;
use a2_store::StoreError;

/// What an operator call can refuse or fail with. `code()` is what the UI
/// and scripts branch on; `exit_code()` is the CLI's.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum OperatorError {
    /// `why`: the connection is read-only, or what makes it so (a read replica).
    #[error("refused: {action} changes the store, and {why}")]
    ReadOnly { action: String, why: String },
    #[error("not found: {what}")]
    NotFound { what: String },
    #[error("invalid: {message}")]
    Invalid { message: String },
    /// A live attempt holds what the action would move; it may succeed once that attempt ends.
    #[error("busy: {what}")]
    Busy { what: String },
    /// The demo seeds only an empty store or one it seeded before: its
    /// consumers would run on any `shop` sessions a real store holds.
    #[error("refused: {why}")]
    NotADemoStore { why: String },
    #[error("{0}")]
    Store(StoreError),
    #[error("{0}")]
    Engine(A2Error),
}

impl OperatorError {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid { message: message.into() }
    }

    pub fn code(&self) -> &'static str {
        match self {
            Self::ReadOnly { .. } => "READ_ONLY",
            Self::NotFound { .. } => "NOT_FOUND",
            Self::Invalid { .. } => "INVALID_INPUT",
            Self::Busy { .. } => "CONSUMER_BUSY",
            Self::NotADemoStore { .. } => "NOT_A_DEMO_STORE",
            Self::Store(e) => e.code(),
            Self::Engine(e) => e.code(),
        }
    }

    /// Whether the same call may succeed later unchanged: the store's or
    /// the engine's own answer, carried through unchanged.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Store(e) => e.is_retryable(),
            Self::Engine(e) => e.is_retryable(),
            Self::Busy { .. } => true,
            Self::ReadOnly { .. } | Self::NotFound { .. } | Self::Invalid { .. } | Self::NotADemoStore { .. } => false,
        }
    }

    /// 1 error, 2 usage, 3 refused because read-only, 4 not found.
    pub fn exit_code(&self) -> u8 {
        exit_code(self.code())
    }
}

impl From<StoreError> for OperatorError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::ReadOnly { message } => Self::ReadOnly { action: "this write".into(), why: message },
            StoreError::NotFound { what } => Self::NotFound { what },
            StoreError::Invalid { message } => Self::Invalid { message },
            other => Self::Store(other),
        }
    }
}

impl From<A2Error> for OperatorError {
    fn from(error: A2Error) -> Self {
        match error {
            A2Error::Store(store) => store.into(),
            other => Self::Engine(other),
        }
    }
}

/// The CLI's exit code for an error code, wherever the error came from:
/// 1 error, 2 usage, 3 refused because read-only, 4 not found.
pub fn exit_code(code: &str) -> u8 {
    match code {
        "READ_ONLY" => 3,
        "NOT_FOUND" => 4,
        "INVALID_INPUT" | "INVALID_ARGUMENT" | "INVALID_CONSUMER" | "INVALID_SESSION_ID" => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Retryability crosses every layer unchanged: the store decides it, the
    /// engine and the operator carry it.
    #[test]
    fn errors_keep_their_retryability_across_layers() {
        for retryable in [true, false] {
            let store = StoreError::Unavailable { message: "connection lost".into(), retryable };
            let engine = A2Error::from(store.clone());
            assert_eq!(engine.code(), "STORE_UNAVAILABLE");
            assert_eq!(engine.is_retryable(), retryable);
            assert_eq!(OperatorError::from(engine).is_retryable(), retryable);
            assert_eq!(OperatorError::from(store).is_retryable(), retryable);
        }
        let superseded = A2Error::SupersededAttempt { consumer: "c".into(), session: "s".into(), index: 1 };
        assert!(!OperatorError::from(superseded).is_retryable());
        assert!(!OperatorError::ReadOnly { action: "redrive".into(), why: "it is read-only".into() }.is_retryable());
    }
}
