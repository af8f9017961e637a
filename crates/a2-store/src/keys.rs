use serde::{Deserialize, Serialize};

use crate::StoreError;

/// Separates the contract name from the session id in every storage key, so
/// many contracts share one store and a contract's sessions are a prefix scan.
pub const KEY_SEPARATOR: char = '\u{1f}';

/// A session id is any non-empty string without the key separator.
pub fn validate_session_id(id: &str) -> Result<(), StoreError> {
    if id.is_empty() {
        return Err(StoreError::invalid("session id must not be empty"));
    }
    if id.contains(KEY_SEPARATOR) {
        return Err(StoreError::invalid(format!(
            "session id {id:?} contains the unit separator U+001F, which A2 reserves for storage keys"
        )));
    }
    if id.contains('\0') {
        return Err(StoreError::invalid(format!("session id {id:?} contains NUL, which no SQL store can keep")));
    }
    Ok(())
}

/// The storage key of a contract's session: `<contract>\u{1f}<session id>`.
/// A type of its own, so a store param never takes a bare session id by
/// mistake and every conversion between the two is visible.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SessionKey(String);

impl SessionKey {
    /// The key of `session_id` in `contract` (neither checked: see [`check_session_key`]).
    pub fn new(contract: &str, session_id: &str) -> Self {
        Self(format!("{contract}{KEY_SEPARATOR}{session_id}"))
    }

    /// A key as a store keeps it (a column, a map key): taken as it is.
    pub fn from_stored(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }

    /// The contract's name.
    pub fn contract(&self) -> &str {
        split_session_key(&self.0).0
    }

    /// The session's id within its contract.
    pub fn session_id(&self) -> &str {
        split_session_key(&self.0).1
    }
}

impl std::ops::Deref for SessionKey {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SessionKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for SessionKey {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<SessionKey> for String {
    fn from(key: SessionKey) -> Self {
        key.0
    }
}

impl From<&SessionKey> for String {
    fn from(key: &SessionKey) -> Self {
        key.0.clone()
    }
}

/// The storage key of a contract's session.
pub fn session_key(contract: &str, session_id: &str) -> SessionKey {
    SessionKey::new(contract, session_id)
}

/// The contract and session id of a storage key.
pub fn split_session_key(key: &str) -> (&str, &str) {
    key.split_once(KEY_SEPARATOR).unwrap_or(("", key))
}

/// A storage key is `<contract>\u{1f}<session id>` with a non-empty contract and a valid id.
pub fn check_session_key(key: &str) -> Result<(), StoreError> {
    match key.split_once(KEY_SEPARATOR) {
        Some((contract, id)) if !contract.is_empty() => validate_session_id(id),
        _ => {
            Err(StoreError::invalid(format!("{key:?} is not a session storage key (<contract>\\u{{1f}}<session id>)")))
        }
    }
}
