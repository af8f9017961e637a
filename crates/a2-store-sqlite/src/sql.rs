//! The SQLite dialect of every statement the shared layer runs. Lists come
//! as JSON text (`json_each`); SQLite has no row locks, and needs none: every
//! write transaction is `BEGIN IMMEDIATE`, so writers take turns.

use a2_store_sql::{PayloadBinding, RowsStatement, Statements, TotalsStatements};

macro_rules! summary {
    ($where:literal) => {
        concat!(
            "SELECT s.session, s.head, s.clear_index, s.created_at, s.updated_at, \
    (SELECT COUNT(*) FROM a2_heads h WHERE h.session = s.session AND h.failed_at IS NOT NULL) AS dead_letters, \
    (SELECT COALESCE(SUM(CASE WHEN h.kind = 0 THEN MAX(s.head - h.idx + 1, 0) ELSE 1 END), 0) \
       FROM a2_heads h WHERE h.session = s.session) AS lag \
  FROM a2_sessions s ",
            $where
        )
    };
}

/// The contract part of a session key (`contract \x1f id`).
macro_rules! contract_of {
    ($column:literal) => {
        concat!("substr(", $column, ", 1, instr(", $column, ", char(31)) - 1)")
    };
}

/// The heads a batch names (`?2`, rows of key, consumer, lane, idx, attempt as JSON) joined to
/// their rows by primary key: `u` is the request, `h` the head.
macro_rules! current_heads {
    () => {
        "json_each(?2) AS u JOIN a2_heads h ON h.session = u.value ->> 0 AND h.consumer = u.value ->> 1 \
         AND h.lane = u.value ->> 2 AND h.idx = u.value ->> 3"
    };
}

/// Heads a claim may take: not dead, within `through`, a lane's lowest only.
macro_rules! runnable {
    () => {
        "h.session = ?1 AND h.consumer IN (SELECT value FROM json_each(?2)) AND h.failed_at IS NULL \
         AND (?3 IS NULL OR h.idx <= ?3) \
         AND (h.kind <> 1 OR h.idx = (SELECT MIN(l.idx) FROM a2_heads l WHERE l.session = h.session \
           AND l.consumer = h.consumer AND l.lane = h.lane)) \
         AND NOT EXISTS (SELECT 1 FROM a2_consumer_pauses z WHERE z.contract = substr(?1, 1, instr(?1, char(31)) - 1) \
           AND z.consumer = h.consumer)"
    };
}

pub(crate) static SQL: Statements = Statements {
    session_page: summary!("WHERE s.session >= ?1 AND s.session < ?2 AND s.session > ?3 ORDER BY s.session LIMIT ?4"),
    sessions_by_activity: summary!(
        "WHERE substr(s.session, 1, instr(s.session, char(31)) - 1) = ?1 AND (s.updated_at, s.session) < (?2, ?3) \
         ORDER BY substr(s.session, 1, instr(s.session, char(31)) - 1) DESC, s.updated_at DESC, s.session DESC LIMIT ?4"
    ),
    session_get: summary!("WHERE s.session = ?1"),
    contracts: concat!(
        "WITH RECURSIVE c(contract) AS ( \
           SELECT (SELECT ",
        contract_of!("session"),
        " FROM a2_sessions ORDER BY session LIMIT 1) \
           UNION ALL \
           SELECT (SELECT ",
        contract_of!("s.session"),
        " FROM a2_sessions s WHERE s.session >= c.contract || char(32) ORDER BY s.session LIMIT 1) \
           FROM c WHERE c.contract IS NOT NULL) \
         SELECT contract FROM c WHERE contract IS NOT NULL"
    ),
    heads_of_session: "SELECT h.*, e.created_at AS event_created_at, s.head AS session_head FROM a2_heads h \
         JOIN a2_sessions s ON s.session = h.session \
         LEFT JOIN a2_events e ON e.session = h.session AND e.idx = h.idx \
         WHERE h.session = ?1 ORDER BY h.consumer, h.lane, h.idx",
    sessions_with_heads: "SELECT DISTINCT session FROM a2_heads WHERE session >= ?1 AND (?2 IS NULL OR consumer = ?2) \
         ORDER BY session LIMIT ?3",
    dead_letters: "SELECT h.*, e.id AS e_id, e.type AS e_type FROM a2_heads h \
         JOIN a2_events e ON e.session = h.session AND e.idx = h.idx \
         WHERE h.failed_at IS NOT NULL AND h.session >= ?1 AND h.session < ?2 \
           AND (?3 IS NULL OR h.session = ?3) AND (?4 IS NULL OR h.consumer = ?4) \
           AND (h.session, h.consumer, h.lane, h.idx) > (?5, ?6, ?7, ?8) \
           AND (?10 IS NULL OR COALESCE(h.last_error_cause, '') = ?10) \
         ORDER BY h.session, h.consumer, h.lane, h.idx LIMIT ?9",
    consumer_totals: concat!(
        "WITH per AS ( \
           SELECT h.session, h.consumer, \
             SUM(CASE WHEN h.kind = 0 THEN MAX(s.head - h.idx + 1, 0) ELSE 1 END) AS lag, \
             SUM(h.failed_at IS NOT NULL) AS dead \
           FROM a2_heads h JOIN a2_sessions s ON s.session = h.session \
           WHERE h.session >= ?1 AND h.session < ?2 GROUP BY h.session, h.consumer) \
         SELECT ",
        contract_of!("session"),
        " AS contract, consumer, COUNT(*) AS sessions, \
           SUM(lag > 0) AS lagging, SUM(lag) AS total_lag, SUM(dead) AS dead_letters \
         FROM per GROUP BY 1, 2 ORDER BY 1, 2"
    ),
    kept_totals: "SELECT * FROM a2_consumer_totals WHERE ?1 IS NULL OR contract = ?1 ORDER BY contract, consumer",
    snapshots_of_session: "SELECT * FROM a2_snapshots WHERE session = ?1 ORDER BY idx DESC, reducer",
    snapshot_get: "SELECT * FROM a2_snapshots WHERE session = ?1 AND reducer = ?2 AND idx <= ?3 ORDER BY idx DESC LIMIT 1",
    events_oldest_first: "SELECT e.* FROM a2_events e JOIN a2_sessions s ON s.session = e.session \
         WHERE e.session = ?1 AND e.idx > MAX(?2, s.clear_index) AND e.idx < ?3 ORDER BY e.idx ASC LIMIT ?4",
    events_newest_first: "SELECT e.* FROM a2_events e JOIN a2_sessions s ON s.session = e.session \
         WHERE e.session = ?1 AND e.idx > MAX(?2, s.clear_index) AND e.idx < ?3 ORDER BY e.idx DESC LIMIT ?4",
    // A page of sessions by primary key, each probed by primary key for a
    // runnable head: bounded and index-served, whatever the store's size.
    runnable_sessions: "WITH page AS (SELECT session, head FROM a2_sessions \
           WHERE session >= ?1 AND session < ?2 AND session > ?3 ORDER BY session LIMIT ?6) \
         SELECT p.session, EXISTS (SELECT 1 FROM a2_heads h WHERE h.session = p.session \
             AND h.consumer IN (SELECT value FROM json_each(?4)) AND h.failed_at IS NULL \
             AND NOT EXISTS (SELECT 1 FROM a2_consumer_pauses z WHERE z.contract = substr(p.session, 1, instr(p.session, char(31)) - 1) \
               AND z.consumer = h.consumer) \
             AND (h.lease_holder IS NULL OR h.lease_expires_at <= ?5) \
             AND (h.next_attempt_at IS NULL OR h.next_attempt_at <= ?5) \
             AND CASE h.kind WHEN 0 THEN h.idx <= p.head \
               WHEN 1 THEN NOT EXISTS (SELECT 1 FROM a2_heads l WHERE l.session = h.session \
                 AND l.consumer = h.consumer AND l.lane = h.lane AND l.idx < h.idx) \
               ELSE 1 END) AS runnable \
         FROM page p ORDER BY p.session",
    audit_list: "SELECT * FROM a2_audit WHERE id < ?1 AND (?3 IS NULL OR action = ?3) ORDER BY id DESC LIMIT ?2",
    explain: ("EXPLAIN QUERY PLAN", "detail"),

    audit_insert: "INSERT INTO a2_audit (at, user_name, host, action, contract, session_id, parameters, outcome, db_user) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING id",
    totals: TotalsStatements {
        refresh_begin: None,
        refresh_generic: None,
        runs_index_catch_up: None,
        mark_lock: "INSERT INTO a2_totals_marks (contract) VALUES (?1) \
             ON CONFLICT (contract) DO UPDATE SET contract = excluded.contract RETURNING refreshed_at, swept_through",
        mark_put: "UPDATE a2_totals_marks SET refreshed_at = ?2, swept_through = ?3 WHERE contract = ?1",
        mark_forget: "UPDATE a2_totals_marks SET refreshed_at = NULL WHERE contract = ?1",
        // This and `runs_since` name their indexes: without statistics SQLite would walk every
        // session, or the contract's attempts, by key.
        changed_sessions: concat!(
            "SELECT session FROM a2_sessions INDEXED BY a2_sessions_by_activity WHERE ",
            contract_of!("session"),
            " = ?1 AND updated_at >= ?2"
        ),
        runs_since: "WITH r AS MATERIALIZED (SELECT session, consumer, ended_at, outcome \
               FROM a2_attempts INDEXED BY a2_attempts_by_end \
               WHERE ended_at >= ?3 AND ended_at < ?4 AND session >= ?1 AND session < ?2) \
             SELECT NULL AS session, consumer, (ended_at / ?5) * ?5 AS bucket, SUM(outcome = 0) AS completed, \
               SUM(outcome IN (1, 2, 4)) AS failed FROM r WHERE ended_at >= ?6 GROUP BY 2, 3 \
             UNION ALL SELECT DISTINCT session, NULL, NULL, NULL, NULL FROM r",
        parts_in_range: "SELECT h.session, h.consumer, \
               SUM(CASE WHEN h.kind = 0 THEN MAX(s.head - h.idx + 1, 0) ELSE 1 END) AS lag, \
               SUM(h.failed_at IS NOT NULL) AS dead \
             FROM a2_heads h JOIN a2_sessions s ON s.session = h.session \
             WHERE h.session >= ?1 AND h.session < ?2 GROUP BY h.session, h.consumer",
        // Each part computed (grouped in key order) beside its kept one, and only those that differ
        // returned: most of a chunk did not move, and every row costs a hop from SQLite's thread.
        parts_changed: "SELECT session, consumer, SUM(lag) AS lag, SUM(dead) AS dead, \
               SUM(was_lag) AS was_lag, SUM(was_dead) AS was_dead FROM ( \
               SELECT h.session, h.consumer, \
                 SUM(CASE WHEN h.kind = 0 THEN MAX(s.head - h.idx + 1, 0) ELSE 1 END) AS lag, \
                 SUM(h.failed_at IS NOT NULL) AS dead, NULL AS was_lag, NULL AS was_dead \
               FROM a2_heads h JOIN a2_sessions s ON s.session = h.session \
               WHERE h.session IN (SELECT value FROM json_each(?1)) GROUP BY h.session, h.consumer \
               UNION ALL \
               SELECT session, consumer, NULL, NULL, lag, dead FROM a2_totals_by_session \
               WHERE session IN (SELECT value FROM json_each(?1))) \
             GROUP BY session, consumer HAVING SUM(lag) IS NOT SUM(was_lag) OR SUM(dead) IS NOT SUM(was_dead)",
        parts_drop: RowsStatement::JsonRows(
            "DELETE FROM a2_totals_by_session WHERE (session, consumer) IN \
             (SELECT u.value ->> 0, u.value ->> 1 FROM json_each(?1) AS u)",
        ),
        parts_drop_range: "DELETE FROM a2_totals_by_session WHERE session >= ?1 AND session < ?2",
        parts_put: RowsStatement::JsonRows(
            "INSERT INTO a2_totals_by_session (session, consumer, lag, dead) \
             SELECT u.value ->> 0, u.value ->> 1, u.value ->> 2, u.value ->> 3 FROM json_each(?1) AS u WHERE true \
             ON CONFLICT (session, consumer) DO UPDATE SET lag = excluded.lag, dead = excluded.dead",
        ),
        totals_clear: "DELETE FROM a2_consumer_totals WHERE contract = ?1",
        upkeep_fence: "SELECT generation FROM a2_upkeep \
             WHERE scope = ?1 AND owner = ?2 AND generation = ?3 AND expires_at > ?4",
        rates_count: "SELECT consumer, (ended_at / ?5) * ?5 AS bucket, SUM(outcome = 0) AS completed, \
               SUM(outcome IN (1, 2, 4)) AS failed \
             FROM a2_attempts INDEXED BY a2_attempts_by_end \
             WHERE ended_at >= ?3 AND ended_at < ?4 AND session >= ?1 AND session < ?2 GROUP BY 1, 2",
        rates_add: "INSERT INTO a2_attempt_rates (contract, consumer, bucket, completed, failed) VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (contract, bucket, consumer) DO UPDATE SET completed = completed + excluded.completed, \
               failed = failed + excluded.failed",
        rates_clear: "DELETE FROM a2_attempt_rates WHERE contract = ?1",
        rates_prune: "DELETE FROM a2_attempt_rates WHERE contract = ?1 AND bucket < ?2",
        rates_tail_kept: "SELECT consumer, second, completed, failed FROM a2_attempt_rates_tail WHERE contract = ?1",
        rates_tail_clear: "DELETE FROM a2_attempt_rates_tail WHERE contract = ?1",
        rates_tail_put: "INSERT INTO a2_attempt_rates_tail (contract, consumer, second, completed, failed) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
        rates_kept: "SELECT contract, consumer, bucket, completed, failed FROM a2_attempt_rates \
             WHERE (?1 IS NULL OR contract = ?1) AND bucket >= ?2 ORDER BY bucket, contract, consumer",
    },
    totals_put: "INSERT INTO a2_consumer_totals VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
         ON CONFLICT (contract, consumer) DO UPDATE SET sessions = excluded.sessions, \
         lagging_sessions = excluded.lagging_sessions, total_lag = excluded.total_lag, \
         dead_letters = excluded.dead_letters, computed_at = excluded.computed_at",
    session_row: "SELECT head, clear_index FROM a2_sessions WHERE session = ?1",
    session_lock: "SELECT head FROM a2_sessions WHERE session = ?1",
    session_open: "INSERT INTO a2_sessions (session, head, clear_index, created_at, updated_at) VALUES (?1, 0, 0, ?2, ?2) \
         ON CONFLICT (session) DO UPDATE SET session = excluded.session RETURNING head, clear_index",
    events_by_ids: "SELECT id, idx, type, payload, created_at, cause FROM a2_events \
         WHERE session = ?1 AND id IN (SELECT value FROM json_each(?2))",
    events_insert: RowsStatement::JsonRows(
        "INSERT INTO a2_events (session, idx, id, type, payload, created_at, cause) \
         SELECT u.value ->> 0, u.value ->> 1, u.value ->> 2, u.value ->> 3, u.value ->> 4, ?1, u.value ->> 5 \
         FROM json_each(?2) AS u",
    ),
    event_heads_insert: RowsStatement::JsonRows(
        "INSERT INTO a2_heads (session, consumer, lane, idx, kind) \
         SELECT u.value ->> 0, u.value ->> 1, u.value ->> 2, u.value ->> 3, u.value ->> 4 FROM json_each(?1) AS u \
         WHERE true ON CONFLICT DO NOTHING",
    ),
    cursors_ensure: RowsStatement::JsonRows(
        "INSERT INTO a2_heads (session, consumer, lane, idx, kind) \
         SELECT u.value ->> 0, u.value ->> 1, u.value ->> 2, u.value ->> 3, 0 FROM json_each(?1) AS u \
         WHERE NOT EXISTS (SELECT 1 FROM a2_heads h WHERE h.session = u.value ->> 0 AND h.consumer = u.value ->> 1 \
           AND h.kind = 0) \
         ON CONFLICT DO NOTHING RETURNING session",
    ),
    // `WHERE true`: an upsert's SELECT needs a WHERE, or its ON reads as a join's.
    sessions_open_many: Some(RowsStatement::JsonRows(
        "INSERT INTO a2_sessions (session, head, clear_index, created_at, updated_at) \
         SELECT u.value ->> 0, u.value ->> 1, 0, ?1, ?1 FROM json_each(?2) AS u WHERE true \
         ON CONFLICT (session) DO UPDATE SET head = head + excluded.head, updated_at = ?1 \
         RETURNING session, head, clear_index",
    )),
    session_advance: "UPDATE a2_sessions SET head = ?1, updated_at = ?2 WHERE session = ?3",
    untaken_skip: "UPDATE a2_heads SET idx = COALESCE((SELECT MIN(e.idx) FROM a2_events e \
           WHERE e.session = a2_heads.session AND e.idx >= a2_heads.idx AND e.type IN (SELECT value FROM json_each(?3))), ?4), \
           attempt_count = 0, failure_count = 0, last_error = NULL, lease_holder = NULL, lease_expires_at = NULL, \
           next_attempt_at = NULL \
         WHERE session = ?1 AND consumer = ?2 AND kind = 0 AND failed_at IS NULL AND idx <= ?5 \
           AND (lease_holder IS NULL OR lease_expires_at <= ?6) \
           AND NOT EXISTS (SELECT 1 FROM a2_events e WHERE e.session = a2_heads.session AND e.idx = a2_heads.idx \
             AND e.type IN (SELECT value FROM json_each(?3)))",
    head_lock: "SELECT * FROM a2_heads WHERE session = ?1 AND consumer = ?2 AND lane = ?3 AND idx = ?4",
    // The rows as a materialized subquery (`LIMIT -1`), so the plan walks them and finds each head by
    // its key; over `json_each` itself the planner scanned the session's heads once a row.
    head_states_put: RowsStatement::JsonRows(
        "UPDATE a2_heads SET attempt_count = v.a, failure_count = v.f, last_error = v.e, failed_at = v.fa, \
           lease_holder = v.lh, lease_expires_at = v.le, next_attempt_at = v.na, attempt_started_at = v.sa, \
           last_error_cause = v.ec \
         FROM (SELECT u.value ->> 0 AS c, u.value ->> 1 AS l, u.value ->> 2 AS i, u.value ->> 3 AS a, \
             u.value ->> 4 AS f, u.value ->> 5 AS e, u.value ->> 6 AS fa, u.value ->> 7 AS lh, u.value ->> 8 AS le, \
             u.value ->> 9 AS na, u.value ->> 10 AS sa, u.value ->> 11 AS ec FROM json_each(?2) AS u LIMIT -1) AS v \
         WHERE a2_heads.session = ?1 AND a2_heads.consumer = v.c AND a2_heads.lane = v.l AND a2_heads.idx = v.i",
    ),
    cursor_settle: "UPDATE a2_heads SET idx = idx + 1, attempt_count = 0, failure_count = 0, last_error = NULL, \
         failed_at = NULL, lease_holder = NULL, lease_expires_at = NULL, next_attempt_at = NULL \
         WHERE session = ?1 AND consumer = ?2 AND lane = ?3 AND idx = ?4",
    event_head_settle: "DELETE FROM a2_heads WHERE session = ?1 AND consumer = ?2 AND lane = ?3 AND idx = ?4",
    session_touch: "UPDATE a2_sessions SET updated_at = MAX(updated_at, ?1) WHERE session = ?2",
    claim_waits: concat!(
        "SELECT MIN(CASE WHEN h.lease_holder IS NOT NULL AND h.lease_expires_at > ?4 THEN h.lease_expires_at END) AS busy_until, \
           MIN(CASE WHEN (h.lease_holder IS NULL OR h.lease_expires_at <= ?4) AND h.next_attempt_at > ?4 \
             THEN h.next_attempt_at END) AS retry_at \
         FROM a2_heads h WHERE ",
        runnable!(),
        " AND h.idx <= ?5"
    ),
    claim_candidates: concat!(
        "SELECT h.*, e.id AS e_id, e.type AS e_type, e.payload AS e_payload, e.idx AS e_idx, \
           e.created_at AS e_created_at, e.cause AS e_cause \
         FROM a2_heads h JOIN a2_events e ON e.session = h.session AND e.idx = h.idx WHERE ",
        runnable!(),
        " AND (h.lease_holder IS NULL OR h.lease_expires_at <= ?4) \
           AND (h.next_attempt_at IS NULL OR h.next_attempt_at <= ?4) \
         ORDER BY h.idx, h.consumer, h.lane LIMIT ?5"
    ),
    // SQLite's writer holds the whole database: its rules pass is as quick as a statement.
    claim_pick: None,
    heads_renew: RowsStatement::JsonRows(
        "UPDATE a2_heads SET lease_expires_at = ?3 \
         FROM (SELECT u.value ->> 0 AS c, u.value ->> 1 AS l, u.value ->> 2 AS i, u.value ->> 3 AS a \
           FROM json_each(?4) AS u LIMIT -1) AS v \
         WHERE a2_heads.session = ?1 AND a2_heads.consumer = v.c AND a2_heads.lane = v.l AND a2_heads.idx = v.i \
           AND a2_heads.attempt_count = v.a AND a2_heads.failed_at IS NULL AND a2_heads.lease_holder = ?2 \
         RETURNING consumer, lane, idx",
    ),
    // Every step over the whole batch at once (the rows as JSON); the transaction holds SQLite's
    // write lock, so the heads the first step finds current are the ones the others settle.
    heads_complete: &[
        RowsStatement::JsonRows(concat!(
            "SELECT h.session, h.consumer, h.lane, h.idx, h.attempt_count AS attempt FROM ",
            current_heads!(),
            " WHERE h.attempt_count = u.value ->> 4 AND h.failed_at IS NULL",
        )),
        RowsStatement::JsonRows(concat!(
            "INSERT INTO a2_attempts (session, consumer, lane, idx, attempt, holder, started_at, ended_at, outcome) \
             SELECT h.session, h.consumer, h.lane, h.idx, h.attempt_count, h.lease_holder, h.attempt_started_at, ?1, 0 \
             FROM ",
            current_heads!(),
            " WHERE h.attempt_count = u.value ->> 4 AND h.failed_at IS NULL ON CONFLICT DO NOTHING",
        )),
        RowsStatement::JsonRows(concat!(
            "UPDATE a2_heads SET idx = idx + 1, attempt_count = 0, failure_count = 0, last_error = NULL, \
             failed_at = NULL, lease_holder = NULL, lease_expires_at = NULL, next_attempt_at = NULL \
             WHERE (session, consumer, lane, idx) IN (SELECT h.session, h.consumer, h.lane, h.idx FROM ",
            current_heads!(),
            " WHERE h.kind = 0 AND h.attempt_count = u.value ->> 4 AND h.failed_at IS NULL)",
        )),
        RowsStatement::JsonRows(concat!(
            "DELETE FROM a2_heads WHERE (session, consumer, lane, idx) IN (SELECT h.session, h.consumer, h.lane, h.idx \
             FROM ",
            current_heads!(),
            " WHERE h.kind <> 0 AND h.attempt_count = u.value ->> 4 AND h.failed_at IS NULL)",
        )),
    ],
    dead_letter_lock: "SELECT h.* FROM a2_heads h JOIN a2_events e ON e.session = h.session AND e.idx = h.idx \
         WHERE h.session = ?1 AND h.consumer = ?2 AND h.idx = ?3 AND h.failed_at IS NOT NULL LIMIT 1",
    cursor_get: "SELECT h.*, EXISTS (SELECT 1 FROM a2_consumer_pauses z WHERE z.contract = substr(?1, 1, instr(?1, char(31)) - 1) \
           AND z.consumer = ?2) AS paused FROM a2_heads h WHERE h.session = ?1 AND h.consumer = ?2 AND h.kind = 0",
    clear_session: "UPDATE a2_sessions SET clear_index = ?1, updated_at = ?2 WHERE session = ?3",
    clear_cursors: "UPDATE a2_heads SET idx = ?1 + 1, attempt_count = 0, failure_count = 0, last_error = NULL, \
         failed_at = NULL, lease_holder = NULL, lease_expires_at = NULL, next_attempt_at = NULL \
         WHERE session = ?2 AND kind = 0 AND idx <= ?1",
    clear_event_heads: "DELETE FROM a2_heads WHERE session = ?1 AND kind <> 0 AND idx <= ?2",
    clear_snapshots: "DELETE FROM a2_snapshots WHERE session = ?1",
    snapshots_below: "SELECT idx, pins FROM a2_snapshots WHERE session = ?1 AND reducer = ?2 AND idx <= ?3",
    snapshot_delete: "DELETE FROM a2_snapshots WHERE session = ?1 AND reducer = ?2 AND idx = ?3",
    snapshot_put: "INSERT INTO a2_snapshots (session, reducer, idx, state, pins, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
         ON CONFLICT (session, reducer, idx) DO UPDATE SET state = excluded.state, pins = excluded.pins, \
         created_at = excluded.created_at",
    pin_live: "SELECT EXISTS (SELECT 1 FROM a2_heads WHERE session = ?1 AND consumer = ?2 AND lane = ?3 \
           AND ((kind = 0 AND idx <= ?4) OR (kind <> 0 AND idx = ?4))) AS live",
    cursor_lock: "SELECT * FROM a2_heads WHERE session = ?1 AND consumer = ?2 AND kind = 0",
    cursor_move: "UPDATE a2_heads SET idx = ?3, attempt_count = 0, failure_count = 0, last_error = NULL, \
         failed_at = NULL, lease_holder = NULL, lease_expires_at = NULL, next_attempt_at = NULL \
         WHERE session = ?1 AND consumer = ?2 AND kind = 0",
    pause_put: "INSERT INTO a2_consumer_pauses (contract, consumer, actor, reason, paused_at) VALUES (?1, ?2, ?3, ?4, ?5) \
         ON CONFLICT (contract, consumer) DO NOTHING",
    pause_get: "SELECT * FROM a2_consumer_pauses WHERE contract = ?1 AND consumer = ?2",
    pause_delete: "DELETE FROM a2_consumer_pauses WHERE contract = ?1 AND consumer = ?2 RETURNING contract",
    pauses_list: "SELECT * FROM a2_consumer_pauses WHERE ?1 IS NULL OR contract = ?1 ORDER BY contract, consumer",
    task_insert: "INSERT INTO a2_scheduled (id, session, contract, name, due_at, work, trigger, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (id) DO NOTHING RETURNING id",
    task_due: "SELECT id FROM a2_scheduled WHERE contract = ?1 AND due_at <= ?2 \
         AND (lease_expires_at IS NULL OR lease_expires_at <= ?2) LIMIT 1",
    task_claim: "UPDATE a2_scheduled SET attempts = attempts + 1, lease_holder = ?3, lease_expires_at = ?4 \
         WHERE id IN (SELECT id FROM a2_scheduled WHERE contract = ?1 AND due_at <= ?2 \
           AND (lease_expires_at IS NULL OR lease_expires_at <= ?2) AND (?6 IS NULL OR id = ?6) ORDER BY due_at, id LIMIT ?5) \
         RETURNING *",
    task_delete_held: "DELETE FROM a2_scheduled WHERE id = ?1 AND lease_holder = ?2 RETURNING id",
    task_release: "UPDATE a2_scheduled SET last_error = ?3, due_at = ?4, lease_holder = NULL, lease_expires_at = NULL \
         WHERE id = ?1 AND lease_holder = ?2 RETURNING id",
    task_list: "SELECT * FROM a2_scheduled WHERE (?1 IS NULL OR contract = ?1) \
         AND (?2 IS NULL OR (due_at, id) > (?2, ?3)) ORDER BY due_at, id LIMIT ?4",
    task_list_of_session: "SELECT * FROM a2_scheduled WHERE session = ?1 \
         AND (?2 IS NULL OR (due_at, id) > (?2, ?3)) ORDER BY due_at, id LIMIT ?4",
    task_delete: "DELETE FROM a2_scheduled WHERE id = ?1 AND (lease_expires_at IS NULL OR lease_expires_at <= ?2) RETURNING *",
    task_hasten: "UPDATE a2_scheduled SET due_at = MIN(due_at, ?2) WHERE id = ?1 RETURNING *",
    server_prune: Some("DELETE FROM a2_servers WHERE last_seen < ?1"),
    server_beat: "INSERT INTO a2_servers (id, contract, info, started_at, last_seen) VALUES (?1, ?2, ?3, ?4, ?5) \
         ON CONFLICT (id) DO UPDATE SET contract = excluded.contract, info = excluded.info, last_seen = excluded.last_seen",
    server_remove: "DELETE FROM a2_servers WHERE id = ?1",
    heads_leased: "SELECT session, consumer, lane, idx, attempt_count, lease_holder, lease_expires_at FROM a2_heads \
         WHERE substr(lease_holder, 1, length(?1)) = ?1 AND lease_expires_at > ?2 \
         ORDER BY session, consumer, lane, idx LIMIT ?3",
    server_list: "SELECT id, info, last_seen FROM a2_servers WHERE ?1 = '' OR contract = ?1 ORDER BY contract, started_at, id",
    upkeep_lease: "INSERT INTO a2_upkeep (scope, owner, generation, expires_at) VALUES (?1, ?2, 1, ?4) \
         ON CONFLICT (scope) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at, \
         generation = CASE WHEN a2_upkeep.owner = excluded.owner THEN a2_upkeep.generation ELSE a2_upkeep.generation + 1 END \
         WHERE a2_upkeep.owner = excluded.owner OR a2_upkeep.expires_at <= ?3 RETURNING generation",
    upkeep_release: "UPDATE a2_upkeep SET expires_at = 0 WHERE scope = ?1 AND owner = ?2",
    upkeep_leaders: "SELECT scope, owner, generation, expires_at FROM a2_upkeep ORDER BY scope",
    presence_upsert: "INSERT INTO a2_presence (session, participant, field, value, seen, at, expires_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (session, participant, field) DO UPDATE SET \
           value = excluded.value, seen = excluded.seen, at = excluded.at, expires_at = excluded.expires_at \
         WHERE a2_presence.at <= excluded.at OR a2_presence.expires_at <= ?8 RETURNING field",
    presence_read: "SELECT participant, field, value, seen, at, expires_at FROM a2_presence \
         WHERE session = ?1 AND expires_at > ?2 ORDER BY participant, field",
    presence_prune: "DELETE FROM a2_presence WHERE expires_at <= ?1 AND (session, participant, field) IN \
         (SELECT session, participant, field FROM a2_presence WHERE expires_at <= ?1 LIMIT ?2) RETURNING field",
    presence_sessions: concat!(
        "SELECT contract, COUNT(*) AS sessions FROM (SELECT DISTINCT ",
        contract_of!("session"),
        " AS contract, session FROM a2_presence WHERE expires_at > ?1 AND value IS NOT NULL) s \
         GROUP BY contract ORDER BY contract"
    ),
    session_import: "INSERT INTO a2_sessions (session, head, clear_index, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)",
    events_import: RowsStatement::PerRow("INSERT INTO a2_events (session, idx, id, type, payload, created_at, cause) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
    heads_import: RowsStatement::PerRow("INSERT INTO a2_heads (session, consumer, lane, idx, kind, attempt_count, failure_count, \
             last_error, failed_at, next_attempt_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"),
    snapshot_import: "INSERT INTO a2_snapshots (session, reducer, idx, state, pins, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    attempts_put: RowsStatement::PerRow(
        "INSERT INTO a2_attempts AS a (session, consumer, lane, idx, attempt, holder, started_at, ended_at, outcome, \
           error, appended) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
         ON CONFLICT (session, consumer, lane, idx, attempt) DO UPDATE SET outcome = excluded.outcome, \
           ended_at = excluded.ended_at, error = COALESCE(excluded.error, a.error) \
         WHERE a.outcome = 2 AND excluded.outcome = 3",
    ),
    attempts_cleared: "INSERT INTO a2_attempts (session, consumer, lane, idx, attempt, holder, started_at, ended_at, \
           outcome) \
         SELECT session, consumer, lane, idx, attempt_count, lease_holder, attempt_started_at, ?3, 5 FROM a2_heads \
         WHERE session = ?1 AND idx <= ?2 AND lease_holder IS NOT NULL AND lease_expires_at > ?3 AND failed_at IS NULL \
         ON CONFLICT DO NOTHING",
    attempts_newest_first: "SELECT * FROM a2_attempts WHERE session = ?1 AND (?2 IS NULL OR consumer = ?2) \
           AND (?3 IS NULL OR idx = ?3) AND (consumer, lane, idx, attempt) < (?4, ?5, ?6, ?7) \
         ORDER BY consumer DESC, lane DESC, idx DESC, attempt DESC LIMIT ?8",
    attempts_oldest_first: "SELECT * FROM a2_attempts WHERE session = ?1 AND (?2 IS NULL OR consumer = ?2) \
           AND (?3 IS NULL OR idx = ?3) AND (consumer, lane, idx, attempt) > (?4, ?5, ?6, ?7) \
         ORDER BY consumer, lane, idx, attempt LIMIT ?8",
    attempts_prune: "DELETE FROM a2_attempts AS a WHERE a.session >= ?1 AND a.session <= ?2 \
           AND EXISTS (SELECT 1 FROM a2_attempts n WHERE n.session = a.session AND n.consumer = a.consumer \
             AND n.lane = a.lane AND n.idx = a.idx AND n.attempt >= a.attempt + ?3) \
           AND NOT EXISTS (SELECT 1 FROM a2_heads h WHERE h.session = a.session AND h.consumer = a.consumer \
             AND h.lane = a.lane AND h.idx = a.idx AND h.failed_at IS NOT NULL)",
    attempt_rates: concat!(
        "SELECT ",
        contract_of!("session"),
        " AS contract, consumer, (ended_at / ?4) * ?4 AS bucket, \
           SUM(CASE WHEN outcome = 0 THEN 1 ELSE 0 END) AS completed, \
           SUM(CASE WHEN outcome IN (1, 2, 4) THEN 1 ELSE 0 END) AS failed \
         FROM a2_attempts WHERE ended_at >= ?3 AND session >= ?1 AND session < ?2 \
         GROUP BY 1, 2, 3 ORDER BY 3, 1, 2"
    ),
    // One pass over the dead-letter index: each group's figures, and its first dead letter as the sample.
    dead_letter_groups: concat!(
        "SELECT * FROM (SELECT contract, consumer, cause, session, lane, idx, \
           COUNT(*) OVER g AS n, MIN(failed_at) OVER g AS first_failed_at, MAX(failed_at) OVER g AS last_failed_at, \
           MAX(last_error) OVER g AS sample_error, ROW_NUMBER() OVER (g ORDER BY session, lane, idx) AS nth \
         FROM (SELECT ",
        contract_of!("h.session"),
        " AS contract, h.consumer, COALESCE(h.last_error_cause, '') AS cause, \
             h.session, h.lane, h.idx, h.failed_at, h.last_error \
           FROM a2_heads h WHERE h.failed_at IS NOT NULL AND h.session >= ?1 AND h.session < ?2 \
           ORDER BY h.session, h.consumer, h.lane, h.idx LIMIT ?3) d \
         WINDOW g AS (PARTITION BY contract, consumer, cause)) w WHERE nth = 1 ORDER BY n DESC, contract, consumer, cause"
    ),
    payload_binding: PayloadBinding::Leaves,
    search_sessions: "SELECT session FROM a2_sessions WHERE session >= ?1 AND session < ?2 AND session > ?3 \
         ORDER BY session LIMIT ?4",
    search_matches: "SELECT * FROM (SELECT e.*, COUNT(*) OVER (PARTITION BY e.session) AS matches, \
           ROW_NUMBER() OVER (PARTITION BY e.session ORDER BY e.idx) AS nth \
         FROM a2_events e JOIN a2_sessions s ON s.session = e.session \
         WHERE e.session >= ?1 AND e.session <= ?2 AND e.idx > s.clear_index \
           AND (?3 IS NULL OR NOT EXISTS (SELECT 1 FROM json_each(?3) c \
             WHERE json_extract(e.payload, json_extract(c.value, '$[0]')) IS NOT json_extract(c.value, '$[1]'))) AND (?4 IS NULL OR e.type = ?4) \
           AND (?5 IS NULL OR e.id = ?5)) m WHERE nth = 1 ORDER BY session",
    session_count: "SELECT COUNT(*) AS n FROM a2_sessions WHERE session >= ?1 AND session < ?2",
    session_nth: "SELECT session FROM a2_sessions WHERE session >= ?1 AND session < ?2 ORDER BY session LIMIT 1 OFFSET ?3",
    filter_chunk: "SELECT COUNT(*) AS looked, MAX(idx) AS last FROM (SELECT e.idx FROM a2_events e \
           JOIN a2_sessions s ON s.session = e.session WHERE e.session = ?1 AND e.idx > MAX(?2, s.clear_index) \
           ORDER BY e.idx LIMIT ?3) x",
    filter_events: "SELECT e.* FROM a2_events e JOIN a2_sessions s ON s.session = e.session \
         WHERE e.session = ?1 AND e.idx > MAX(?2, s.clear_index) AND e.idx <= ?3 \
           AND (?4 IS NULL OR NOT EXISTS (SELECT 1 FROM json_each(?4) c \
             WHERE json_extract(e.payload, json_extract(c.value, '$[0]')) IS NOT json_extract(c.value, '$[1]'))) AND (?5 IS NULL OR e.type = ?5) \
           AND (?6 IS NULL OR e.id = ?6) ORDER BY e.idx",
};
