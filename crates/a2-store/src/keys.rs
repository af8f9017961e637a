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

/// The storage key of a contract's session.
pub fn session_key(contract: &str, session_id: &str) -> String {
    format!("{contract}{KEY_SEPARATOR}{session_id}")
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
