//! A store wrapper that hangs or fails chosen calls, for scenarios about
//! what the engine does when its store misbehaves.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use a2_store::*;

/// Delegates to `inner`, except the calls switched to hang (never answer)
/// or to fail (`STORE_UNAVAILABLE`).
#[derive(Debug)]
pub struct Faulty {
    pub inner: Arc<dyn Store>,
    pub hang_renew: AtomicBool,
    pub hang_claim: AtomicBool,
    pub fail_claim: AtomicBool,
    /// Snapshot reads and writes fail: a snapshot is a cache.
    pub fail_snapshots: AtomicBool,
    /// Snapshot writes never answer: a write-back must not hold up a read.
    pub hang_snapshot_puts: AtomicBool,
    /// Snapshot writes the store took so far.
    pub snapshot_puts: AtomicU32,
    /// Claims asked of the store so far.
    pub claims: AtomicU32,
    /// Event pages and snapshots read so far.
    pub event_lists: AtomicU32,
    /// Event pages fail (`STORE_UNAVAILABLE`): an abort watch that cannot read.
    pub fail_event_lists: AtomicBool,
    pub snapshot_gets: AtomicU32,
    /// Whole-store consumer-total aggregates asked for (computed or refreshed).
    pub totals_computed: AtomicU32,
    /// Attempt-rate reads that counted runs rather than read the kept minutes.
    pub rates_counted: AtomicU32,
    /// Taking, keeping and letting go of the upkeep lease fail: a leader that died.
    pub fail_upkeep: AtomicBool,
    /// Completions wait while this is on (a commit stuck behind a slow disk), then go through.
    pub hold_completions: AtomicBool,
    /// Claims the store has answered so far.
    pub claims_answered: AtomicU32,
    /// The head (consumer, index) whose completion, once committed, answers
    /// only after a claim begun since has answered: a drain that claims
    /// before it hears how a run it started ended.
    pub answer_after_a_claim: Mutex<Option<(String, u64)>>,
    /// That completion is committed and waiting for the claim.
    pub completion_waits_for_a_claim: AtomicBool,
    /// The claims begun when it answered (`u32::MAX` until it has).
    pub claims_when_it_answered: AtomicU32,
}

impl Faulty {
    pub fn new(inner: Arc<dyn Store>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            hang_renew: AtomicBool::new(false),
            hang_claim: AtomicBool::new(false),
            fail_claim: AtomicBool::new(false),
            fail_snapshots: AtomicBool::new(false),
            hang_snapshot_puts: AtomicBool::new(false),
            snapshot_puts: AtomicU32::new(0),
            claims: AtomicU32::new(0),
            event_lists: AtomicU32::new(0),
            fail_event_lists: AtomicBool::new(false),
            snapshot_gets: AtomicU32::new(0),
            totals_computed: AtomicU32::new(0),
            rates_counted: AtomicU32::new(0),
            fail_upkeep: AtomicBool::new(false),
            hold_completions: AtomicBool::new(false),
            claims_answered: AtomicU32::new(0),
            answer_after_a_claim: Mutex::new(None),
            completion_waits_for_a_claim: AtomicBool::new(false),
            claims_when_it_answered: AtomicU32::new(u32::MAX),
        })
    }
}

impl Faulty {
    /// The upkeep lease's calls fail while `fail_upkeep` is on.
    fn upkeep_switch(&self) -> Result<(), StoreError> {
        if self.fail_upkeep.load(Ordering::SeqCst) {
            return Err(StoreError::unavailable("the upkeep lease is switched to fail"));
        }
        Ok(())
    }
}

/// Wait while `switch` is on.
async fn hold_while(switch: &AtomicBool) {
    while switch.load(Ordering::SeqCst) {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

async fn hang_if(switch: &AtomicBool) {
    if switch.load(Ordering::SeqCst) {
        std::future::pending::<()>().await;
    }
}

#[async_trait::async_trait]
impl Store for Faulty {
    fn clock(&self) -> Arc<dyn Clock> {
        self.inner.clock()
    }
    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        self.inner.changes()
    }
    async fn event_append(&self, params: EventAppend) -> Result<Appended, StoreError> {
        self.inner.event_append(params).await
    }
    async fn head_claim(&self, params: HeadClaim) -> Result<Claimed, StoreError> {
        self.claims.fetch_add(1, Ordering::SeqCst);
        hang_if(&self.hang_claim).await;
        if self.fail_claim.load(Ordering::SeqCst) {
            return Err(StoreError::unavailable("claims are switched to fail"));
        }
        let claimed = self.inner.head_claim(params).await;
        self.claims_answered.fetch_add(1, Ordering::SeqCst);
        claimed
    }
    async fn head_renew(&self, params: HeadRenew) -> Result<Renewed, StoreError> {
        hang_if(&self.hang_renew).await;
        self.inner.head_renew(params).await
    }
    async fn head_complete(&self, params: HeadComplete) -> Result<CompleteOutcome, StoreError> {
        hold_while(&self.hold_completions).await;
        let target = (params.head.consumer.clone(), params.head.index);
        let waits = self.answer_after_a_claim.lock().is_ok_and(|t| t.as_ref() == Some(&target));
        let outcome = self.inner.head_complete(params).await;
        if waits {
            let begun = self.claims.load(Ordering::SeqCst);
            self.completion_waits_for_a_claim.store(true, Ordering::SeqCst);
            while self.claims_answered.load(Ordering::SeqCst) <= begun {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            self.claims_when_it_answered.store(self.claims.load(Ordering::SeqCst), Ordering::SeqCst);
        }
        outcome
    }
    async fn head_complete_many(&self, params: HeadCompleteMany) -> Result<Vec<HeadRef>, StoreError> {
        hold_while(&self.hold_completions).await;
        self.inner.head_complete_many(params).await
    }
    async fn head_fail(&self, params: HeadFail) -> Result<FailOutcome, StoreError> {
        self.inner.head_fail(params).await
    }
    async fn dead_letter_redrive(&self, params: DeadLetterRedrive) -> Result<bool, StoreError> {
        self.inner.dead_letter_redrive(params).await
    }
    async fn cursor_wake(&self, params: CursorWake) -> Result<CursorState, StoreError> {
        self.inner.cursor_wake(params).await
    }
    async fn cursor_advance(&self, params: CursorAdvance) -> Result<CursorAdvanced, StoreError> {
        self.inner.cursor_advance(params).await
    }
    async fn consumer_pause(&self, params: ConsumerPause) -> Result<PausedConsumer, StoreError> {
        self.inner.consumer_pause(params).await
    }
    async fn consumer_resume(&self, params: ConsumerResume) -> Result<bool, StoreError> {
        self.inner.consumer_resume(params).await
    }
    async fn consumer_pause_list(&self, contract: Option<&str>) -> Result<Vec<PausedConsumer>, StoreError> {
        self.inner.consumer_pause_list(contract).await
    }
    async fn session_import(&self, params: SessionImport) -> Result<(), StoreError> {
        self.inner.session_import(params).await
    }
    async fn session_search(&self, params: SessionSearch) -> Result<SessionSearchPage, StoreError> {
        self.inner.session_search(params).await
    }
    async fn session_count(&self, contract: &str) -> Result<u64, StoreError> {
        self.inner.session_count(contract).await
    }
    async fn event_filter(&self, params: EventFilter) -> Result<EventFilterPage, StoreError> {
        self.inner.event_filter(params).await
    }
    async fn session_bounds(&self, session: &SessionKey) -> Result<SessionBounds, StoreError> {
        self.inner.session_bounds(session).await
    }
    async fn upkeep_lease(&self, params: UpkeepLease) -> Result<Option<u64>, StoreError> {
        self.upkeep_switch()?;
        self.inner.upkeep_lease(params).await
    }
    async fn upkeep_release(&self, params: UpkeepRelease) -> Result<bool, StoreError> {
        self.upkeep_switch()?;
        self.inner.upkeep_release(params).await
    }
    async fn head_list_leased(&self, params: HeadsLeased) -> Result<Vec<LeasedHead>, StoreError> {
        self.inner.head_list_leased(params).await
    }
    async fn upkeep_leaders(&self) -> Result<Vec<UpkeepLeader>, StoreError> {
        self.inner.upkeep_leaders().await
    }
    async fn server_beat(&self, params: ServerBeat) -> Result<(), StoreError> {
        self.inner.server_beat(params).await
    }
    async fn server_remove(&self, id: &str) -> Result<bool, StoreError> {
        self.inner.server_remove(id).await
    }
    async fn server_list(&self, params: ServerList) -> Result<Vec<ServerRecord>, StoreError> {
        self.inner.server_list(params).await
    }
    async fn session_clear(&self, params: SessionClear) -> Result<Cleared, StoreError> {
        self.inner.session_clear(params).await
    }
    async fn snapshot_put(&self, params: SnapshotPut) -> Result<(), StoreError> {
        if self.fail_snapshots.load(Ordering::SeqCst) {
            return Err(StoreError::unavailable("snapshots are switched to fail"));
        }
        hang_if(&self.hang_snapshot_puts).await;
        self.inner.snapshot_put(params).await?;
        self.snapshot_puts.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    async fn snapshot_get(&self, params: SnapshotGet) -> Result<Option<Snapshot>, StoreError> {
        self.snapshot_gets.fetch_add(1, Ordering::SeqCst);
        // A real store's read gives other tasks a turn; so does this one.
        tokio::task::yield_now().await;
        if self.fail_snapshots.load(Ordering::SeqCst) {
            return Err(StoreError::unavailable("snapshots are switched to fail"));
        }
        self.inner.snapshot_get(params).await
    }
    async fn session_list_runnable(&self, params: SessionsRunnable) -> Result<RunnablePage, StoreError> {
        self.inner.session_list_runnable(params).await
    }
    async fn event_list(&self, params: EventList) -> Result<Vec<Event>, StoreError> {
        self.event_lists.fetch_add(1, Ordering::SeqCst);
        if self.fail_event_lists.load(Ordering::SeqCst) {
            return Err(StoreError::unavailable("event pages are switched to fail"));
        }
        self.inner.event_list(params).await
    }
    async fn contract_list(&self) -> Result<Vec<String>, StoreError> {
        self.inner.contract_list().await
    }
    async fn session_list(&self, params: SessionList) -> Result<Vec<SessionSummary>, StoreError> {
        self.inner.session_list(params).await
    }
    async fn session_list_by_activity(&self, params: SessionsByActivity) -> Result<Vec<SessionSummary>, StoreError> {
        self.inner.session_list_by_activity(params).await
    }
    async fn session_get(&self, session: &SessionKey) -> Result<Option<SessionSummary>, StoreError> {
        self.inner.session_get(session).await
    }
    async fn head_list(&self, session: &SessionKey) -> Result<Vec<HeadInfo>, StoreError> {
        self.inner.head_list(session).await
    }
    async fn head_scan(&self, params: HeadScan) -> Result<Vec<HeadInfo>, StoreError> {
        self.inner.head_scan(params).await
    }
    async fn dead_letter_list(&self, params: DeadLetterList) -> Result<Vec<DeadLetter>, StoreError> {
        self.inner.dead_letter_list(params).await
    }
    async fn consumer_totals(&self, contract: Option<&str>) -> Result<Vec<ConsumerTotal>, StoreError> {
        self.totals_computed.fetch_add(1, Ordering::SeqCst);
        self.inner.consumer_totals(contract).await
    }
    async fn consumer_totals_refresh(&self, params: TotalsRefresh) -> Result<TotalsRefreshed, StoreError> {
        self.totals_computed.fetch_add(1, Ordering::SeqCst);
        self.inner.consumer_totals_refresh(params).await
    }
    async fn consumer_totals_snapshot(&self, contract: Option<&str>) -> Result<Option<TotalsSnapshot>, StoreError> {
        self.inner.consumer_totals_snapshot(contract).await
    }
    async fn snapshot_list(&self, session: &SessionKey) -> Result<Vec<SnapshotInfo>, StoreError> {
        self.inner.snapshot_list(session).await
    }
    async fn audit_append(&self, entry: AuditEntry) -> Result<u64, StoreError> {
        self.inner.audit_append(entry).await
    }
    async fn audit_list(&self, params: AuditList) -> Result<Vec<AuditRecord>, StoreError> {
        self.inner.audit_list(params).await
    }
    async fn task_schedule(&self, params: TaskSchedule) -> Result<bool, StoreError> {
        self.inner.task_schedule(params).await
    }
    async fn task_claim(&self, params: TaskClaim) -> Result<Vec<ScheduledTask>, StoreError> {
        self.inner.task_claim(params).await
    }
    async fn task_finish(&self, params: TaskFinish) -> Result<bool, StoreError> {
        self.inner.task_finish(params).await
    }
    async fn task_list(&self, params: TaskList) -> Result<Vec<ScheduledTask>, StoreError> {
        self.inner.task_list(params).await
    }
    async fn task_cancel(&self, params: TaskChange) -> Result<Option<ScheduledTask>, StoreError> {
        self.inner.task_cancel(params).await
    }
    async fn task_hasten(&self, params: TaskChange) -> Result<Option<ScheduledTask>, StoreError> {
        self.inner.task_hasten(params).await
    }
    async fn presence_set(&self, params: PresenceSet) -> Result<Vec<String>, StoreError> {
        self.inner.presence_set(params).await
    }
    async fn presence_read(&self, session: &SessionKey) -> Result<Vec<PresenceCell>, StoreError> {
        self.inner.presence_read(session).await
    }
    async fn presence_prune(&self, params: PresencePrune) -> Result<u64, StoreError> {
        self.inner.presence_prune(params).await
    }
    async fn presence_sessions(&self) -> Result<Vec<(String, u64)>, StoreError> {
        self.inner.presence_sessions().await
    }
    async fn attempt_list(&self, params: AttemptList) -> Result<Vec<Attempt>, StoreError> {
        self.inner.attempt_list(params).await
    }
    async fn attempt_prune(&self, params: AttemptPrune) -> Result<AttemptPruned, StoreError> {
        self.inner.attempt_prune(params).await
    }
    async fn attempt_rates(&self, params: AttemptRates) -> Result<Vec<AttemptRate>, StoreError> {
        if !params.kept {
            self.rates_counted.fetch_add(1, Ordering::SeqCst);
        }
        self.inner.attempt_rates(params).await
    }
    async fn dead_letter_groups(&self, params: DeadLetterGroups) -> Result<Vec<DeadLetterGroup>, StoreError> {
        self.inner.dead_letter_groups(params).await
    }
}
