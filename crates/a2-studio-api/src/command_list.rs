// The one list of the Studio's commands. Kept in a file of its own, with
// no imports, so the desktop shell's build script can `include!` it too: the
// shell's Tauri permissions are generated from this same list.

/// Every command the Studio serves, as `name(Request) -> Response;`, handed
/// to `$callback`: the shell and the web mode build their handlers from
/// this one list, so they cannot drift apart.
#[macro_export]
macro_rules! studio_commands {
    ($callback:ident) => {
        $callback! {
            connection_default(ConnectionDefaultRequest) -> ConnectionDefault;
            connection_open(ConnectionOpen) -> ConnectionInfo;
            dev_store_open(NoArgs) -> ConnectionInfo;
            connection_get(NoArgs) -> Option<ConnectionInfo>;
            connection_close(NoArgs) -> bool;
            profile_list(NoArgs) -> ProfileList;
            profile_save(ProfileSave) -> Profile;
            profile_delete(ProfileRef) -> bool;
            contract_list(NoArgs) -> Vec<String>;
            consumer_overview(TotalsQuery) -> TotalsSnapshot;
            session_list(SessionListRequest) -> SessionPage;
            session_get(SessionRef) -> SessionSummary;
            event_list(EventQuery) -> Vec<EventView>;
            head_list(SessionRef) -> Vec<HeadView>;
            dead_letter_list(DeadLetterQuery) -> DeadLetterPage;
            dead_letter_groups(DeadLetterGroupQuery) -> Vec<DeadLetterGroup>;
            attempt_list(AttemptQuery) -> AttemptPage;
            attempt_rates(ThroughputQuery) -> Vec<AttemptRate>;
            snapshot_list(SessionRef) -> Vec<SnapshotView>;
            audit_list(AuditQuery) -> Vec<AuditView>;
            dead_letter_redrive(Redrive) -> Redriven;
            dead_letter_redrive_many(RedriveMany) -> JobProgress;
            job_redrive_all(RedriveAll) -> JobView;
            job_get(JobRef) -> JobView;
            job_cancel(JobRef) -> JobView;
            consume_preview(ConsumeRequest) -> ConsumePreview;
            session_consume(ConsumeRequest) -> Consumed;
            session_clear(ClearSession) -> Cleared;
            consumer_pause(PauseRequest) -> PausedConsumer;
            consumer_resume(ConsumerRef) -> bool;
            consumer_pause_list(PauseQuery) -> Vec<PausedConsumer>;
            session_export(SessionRef) -> String;
            session_import(ImportRequest) -> ImportOutcome;
            session_copy(CopyRequest) -> ImportOutcome;
            session_search(SearchRequest) -> SearchPage;
            event_filter(EventFilterRequest) -> EventFilterView;
            payload_index(NoArgs) -> bool;
            change_wait(ChangeWait) -> ChangeTick;
            demo_traffic(DemoTraffic) -> DemoTrafficState;
            demo_seed(DemoSeed) -> DemoSeeded;
            reader_role_grant(ReaderGrant) -> bool;
            timer_list(TimerQuery) -> TimerPage;
            timer_deliver(TimerRef) -> TimerDelivered;
            timer_cancel(TimerRef) -> TimerView;
            presence_list(SessionRef) -> Vec<PresenceCellView>;
            presence_sessions(NoArgs) -> Vec<ContractPresence>;
            process_list(ProcessQuery) -> Vec<ProcessView>;
            process_heads(ProcessRef) -> Vec<LeasedHead>;
        }
    };
}
