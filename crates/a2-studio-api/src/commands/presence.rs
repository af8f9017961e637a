//! The Presence tab's reads: who is in a session now, and how many
//! sessions of each contract have anyone present (the overview).

use a2_operator::{ContractPresence, PresenceCellView};

use super::*;

impl Studio {
    pub async fn presence_list(&self, request: SessionRef) -> Result<Vec<PresenceCellView>, ApiError> {
        Ok(self.operator()?.presence_list(&request).await?)
    }

    pub async fn presence_sessions(&self, _request: NoArgs) -> Result<Vec<ContractPresence>, ApiError> {
        Ok(self.operator()?.presence_sessions().await?)
    }
}
