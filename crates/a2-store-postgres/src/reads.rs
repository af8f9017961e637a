//! Inspection reads on the reader pool (statement timeout, at most a few
//! connections), each served by an index: sessions by key range, events by
//! `(session, idx)`, heads by their primary key, dead letters by a partial index.

use std::sync::Arc;

use a2_store::codec::{prefix_range, to_i64, to_u64};
use a2_store::rules::head_infos;
use a2_store::*;
use sqlx::postgres::PgRow;
use sqlx::types::Json;

use crate::rows::{event, get, head_row, head_state, json};
use crate::{db_error, PgStore};

// ── the inspection reads, named so `explain_reads` can show their plans ──

macro_rules! summary {
    ($where:literal) => {
        concat!(
            "SELECT s.session, s.head, s.clear_index, s.created_at, s.updated_at, \
    (SELECT COUNT(*) FROM a2_heads h WHERE h.session = s.session AND h.failed_at IS NOT NULL) AS dead_letters, \
    (SELECT COALESCE(SUM(CASE WHEN h.kind = 0 THEN GREATEST(s.head - h.idx + 1, 0) ELSE 1 END), 0)::bigint \
       FROM a2_heads h WHERE h.session = s.session) AS lag \
  FROM a2_sessions s",
            " ",
            $where
        )
    };
}

const SESSION_PAGE: &str =
    summary!("WHERE s.session >= $1 AND s.session < $2 AND s.session > $3 ORDER BY s.session LIMIT $4");
const SESSIONS_BY_ACTIVITY: &str = summary!(
    "WHERE split_part(s.session, chr(31), 1) = $1 AND (s.updated_at, s.session) < ($2, $3) \
     ORDER BY split_part(s.session, chr(31), 1) DESC, s.updated_at DESC, s.session DESC LIMIT $4"
);
const SESSION_GET: &str = summary!("WHERE s.session = $1");
const SNAPSHOT_GET: &str =
    "SELECT * FROM a2_snapshots WHERE session = $1 AND reducer = $2 AND idx <= $3 ORDER BY idx DESC LIMIT 1";
const CONTRACTS: &str = "WITH RECURSIVE c(contract) AS ( \
               SELECT (SELECT split_part(session, chr(31), 1) FROM a2_sessions ORDER BY session LIMIT 1) \
               UNION ALL \
               SELECT (SELECT split_part(s.session, chr(31), 1) FROM a2_sessions s \
                       WHERE s.session >= (c.contract || chr(32)) COLLATE \"C\" ORDER BY s.session LIMIT 1) \
               FROM c WHERE c.contract IS NOT NULL) \
             SELECT contract FROM c WHERE contract IS NOT NULL";
const HEADS_OF_SESSION: &str = "SELECT h.*, e.created_at AS event_created_at, s.head AS session_head FROM a2_heads h \
             JOIN a2_sessions s ON s.session = h.session \
             LEFT JOIN a2_events e ON e.session = h.session AND e.idx = h.idx \
             WHERE h.session = $1 ORDER BY h.consumer, h.lane, h.idx";
const SESSIONS_WITH_HEADS: &str = "SELECT DISTINCT session FROM a2_heads WHERE session >= $1 AND ($2::text IS NULL OR consumer = $2) ORDER BY session LIMIT $3";
const DEAD_LETTERS: &str = "SELECT h.*, e.id AS e_id, e.type AS e_type FROM a2_heads h \
             JOIN a2_events e ON e.session = h.session AND e.idx = h.idx \
             WHERE h.failed_at IS NOT NULL AND h.session >= $1 AND h.session < $2 \
               AND ($3::text IS NULL OR h.session = $3) AND ($4::text IS NULL OR h.consumer = $4) \
               AND (h.session, h.consumer, h.lane, h.idx) > ($5, $6, $7, $8) \
             ORDER BY h.session, h.consumer, h.lane, h.idx LIMIT $9";
/// Cursors from the covering partial index `a2_cursors` joined to their
/// sessions, plus pending per-event heads from `a2_pending_heads`: two
/// index-only passes instead of a scan of every head.
const CONSUMER_TOTALS: &str = "WITH per AS ( \
               SELECT h.session, h.consumer, GREATEST(s.head - h.idx + 1, 0) AS lag, \
                 CASE WHEN h.failed_at IS NULL THEN 0 ELSE 1 END AS dead \
               FROM a2_heads h JOIN a2_sessions s ON s.session = h.session \
               WHERE h.kind = 0 AND h.session >= $1 AND h.session < $2 \
               UNION ALL \
               SELECT p.session, p.consumer, COUNT(*) AS lag, COUNT(*) FILTER (WHERE p.failed_at IS NOT NULL) AS dead \
               FROM a2_heads p WHERE p.kind <> 0 AND p.session >= $1 AND p.session < $2 GROUP BY p.session, p.consumer), \
             by_session AS (SELECT session, consumer, SUM(lag) AS lag, SUM(dead) AS dead FROM per GROUP BY session, consumer) \
             SELECT split_part(session, chr(31), 1) AS contract, consumer, COUNT(*) AS sessions, \
               COUNT(*) FILTER (WHERE lag > 0) AS lagging, SUM(lag)::bigint AS total_lag, SUM(dead)::bigint AS dead_letters \
             FROM by_session GROUP BY 1, 2 ORDER BY 1, 2";
const SNAPSHOTS_OF_SESSION: &str = "SELECT * FROM a2_snapshots WHERE session = $1 ORDER BY idx DESC, reducer";
const EVENTS_OLDEST_FIRST: &str = "SELECT e.* FROM a2_events e JOIN a2_sessions s ON s.session = e.session \
             WHERE e.session = $1 AND e.idx > GREATEST($2, s.clear_index) AND e.idx < $3 ORDER BY e.idx ASC LIMIT $4";
const EVENTS_NEWEST_FIRST: &str = "SELECT e.* FROM a2_events e JOIN a2_sessions s ON s.session = e.session \
             WHERE e.session = $1 AND e.idx > GREATEST($2, s.clear_index) AND e.idx < $3 ORDER BY e.idx DESC LIMIT $4";

/// Keys of every contract, or of one: `[lo, hi)`.
fn contract_range(contract: Option<&str>) -> (String, String) {
    match contract {
        Some(contract) => prefix_range(&session_key(contract, "")),
        None => (String::new(), "\u{10FFFF}".repeat(2)),
    }
}

fn summary(row: &PgRow) -> Result<SessionSummary, StoreError> {
    let key: String = get(row, "session")?;
    let (contract, session_id) = split_session_key(&key);
    Ok(SessionSummary {
        contract: contract.to_owned(),
        session_id: session_id.to_owned(),
        head: to_u64(get(row, "head")?),
        clear_index: to_u64(get(row, "clear_index")?),
        created_at: get(row, "created_at")?,
        updated_at: get(row, "updated_at")?,
        dead_letters: to_u64(get(row, "dead_letters")?),
        lag: to_u64(get(row, "lag")?),
    })
}

fn page(limit: u32) -> i64 {
    i64::try_from(a2_store::page_size(limit)).unwrap_or(500)
}

impl PgStore {
    pub(crate) async fn get_snapshot(&self, params: SnapshotGet) -> Result<Option<Snapshot>, StoreError> {
        let row = sqlx::query(SNAPSHOT_GET)
            .bind(&params.session)
            .bind(&params.reducer)
            .bind(to_i64(params.at_most))
            .fetch_optional(&self.reader)
            .await
            .map_err(db_error)?;
        row.map(|r| {
            Ok(Snapshot {
                reducer: get(&r, "reducer")?,
                index: to_u64(get(&r, "idx")?),
                state: get::<Json<serde_json::Value>>(&r, "state")?.0,
                pins: json(&r, "pins")?,
                created_at: get(&r, "created_at")?,
            })
        })
        .transpose()
    }

    pub(crate) async fn list_events(&self, params: EventList) -> Result<Vec<Event>, StoreError> {
        let sql = if params.newest_first { EVENTS_NEWEST_FIRST } else { EVENTS_OLDEST_FIRST };
        let rows = sqlx::query(sql)
            .bind(&params.session)
            .bind(to_i64(params.after.unwrap_or(0)))
            .bind(params.before.map_or(i64::MAX, to_i64))
            .bind(page(params.limit))
            .fetch_all(&self.reader)
            .await
            .map_err(db_error)?;
        rows.iter().map(|r| event(r, &params.session, "")).collect()
    }

    pub(crate) async fn list_contracts(&self) -> Result<Vec<String>, StoreError> {
        // A loose index scan: one seek per contract, not a scan of every session.
        sqlx::query_scalar(CONTRACTS).fetch_all(&self.reader).await.map_err(db_error)
    }

    pub(crate) async fn list_sessions(&self, params: SessionList) -> Result<Vec<SessionSummary>, StoreError> {
        let (lo, hi) = prefix_range(&session_key(&params.contract, params.id_prefix.as_deref().unwrap_or("")));
        let after = params.after.map(|a| session_key(&params.contract, &a)).unwrap_or_default();
        let sql = SESSION_PAGE;
        let rows = sqlx::query(sql)
            .bind(lo)
            .bind(hi)
            .bind(after)
            .bind(page(params.limit))
            .fetch_all(&self.reader)
            .await
            .map_err(db_error)?;
        rows.iter().map(summary).collect()
    }

    pub(crate) async fn get_session(&self, session: &str) -> Result<Option<SessionSummary>, StoreError> {
        let sql = SESSION_GET;
        let row = sqlx::query(sql).bind(session).fetch_optional(&self.reader).await.map_err(db_error)?;
        row.as_ref().map(summary).transpose()
    }

    pub(crate) async fn list_heads(&self, session: &str) -> Result<Vec<HeadInfo>, StoreError> {
        let rows = sqlx::query(HEADS_OF_SESSION).bind(session).fetch_all(&self.reader).await.map_err(db_error)?;
        let Some(first) = rows.first() else { return Ok(Vec::new()) };
        let head = to_u64(get(first, "session_head")?);
        let rows = rows.iter().map(head_row).collect::<Result<Vec<_>, _>>()?;
        Ok(head_infos(session, head, rows))
    }

    pub(crate) async fn scan_heads(&self, params: HeadScan) -> Result<Vec<HeadInfo>, StoreError> {
        let limit = a2_store::page_size(params.limit);
        let from = params.after.as_ref().map(|a| a.session.clone()).unwrap_or_default();
        let sessions: Vec<String> = sqlx::query_scalar(SESSIONS_WITH_HEADS)
            .bind(&from)
            .bind(&params.consumer)
            .bind(i64::try_from(limit + 1).unwrap_or(i64::MAX))
            .fetch_all(&self.reader)
            .await
            .map_err(db_error)?;
        let mut page = Vec::new();
        for session in sessions {
            for info in self.list_heads(&session).await? {
                let key = HeadKey {
                    session: session.clone(),
                    consumer: info.consumer.clone(),
                    lane: info.lane.clone(),
                    index: info.next_index,
                };
                if params.after.as_ref().is_some_and(|a| &key <= a)
                    || params.consumer.as_ref().is_some_and(|c| c != &info.consumer)
                {
                    continue;
                }
                page.push(info);
                if page.len() == limit {
                    return Ok(page);
                }
            }
        }
        Ok(page)
    }

    pub(crate) async fn list_dead_letters(&self, params: DeadLetterList) -> Result<Vec<DeadLetter>, StoreError> {
        let (lo, hi) = contract_range(params.contract.as_deref());
        let after =
            params.after.unwrap_or(HeadKey { session: String::new(), consumer: String::new(), lane: None, index: 0 });
        let rows = sqlx::query(DEAD_LETTERS)
            .bind(lo)
            .bind(hi)
            .bind(&params.session)
            .bind(&params.consumer)
            .bind(&after.session)
            .bind(&after.consumer)
            .bind(a2_store::codec::lane_column(after.lane.as_deref()))
            .bind(to_i64(after.index))
            .bind(page(params.limit))
            .fetch_all(&self.reader)
            .await
            .map_err(db_error)?;
        rows.iter()
            .map(|row| {
                let key: String = get(row, "session")?;
                let (contract, session_id) = split_session_key(&key);
                let state = head_state(row)?;
                Ok(DeadLetter {
                    contract: contract.to_owned(),
                    session_id: session_id.to_owned(),
                    consumer: get(row, "consumer")?,
                    lane: a2_store::codec::lane_from_column(get(row, "lane")?),
                    index: to_u64(get(row, "idx")?),
                    event_id: get(row, "e_id")?,
                    event_type: get(row, "e_type")?,
                    attempt_count: state.attempt_count,
                    failure_count: state.failure_count,
                    last_error: state.last_error,
                    failed_at: state.failed_at.unwrap_or_default(),
                })
            })
            .collect()
    }

    pub(crate) async fn totals(&self, contract: Option<&str>) -> Result<Vec<ConsumerTotal>, StoreError> {
        let (lo, hi) = contract_range(contract);
        let rows = sqlx::query(CONSUMER_TOTALS).bind(lo).bind(hi).fetch_all(&self.reader).await.map_err(db_error)?;
        rows.iter()
            .map(|row| {
                Ok(ConsumerTotal {
                    contract: get(row, "contract")?,
                    consumer: get(row, "consumer")?,
                    sessions: to_u64(get(row, "sessions")?),
                    lagging_sessions: to_u64(get(row, "lagging")?),
                    total_lag: to_u64(get(row, "total_lag")?),
                    dead_letters: to_u64(get(row, "dead_letters")?),
                })
            })
            .collect()
    }

    pub(crate) async fn list_snapshots(&self, session: &str) -> Result<Vec<SnapshotInfo>, StoreError> {
        let rows = sqlx::query(SNAPSHOTS_OF_SESSION).bind(session).fetch_all(&self.reader).await.map_err(db_error)?;
        rows.iter()
            .map(|r| {
                let state = get::<Json<serde_json::Value>>(r, "state")?.0;
                Ok(SnapshotInfo {
                    reducer: get(r, "reducer")?,
                    index: to_u64(get(r, "idx")?),
                    size_bytes: serde_json::to_vec(&state).map(|v| v.len() as u64).unwrap_or(0),
                    state,
                    pins: json(r, "pins")?,
                    created_at: get(r, "created_at")?,
                })
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl Store for PgStore {
    fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }
    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        Some(self.subscribe())
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
    async fn session_clear(&self, params: SessionClear) -> Result<Cleared, StoreError> {
        self.clear(params).await
    }
    async fn snapshot_put(&self, params: SnapshotPut) -> Result<(), StoreError> {
        self.put_snapshot(params).await
    }
    async fn snapshot_get(&self, params: SnapshotGet) -> Result<Option<Snapshot>, StoreError> {
        self.get_snapshot(params).await
    }
    async fn event_list(&self, params: EventList) -> Result<Vec<Event>, StoreError> {
        self.list_events(params).await
    }
    async fn contract_list(&self) -> Result<Vec<String>, StoreError> {
        self.list_contracts().await
    }
    async fn session_list(&self, params: SessionList) -> Result<Vec<SessionSummary>, StoreError> {
        self.list_sessions(params).await
    }
    async fn session_list_by_activity(&self, params: SessionsByActivity) -> Result<Vec<SessionSummary>, StoreError> {
        // The first page starts above every real key: a keyset, never an OR the planner cannot seek on.
        let (at, after) = params
            .before
            .map_or((i64::MAX, "\u{10FFFF}".to_owned()), |(at, id)| (at, session_key(&params.contract, &id)));
        let rows = sqlx::query(SESSIONS_BY_ACTIVITY)
            .bind(&params.contract)
            .bind(at)
            .bind(after)
            .bind(page(params.limit))
            .fetch_all(&self.reader)
            .await
            .map_err(db_error)?;
        rows.iter().map(summary).collect()
    }
    async fn session_list_runnable(&self, params: SessionsRunnable) -> Result<RunnablePage, StoreError> {
        self.runnable_sessions(params).await
    }
    async fn session_bounds(&self, session: &str) -> Result<SessionBounds, StoreError> {
        let mut conn = self.pool.acquire().await.map_err(db_error)?;
        let bounds = crate::writes::session_row(&mut conn, session).await?;
        Ok(bounds.map_or_else(SessionBounds::default, |(head, clear_index)| SessionBounds { head, clear_index }))
    }
    async fn session_get(&self, session: &str) -> Result<Option<SessionSummary>, StoreError> {
        self.get_session(session).await
    }
    async fn head_list(&self, session: &str) -> Result<Vec<HeadInfo>, StoreError> {
        self.list_heads(session).await
    }
    async fn head_scan(&self, params: HeadScan) -> Result<Vec<HeadInfo>, StoreError> {
        self.scan_heads(params).await
    }
    async fn dead_letter_list(&self, params: DeadLetterList) -> Result<Vec<DeadLetter>, StoreError> {
        self.list_dead_letters(params).await
    }
    async fn consumer_totals(&self, contract: Option<&str>) -> Result<Vec<ConsumerTotal>, StoreError> {
        self.totals(contract).await
    }
    async fn snapshot_list(&self, session: &str) -> Result<Vec<SnapshotInfo>, StoreError> {
        self.list_snapshots(session).await
    }
    async fn consumer_totals_refresh(&self) -> Result<TotalsSnapshot, StoreError> {
        self.refresh_totals().await
    }
    async fn consumer_totals_snapshot(&self, contract: Option<&str>) -> Result<Option<TotalsSnapshot>, StoreError> {
        self.kept_totals(contract).await
    }
    async fn audit_append(&self, entry: AuditEntry) -> Result<u64, StoreError> {
        self.append_audit(entry).await
    }
    async fn audit_list(&self, params: AuditList) -> Result<Vec<AuditRecord>, StoreError> {
        self.list_audit(params).await
    }
}

/// A parameter of an explained read.
enum Bind {
    Text(String),
    Texts(Vec<String>),
    NoText,
    Int(i64),
}

impl PgStore {
    /// The query plan of every inspection read, as `EXPLAIN`
    /// prints it, for a session of the store: for tests and for diagnosing
    /// a slow Studio. Each entry is the read's name and its plan lines.
    pub async fn explain_reads(&self, session: &str) -> Result<Vec<(&'static str, Vec<String>)>, StoreError> {
        use Bind::{Int, NoText, Text, Texts};
        let (lo, hi) = contract_range(Some(split_session_key(session).0));
        let key = || Text(session.to_owned());
        let reads: Vec<(&'static str, &str, Vec<Bind>)> = vec![
            ("contracts", CONTRACTS, vec![]),
            ("session page", SESSION_PAGE, vec![Text(lo.clone()), Text(hi.clone()), Text(String::new()), Int(500)]),
            ("session summary", SESSION_GET, vec![key()]),
            (
                "sessions by activity",
                SESSIONS_BY_ACTIVITY,
                vec![Text(split_session_key(session).0.to_owned()), Int(i64::MAX), Text("\u{10FFFF}".into()), Int(50)],
            ),
            ("events page", EVENTS_OLDEST_FIRST, vec![key(), Int(0), Int(i64::MAX), Int(500)]),
            ("events page, newest first", EVENTS_NEWEST_FIRST, vec![key(), Int(0), Int(i64::MAX), Int(500)]),
            ("heads of a session", HEADS_OF_SESSION, vec![key()]),
            ("sessions with heads", SESSIONS_WITH_HEADS, vec![Text(String::new()), NoText, Int(501)]),
            (
                "dead-letter page",
                DEAD_LETTERS,
                vec![
                    Text(lo.clone()),
                    Text(hi.clone()),
                    NoText,
                    NoText,
                    Text(String::new()),
                    Text(String::new()),
                    Text(String::new()),
                    Int(0),
                    Int(500),
                ],
            ),
            ("consumer totals, recomputed", CONSUMER_TOTALS, vec![Text(lo.clone()), Text(hi.clone())]),
            ("consumer totals", crate::totals::KEPT_TOTALS, vec![Text(split_session_key(session).0.to_owned())]),
            ("snapshots of a session", SNAPSHOTS_OF_SESSION, vec![key()]),
            (
                "sessions with runnable work (the rescuer)",
                crate::runnable::RUNNABLE_SESSIONS,
                vec![
                    Text(lo.clone()),
                    Text(hi.clone()),
                    Text(String::new()),
                    Texts(vec!["ordered".into(), "parallel".into()]),
                    Int(self.clock.now_ms()),
                    Int(500),
                ],
            ),
            ("snapshot lookup", SNAPSHOT_GET, vec![key(), Text("count".into()), Int(i64::MAX)]),
        ];
        let mut plans = Vec::new();
        for (name, sql, binds) in reads {
            let sql = format!("EXPLAIN {sql}");
            let mut query = sqlx::query(&sql);
            for bind in binds {
                query = match bind {
                    Text(text) => query.bind(text),
                    Texts(texts) => query.bind(texts),
                    NoText => query.bind(None::<String>),
                    Int(n) => query.bind(n),
                };
            }
            let rows = query.fetch_all(&self.reader).await.map_err(db_error)?;
            let lines = rows.iter().map(|r| get::<String>(r, "QUERY PLAN")).collect::<Result<Vec<_>, _>>()?;
            plans.push((name, lines));
        }
        Ok(plans)
    }
}
