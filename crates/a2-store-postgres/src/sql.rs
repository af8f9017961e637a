//! The Postgres dialect of every statement the shared layer runs. Lists are
//! arrays (`UNNEST`, `= ANY`), so a batch is one statement; rows a write
//! decides on are locked (`FOR UPDATE`), claims skip rows others hold.

use a2_store_sql::{PayloadBinding, RowsStatement, Statements, TotalsStatements};

macro_rules! summary {
    ($where:literal) => {
        concat!(
            "SELECT s.session, s.head, s.clear_index, s.created_at, s.updated_at, \
    (SELECT COUNT(*) FROM a2_heads h WHERE h.session = s.session AND h.failed_at IS NOT NULL) AS dead_letters, \
    (SELECT COALESCE(SUM(CASE WHEN h.kind = 0 THEN GREATEST(s.head - h.idx + 1, 0) ELSE 1 END), 0)::bigint \
       FROM a2_heads h WHERE h.session = s.session) AS lag \
  FROM a2_sessions s ",
            $where
        )
    };
}

/// Heads a claim may take: not dead, within `through`, a lane's lowest only.
macro_rules! runnable {
    () => {
        "h.session = $1 AND h.consumer = ANY($2) AND h.failed_at IS NULL AND ($3::bigint IS NULL OR h.idx <= $3) \
         AND (h.kind <> 1 OR h.idx = (SELECT MIN(l.idx) FROM a2_heads l WHERE l.session = h.session \
           AND l.consumer = h.consumer AND l.lane = h.lane)) \
         AND NOT EXISTS (SELECT 1 FROM a2_consumer_pauses z WHERE z.contract = split_part($1, chr(31), 1) \
           AND z.consumer = h.consumer)"
    };
}

pub(crate) static SQL: Statements = Statements {
    session_page: summary!("WHERE s.session >= $1 AND s.session < $2 AND s.session > $3 ORDER BY s.session LIMIT $4"),
    sessions_by_activity: summary!(
        "WHERE split_part(s.session, chr(31), 1) = $1 AND (s.updated_at, s.session) < ($2, $3) \
         ORDER BY split_part(s.session, chr(31), 1) DESC, s.updated_at DESC, s.session DESC LIMIT $4"
    ),
    session_get: summary!("WHERE s.session = $1"),
    contracts: "WITH RECURSIVE c(contract) AS ( \
           SELECT (SELECT split_part(session, chr(31), 1) FROM a2_sessions ORDER BY session LIMIT 1) \
           UNION ALL \
           SELECT (SELECT split_part(s.session, chr(31), 1) FROM a2_sessions s \
                   WHERE s.session >= (c.contract || chr(32)) COLLATE \"C\" ORDER BY s.session LIMIT 1) \
           FROM c WHERE c.contract IS NOT NULL) \
         SELECT contract FROM c WHERE contract IS NOT NULL",
    heads_of_session: "SELECT h.*, e.created_at AS event_created_at, s.head AS session_head FROM a2_heads h \
         JOIN a2_sessions s ON s.session = h.session \
         LEFT JOIN a2_events e ON e.session = h.session AND e.idx = h.idx \
         WHERE h.session = $1 ORDER BY h.consumer, h.lane, h.idx",
    sessions_with_heads: "SELECT DISTINCT session FROM a2_heads WHERE session >= $1 AND ($2::text IS NULL OR consumer = $2) \
         ORDER BY session LIMIT $3",
    dead_letters: "SELECT h.*, e.id AS e_id, e.type AS e_type FROM a2_heads h \
         JOIN a2_events e ON e.session = h.session AND e.idx = h.idx \
         WHERE h.failed_at IS NOT NULL AND h.session >= $1 AND h.session < $2 \
           AND ($3::text IS NULL OR h.session = $3) AND ($4::text IS NULL OR h.consumer = $4) \
           AND (h.session, h.consumer, h.lane, h.idx) > ($5, $6, $7, $8) \
           AND ($10::text IS NULL OR COALESCE(h.last_error_cause, '') = $10) \
         ORDER BY h.session, h.consumer, h.lane, h.idx LIMIT $9",
    // Cursors from the covering partial index `a2_cursors` joined to their
    // sessions, plus pending per-event heads from `a2_pending_heads`: two
    // index-only passes instead of a scan of every head. The range is stated
    // on both sides of the join: a generic plan (the statement is run a chunk
    // at a time) otherwise hashed every session of the store for each chunk.
    consumer_totals: "WITH per AS ( \
           SELECT h.session, h.consumer, GREATEST(s.head - h.idx + 1, 0) AS lag, \
             CASE WHEN h.failed_at IS NULL THEN 0 ELSE 1 END AS dead \
           FROM a2_heads h JOIN a2_sessions s ON s.session = h.session \
           WHERE h.kind = 0 AND h.session >= $1 AND h.session < $2 AND s.session >= $1 AND s.session < $2 \
           UNION ALL \
           SELECT p.session, p.consumer, COUNT(*) AS lag, COUNT(*) FILTER (WHERE p.failed_at IS NOT NULL) AS dead \
           FROM a2_heads p WHERE p.kind <> 0 AND p.session >= $1 AND p.session < $2 GROUP BY p.session, p.consumer), \
         by_session AS (SELECT session, consumer, SUM(lag) AS lag, SUM(dead) AS dead FROM per GROUP BY session, consumer) \
         SELECT split_part(session, chr(31), 1) AS contract, consumer, COUNT(*) AS sessions, \
           COUNT(*) FILTER (WHERE lag > 0) AS lagging, SUM(lag)::bigint AS total_lag, SUM(dead)::bigint AS dead_letters \
         FROM by_session GROUP BY 1, 2 ORDER BY 1, 2",
    kept_totals: "SELECT * FROM a2_consumer_totals WHERE $1::text IS NULL OR contract = $1 ORDER BY contract, consumer",
    snapshots_of_session: "SELECT * FROM a2_snapshots WHERE session = $1 ORDER BY idx DESC, reducer",
    snapshot_get: "SELECT * FROM a2_snapshots WHERE session = $1 AND reducer = $2 AND idx <= $3 ORDER BY idx DESC LIMIT 1",
    events_oldest_first: "SELECT e.* FROM a2_events e JOIN a2_sessions s ON s.session = e.session \
         WHERE e.session = $1 AND e.idx > GREATEST($2, s.clear_index) AND e.idx < $3 ORDER BY e.idx ASC LIMIT $4",
    events_newest_first: "SELECT e.* FROM a2_events e JOIN a2_sessions s ON s.session = e.session \
         WHERE e.session = $1 AND e.idx > GREATEST($2, s.clear_index) AND e.idx < $3 ORDER BY e.idx DESC LIMIT $4",
    // A page of sessions by primary key, each probed by primary key for a
    // runnable head: bounded and index-served, whatever the store's size.
    runnable_sessions: "WITH page AS (SELECT session, head FROM a2_sessions \
           WHERE session >= $1 AND session < $2 AND session > $3 ORDER BY session LIMIT $6) \
         SELECT p.session, EXISTS (SELECT 1 FROM a2_heads h WHERE h.session = p.session AND h.consumer = ANY($4) \
             AND h.failed_at IS NULL \
             AND NOT EXISTS (SELECT 1 FROM a2_consumer_pauses z WHERE z.contract = split_part(p.session, chr(31), 1) \
               AND z.consumer = h.consumer) \
             AND (h.lease_holder IS NULL OR h.lease_expires_at <= $5) \
             AND (h.next_attempt_at IS NULL OR h.next_attempt_at <= $5) \
             AND CASE h.kind WHEN 0 THEN h.idx <= p.head \
               WHEN 1 THEN NOT EXISTS (SELECT 1 FROM a2_heads l WHERE l.session = h.session AND l.consumer = h.consumer \
                 AND l.lane = h.lane AND l.idx < h.idx) \
               ELSE TRUE END) AS runnable \
         FROM page p ORDER BY p.session",
    audit_list: "SELECT * FROM a2_audit WHERE id < $1 AND ($3::text IS NULL OR action = $3) ORDER BY id DESC LIMIT $2",
    explain: ("EXPLAIN", "QUERY PLAN"),

    audit_insert: "INSERT INTO a2_audit (at, user_name, host, action, contract, session_id, parameters, outcome, db_user) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
    totals: TotalsStatements {
        refresh_begin: Some("SET LOCAL plan_cache_mode = force_custom_plan"),
        refresh_generic: Some("SET LOCAL plan_cache_mode = force_generic_plan"),
        // One autocommit statement (its lock_timeout set first, for itself alone): a lock held by an
        // autovacuum of the table is given up at once, far below deadlock_timeout, so the refresh
        // never waits on it nor cancels it.
        runs_index_catch_up: Some(
            "WITH t AS MATERIALIZED (SELECT set_config('lock_timeout', '1ms', true)) \
             SELECT brin_summarize_new_values('a2_attempts_by_time'::regclass) FROM t",
        ),
        mark_lock: "INSERT INTO a2_totals_marks (contract) VALUES ($1) \
             ON CONFLICT (contract) DO UPDATE SET contract = EXCLUDED.contract RETURNING refreshed_at, swept_through",
        mark_put: "UPDATE a2_totals_marks SET refreshed_at = $2, swept_through = $3 WHERE contract = $1",
        mark_forget: "UPDATE a2_totals_marks SET refreshed_at = NULL WHERE contract = $1",
        // A range of a2_sessions_by_activity.
        changed_sessions: "SELECT session FROM a2_sessions WHERE split_part(session, chr(31), 1) = $1 \
               AND updated_at >= $2",
        // One read of a2_attempts_by_time (BRIN) serves both: materialized, then grouped twice.
        runs_since: "WITH r AS MATERIALIZED (SELECT session, consumer, ended_at, outcome FROM a2_attempts \
               WHERE ended_at >= $3 AND ended_at < $4 AND session >= $1 AND session < $2) \
             SELECT NULL::text AS session, consumer, (ended_at / $5) * $5 AS bucket, \
               COUNT(*) FILTER (WHERE outcome = 0) AS completed, COUNT(*) FILTER (WHERE outcome IN (1, 2, 4)) AS failed \
             FROM r WHERE ended_at >= $6 GROUP BY 2, 3 \
             UNION ALL SELECT DISTINCT session, NULL::text, NULL::bigint, NULL::bigint, NULL::bigint FROM r",
        parts_in_range: "WITH per AS ( \
               SELECT h.session, h.consumer, GREATEST(s.head - h.idx + 1, 0) AS lag, \
                 CASE WHEN h.failed_at IS NULL THEN 0 ELSE 1 END AS dead \
               FROM a2_heads h JOIN a2_sessions s ON s.session = h.session \
               WHERE h.kind = 0 AND h.session >= $1 AND h.session < $2 AND s.session >= $1 AND s.session < $2 \
               UNION ALL \
               SELECT p.session, p.consumer, COUNT(*), COUNT(*) FILTER (WHERE p.failed_at IS NOT NULL) \
               FROM a2_heads p WHERE p.kind <> 0 AND p.session >= $1 AND p.session < $2 GROUP BY p.session, p.consumer) \
             SELECT session, consumer, SUM(lag)::bigint AS lag, SUM(dead)::bigint AS dead FROM per \
             GROUP BY session, consumer",
        // Each cursor's session head by its primary key: a join may hash the whole sessions table. Only
        // the parts that differ from the kept ones come back (most of a chunk did not move).
        parts_changed: "WITH per AS ( \
               SELECT h.session, h.consumer, \
                 GREATEST((SELECT s.head FROM a2_sessions s WHERE s.session = h.session) - h.idx + 1, 0) AS lag, \
                 CASE WHEN h.failed_at IS NULL THEN 0 ELSE 1 END AS dead \
               FROM a2_heads h WHERE h.kind = 0 AND h.session = ANY($1::text[]) \
               UNION ALL \
               SELECT p.session, p.consumer, COUNT(*), COUNT(*) FILTER (WHERE p.failed_at IS NOT NULL) \
               FROM a2_heads p WHERE p.kind <> 0 AND p.session = ANY($1::text[]) GROUP BY p.session, p.consumer), \
             now AS (SELECT session, consumer, SUM(lag)::bigint AS lag, SUM(dead)::bigint AS dead FROM per \
               GROUP BY session, consumer), \
             was AS (SELECT session, consumer, lag, dead FROM a2_totals_by_session WHERE session = ANY($1::text[])) \
             SELECT COALESCE(n.session, w.session) AS session, COALESCE(n.consumer, w.consumer) AS consumer, \
               n.lag, n.dead, w.lag AS was_lag, w.dead AS was_dead \
             FROM now n FULL JOIN was w ON w.session = n.session AND w.consumer = n.consumer \
             WHERE n.lag IS DISTINCT FROM w.lag OR n.dead IS DISTINCT FROM w.dead",
        parts_drop: RowsStatement::Lists(
            "DELETE FROM a2_totals_by_session t USING UNNEST($1::text[], $2::text[]) AS d(s, c) \
             WHERE t.session = d.s AND t.consumer = d.c",
        ),
        parts_drop_range: "DELETE FROM a2_totals_by_session WHERE session >= $1 AND session < $2",
        parts_put: RowsStatement::Lists(
            "INSERT INTO a2_totals_by_session (session, consumer, lag, dead) \
             SELECT * FROM UNNEST($1::text[], $2::text[], $3::bigint[], $4::bigint[]) \
             ON CONFLICT (session, consumer) DO UPDATE SET lag = EXCLUDED.lag, dead = EXCLUDED.dead",
        ),
        totals_clear: "DELETE FROM a2_consumer_totals WHERE contract = $1",
        upkeep_fence: "SELECT generation FROM a2_upkeep \
             WHERE scope = $1 AND owner = $2 AND generation = $3 AND expires_at > $4 FOR SHARE",
        rates_count: "SELECT consumer, (ended_at / $5) * $5 AS bucket, COUNT(*) FILTER (WHERE outcome = 0) AS completed, \
               COUNT(*) FILTER (WHERE outcome IN (1, 2, 4)) AS failed \
             FROM a2_attempts WHERE ended_at >= $3 AND ended_at < $4 AND session >= $1 AND session < $2 GROUP BY 1, 2",
        rates_add: "INSERT INTO a2_attempt_rates (contract, consumer, bucket, completed, failed) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (contract, bucket, consumer) DO UPDATE SET completed = a2_attempt_rates.completed + EXCLUDED.completed, \
               failed = a2_attempt_rates.failed + EXCLUDED.failed",
        rates_clear: "DELETE FROM a2_attempt_rates WHERE contract = $1",
        rates_prune: "DELETE FROM a2_attempt_rates WHERE contract = $1 AND bucket < $2",
        rates_tail_kept: "SELECT consumer, second, completed, failed FROM a2_attempt_rates_tail WHERE contract = $1",
        rates_tail_clear: "DELETE FROM a2_attempt_rates_tail WHERE contract = $1",
        rates_tail_put: "INSERT INTO a2_attempt_rates_tail (contract, consumer, second, completed, failed) \
             VALUES ($1, $2, $3, $4, $5)",
        rates_kept: "SELECT contract, consumer, bucket, completed, failed FROM a2_attempt_rates \
             WHERE ($1::text IS NULL OR contract = $1) AND bucket >= $2 ORDER BY bucket, contract, consumer",
    },
    totals_put: "INSERT INTO a2_consumer_totals VALUES ($1, $2, $3, $4, $5, $6, $7) \
         ON CONFLICT (contract, consumer) DO UPDATE SET sessions = excluded.sessions, \
         lagging_sessions = excluded.lagging_sessions, total_lag = excluded.total_lag, \
         dead_letters = excluded.dead_letters, computed_at = excluded.computed_at",
    session_row: "SELECT head, clear_index FROM a2_sessions WHERE session = $1",
    session_lock: "SELECT head FROM a2_sessions WHERE session = $1 FOR UPDATE",
    session_open: "INSERT INTO a2_sessions (session, head, clear_index, created_at, updated_at) VALUES ($1, 0, 0, $2, $2) \
         ON CONFLICT (session) DO UPDATE SET session = EXCLUDED.session RETURNING head, clear_index",
    events_by_ids: "SELECT id, idx, type, payload, created_at, cause FROM a2_events WHERE session = $1 AND id = ANY($2)",
    events_insert: RowsStatement::Lists(
        "INSERT INTO a2_events (session, idx, id, type, payload, created_at, cause) \
         SELECT s, i, d, t, p, $1, c FROM UNNEST($2::text[], $3::bigint[], $4::text[], $5::text[], $6::jsonb[], \
           $7::jsonb[]) AS x(s, i, d, t, p, c)",
    ),
    event_heads_insert: RowsStatement::Lists(
        "INSERT INTO a2_heads (session, consumer, lane, idx, kind) \
         SELECT s, c, l, i, k FROM UNNEST($1::text[], $2::text[], $3::text[], $4::bigint[], $5::smallint[]) \
           AS t(s, c, l, i, k) \
         ON CONFLICT DO NOTHING",
    ),
    // The NOT EXISTS sees existing cursors in the snapshot, so the insert
    // never waits on a cursor another transaction is moving.
    cursors_ensure: RowsStatement::Lists(
        "INSERT INTO a2_heads (session, consumer, lane, idx, kind) \
         SELECT s, c, l, i, 0 FROM UNNEST($1::text[], $2::text[], $3::text[], $4::bigint[]) AS t(s, c, l, i) \
         WHERE NOT EXISTS (SELECT 1 FROM a2_heads h WHERE h.session = t.s AND h.consumer = t.c AND h.kind = 0) \
         ON CONFLICT DO NOTHING RETURNING session",
    ),
    // Appends to many sessions are one statement of their own (`append::append_batch_as_statement`).
    sessions_open_many: None,
    // `updated_at` restamped only when a second old (see `append.rs`): the update stays HOT.
    session_advance: "UPDATE a2_sessions SET head = $1, \
         updated_at = CASE WHEN updated_at > $2 - 1000 THEN updated_at ELSE $2 END WHERE session = $3",
    untaken_skip: "UPDATE a2_heads h SET idx = COALESCE((SELECT MIN(e.idx) FROM a2_events e WHERE e.session = h.session \
           AND e.idx >= h.idx AND e.type = ANY($3)), $4), \
           attempt_count = 0, failure_count = 0, last_error = NULL, lease_holder = NULL, lease_expires_at = NULL, \
           next_attempt_at = NULL \
         WHERE h.session = $1 AND h.consumer = $2 AND h.kind = 0 AND h.failed_at IS NULL AND h.idx <= $5 \
           AND (h.lease_holder IS NULL OR h.lease_expires_at <= $6) \
           AND NOT EXISTS (SELECT 1 FROM a2_events e WHERE e.session = h.session AND e.idx = h.idx AND e.type = ANY($3))",
    head_lock: "SELECT * FROM a2_heads WHERE session = $1 AND consumer = $2 AND lane = $3 AND idx = $4 FOR UPDATE",
    head_states_put: RowsStatement::Lists(
        "UPDATE a2_heads h SET attempt_count = u.a, failure_count = u.f, last_error = u.e, failed_at = u.fa, \
           lease_holder = u.lh, lease_expires_at = u.le, next_attempt_at = u.na, attempt_started_at = u.sa, \
           last_error_cause = u.ec \
         FROM UNNEST($2::text[], $3::text[], $4::bigint[], $5::int[], $6::int[], $7::text[], $8::bigint[], \
           $9::text[], $10::bigint[], $11::bigint[], $12::bigint[], $13::text[]) \
           AS u(c, l, i, a, f, e, fa, lh, le, na, sa, ec) \
         WHERE h.session = $1 AND h.consumer = u.c AND h.lane = u.l AND h.idx = u.i",
    ),
    cursor_settle: "UPDATE a2_heads SET idx = idx + 1, attempt_count = 0, failure_count = 0, last_error = NULL, \
         failed_at = NULL, lease_holder = NULL, lease_expires_at = NULL, next_attempt_at = NULL \
         WHERE session = $1 AND consumer = $2 AND lane = $3 AND idx = $4",
    event_head_settle: "DELETE FROM a2_heads WHERE session = $1 AND consumer = $2 AND lane = $3 AND idx = $4",
    session_touch: "UPDATE a2_sessions SET updated_at = GREATEST(updated_at, $1) WHERE session = $2",
    claim_waits: concat!(
        "SELECT MIN(CASE WHEN h.lease_holder IS NOT NULL AND h.lease_expires_at > $4 THEN h.lease_expires_at END) AS busy_until, \
           MIN(CASE WHEN (h.lease_holder IS NULL OR h.lease_expires_at <= $4) AND h.next_attempt_at > $4 \
             THEN h.next_attempt_at END) AS retry_at \
         FROM a2_heads h WHERE ",
        runnable!(),
        " AND h.idx <= $5"
    ),
    claim_candidates: concat!(
        "SELECT h.*, e.id AS e_id, e.type AS e_type, e.payload AS e_payload, e.idx AS e_idx, \
           e.created_at AS e_created_at, e.cause AS e_cause \
         FROM a2_heads h JOIN a2_events e ON e.session = h.session AND e.idx = h.idx WHERE ",
        runnable!(),
        " AND (h.lease_holder IS NULL OR h.lease_expires_at <= $4) \
           AND (h.next_attempt_at IS NULL OR h.next_attempt_at <= $4) \
         ORDER BY h.idx, h.consumer, h.lane LIMIT $5 FOR UPDATE OF h SKIP LOCKED"
    ),
    // The common claim in one statement: candidates locked (as `claim_candidates`), the fresh ones leased
    // in place. `c` carries the rows as locked (the newest version), so the rules see what they lock.
    // With `$14` = 1 (a claim alone, in autocommit) it leases only a whole claim: no candidate it
    // cannot lease (a lapse, an untaken cursor) and every claiming log consumer's cursor there (`$15`
    // of them); else it leases nothing and the transactional rules path claims.
    claim_pick: Some(concat!(
        "WITH c AS (SELECT h.*, (h.lease_holder IS NULL AND (h.kind <> 0 OR EXISTS (SELECT 1 FROM a2_events e \
             JOIN UNNEST($11::text[], $12::text[], $13::text[]) AS t(c, l, y) ON t.c = h.consumer AND t.l = h.lane \
               AND (t.y IS NULL OR t.y = e.type) \
             WHERE e.session = h.session AND e.idx = h.idx))) AS fresh \
           FROM a2_heads h WHERE ",
        runnable!(),
        " AND (h.lease_holder IS NULL OR h.lease_expires_at <= $4) \
           AND (h.next_attempt_at IS NULL OR h.next_attempt_at <= $4) \
           AND (h.kind <> 0 OR EXISTS (SELECT 1 FROM a2_events e WHERE e.session = h.session AND e.idx = h.idx)) \
           AND NOT EXISTS (SELECT 1 FROM UNNEST($8::text[], $9::text[], $10::bigint[]) AS x(c, l, i) \
             WHERE x.c = h.consumer AND x.l = h.lane AND x.i = h.idx) \
         ORDER BY h.idx, h.consumer, h.lane LIMIT $5 FOR UPDATE OF h SKIP LOCKED), \
         taken AS (UPDATE a2_heads h SET attempt_count = h.attempt_count + 1, lease_holder = $6, \
             lease_expires_at = $7, next_attempt_at = NULL, attempt_started_at = $4 \
           FROM c WHERE c.fresh AND h.session = c.session AND h.consumer = c.consumer AND h.lane = c.lane \
             AND h.idx = c.idx \
             AND ($14::int = 0 OR (NOT EXISTS (SELECT 1 FROM c x WHERE NOT x.fresh) \
               AND (SELECT count(*) FROM a2_heads k WHERE k.session = $1 AND k.kind = 0 \
                 AND k.consumer = ANY($11::text[])) >= $15::int)) \
           RETURNING h.*, true AS fresh), \
         picked AS (SELECT * FROM taken UNION ALL SELECT * FROM c WHERE NOT c.fresh) \
         SELECT p.*, e.id AS e_id, e.type AS e_type, e.payload AS e_payload, e.idx AS e_idx, \
           e.created_at AS e_created_at, e.cause AS e_cause, \
           (SELECT s.head FROM a2_sessions s WHERE s.session = $1) AS session_head \
         FROM picked p JOIN a2_events e ON e.session = p.session AND e.idx = p.idx \
         ORDER BY p.idx, p.consumer, p.lane"
    )),
    // The holder is joined as a column of the rows, not compared with a constant: most heads have no
    // holder when the table is analyzed, so `lease_holder = $2` was estimated to match nothing, and the
    // planner rescanned the list for every head of the session (53 ms a renewal of 190 heads).
    heads_renew: RowsStatement::Lists(
        "UPDATE a2_heads h SET lease_expires_at = $3 \
         FROM UNNEST(array_fill($2::text, ARRAY[cardinality($4::text[])]), $4::text[], $5::text[], $6::bigint[], \
           $7::int[]) AS u(h, c, l, i, a) \
         WHERE h.session = $1 AND h.consumer = u.c AND h.lane = u.l AND h.idx = u.i AND h.attempt_count = u.a \
           AND h.failed_at IS NULL AND h.lease_holder = u.h \
         RETURNING h.consumer, h.lane, h.idx",
    ),
    // One statement for the batch: the current attempts (locked), recorded as completed, then the
    // cursors among them moved on and the per-event heads deleted.
    // No lock step: a per-event head's DELETE returns the attempt it ends; a cursor's UPDATE reads it
    // from the row as the statement's snapshot saw it (the fence, rechecked on the row it
    // updates, guarantees the same attempt, whose holder and start never change).
    heads_complete: &[RowsStatement::Lists(
        "WITH u AS (SELECT * FROM UNNEST($2::text[], $3::text[], $4::text[], $5::bigint[], $6::int[]) \
             AS u(s, c, l, i, a)), \
         gone AS (DELETE FROM a2_heads h USING u \
           WHERE h.session = u.s AND h.consumer = u.c AND h.lane = u.l AND h.idx = u.i AND h.kind <> 0 \
             AND h.attempt_count = u.a AND h.failed_at IS NULL \
           RETURNING h.session, h.consumer, h.lane, h.idx, h.attempt_count, h.lease_holder, h.attempt_started_at), \
         moved AS (UPDATE a2_heads h SET idx = h.idx + 1, attempt_count = 0, failure_count = 0, last_error = NULL, \
             failed_at = NULL, lease_holder = NULL, lease_expires_at = NULL, next_attempt_at = NULL \
           FROM u JOIN a2_heads o ON o.session = u.s AND o.consumer = u.c AND o.lane = u.l AND o.idx = u.i \
           WHERE o.kind = 0 AND h.session = o.session AND h.consumer = o.consumer AND h.lane = o.lane \
             AND h.idx = o.idx AND h.attempt_count = u.a AND h.failed_at IS NULL \
           RETURNING h.session, h.consumer, h.lane, o.idx, o.attempt_count, o.lease_holder, o.attempt_started_at), \
         done AS (SELECT * FROM gone UNION ALL SELECT * FROM moved), \
         recorded AS (INSERT INTO a2_attempts (session, consumer, lane, idx, attempt, holder, started_at, ended_at, \
             outcome) \
           SELECT session, consumer, lane, idx, attempt_count, lease_holder, attempt_started_at, $1, 0 FROM done \
           ON CONFLICT DO NOTHING) \
         SELECT session, consumer, lane, idx, attempt_count AS attempt FROM done",
    )],
    dead_letter_lock: "SELECT h.* FROM a2_heads h JOIN a2_events e ON e.session = h.session AND e.idx = h.idx \
         WHERE h.session = $1 AND h.consumer = $2 AND h.idx = $3 AND h.failed_at IS NOT NULL LIMIT 1 FOR UPDATE OF h",
    cursor_get: "SELECT h.*, EXISTS (SELECT 1 FROM a2_consumer_pauses z WHERE z.contract = split_part($1, chr(31), 1) \
           AND z.consumer = $2) AS paused FROM a2_heads h WHERE h.session = $1 AND h.consumer = $2 AND h.kind = 0",
    clear_session: "UPDATE a2_sessions SET clear_index = $1, updated_at = $2 WHERE session = $3",
    clear_cursors: "UPDATE a2_heads SET idx = $1 + 1, attempt_count = 0, failure_count = 0, last_error = NULL, \
         failed_at = NULL, lease_holder = NULL, lease_expires_at = NULL, next_attempt_at = NULL \
         WHERE session = $2 AND kind = 0 AND idx <= $1",
    clear_event_heads: "DELETE FROM a2_heads WHERE session = $1 AND kind <> 0 AND idx <= $2",
    clear_snapshots: "DELETE FROM a2_snapshots WHERE session = $1",
    snapshots_below: "SELECT idx, pins FROM a2_snapshots WHERE session = $1 AND reducer = $2 AND idx <= $3 FOR UPDATE",
    snapshot_delete: "DELETE FROM a2_snapshots WHERE session = $1 AND reducer = $2 AND idx = $3",
    snapshot_put: "INSERT INTO a2_snapshots (session, reducer, idx, state, pins, created_at) VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (session, reducer, idx) DO UPDATE SET state = EXCLUDED.state, \
         pins = (SELECT COALESCE(jsonb_agg(DISTINCT p), '[]'::jsonb) FROM jsonb_array_elements(a2_snapshots.pins || EXCLUDED.pins) AS p), \
         created_at = EXCLUDED.created_at",
    pin_live: "SELECT EXISTS (SELECT 1 FROM a2_heads WHERE session = $1 AND consumer = $2 AND lane = $3 \
           AND ((kind = 0 AND idx <= $4) OR (kind <> 0 AND idx = $4))) AS live",
    cursor_lock: "SELECT * FROM a2_heads WHERE session = $1 AND consumer = $2 AND kind = 0 FOR UPDATE",
    cursor_move: "UPDATE a2_heads SET idx = $3, attempt_count = 0, failure_count = 0, last_error = NULL, \
         failed_at = NULL, lease_holder = NULL, lease_expires_at = NULL, next_attempt_at = NULL \
         WHERE session = $1 AND consumer = $2 AND kind = 0",
    pause_put: "INSERT INTO a2_consumer_pauses (contract, consumer, actor, reason, paused_at) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (contract, consumer) DO NOTHING",
    pause_get: "SELECT * FROM a2_consumer_pauses WHERE contract = $1 AND consumer = $2",
    pause_delete: "DELETE FROM a2_consumer_pauses WHERE contract = $1 AND consumer = $2 RETURNING contract",
    pauses_list: "SELECT * FROM a2_consumer_pauses WHERE $1::text IS NULL OR contract = $1 ORDER BY contract, consumer",
    task_insert: "INSERT INTO a2_scheduled (id, session, contract, name, due_at, work, trigger, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING RETURNING id",
    task_due: "SELECT id FROM a2_scheduled WHERE contract = $1 AND due_at <= $2 \
         AND (lease_expires_at IS NULL OR lease_expires_at <= $2) LIMIT 1",
    // The ids as an array: each row updated is found by its key, never by a join's scan.
    task_claim: "UPDATE a2_scheduled SET attempts = attempts + 1, lease_holder = $3, lease_expires_at = $4 \
         WHERE id = ANY(ARRAY(SELECT id FROM a2_scheduled WHERE contract = $1 AND due_at <= $2 \
           AND (lease_expires_at IS NULL OR lease_expires_at <= $2) AND ($6::text IS NULL OR id = $6) \
           ORDER BY due_at, id LIMIT $5 FOR UPDATE SKIP LOCKED)) RETURNING *",
    task_delete_held: "DELETE FROM a2_scheduled WHERE id = $1 AND lease_holder = $2 RETURNING id",
    task_release: "UPDATE a2_scheduled SET last_error = $3, due_at = $4, lease_holder = NULL, lease_expires_at = NULL \
         WHERE id = $1 AND lease_holder = $2 RETURNING id",
    task_list: "SELECT * FROM a2_scheduled WHERE ($1::text IS NULL OR contract = $1) \
         AND ($2::bigint IS NULL OR (due_at, id) > ($2, $3::text)) ORDER BY due_at, id LIMIT $4",
    task_list_of_session: "SELECT * FROM a2_scheduled WHERE session = $1 \
         AND ($2::bigint IS NULL OR (due_at, id) > ($2, $3::text)) ORDER BY due_at, id LIMIT $4",
    task_delete: "DELETE FROM a2_scheduled WHERE id = $1 AND (lease_expires_at IS NULL OR lease_expires_at <= $2) RETURNING *",
    task_hasten: "UPDATE a2_scheduled SET due_at = LEAST(due_at, $2) WHERE id = $1 RETURNING *",
    server_prune: None,
    server_beat: "WITH pruned AS (DELETE FROM a2_servers WHERE last_seen < $6 AND id <> $1) \
         INSERT INTO a2_servers (id, contract, info, started_at, last_seen) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (id) DO UPDATE SET contract = EXCLUDED.contract, info = EXCLUDED.info, last_seen = EXCLUDED.last_seen",
    server_remove: "DELETE FROM a2_servers WHERE id = $1",
    heads_leased: "SELECT session, consumer, lane, idx, attempt_count, lease_holder, lease_expires_at FROM a2_heads \
         WHERE substr(lease_holder, 1, length($1)) = $1 AND lease_expires_at > $2 \
         ORDER BY session, consumer, lane, idx LIMIT $3",
    server_list: "SELECT id, info, last_seen FROM a2_servers WHERE $1 = '' OR contract = $1 ORDER BY contract, started_at, id",
    upkeep_lease: "INSERT INTO a2_upkeep (scope, owner, generation, expires_at) VALUES ($1, $2, 1, $4) \
         ON CONFLICT (scope) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at, \
         generation = CASE WHEN a2_upkeep.owner = EXCLUDED.owner THEN a2_upkeep.generation ELSE a2_upkeep.generation + 1 END \
         WHERE a2_upkeep.owner = EXCLUDED.owner OR a2_upkeep.expires_at <= $3 RETURNING generation",
    upkeep_release: "UPDATE a2_upkeep SET expires_at = 0 WHERE scope = $1 AND owner = $2",
    upkeep_leaders: "SELECT scope, owner, generation, expires_at FROM a2_upkeep ORDER BY scope",
    presence_upsert: "INSERT INTO a2_presence (session, participant, field, value, seen, at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (session, participant, field) DO UPDATE SET \
           value = excluded.value, seen = excluded.seen, at = excluded.at, expires_at = excluded.expires_at \
         WHERE a2_presence.at <= excluded.at OR a2_presence.expires_at <= $8 RETURNING field",
    presence_read: "SELECT participant, field, value, seen, at, expires_at FROM a2_presence \
         WHERE session = $1 AND expires_at > $2 ORDER BY participant, field",
    // Locked and skipped as a claim is: a write reviving a cell meanwhile keeps it (the outer check sees the new row).
    presence_prune: "DELETE FROM a2_presence WHERE expires_at <= $1 AND (session, participant, field) IN \
         (SELECT session, participant, field FROM a2_presence WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED) \
         RETURNING field",
    presence_sessions: "SELECT split_part(session, chr(31), 1) AS contract, COUNT(DISTINCT session) AS sessions \
         FROM a2_presence WHERE expires_at > $1 AND value IS NOT NULL GROUP BY 1 ORDER BY 1",
    session_import: "INSERT INTO a2_sessions (session, head, clear_index, created_at, updated_at) VALUES ($1, $2, $3, $4, $5)",
    events_import: RowsStatement::Lists(
        "INSERT INTO a2_events (session, idx, id, type, payload, created_at, cause) \
         SELECT $1, i, d, t, p, at, c FROM UNNEST($2::bigint[], $3::text[], $4::text[], $5::jsonb[], $6::bigint[], $7::jsonb[]) \
           AS x(i, d, t, p, at, c)",
    ),
    heads_import: RowsStatement::Lists(
        "INSERT INTO a2_heads (session, consumer, lane, idx, kind, attempt_count, failure_count, last_error, failed_at, \
           next_attempt_at) \
         SELECT $1, c, l, i, k, a, f, e, fa, na FROM UNNEST($2::text[], $3::text[], $4::bigint[], $5::smallint[], \
           $6::int[], $7::int[], $8::text[], $9::bigint[], $10::bigint[]) AS t(c, l, i, k, a, f, e, fa, na)",
    ),
    snapshot_import: "INSERT INTO a2_snapshots (session, reducer, idx, state, pins, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
    attempts_put: RowsStatement::Lists(
        "INSERT INTO a2_attempts AS a (session, consumer, lane, idx, attempt, holder, started_at, ended_at, outcome, \
           error, appended) \
         SELECT $1, c, l, i, n, h, sa, ea, o, x, p FROM UNNEST($2::text[], $3::text[], $4::bigint[], $5::int[], \
           $6::text[], $7::bigint[], $8::bigint[], $9::smallint[], $10::text[], $11::jsonb[]) \
           AS u(c, l, i, n, h, sa, ea, o, x, p) \
         ON CONFLICT (session, consumer, lane, idx, attempt) DO UPDATE SET outcome = excluded.outcome, \
           ended_at = excluded.ended_at, error = COALESCE(excluded.error, a.error) \
         WHERE a.outcome = 2 AND excluded.outcome = 3",
    ),
    attempts_cleared: "INSERT INTO a2_attempts (session, consumer, lane, idx, attempt, holder, started_at, ended_at, \
           outcome) \
         SELECT session, consumer, lane, idx, attempt_count, lease_holder, attempt_started_at, $3, 5 FROM a2_heads \
         WHERE session = $1 AND idx <= $2 AND lease_holder IS NOT NULL AND lease_expires_at > $3 AND failed_at IS NULL \
         ON CONFLICT DO NOTHING",
    attempts_newest_first: "SELECT * FROM a2_attempts WHERE session = $1 AND ($2::text IS NULL OR consumer = $2) \
           AND ($3::bigint IS NULL OR idx = $3) AND (consumer, lane, idx, attempt) < ($4, $5, $6, $7) \
         ORDER BY consumer DESC, lane DESC, idx DESC, attempt DESC LIMIT $8",
    attempts_oldest_first: "SELECT * FROM a2_attempts WHERE session = $1 AND ($2::text IS NULL OR consumer = $2) \
           AND ($3::bigint IS NULL OR idx = $3) AND (consumer, lane, idx, attempt) > ($4, $5, $6, $7) \
         ORDER BY consumer, lane, idx, attempt LIMIT $8",
    attempts_prune: "DELETE FROM a2_attempts a WHERE a.session >= $1 AND a.session <= $2 \
           AND EXISTS (SELECT 1 FROM a2_attempts n WHERE n.session = a.session AND n.consumer = a.consumer \
             AND n.lane = a.lane AND n.idx = a.idx AND n.attempt >= a.attempt + $3) \
           AND NOT EXISTS (SELECT 1 FROM a2_heads h WHERE h.session = a.session AND h.consumer = a.consumer \
             AND h.lane = a.lane AND h.idx = a.idx AND h.failed_at IS NOT NULL)",
    attempt_rates: "SELECT split_part(session, chr(31), 1) AS contract, consumer, (ended_at / $4) * $4 AS bucket, \
           COUNT(*) FILTER (WHERE outcome = 0) AS completed, COUNT(*) FILTER (WHERE outcome IN (1, 2, 4)) AS failed \
         FROM a2_attempts WHERE ended_at >= $3 AND session >= $1 AND session < $2 \
         GROUP BY 1, 2, 3 ORDER BY 3, 1, 2",
    // One pass over the dead-letter index: each group's figures, and its first dead letter as the sample.
    dead_letter_groups: "SELECT * FROM (SELECT contract, consumer, cause, session, lane, idx, \
           COUNT(*) OVER g AS n, MIN(failed_at) OVER g AS first_failed_at, MAX(failed_at) OVER g AS last_failed_at, \
           MAX(last_error) OVER g AS sample_error, ROW_NUMBER() OVER (g ORDER BY session, lane, idx) AS nth \
         FROM (SELECT split_part(h.session, chr(31), 1) AS contract, h.consumer, COALESCE(h.last_error_cause, '') AS cause, \
             h.session, h.lane, h.idx, h.failed_at, h.last_error \
           FROM a2_heads h WHERE h.failed_at IS NOT NULL AND h.session >= $1 AND h.session < $2 \
           ORDER BY h.session, h.consumer, h.lane, h.idx LIMIT $3) d \
         WINDOW g AS (PARTITION BY contract, consumer, cause)) w WHERE nth = 1 ORDER BY n DESC, contract, consumer, cause",
    payload_binding: PayloadBinding::Document,
    search_sessions: "SELECT session FROM a2_sessions WHERE session >= $1 AND session < $2 AND session > $3 \
         ORDER BY session LIMIT $4",
    search_matches: "SELECT * FROM (SELECT e.*, COUNT(*) OVER (PARTITION BY e.session) AS matches, \
           ROW_NUMBER() OVER (PARTITION BY e.session ORDER BY e.idx) AS nth \
         FROM a2_events e JOIN a2_sessions s ON s.session = e.session \
         WHERE e.session >= $1 AND e.session <= $2 AND e.idx > s.clear_index \
           AND ($3::jsonb IS NULL OR e.payload @> $3) AND ($4::text IS NULL OR e.type = $4) \
           AND ($5::text IS NULL OR e.id = $5)) m WHERE nth = 1 ORDER BY session",
    session_count: "SELECT COUNT(*) AS n FROM a2_sessions WHERE session >= $1 AND session < $2",
    session_nth: "SELECT session FROM a2_sessions WHERE session >= $1 AND session < $2 ORDER BY session OFFSET $3 LIMIT 1",
    filter_chunk: "SELECT COUNT(*) AS looked, MAX(idx) AS last FROM (SELECT e.idx FROM a2_events e \
           JOIN a2_sessions s ON s.session = e.session WHERE e.session = $1 AND e.idx > GREATEST($2, s.clear_index) \
           ORDER BY e.idx LIMIT $3) x",
    filter_events: "SELECT e.* FROM a2_events e JOIN a2_sessions s ON s.session = e.session \
         WHERE e.session = $1 AND e.idx > GREATEST($2, s.clear_index) AND e.idx <= $3 \
           AND ($4::jsonb IS NULL OR e.payload @> $4) AND ($5::text IS NULL OR e.type = $5) \
           AND ($6::text IS NULL OR e.id = $6) ORDER BY e.idx",
};
