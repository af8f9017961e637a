use a2_store::StoreError;

/// Everything the engine refuses or fails with. `code()` is stable (the
/// seeds' codes) so the UI and the CLI can branch on it; messages name the
/// consumer, session and index involved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum A2Error {
    #[error("contract '{contract}' has no event type '{event_type}'")]
    UnknownEventType { contract: String, event_type: String },
    #[error("payload of '{event_type}' is invalid: {message}")]
    InvalidPayload { event_type: String, message: String },
    #[error("event id {id:?} is invalid: {reason}")]
    InvalidEventId { id: String, reason: String },
    #[error("session id {id:?} is invalid: {reason}")]
    InvalidSessionId { id: String, reason: String },
    #[error("invalid consumer: {message}")]
    InvalidConsumer { message: String },
    #[error("invalid contract: {message}")]
    InvalidContract { message: String },
    #[error("this server runs no consumer named '{consumer}'")]
    UnknownConsumer { consumer: String },
    #[error("contract '{contract}' has no reducer named '{reducer}'")]
    UnknownReducer { contract: String, reducer: String },
    #[error("invalid argument: {message}")]
    InvalidArgument { message: String },
    #[error("no store is configured for {environment}: {message}")]
    StoreNotConfigured { environment: String, message: String },
    #[error("a newer attempt owns event {index} for consumer '{consumer}' in session '{session}'")]
    SupersededAttempt { consumer: String, session: String, index: u64 },
    #[error("the claim on event {index} for consumer '{consumer}' in session '{session}' lapsed without renewal")]
    ClaimExpired { consumer: String, session: String, index: u64 },
    #[error("consumer '{consumer}' is dead-lettered at event {index} in session '{session}': {last_error}")]
    ConsumerDeadLettered { consumer: String, session: String, index: u64, last_error: String },
    #[error(
        "consumer '{consumer}' is paused store-wide, so nothing moves it in session '{session}' until it is resumed"
    )]
    ConsumerPaused { consumer: String, session: String },
    #[error("session '{session}' was cleared through {index}")]
    SessionCleared { session: String, index: u64 },
    #[error("consumer '{waiter}' can't consume '{consumer}' through {through}: '{consumer}' is waiting on it in session '{session}'")]
    ConsumeCycle { waiter: String, consumer: String, session: String, through: u64 },
    #[error("cancelled: {message}")]
    Cancelled { message: String },
    /// A drain's own task panicked: a bug in the engine (a run's panic is a
    /// failed attempt, a lane function's an `INVALID_CONSUMER`), not the
    /// store's failure; the rescuer drains the session again.
    #[error("the drain of session '{session}' panicked: {message}")]
    DrainPanicked { session: String, message: String },
    /// The scheduler did not take a task (`session.schedule`): nothing was
    /// scheduled, and the caller can tell this from a store error on the log.
    #[error("the scheduler did not take task '{task}': {message}")]
    SchedulerSendFailed { task: String, message: String },
    /// A presence patch names a field the contract does not declare.
    #[error("contract '{contract}' has no presence field '{field}'")]
    UnknownPresenceField { contract: String, field: String },
    /// A presence value its field's check refuses (the seeds' `INVALID_PAYLOAD`).
    #[error("invalid value for presence field '{field}' on machine '{contract}': {message}")]
    InvalidPresenceValue { contract: String, field: String, message: String },
    /// Presence on a contract that declares no presence fields.
    #[error("contract '{contract}' declares no presence fields, so its sessions have no presence")]
    PresenceNotSupported { contract: String },
    /// The server's `validate_push` refused a push: nothing of it was written.
    #[error("the push to session '{session}' was refused: {message}")]
    PushRefused { session: String, message: String },
    /// The store's own error, its code and retryability unchanged.
    #[error("{0}")]
    Store(StoreError),
}

impl A2Error {
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnknownEventType { .. } => "UNKNOWN_EVENT_TYPE",
            Self::InvalidPayload { .. } | Self::InvalidPresenceValue { .. } => "INVALID_PAYLOAD",
            Self::UnknownPresenceField { .. } => "UNKNOWN_PRESENCE_FIELD",
            Self::PresenceNotSupported { .. } => "PRESENCE_NOT_SUPPORTED",
            Self::PushRefused { .. } => "PUSH_REFUSED",
            Self::InvalidEventId { .. } => "INVALID_EVENT_ID",
            Self::InvalidSessionId { .. } => "INVALID_SESSION_ID",
            Self::InvalidConsumer { .. } => "INVALID_CONSUMER",
            Self::InvalidContract { .. } => "INVALID_CONTRACT",
            Self::UnknownConsumer { .. } => "UNKNOWN_CONSUMER",
            Self::UnknownReducer { .. } => "UNKNOWN_REDUCER",
            Self::InvalidArgument { .. } => "INVALID_ARGUMENT",
            Self::StoreNotConfigured { .. } => "STORE_NOT_CONFIGURED",
            Self::SupersededAttempt { .. } => "SUPERSEDED_ATTEMPT",
            Self::ClaimExpired { .. } => "CLAIM_EXPIRED",
            Self::ConsumerDeadLettered { .. } => "CONSUMER_DEAD_LETTERED",
            Self::ConsumerPaused { .. } => "CONSUMER_PAUSED",
            Self::SessionCleared { .. } => "SESSION_CLEARED",
            Self::ConsumeCycle { .. } => "CONSUME_CYCLE",
            Self::Cancelled { .. } => "CANCELLED",
            Self::DrainPanicked { .. } => "DRAIN_PANICKED",
            Self::SchedulerSendFailed { .. } => "SCHEDULER_SEND_FAILED",
            Self::Store(e) => e.code(),
        }
    }

    /// Whether the same call may succeed later without any change.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::ClaimExpired { .. } | Self::SchedulerSendFailed { .. } => true,
            Self::Store(e) => e.is_retryable(),
            _ => false,
        }
    }

    pub(crate) fn invalid_consumer(message: impl Into<String>) -> Self {
        Self::InvalidConsumer { message: message.into() }
    }
}

impl From<StoreError> for A2Error {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::PartialDuplicateBatch { session, ids } => {
                let session = a2_store::split_session_key(&session).1.to_owned();
                Self::Store(StoreError::PartialDuplicateBatch { session, ids })
            }
            other => Self::Store(other),
        }
    }
}
