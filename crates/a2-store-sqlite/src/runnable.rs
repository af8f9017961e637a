//! The rescuer's scan: sessions with work no live claim holds.

use a2_store::codec::prefix_range;
use a2_store::{session_key, split_session_key, SessionsRunnable, StoreError};

use crate::rows::get;
use crate::{db_error, SqliteStore};

/// One ordered walk of the contract's heads (primary key range), each
/// cursor compared with its session's head by primary key: no full scan.
const RUNNABLE_SESSIONS: &str = "SELECT DISTINCT h.session FROM a2_heads h JOIN a2_sessions s ON s.session = h.session \
     WHERE h.session >= ?1 AND h.session < ?2 AND h.session > ?3 AND h.consumer IN (SELECT value FROM json_each(?4)) AND h.failed_at IS NULL \
       AND (h.lease_holder IS NULL OR h.lease_expires_at <= ?5) \
       AND (h.next_attempt_at IS NULL OR h.next_attempt_at <= ?5) \
       AND CASE h.kind WHEN 0 THEN h.idx <= s.head \
         WHEN 1 THEN NOT EXISTS (SELECT 1 FROM a2_heads l WHERE l.session = h.session AND l.consumer = h.consumer \
           AND l.lane = h.lane AND l.idx < h.idx) \
         ELSE TRUE END \
     ORDER BY h.session LIMIT ?6";

impl SqliteStore {
    pub(crate) async fn runnable_sessions(&self, params: SessionsRunnable) -> Result<Vec<String>, StoreError> {
        let (lo, hi) = prefix_range(&session_key(&params.contract, ""));
        let after = params.after.map(|a| session_key(&params.contract, &a)).unwrap_or_default();
        let rows = sqlx::query(RUNNABLE_SESSIONS)
            .bind(lo)
            .bind(hi)
            .bind(after)
            .bind(serde_json::to_string(&params.consumers).map_err(|e| StoreError::invalid(e.to_string()))?)
            .bind(self.clock.now_ms())
            .bind(i64::from(params.limit.clamp(1, a2_store::MAX_PAGE)))
            .fetch_all(&self.reader)
            .await
            .map_err(db_error)?;
        rows.iter().map(|row| get::<String>(row, "session").map(|key| split_session_key(&key).1.to_owned())).collect()
    }
}
