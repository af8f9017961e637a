//! The store trait, implemented once for every SQL backend.

use std::sync::Arc;

use a2_store::*;

use crate::{SqlBackend, SqlStore};

#[async_trait::async_trait]
impl<B: SqlBackend> Store for SqlStore<B> {
    fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }
    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        self.backend.changes()
    }
    async fn event_append(&self, params: EventAppend) -> Result<Appended, StoreError> {
        self.append(params).await
    }
    async fn head_claim(&self, params: HeadClaim) -> Result<Claimed, StoreError> {
        self.claim(params).await
    }
    async fn head_renew(&self, params: HeadRenew) -> Result<Renewed, StoreError> {
        self.renew(params).await
    }
    async fn head_complete(&self, params: HeadComplete) -> Result<CompleteOutcome, StoreError> {
        self.complete(params).await
    }
    async fn head_complete_many(&self, params: HeadCompleteMany) -> Result<Vec<HeadRef>, StoreError> {
        self.complete_many(params).await
    }
    async fn head_fail(&self, params: HeadFail) -> Result<FailOutcome, StoreError> {
        self.fail(params).await
    }
    async fn dead_letter_redrive(&self, params: DeadLetterRedrive) -> Result<bool, StoreError> {
        self.redrive(params).await
    }
    async fn cursor_wake(&self, params: CursorWake) -> Result<CursorState, StoreError> {
        self.wake(params).await
    }
    async fn session_bounds(&self, session: &str) -> Result<SessionBounds, StoreError> {
        let mut conn = self.backend.work().await?;
        let bounds = self.session_row(conn.as_mut(), session).await?;
        Ok(bounds.map_or_else(SessionBounds::default, |(head, clear_index)| SessionBounds { head, clear_index }))
    }
    async fn session_clear(&self, params: SessionClear) -> Result<Cleared, StoreError> {
        self.clear(params).await
    }
    async fn snapshot_put(&self, params: SnapshotPut) -> Result<(), StoreError> {
        self.put_snapshot(params).await
    }
    async fn snapshot_get(&self, params: SnapshotGet) -> Result<Option<Snapshot>, StoreError> {
        self.read_snapshot(params).await
    }
    async fn session_list_runnable(&self, params: SessionsRunnable) -> Result<RunnablePage, StoreError> {
        self.read_runnable(params).await
    }
    async fn event_list(&self, params: EventList) -> Result<Vec<Event>, StoreError> {
        self.read_events(params).await
    }
    async fn contract_list(&self) -> Result<Vec<String>, StoreError> {
        // A loose index scan: one seek per contract, not a scan of every session.
        let rows = self.backend.read().await?.fetch(self.sql().contracts, Vec::new()).await?;
        rows.iter().map(|r| r.text("contract")).collect()
    }
    async fn session_list(&self, params: SessionList) -> Result<Vec<SessionSummary>, StoreError> {
        self.read_sessions(params).await
    }
    async fn session_list_by_activity(&self, params: SessionsByActivity) -> Result<Vec<SessionSummary>, StoreError> {
        self.read_sessions_by_activity(params).await
    }
    async fn session_get(&self, session: &str) -> Result<Option<SessionSummary>, StoreError> {
        self.read_session(session).await
    }
    async fn head_list(&self, session: &str) -> Result<Vec<HeadInfo>, StoreError> {
        self.read_heads(session).await
    }
    async fn head_scan(&self, params: HeadScan) -> Result<Vec<HeadInfo>, StoreError> {
        self.read_head_scan(params).await
    }
    async fn dead_letter_list(&self, params: DeadLetterList) -> Result<Vec<DeadLetter>, StoreError> {
        self.read_dead_letters(params).await
    }
    async fn consumer_totals(&self, contract: Option<&str>) -> Result<Vec<ConsumerTotal>, StoreError> {
        self.read_totals(contract).await
    }
    async fn consumer_totals_refresh(&self) -> Result<TotalsSnapshot, StoreError> {
        self.refresh_totals().await
    }
    async fn consumer_totals_snapshot(&self, contract: Option<&str>) -> Result<Option<TotalsSnapshot>, StoreError> {
        self.read_kept_totals(contract).await
    }
    async fn snapshot_list(&self, session: &str) -> Result<Vec<SnapshotInfo>, StoreError> {
        self.read_snapshots(session).await
    }
    async fn audit_append(&self, entry: AuditEntry) -> Result<u64, StoreError> {
        self.audit_append(entry).await
    }
    async fn audit_list(&self, params: AuditList) -> Result<Vec<AuditRecord>, StoreError> {
        self.read_audit(params).await
    }
}
