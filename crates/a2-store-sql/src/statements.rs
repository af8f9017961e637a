//! Every statement the shared layer runs, by name: a backend is mostly one
//! `Statements` value in its own dialect. Each field's comment gives the
//! parameters in order; `?n`/`$n` numbering is the dialect's own.

/// A statement over many rows, taking the leading parameters and then the
/// row's columns: run once per row, once with each column bound as a list
/// (one round trip, for databases with arrays), or once with every row in one
/// JSON array of arrays (one call, for databases with `json_each` and no arrays).
#[derive(Debug, Clone, Copy)]
pub enum RowsStatement {
    PerRow(&'static str),
    Lists(&'static str),
    JsonRows(&'static str),
}

#[derive(Debug, Clone, Copy)]
pub struct Statements {
    // ── inspection reads (each served by an index; see `SqlStore::explain_reads`) ──
    /// (lo, hi, after, limit) → session summaries
    pub session_page: &'static str,
    /// (contract, updated_at, after key, limit) → session summaries
    pub sessions_by_activity: &'static str,
    /// (key) → a session summary
    pub session_get: &'static str,
    /// () → contract
    pub contracts: &'static str,
    /// (key) → heads with `event_created_at`, `session_head`
    pub heads_of_session: &'static str,
    /// (from key, consumer?, limit) → session
    pub sessions_with_heads: &'static str,
    /// (lo, hi, session?, consumer?, after session, consumer, lane, idx, limit, cause?) → heads with `e_id`, `e_type`
    pub dead_letters: &'static str,
    /// (lo, hi) → contract, consumer, sessions, lagging, total_lag, dead_letters
    pub consumer_totals: &'static str,
    /// (contract?) → the kept totals
    pub kept_totals: &'static str,
    /// (key) → snapshots
    pub snapshots_of_session: &'static str,
    /// (key, reducer, at most) → a snapshot
    pub snapshot_get: &'static str,
    /// (key, after, before, limit) → events
    pub events_oldest_first: &'static str,
    /// (key, after, before, limit) → events
    pub events_newest_first: &'static str,
    /// (lo, hi, after, consumers, now, limit) → session, runnable
    pub runnable_sessions: &'static str,
    /// (before, limit) → audit records
    pub audit_list: &'static str,
    /// The prefix that turns a read into its plan (`EXPLAIN`), and the plan's column.
    pub explain: (&'static str, &'static str),

    // ── writes ──
    /// (at, user, host, action, contract, session id, parameters, outcome) → id
    pub audit_insert: &'static str,
    /// Kept totals, folded in by what changed.
    pub totals: crate::totals::TotalsStatements,
    /// (contract, consumer, sessions, lagging, total lag, dead letters, computed at)
    pub totals_put: &'static str,
    /// (key) → head, clear_index
    pub session_row: &'static str,
    /// (key) → head; locks the row where the database locks rows
    pub session_lock: &'static str,
    /// (key, now) → head, clear_index: the session, created if new, locked for an append
    pub session_open: &'static str,
    /// (key, ids) → events
    pub events_by_ids: &'static str,
    /// (now) then per event (key, idx, id, type, payload, cause): the rows may span sessions
    pub events_insert: RowsStatement,
    /// per head (key, consumer, lane, idx, kind)
    pub event_heads_insert: RowsStatement,
    /// per cursor (key, consumer, lane, idx) → session of each cursor made: inserted where the session has no cursor for that consumer
    pub cursors_ensure: RowsStatement,
    /// (now) then per session (key, events about to be appended) → session, head, clear_index: each
    /// session created if new and its head moved past the events (read back under the row's lock), so
    /// the appends of many sessions share one statement of each kind. `None`: the backend appends
    /// many sessions its own way (Postgres, one statement a flush), or not at all.
    pub sessions_open_many: Option<RowsStatement>,
    /// (new head, now, key)
    pub session_advance: &'static str,
    /// (key, consumer, types, head + 1, head, now)
    pub untaken_skip: &'static str,
    /// (key, consumer, lane, idx) → the head; locked where rows lock
    pub head_lock: &'static str,
    /// (key) then per head (consumer, lane, idx, attempts, failures, error, failed at, holder, expires, next,
    /// attempt started at, error cause)
    pub head_states_put: RowsStatement,
    /// (key, consumer, lane, idx)
    pub cursor_settle: &'static str,
    /// (key, consumer, lane, idx)
    pub event_head_settle: &'static str,
    /// (now, key)
    pub session_touch: &'static str,
    /// (key, consumers, through?, now, head) → busy_until, retry_at
    pub claim_waits: &'static str,
    /// (key, consumers, through?, now, limit) → heads with the event as `e_*`
    pub claim_candidates: &'static str,
    /// (key, consumers, through?, now, limit, holder, expires, excluded consumers, lanes, idxs, log
    /// consumers, their lanes, a type each takes or NULL for all) → the candidates `claim_candidates`
    /// would find, with `fresh` and `session_head`: the fresh ones (no lapsed lease; a cursor only on an
    /// event its consumer takes) already leased to the holder by the statement itself, the rest locked
    /// for the shared rules. `None`: every candidate goes through the rules (one writer, no row locks).
    pub claim_pick: Option<&'static str>,
    /// (key, holder, expires) then per head (consumer, lane, idx, attempt) → consumer, lane, idx kept
    pub heads_renew: RowsStatement,
    /// (now) then per head (key, consumer, lane, idx, attempt), heads of any sessions, run in order:
    /// each head still running that attempt has it recorded as completed (0) and is settled (a cursor
    /// moves on, a per-event head goes); the rows they return, `session, consumer, lane, idx, attempt`,
    /// are the heads settled. One statement where the database can write several tables in one (Postgres),
    /// else one a step.
    pub heads_complete: &'static [RowsStatement],
    /// (key, consumer, idx) → the dead head; locked where rows lock
    pub dead_letter_lock: &'static str,
    /// (key, consumer) → the cursor, and whether its consumer is paused (`paused`)
    pub cursor_get: &'static str,
    /// (boundary, now, key)
    pub clear_session: &'static str,
    /// (boundary, key)
    pub clear_cursors: &'static str,
    /// (key, boundary)
    pub clear_event_heads: &'static str,
    /// (key)
    pub clear_snapshots: &'static str,
    /// (key, reducer, idx) → idx, pins of snapshots at or below; locked where rows lock
    pub snapshots_below: &'static str,
    /// (key, reducer, idx)
    pub snapshot_delete: &'static str,
    /// (key, reducer, idx, state, pins, now)
    pub snapshot_put: &'static str,
    /// (key, consumer, lane, idx) → live
    pub pin_live: &'static str,
    /// (key, consumer) → the cursor; locked where rows lock
    pub cursor_lock: &'static str,
    /// (key, consumer, next): the cursor at `next` with a fresh state
    pub cursor_move: &'static str,
    /// (contract, consumer, actor, reason, now): kept if already paused
    pub pause_put: &'static str,
    /// (contract, consumer) → the pause
    pub pause_get: &'static str,
    /// (contract, consumer) → contract of the pause lifted
    pub pause_delete: &'static str,
    /// (contract or NULL) → pauses by contract, consumer
    pub pauses_list: &'static str,
    // ── scheduled tasks ──
    /// (id, key, contract, name, due_at, work, trigger, now) → id; nothing when the id is kept already
    pub task_insert: &'static str,
    /// (contract, now) → the id of one due task no live delivery holds, if any: read before claiming,
    /// so a server's poll writes nothing while nothing is due
    pub task_due: &'static str,
    /// (contract, now, holder, lease expires, limit, only id?) → the due tasks leased to the holder
    pub task_claim: &'static str,
    /// (id, holder) → id: a delivered task deleted while the holder holds it
    pub task_delete_held: &'static str,
    /// (id, holder, error, retry at) → id: a failed delivery released, due again later
    pub task_release: &'static str,
    /// (contract?, after due_at?, after id, limit) → tasks by due time, id
    pub task_list: &'static str,
    /// (key, after due_at?, after id, limit) → a session's tasks by due time, id
    pub task_list_of_session: &'static str,
    /// (id, now) → the task deleted, unless a live delivery holds it
    pub task_delete: &'static str,
    /// (id, now) → the task, due now (a live delivery keeps its lease)
    pub task_hasten: &'static str,
    // ── the process registry ──
    /// (prune_before) → rows not seen since deleted, for a dialect whose
    /// `server_beat` cannot prune in its own statement; `None` where it does
    pub server_prune: Option<&'static str>,
    /// (id, contract, info, started_at, now[, prune_before when `server_prune` is `None`]) → the row upserted
    pub server_beat: &'static str,
    /// (id) → the row deleted
    pub server_remove: &'static str,
    /// (holder prefix, now, limit) → session, consumer, lane, idx, attempt_count, lease_holder,
    /// lease_expires_at of heads leased now under the prefix, by session, consumer, lane, idx
    pub heads_leased: &'static str,
    /// (contract or '') → id, info, last_seen by contract, started_at, id
    pub server_list: &'static str,
    // ── the upkeep lease ──
    /// (scope, owner, now, expires_at) → generation, when the owner holds the lease now
    /// (it held it, or it had expired); no row while another's lease lasts
    pub upkeep_lease: &'static str,
    /// (scope, owner) → the lease expired at once, if the owner held it
    pub upkeep_release: &'static str,
    /// () → scope, owner, generation, expires_at by scope
    pub upkeep_leaders: &'static str,
    // ── the presence plane ──
    /// (key, participant, field, value or NULL, seen, at, expires_at, now) → field, when this write won
    /// (the kept cell expired, or its stamp is no newer than `at`)
    pub presence_upsert: &'static str,
    /// (key, now) → the session's unexpired cells, tombstones too, by participant, field
    pub presence_read: &'static str,
    /// (now, limit) → one row a cell deleted because it expired
    pub presence_prune: &'static str,
    /// (now) → contract, sessions: how many sessions of each contract have a live value
    pub presence_sessions: &'static str,
    /// (key, head, clear_index, created_at, updated_at)
    pub session_import: &'static str,
    /// (key) then per event (idx, id, type, payload, created_at, cause)
    pub events_import: RowsStatement,
    /// (key) then per head (consumer, lane, idx, kind, attempts, failures, error, failed_at, next_attempt_at)
    pub heads_import: RowsStatement,
    /// (key, reducer, idx, state, pins, created_at)
    pub snapshot_import: &'static str,
    /// How a payload pattern is bound to the search statements: the JSON
    /// document itself (`@>`), or its `(path, scalar)` leaves (`json_extract`).
    pub payload_binding: PayloadBinding,
    // ── attempt history ──
    /// (key) then per attempt (consumer, lane, idx, attempt, holder, started at, ended at, outcome, error,
    /// appended): a new record, or a lapse (2) replaced by the same attempt's late outcome (superseded, 3)
    pub attempts_put: RowsStatement,
    /// (key, boundary, now): the attempts running at or below a clear's boundary end as cleared (5)
    pub attempts_cleared: &'static str,
    /// (key, consumer?, idx?, after consumer, lane, idx, attempt, limit) → attempts in head order, descending
    pub attempts_newest_first: &'static str,
    /// (key, consumer?, idx?, after consumer, lane, idx, attempt, limit) → attempts in head order, ascending
    pub attempts_oldest_first: &'static str,
    /// (first key, last key, keep): drop attempts with `keep` newer ones of their head, unless the head is dead
    pub attempts_prune: &'static str,
    /// (lo, hi, since, bucket ms) → contract, consumer, bucket, completed, failed: oldest bucket first
    pub attempt_rates: &'static str,
    /// (lo, hi) → contract, consumer, cause, n, first_failed_at, last_failed_at, sample_error, and the
    /// group's first dead letter as `session, lane, idx`; largest group first
    pub dead_letter_groups: &'static str,
    /// (lo, hi, after, scan) → session: a page of a contract's session keys
    pub search_sessions: &'static str,
    /// (first key, last key, payload, type, id) → the first matching event of
    /// each session in the range, with `matches`, their number
    pub search_matches: &'static str,
    /// (lo, hi) → n: sessions in the key range
    pub session_count: &'static str,
    /// (lo, hi, n) → session: the key `n` sessions past `lo` in [lo, hi), if there is one (a chunk's end)
    pub session_nth: &'static str,
    /// (key, after, scan) → looked, last: how many events a chunk looks at, and the last index
    pub filter_chunk: &'static str,
    /// (key, after, last, payload, type, id) → the matching events of the chunk
    pub filter_events: &'static str,
}

/// See [`Statements::payload_binding`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadBinding {
    Document,
    Leaves,
}
