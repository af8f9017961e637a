use a2_operator::OperatorError;
use serde::{Deserialize, Serialize};

/// Every code a Studio command can fail with, from every layer, and the two
/// a client's transport adds: one list, so the UI's union type is generated
/// from it and the UI branches on no code of its own invention.
macro_rules! error_codes {
    ($( $(#[$doc:meta])* $variant:ident = $code:literal, )*) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, specta::Type)]
        pub enum ErrorCode {
            $( $(#[$doc])* #[serde(rename = $code)] $variant, )*
        }

        impl ErrorCode {
            pub const ALL: &'static [ErrorCode] = &[$(Self::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $code,)*
                }
            }

            /// The code a layer below gave as text; `None` for one this list lacks.
            pub fn parse(code: &str) -> Option<Self> {
                match code {
                    $($code => Some(Self::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

error_codes! {
    // the operator and the Studio
    ReadOnly = "READ_ONLY",
    NotFound = "NOT_FOUND",
    InvalidInput = "INVALID_INPUT",
    NotConnected = "NOT_CONNECTED",
    Unauthorized = "UNAUTHORIZED",
    Unavailable = "UNAVAILABLE",
    Internal = "INTERNAL",
    KeychainUnavailable = "KEYCHAIN_UNAVAILABLE",
    ProfilesUnreadable = "PROFILES_UNREADABLE",
    ProfilesUnwritable = "PROFILES_UNWRITABLE",
    /// This Studio process may not open that store (web mode opens its own store and saved profiles only).
    Forbidden = "FORBIDDEN",
    // the store
    StoreUnavailable = "STORE_UNAVAILABLE",
    StoreTimeout = "STORE_TIMEOUT",
    SchemaMismatch = "SCHEMA_MISMATCH",
    PartialDuplicateBatch = "PARTIAL_DUPLICATE_BATCH",
    NotAnA2Store = "NOT_AN_A2_STORE",
    TlsFailed = "TLS_FAILED",
    /// Another server took the upkeep lease: this one's refresh wrote nothing.
    UpkeepLeaseLost = "UPKEEP_LEASE_LOST",
    // the engine
    UnknownEventType = "UNKNOWN_EVENT_TYPE",
    InvalidPayload = "INVALID_PAYLOAD",
    InvalidEventId = "INVALID_EVENT_ID",
    InvalidSessionId = "INVALID_SESSION_ID",
    InvalidConsumer = "INVALID_CONSUMER",
    InvalidContract = "INVALID_CONTRACT",
    UnknownConsumer = "UNKNOWN_CONSUMER",
    UnknownReducer = "UNKNOWN_REDUCER",
    InvalidArgument = "INVALID_ARGUMENT",
    StoreNotConfigured = "STORE_NOT_CONFIGURED",
    SupersededAttempt = "SUPERSEDED_ATTEMPT",
    ClaimExpired = "CLAIM_EXPIRED",
    ConsumerDeadLettered = "CONSUMER_DEAD_LETTERED",
    ConsumerPaused = "CONSUMER_PAUSED",
    /// A live attempt holds the cursor an acknowledgement would move.
    ConsumerBusy = "CONSUMER_BUSY",
    /// The demo seeds only an empty store or one it seeded before.
    NotADemoStore = "NOT_A_DEMO_STORE",
    SessionCleared = "SESSION_CLEARED",
    ConsumeCycle = "CONSUME_CYCLE",
    Cancelled = "CANCELLED",
    /// A drain's task panicked (a bug, not the store); the rescuer drains the session again.
    DrainPanicked = "DRAIN_PANICKED",
    /// `session.schedule`'s scheduler did not take the task: nothing was scheduled.
    SchedulerSendFailed = "SCHEDULER_SEND_FAILED",
    /// A presence patch names a field its contract does not declare.
    UnknownPresenceField = "UNKNOWN_PRESENCE_FIELD",
    /// Presence on a contract that declares no presence fields.
    PresenceNotSupported = "PRESENCE_NOT_SUPPORTED",
    /// A server's `validate_push` refused a push; nothing of it was written.
    PushRefused = "PUSH_REFUSED",
    /// A client's transport: the Studio server did not answer, or not in JSON.
    Transport = "TRANSPORT",
    /// A client's: something failed that was not a Studio error at all.
    Unexpected = "UNEXPECTED",
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What every command fails with: a stable `code` the UI branches on, a
/// message for a person, and whether trying again could help.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub retryable: bool,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), retryable: false }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidInput, message)
    }

    /// The CLI's exit code for this error (1 error, 2 usage, 3 read-only, 4 not found).
    pub fn exit_code(&self) -> u8 {
        a2_operator::exit_code(self.code.as_str())
    }

    pub fn not_connected() -> Self {
        Self::new(ErrorCode::NotConnected, "no store is open: connect to one first")
    }
}

impl From<OperatorError> for ApiError {
    fn from(error: OperatorError) -> Self {
        let retryable = error.is_retryable();
        match ErrorCode::parse(error.code()) {
            Some(code) => Self { code, message: error.to_string(), retryable },
            // A layer below grew a code this list lacks (the test below guards against it).
            None => Self { code: ErrorCode::Internal, message: format!("{} ({})", error, error.code()), retryable },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2_engine::A2Error;
    use a2_store::StoreError;

    /// One error of every kind each layer has, so a code added below without
    /// being added here fails this test instead of crossing as INTERNAL.
    #[test]
    fn every_layers_code_crosses_as_itself() {
        let text = || String::from("x");
        let store = [
            StoreError::Unavailable { message: text(), retryable: true },
            StoreError::PartialDuplicateBatch { session: text(), ids: text() },
            StoreError::Invalid { message: text() },
            StoreError::NotFound { what: text() },
            StoreError::ReadOnly { message: text() },
            StoreError::Schema { message: text() },
            StoreError::Timeout { message: text() },
            StoreError::SessionCleared { session: text(), index: 1 },
            StoreError::UpkeepLeaseLost { scope: text(), owner: text(), generation: 1 },
        ];
        let engine = [
            A2Error::UnknownEventType { contract: text(), event_type: text() },
            A2Error::InvalidPayload { event_type: text(), message: text() },
            A2Error::InvalidEventId { id: text(), reason: text() },
            A2Error::InvalidSessionId { id: text(), reason: text() },
            A2Error::InvalidConsumer { message: text() },
            A2Error::InvalidContract { message: text() },
            A2Error::UnknownConsumer { consumer: text() },
            A2Error::UnknownReducer { contract: text(), reducer: text() },
            A2Error::InvalidArgument { message: text() },
            A2Error::StoreNotConfigured { environment: text(), message: text() },
            A2Error::SupersededAttempt { consumer: text(), session: text(), index: 1 },
            A2Error::ClaimExpired { consumer: text(), session: text(), index: 1 },
            A2Error::ConsumerDeadLettered { consumer: text(), session: text(), index: 1, last_error: text() },
            A2Error::ConsumerPaused { consumer: text(), session: text() },
            A2Error::SessionCleared { session: text(), index: 1 },
            A2Error::ConsumeCycle { waiter: text(), consumer: text(), session: text(), through: 1 },
            A2Error::Cancelled { message: text() },
            A2Error::DrainPanicked { session: text(), message: text() },
            A2Error::SchedulerSendFailed { task: text(), message: text() },
            A2Error::UnknownPresenceField { contract: text(), field: text() },
            A2Error::InvalidPresenceValue { contract: text(), field: text(), message: text() },
            A2Error::PresenceNotSupported { contract: text() },
            A2Error::PushRefused { session: text(), message: text() },
        ];
        let operator =
            store.into_iter().map(OperatorError::from).chain(engine.into_iter().map(OperatorError::from)).chain([
                OperatorError::ReadOnly { action: text(), why: text() },
                OperatorError::invalid("x"),
                OperatorError::Busy { what: text() },
                OperatorError::NotADemoStore { why: text() },
            ]);
        for error in operator {
            let code = error.code();
            assert_eq!(ApiError::from(error).code.as_str(), code);
        }
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(code.as_str()), Some(*code));
        }
    }
}
