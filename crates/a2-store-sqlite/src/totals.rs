//! Consumer totals as last computed: writers refresh them, readers read a tiny table.

use a2_store::codec::{to_i64, to_u64};
use a2_store::{ConsumerTotal, StoreError, TotalsSnapshot};

use crate::rows::get;
use crate::{db_error, SqliteStore};

pub(crate) const KEPT_TOTALS: &str =
    "SELECT * FROM a2_consumer_totals WHERE ?1 IS NULL OR contract = ?1 ORDER BY contract, consumer";

impl SqliteStore {
    pub(crate) async fn refresh_totals(&self) -> Result<TotalsSnapshot, StoreError> {
        let totals = self.totals(None).await?;
        let computed_at = self.clock.now_ms();
        let mut tx = self.begin().await?;
        sqlx::query("DELETE FROM a2_consumer_totals").execute(&mut *tx).await.map_err(db_error)?;
        for t in &totals {
            sqlx::query(
                "INSERT INTO a2_consumer_totals VALUES (?, ?, ?, ?, ?, ?, ?) \
                 ON CONFLICT (contract, consumer) DO UPDATE SET sessions = excluded.sessions, \
                 lagging_sessions = excluded.lagging_sessions, total_lag = excluded.total_lag, \
                 dead_letters = excluded.dead_letters, computed_at = excluded.computed_at",
            )
            .bind(&t.contract)
            .bind(&t.consumer)
            .bind(to_i64(t.sessions))
            .bind(to_i64(t.lagging_sessions))
            .bind(to_i64(t.total_lag))
            .bind(to_i64(t.dead_letters))
            .bind(computed_at)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        }
        tx.commit().await.map_err(db_error)?;
        Ok(TotalsSnapshot { computed_at, totals })
    }

    pub(crate) async fn kept_totals(&self, contract: Option<&str>) -> Result<Option<TotalsSnapshot>, StoreError> {
        let rows = sqlx::query(KEPT_TOTALS).bind(contract).fetch_all(&self.reader).await.map_err(db_error)?;
        let mut computed_at = None;
        let mut totals = Vec::with_capacity(rows.len());
        for r in &rows {
            let at: i64 = get(r, "computed_at")?;
            computed_at = Some(computed_at.map_or(at, |c: i64| c.min(at)));
            totals.push(ConsumerTotal {
                contract: get(r, "contract")?,
                consumer: get(r, "consumer")?,
                sessions: to_u64(get(r, "sessions")?),
                lagging_sessions: to_u64(get(r, "lagging_sessions")?),
                total_lag: to_u64(get(r, "total_lag")?),
                dead_letters: to_u64(get(r, "dead_letters")?),
            });
        }
        Ok(computed_at.map(|computed_at| TotalsSnapshot { computed_at, totals }))
    }
}
