//! The rescuer's scan: sessions with work no live claim holds.

use a2_store::codec::prefix_range;
use a2_store::{session_key, RunnablePage, SessionsRunnable, StoreError};

use crate::rows::get;
use crate::{db_error, PgStore};

/// A page of sessions by primary key, each probed by primary key for a
/// runnable head: bounded and index-served, whatever the store's size.
pub(crate) const RUNNABLE_SESSIONS: &str = "WITH page AS (SELECT session, head FROM a2_sessions \
       WHERE session >= $1 AND session < $2 AND session > $3 ORDER BY session LIMIT $6) \
     SELECT p.session, EXISTS (SELECT 1 FROM a2_heads h WHERE h.session = p.session AND h.consumer = ANY($4) \
         AND h.failed_at IS NULL \
         AND (h.lease_holder IS NULL OR h.lease_expires_at <= $5) \
         AND (h.next_attempt_at IS NULL OR h.next_attempt_at <= $5) \
         AND CASE h.kind WHEN 0 THEN h.idx <= p.head \
           WHEN 1 THEN NOT EXISTS (SELECT 1 FROM a2_heads l WHERE l.session = h.session AND l.consumer = h.consumer \
             AND l.lane = h.lane AND l.idx < h.idx) \
           ELSE TRUE END) AS runnable \
     FROM page p ORDER BY p.session";

impl PgStore {
    pub(crate) async fn runnable_sessions(&self, params: SessionsRunnable) -> Result<RunnablePage, StoreError> {
        let (lo, hi) = prefix_range(&session_key(&params.contract, ""));
        let after = params.after.map(|a| session_key(&params.contract, &a)).unwrap_or_default();
        let rows = sqlx::query(RUNNABLE_SESSIONS)
            .bind(lo)
            .bind(hi)
            .bind(after)
            .bind(&params.consumers)
            .bind(self.clock.now_ms())
            .bind(i64::from(params.limit.clamp(1, a2_store::MAX_PAGE)))
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)?;
        let scanned = rows
            .iter()
            .map(|row| Ok((get::<String>(row, "session")?, get::<bool>(row, "runnable")?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(RunnablePage::from_scan(scanned, params.limit))
    }
}
