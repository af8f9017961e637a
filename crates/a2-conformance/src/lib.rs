//! The one conformance suite: `pub async fn` scenarios over a store factory,
//! stamped per backend by [`conformance_suite!`] so `cargo test -- --list`
//! shows each scenario as `conformance::<backend>::<scenario>`.
//!
//! Store scenarios drive the [`a2_store::Store`] trait directly on a
//! [`a2_store::ManualClock`]; engine scenarios run a real [`a2_engine::Server`]
//! over the store on tokio's paused clock.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use a2_store::{Clock, Store};

pub mod adapters;
mod appends;
mod batching;
mod claims;
mod clears;
mod completions;
pub mod engine;
mod failures;
pub mod faulty;
mod fidelity;
mod grouped;
mod healing;
mod history;
mod inspection;
mod leases;
mod operations;
mod permits;
mod presence_cells;
mod presence_feed;
pub mod property;
mod range_drain;
pub mod range_property;
mod ranges;
mod reads;
mod registry;
mod run_context;
mod run_fidelity;
mod scheduling;
mod semantics;
pub mod store;
mod support;
mod tasks;
mod totals;
mod upkeep;
mod watchdogs;

pub use inspection::consumer_totals_in_chunks_match_the_whole;
pub use tokio;

/// Opens a fresh, empty store of one backend, stamping time with `clock`.
/// Each call must return a store no other test sees (its own database or schema).
pub trait StoreFactory: Send + Sync {
    fn open(&self, clock: Arc<dyn Clock>) -> Pin<Box<dyn Future<Output = Arc<dyn Store>> + Send + '_>>;
}

impl<F, Fut> StoreFactory for F
where
    F: Fn(Arc<dyn Clock>) -> Fut + Send + Sync,
    Fut: Future<Output = Arc<dyn Store>> + Send + 'static,
{
    fn open(&self, clock: Arc<dyn Clock>) -> Pin<Box<dyn Future<Output = Arc<dyn Store>> + Send + '_>> {
        Box::pin(self(clock))
    }
}

/// Stamp every scenario as a test: `conformance_suite!(memory, factory_expr)`
/// runs engine scenarios on paused time; `conformance_suite!(sqlite, factory, realtime)`
/// on real time with short timings, for backends that do real I/O.
#[macro_export]
macro_rules! conformance_suite {
    ($backend:ident, $factory:expr) => {
        $crate::conformance_suite!($backend, $factory, paused);
    };
    ($backend:ident, $factory:expr, $pace:ident) => {
        mod conformance {
            mod $backend {
                #[allow(unused_imports)]
                use super::super::*;
                $crate::__stamp!(multi_thread, $factory;
                    gap_free_indexes_under_concurrent_appenders,
                    concurrent_appends_are_each_atomic,
                    a_failing_append_does_not_fail_its_batch,
                    grouped_appends_keep_payloads_and_cursors,
                    concurrent_completions_are_each_fenced,
                    idempotent_reappend_by_id,
                    partial_duplicate_batch_is_refused_whole,
                    claim_is_exclusive_among_four_holders,
                    claims_in_many_sessions_at_once_are_each_their_own,
                    completions_that_append_in_many_sessions_at_once_are_each_their_own,
                    a_conflicting_completion_fails_alone,
                    grouped_log_completions_never_deadlock,
                    range_lease_runs_positions_in_order,
                    range_lease_stops_at_an_untaken_type_and_its_bounds,
                    range_lease_lapse_charges_only_the_current_position,
                    late_completion_of_a_lapsed_range_is_refused,
                    clear_mid_range_drops_the_rest,
                    pause_mid_range_stops_after_the_running_position,
                    a_failure_or_a_renewal_mid_range_keeps_to_its_position,
                    lease_expiry_lets_another_holder_claim_with_next_attempt,
                    superseded_attempt_changes_nothing,
                    renewal_reports_superseded_heads,
                    backoff_delays_double_from_base_and_cap,
                    ten_failed_attempts_make_a_dead_letter,
                    lapsed_attempts_count_and_exhaust_on_takeover,
                    dead_head_blocks_its_lane_but_not_other_lanes_or_consumers,
                    redrive_retry_gives_a_fresh_budget,
                    redrive_skip_advances_exactly_once,
                    redrive_of_a_live_head_reports_false,
                    backfill_starts_at_one_and_others_at_the_head,
                    log_consumer_skips_types_it_does_not_take,
                    lane_function_heads_run_one_at_a_time_in_order,
                    concurrent_heads_are_claimed_together,
                    one_claim_takes_fresh_and_lapsed_heads_and_skips_excluded,
                    a_lapse_beside_fresh_heads_is_charged_once,
                    a_new_log_consumer_gets_its_cursor_beside_fresh_heads,
                    claim_through_bounds_the_heads,
                    complete_appends_returned_events_atomically,
                    a_completion_that_appends_records_what_it_appended,
                    complete_many_settles_current_attempts_only,
                    clear_with_matching_and_mismatching_guard,
                    cleared_trigger_append_is_refused_atomically,
                    snapshot_pins_are_kept_while_their_head_runs,
                    two_contracts_with_one_session_id_never_collide,
                    inspection_session_pages_and_summary,
                    inspection_sessions_by_last_activity,
                    inspection_events_page,
                    inspection_heads_of_a_session_with_lag,
                    inspection_heads_and_dead_letters_store_wide,
                    inspection_consumer_totals,
                    consumer_totals_are_kept_until_refreshed,
                    totals_kept_incrementally_match_a_full_pass,
                    a_refresh_folds_in_only_what_changed,
                    a_refresh_under_a_lost_lease_writes_nothing,
                    inspection_snapshots,
                    hostile_session_ids_round_trip,
                    audit_log_keeps_actions_newest_first,
                    redrive_and_clear_record_their_audit_entry_with_the_outcome,
                    log_consumer_never_runs_an_untaken_type,
                    lapse_keeps_last_error,
                    lapse_only_failures_leave_last_error_null,
                    session_list_runnable_finds_work_no_live_claim_holds,
                    cursor_advance_is_one_transaction,
                    paused_consumer_is_not_claimed,
                    resume_heals_paused_work,
                    session_import_copies_a_session_whole,
                    a_bad_import_writes_nothing,
                    payload_search_walks_sessions_in_chunks,
                    event_filter_pages_through_a_session,
                    attempt_history_records_every_outcome,
                    attempt_history_is_pruned_by_retention,
                    dead_letters_group_by_cause,
                    scheduled_tasks_are_kept_once_and_claimed_when_due,
                    failed_delivery_is_retried_and_operators_can_hasten_or_cancel,
                    a_scheduled_clear_is_settled_in_its_own_transaction,
                    presence_last_writer_wins_per_field,
                    presence_expires_after_ttl,
                    servers_register_and_expire,
                    heads_leased_are_listed_by_process,
                    upkeep_lease_is_held_by_one_owner_at_a_time,
                );
                $crate::__stamp_property!($factory);
                $crate::__stamp!($pace, $factory;
                    engine_runs_each_consumer_kind,
                    engine_rejects_unknown_types_and_invalid_payloads,
                    engine_retries_with_backoff_then_dead_letters,
                    engine_redrive_retry_runs_once_more,
                    engine_redrive_skip_moves_on,
                    engine_consume_through_an_index,
                    engine_consume_waits_for_a_held_head,
                    engine_consume_on_a_dead_head_is_dead_lettered,
                    engine_lane_function_keeps_order_per_lane,
                    engine_concurrent_consumers_run_in_parallel,
                    engine_deterministic_ids_survive_a_rerun,
                    engine_state_folds_and_snapshots,
                    engine_clear_supersedes_running_attempts,
                    engine_stream_yields_new_events,
                    engine_abort_on_cancels_a_running_attempt,
                    engine_heartbeat_keeps_a_long_run_leased,
                    engine_a_lapsed_lease_stops_its_run,
                    engine_background_server_refreshes_kept_totals,
                    stranded_work_heals_without_append,
                    due_retry_runs_after_restart,
                    duplicate_append_heals_pending_work,
                    lane_fn_none_runs_concurrently,
                    cleared_trigger_cannot_append,
                    run_clearing_its_session_ends_its_attempt,
                    consume_cycle_is_refused,
                    claim_error_lets_running_heads_finish,
                    a_long_session_is_claimed_in_batches,
                    a_range_outlives_the_late_end_of_the_range_before,
                    fencing_holds_when_store_hangs,
                    abort_on_sees_other_process,
                    engine_state_snapshots_every_n_and_reports_its_index,
                    engine_history_reads_any_range_of_any_length,
                    consume_of_a_served_consumer_never_stalls,
                    lapse_charges_only_started_attempts,
                    permit_returns_when_the_run_does,
                    consumer_state_reads_latest_by_default,
                    snapshot_failure_never_fails_a_state_read,
                    rejected_snapshot_is_repaired,
                    snapshot_write_back_never_holds_up_a_read,
                    returned_event_ids_follow_the_append_rule,
                    abort_on_event_already_logged_cancels_before_start,
                    consume_cancel_stops_the_wait_only,
                    small_rules_of_the_seeds_hold,
                    dead_letters_lists_every_letter,
                    lapsed_run_sees_claim_expired_and_may_clean_up,
                    consume_of_own_consumer_kicks_its_drain,
                    reappend_of_an_id_cleared_away_dedupes,
                    returned_batch_cause_carries_batch_size,
                    schedule_from_a_retried_run_is_one_task,
                    schedule_refuses_bad_input_before_anything_is_kept,
                    scheduled_append_is_delivered_once_when_due,
                    scheduled_append_after_clear_is_a_no_op,
                    scheduled_clear_respects_if_last_index,
                    due_tasks_are_served_once_by_many_servers,
                    watchdog_retries_work_of_a_dead_process,
                    custom_scheduler_task_is_delivered_through_the_append_path,
                    scheduled_task_for_another_contract_is_refused,
                    schedule_marks_any_scheduler_error_as_scheduler_send_failed,
                    append_dispatch_arms_the_scheduler_instead_of_draining,
                    append_dispatch_without_a_scheduler_is_refused,
                    watchdog_task_settles_only_after_its_drain_claimed,
                    external_append_arms_the_watchdog,
                    busy_claim_leaves_a_durable_watchdog,
                    run_reads_session_presence,
                    abort_on_predicate_sees_public_session_ids,
                    abort_monitor_failure_fails_the_attempt,
                    presence_patch_is_checked_whole,
                    state_reads_answer_from_memory_until_the_log_moves,
                    stream_with_presence_starts_with_a_snapshot_then_interleaves,
                    stale_presence_patch_never_repaints_the_past,
                    presence_patch_interleaves_while_event_backlog_drains,
                    consumer_catalog_lists_idle_consumers,
                    one_upkeep_leader_at_a_time,
                    upkeep_leadership_moves_when_the_leader_dies,
                );
            }
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __stamp {
    (multi_thread, $factory:expr; $($scenario:ident),* $(,)?) => {
        $(
            #[$crate::tokio::test(flavor = "multi_thread", worker_threads = 2, crate = "a2_conformance::tokio")]
            async fn $scenario() {
                $crate::store::$scenario(&$factory).await;
            }
        )*
    };
    (paused, $factory:expr; $($scenario:ident),* $(,)?) => {
        $(
            #[$crate::tokio::test(start_paused = true, crate = "a2_conformance::tokio")]
            async fn $scenario() {
                $crate::engine::$scenario(&$factory, $crate::engine::Pace::Paused).await;
            }
        )*
    };
    (realtime, $factory:expr; $($scenario:ident),* $(,)?) => {
        $(
            #[$crate::tokio::test(flavor = "multi_thread", worker_threads = 2, crate = "a2_conformance::tokio")]
            async fn $scenario() {
                $crate::engine::$scenario(&$factory, $crate::engine::Pace::Realtime).await;
            }
        )*
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __stamp_property {
    ($factory:expr) => {
        #[test]
        fn fencing_property_one_completion_from_the_latest_attempt() {
            $crate::property::fencing_property(&$factory);
        }

        #[test]
        fn types_property_log_consumer_never_runs_an_untaken_type() {
            $crate::property::types_property(&$factory);
        }

        #[test]
        fn range_leases_match_single_leases_on_random_histories() {
            $crate::range_property::range_leases_match_single_leases_on_random_histories(&$factory);
        }
    };
}
