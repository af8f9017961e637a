//! Who is in a session: its live presence cells as an operator sees them
//! (values as exact JSON text, ages and time left on the store's clock),
//! and how many sessions of each contract have anyone present. Reads only:
//! presence is the app's own plane, nothing for an operator to change.

use a2_store::Millis;
use serde::{Deserialize, Serialize};

use crate::{Operator, Result, SessionRef};

/// One participant's field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PresenceCellView {
    pub participant: String,
    pub field: String,
    /// The value as exact JSON text.
    pub value: String,
    /// The log index the writer had seen.
    pub seen: u64,
    /// The sender's stamp (what orders writes).
    pub at: Millis,
    /// How long ago the sender stamped it (negative: a sender's clock ahead of the store's).
    pub age_ms: i64,
    pub expires_at: Millis,
    /// Until it expires without a refreshing write.
    pub expires_in_ms: i64,
}

/// How many sessions of a contract have live presence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ContractPresence {
    pub contract: String,
    pub sessions: u64,
}

impl Operator {
    /// A session's live presence by participant then field (empty when no one is there).
    pub async fn presence_list(&self, session: &SessionRef) -> Result<Vec<PresenceCellView>> {
        let now = self.now_ms();
        let cells = self.store().presence_read(&session.key()?).await?;
        Ok(cells
            .into_iter()
            .filter_map(|c| {
                let value = c.value?;
                Some(PresenceCellView {
                    participant: c.participant,
                    field: c.field,
                    value: value.to_string(),
                    seen: c.seen,
                    at: c.at,
                    age_ms: now.saturating_sub(c.at),
                    expires_at: c.expires_at,
                    expires_in_ms: c.expires_at.saturating_sub(now),
                })
            })
            .collect())
    }

    /// Sessions with live presence, by contract.
    pub async fn presence_sessions(&self) -> Result<Vec<ContractPresence>> {
        let counts = self.store().presence_sessions().await?;
        Ok(counts.into_iter().map(|(contract, sessions)| ContractPresence { contract, sessions }).collect())
    }
}
