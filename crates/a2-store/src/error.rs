/// Everything a store can refuse or fail with. Each variant has a stable code
/// the engine, the UI and the CLI branch on, and says whether trying again
/// later can succeed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The backend could not be reached or failed mid-operation.
    #[error("store unavailable: {message}")]
    Unavailable { message: String, retryable: bool },
    /// A batch mixed ids already in the session with new ones (or repeated an id).
    #[error("batch for session '{session}' mixes new events with ids already present ({ids})")]
    PartialDuplicateBatch { session: String, ids: String },
    /// A parameter was malformed (empty id, bad page size, …).
    #[error("invalid input: {message}")]
    Invalid { message: String },
    /// The store holds nothing under that name.
    #[error("not found: {what}")]
    NotFound { what: String },
    /// The connection is read-only.
    #[error("the store is read-only: {message}")]
    ReadOnly { message: String },
    /// A statement ran past its timeout and was cancelled.
    #[error("store timeout: {message}")]
    Timeout { message: String },
    /// The store's schema does not fit this binary.
    #[error("schema mismatch: {message}")]
    Schema { message: String },
    /// The database or file holds something else: it is left untouched.
    #[error("not an A2 store: {message}")]
    NotAStore { message: String },
    /// The connection's TLS was refused or failed: no plain-text fallback is tried.
    #[error("session '{session}' was cleared through index {index}: the run whose event it cleared may not append")]
    SessionCleared { session: String, index: u64 },
    #[error("TLS: {message}")]
    Tls { message: String },
    /// The upkeep lease this write was fenced by has moved on: another
    /// server leads now, and this one's upkeep wrote nothing.
    #[error("the upkeep lease of '{scope}' is no longer held by '{owner}' at generation {generation}")]
    UpkeepLeaseLost { scope: String, owner: String, generation: u64 },
}

impl StoreError {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid { message: message.into() }
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::Unavailable { message: message.into(), retryable: true }
    }

    pub fn not_found(what: impl Into<String>) -> Self {
        Self::NotFound { what: what.into() }
    }

    /// The stable code of the seeds and the operator API.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Unavailable { .. } => "STORE_UNAVAILABLE",
            Self::PartialDuplicateBatch { .. } => "PARTIAL_DUPLICATE_BATCH",
            Self::Invalid { .. } => "INVALID_INPUT",
            Self::NotFound { .. } => "NOT_FOUND",
            Self::ReadOnly { .. } => "READ_ONLY",
            Self::Schema { .. } => "SCHEMA_MISMATCH",
            Self::Timeout { .. } => "STORE_TIMEOUT",
            Self::NotAStore { .. } => "NOT_AN_A2_STORE",
            Self::Tls { .. } => "TLS_FAILED",
            Self::SessionCleared { .. } => "SESSION_CLEARED",
            Self::UpkeepLeaseLost { .. } => "UPKEEP_LEASE_LOST",
        }
    }

    /// Whether the same call may succeed later without any change.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable { retryable: true, .. } | Self::Timeout { .. })
    }
}
