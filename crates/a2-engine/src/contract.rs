//! A contract: the machine name, its event types with payload validation,
//! and its reducers.

use std::collections::BTreeMap;
use std::sync::Arc;

use a2_store::Event;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::A2Error;

type Validator = Arc<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;
type Fold = Arc<dyn Fn(Value, &Event) -> Value + Send + Sync>;
type StateCheck = Arc<dyn Fn(&Value) -> bool + Send + Sync>;

/// A cached-state definition: an initial state and a fold over events.
/// A reducer's state and the index of the last event folded into it.
#[derive(Debug, Clone, PartialEq)]
pub struct StateAt {
    pub state: Value,
    pub index: u64,
}

#[derive(Clone)]
pub struct Reducer {
    pub(crate) name: String,
    pub(crate) initial: Value,
    pub(crate) fold: Fold,
    pub(crate) state_check: Option<StateCheck>,
}

impl std::fmt::Debug for Reducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reducer").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Reducer {
    pub fn new(
        name: impl Into<String>,
        initial: Value,
        fold: impl Fn(Value, &Event) -> Value + Send + Sync + 'static,
    ) -> Self {
        Self { name: name.into(), initial, fold: Arc::new(fold), state_check: None }
    }

    /// A snapshot whose state fails this check is ignored and refolded:
    /// snapshots are a cache, never the truth.
    pub fn with_state_check(mut self, check: impl Fn(&Value) -> bool + Send + Sync + 'static) -> Self {
        self.state_check = Some(Arc::new(check));
        self
    }

    /// Snapshots of a typed state: checked by deserializing into `T`.
    pub fn with_state_type<T: DeserializeOwned>(self) -> Self {
        self.with_state_check(|state| serde_json::from_value::<T>(state.clone()).is_ok())
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The vocabulary of one machine: its name and event types.
#[derive(Clone)]
pub struct Contract {
    name: String,
    events: BTreeMap<String, Validator>,
    reducers: BTreeMap<String, Reducer>,
    /// Presence fields and their value checks: the second plane beside the log.
    presence: BTreeMap<String, Validator>,
}

impl std::fmt::Debug for Contract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Contract")
            .field("name", &self.name)
            .field("events", &self.events.keys().collect::<Vec<_>>())
            .field("reducers", &self.reducers.keys().collect::<Vec<_>>())
            .field("presence", &self.presence.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Contract and event-type names: a letter or digit, then letters, digits and `. _ : -`.
pub(crate) fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 128
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))
}

/// Add a named check (an event type's, a presence field's) once, under a valid name.
fn declare(
    checks: &mut BTreeMap<String, Validator>,
    contract: &str,
    what: &str,
    name: &str,
    validate: Validator,
) -> Result<(), A2Error> {
    if !valid_name(name) {
        return Err(A2Error::InvalidContract {
            message: format!("{what} {name:?} must be 1-128 letters, digits, and . _ : - characters"),
        });
    }
    if checks.insert(name.to_owned(), validate).is_some() {
        return Err(A2Error::InvalidContract {
            message: format!("contract '{contract}' defines {what} '{name}' twice"),
        });
    }
    Ok(())
}

impl Contract {
    pub fn new(name: impl Into<String>) -> Result<Self, A2Error> {
        let name = name.into();
        if !valid_name(&name) {
            return Err(A2Error::InvalidContract {
                message: format!("contract name {name:?} must be 1-128 letters, digits, and . _ : - characters"),
            });
        }
        Ok(Self { name, events: BTreeMap::new(), reducers: BTreeMap::new(), presence: BTreeMap::new() })
    }

    /// An event type whose payload must deserialize into `T`.
    pub fn event<T: DeserializeOwned>(self, event_type: &str) -> Result<Self, A2Error> {
        self.event_with(event_type, |payload| {
            serde_json::from_value::<T>(payload.clone()).map(|_| ()).map_err(|e| e.to_string())
        })
    }

    /// An event type with a hand-written payload check.
    pub fn event_with(
        mut self,
        event_type: &str,
        validate: impl Fn(&Value) -> Result<(), String> + Send + Sync + 'static,
    ) -> Result<Self, A2Error> {
        declare(&mut self.events, &self.name, "event type", event_type, Arc::new(validate))?;
        Ok(self)
    }

    /// A presence field whose values must deserialize into `T`.
    pub fn presence<T: DeserializeOwned>(self, field: &str) -> Result<Self, A2Error> {
        self.presence_with(field, |value| {
            serde_json::from_value::<T>(value.clone()).map(|_| ()).map_err(|e| e.to_string())
        })
    }

    /// A presence field (who is here, their cursor, "typing…") with a
    /// hand-written value check; never an event, never in the log.
    pub fn presence_with(
        mut self,
        field: &str,
        validate: impl Fn(&Value) -> Result<(), String> + Send + Sync + 'static,
    ) -> Result<Self, A2Error> {
        declare(&mut self.presence, &self.name, "presence field", field, Arc::new(validate))?;
        Ok(self)
    }

    pub fn declares_presence(&self) -> bool {
        !self.presence.is_empty()
    }

    pub fn presence_fields(&self) -> impl Iterator<Item = &str> {
        self.presence.keys().map(String::as_str)
    }

    /// Refuse a field the contract does not declare, or a value its check rejects.
    pub fn validate_presence(&self, field: &str, value: &Value) -> Result<(), A2Error> {
        let validate = self
            .presence
            .get(field)
            .ok_or_else(|| A2Error::UnknownPresenceField { contract: self.name.clone(), field: field.to_owned() })?;
        validate(value).map_err(|message| A2Error::InvalidPresenceValue {
            contract: self.name.clone(),
            field: field.to_owned(),
            message,
        })
    }

    pub fn reducer(mut self, reducer: Reducer) -> Result<Self, A2Error> {
        if !valid_name(&reducer.name) {
            return Err(A2Error::InvalidContract { message: format!("reducer name {:?} is invalid", reducer.name) });
        }
        if self.reducers.contains_key(&reducer.name) {
            return Err(A2Error::InvalidContract {
                message: format!("contract '{}' defines reducer '{}' twice", self.name, reducer.name),
            });
        }
        self.reducers.insert(reducer.name.clone(), reducer);
        Ok(self)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn has_event_type(&self, event_type: &str) -> bool {
        self.events.contains_key(event_type)
    }

    pub fn event_types(&self) -> impl Iterator<Item = &str> {
        self.events.keys().map(String::as_str)
    }

    pub fn reducer_names(&self) -> impl Iterator<Item = &str> {
        self.reducers.keys().map(String::as_str)
    }

    pub(crate) fn reducer_named(&self, name: &str) -> Result<&Reducer, A2Error> {
        self.reducers
            .get(name)
            .ok_or_else(|| A2Error::UnknownReducer { contract: self.name.clone(), reducer: name.to_owned() })
    }

    /// Refuse an unknown type or a payload its check rejects.
    pub fn validate(&self, event_type: &str, payload: &Value) -> Result<(), A2Error> {
        let validate = self.events.get(event_type).ok_or_else(|| A2Error::UnknownEventType {
            contract: self.name.clone(),
            event_type: event_type.to_owned(),
        })?;
        validate(payload).map_err(|message| A2Error::InvalidPayload { event_type: event_type.to_owned(), message })
    }
}
