//! A server's presence writes and reads: the seeds' checks, the patch
//! checked whole before the store sees any of it (see `presence`).

use a2_store::PresenceSet;
use tracing::Instrument;

use crate::presence::{fold, participant_reserved, PresenceMap, PresencePatch};
use crate::scheduler::MAX_TIME_MS;
use crate::server_core::ServerCore;
use crate::{A2Error, Contract};
use serde_json::Value;

impl ServerCore {
    /// Check a patch whole, then write it: nothing is written when any field is refused.
    pub(crate) async fn set_presence(
        &self,
        session_id: &str,
        patch: PresencePatch,
        default_seen: u64,
    ) -> Result<(), A2Error> {
        let values = checked_values(self.contract(), &patch)?;
        let contract = self.contract();
        if values.is_empty() {
            return Ok(());
        }
        let key = self.key(session_id);
        let span = tracing::info_span!(
            "a2.presence.set",
            a2.contract = %contract.name(),
            a2.session_id = %session_id,
            a2.presence.participant = %patch.participant,
            a2.presence.fields = values.len(),
            a2.presence.changed = tracing::field::Empty,
        );
        let set = PresenceSet {
            session: key.clone(),
            participant: patch.participant,
            values,
            seen: patch.seen.unwrap_or(default_seen),
            // Receipt time stands in for a sender that gave none: right for one writer.
            at: patch.at.unwrap_or_else(|| self.clock().now_ms()),
            ttl_ms: crate::timings::millis(self.presence_ttl()),
        };
        let changed = self.store().presence_set(set).instrument(span.clone()).await?;
        span.record("a2.presence.changed", changed.len());
        if !changed.is_empty() {
            // Feeds of this process hear of it at once; the store tells other processes.
            self.notify(key.as_str());
        }
        Ok(())
    }

    /// Who is in the session now; `PRESENCE_NOT_SUPPORTED` on a contract without presence fields.
    pub(crate) async fn presence(&self, session_id: &str) -> Result<PresenceMap, A2Error> {
        if !self.contract().declares_presence() {
            return Err(A2Error::PresenceNotSupported { contract: self.contract().name().to_owned() });
        }
        let cells = self.store().presence_read(&self.key(session_id)).await?;
        Ok(fold(cells))
    }
}

/// The seeds' checks of a presence patch, whole: the fields to write (`None`
/// deletes), or the first thing wrong. A push runs them before it appends.
pub(crate) fn checked_values(
    contract: &Contract,
    patch: &PresencePatch,
) -> Result<Vec<(String, Option<Value>)>, A2Error> {
    if !contract.declares_presence() {
        return Err(A2Error::PresenceNotSupported { contract: contract.name().to_owned() });
    }
    if patch.participant.is_empty() {
        return Err(A2Error::InvalidArgument { message: "presence participant must be a non-empty string".into() });
    }
    if participant_reserved(&patch.participant) {
        return Err(A2Error::InvalidArgument {
            message: format!("presence participant must not be '{}' (reserved: '*', 'a2.…')", patch.participant),
        });
    }
    if patch.participant.chars().count() > 256 {
        return Err(A2Error::InvalidArgument { message: "presence participant must be at most 256 characters".into() });
    }
    if patch.at.is_some_and(|at| !(0..=MAX_TIME_MS).contains(&at)) {
        return Err(A2Error::InvalidArgument {
            message: "presence at must be non-negative epoch milliseconds within the Date range".into(),
        });
    }
    let mut values = Vec::with_capacity(patch.values.len());
    for (field, value) in &patch.values {
        if value.is_null() {
            // A delete names a field the contract has, like a write.
            if !contract.presence_fields().any(|f| f == field) {
                return Err(A2Error::UnknownPresenceField {
                    contract: contract.name().to_owned(),
                    field: field.clone(),
                });
            }
            values.push((field.clone(), None));
        } else {
            contract.validate_presence(field, value)?;
            values.push((field.clone(), Some(value.clone())));
        }
    }
    Ok(values)
}
