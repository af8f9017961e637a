//! The Presence tab's reads: who is in a session now, and how many
//! sessions of each contract have anyone present (the overview); and who
//! is serving: the process registry.

use a2_operator::{ContractPresence, PresenceCellView, ProcessView};

use super::*;

impl Studio {
    pub async fn presence_list(&self, request: SessionRef) -> Result<Vec<PresenceCellView>, ApiError> {
        Ok(self.operator()?.presence_list(&request).await?)
    }

    pub async fn presence_sessions(&self, _request: NoArgs) -> Result<Vec<ContractPresence>, ApiError> {
        Ok(self.operator()?.presence_sessions().await?)
    }

    /// What one process runs now: the heads its holders lease.
    pub async fn process_heads(&self, request: ProcessRef) -> Result<Vec<a2_operator::model::LeasedHead>, ApiError> {
        Ok(self.operator()?.process_heads(&request.id).await?)
    }

    /// The process registry: which servers run against this store, live or lately gone.
    pub async fn process_list(&self, request: ProcessQuery) -> Result<Vec<ProcessView>, ApiError> {
        let contract = request.contract.as_deref().filter(|c| !c.is_empty());
        Ok(self.operator()?.process_list(contract).await?)
    }
}
