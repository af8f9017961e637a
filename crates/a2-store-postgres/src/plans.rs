//! The engine's hot statements as its work pool plans them: generic, once
//! (`plan_cache_mode = force_generic_plan`), whatever a flush or a claim
//! holds. Custom plans cost 0.5–3 ms to make for each of a connection's
//! first five runs of a statement, and a completion flush's custom plan
//! flipped to a sequential scan of every head past ~250 heads (the
//! throughput study's P2). The Studio's reader pool keeps `auto`: its
//! aggregates are better planned for their values.

use a2_store::StoreError;
use a2_store_sql::RowsStatement;

use crate::{db_error, Postgres};

/// The work pool's planner settings, given to every connection it opens.
/// Merge joins are off too: estimating one asks the index for its column's
/// actual ends, and right after a drain deleted heads that walk crossed
/// every dead entry (a completion flush took 14–21 ms to plan, 0.6 ms
/// without). The hot statements join small lists to keys: nested loops.
pub(crate) const WORK_PLANS: [(&str, &str); 2] =
    [("plan_cache_mode", "force_generic_plan"), ("enable_mergejoin", "off")];

fn rows_sql(statement: &RowsStatement) -> &'static str {
    match *statement {
        RowsStatement::Lists(sql) | RowsStatement::PerRow(sql) | RowsStatement::JsonRows(sql) => sql,
    }
}

/// The statements a drain and an append run for every job or event, by name.
fn hot_statements() -> Vec<(&'static str, &'static str)> {
    let sql = &crate::sql::SQL;
    let mut hot = vec![
        ("session row", sql.session_row),
        ("cursors ensure", rows_sql(&sql.cursors_ensure)),
        ("untaken skip", sql.untaken_skip),
        ("claim waits", sql.claim_waits),
        ("renew", rows_sql(&sql.heads_renew)),
        ("head lock", sql.head_lock),
        ("head states", rows_sql(&sql.head_states_put)),
        ("settle and append", crate::complete::SETTLE_AND_APPEND),
        ("settle and append, grouped", crate::complete::SETTLE_AND_APPEND_MANY),
        ("append batch", crate::append::APPEND_BATCH),
    ];
    if let Some(pick) = sql.claim_pick {
        hot.push(("claim pick", pick));
    }
    hot.extend(sql.heads_complete.iter().map(|step| ("complete batch", rows_sql(step))));
    hot
}

impl Postgres {
    /// The work pool's `plan_cache_mode`, then the generic plan of each hot
    /// statement on one of its connections: the plan the engine runs.
    pub async fn explain_hot_statements(&self) -> Result<(String, Vec<(&'static str, Vec<String>)>), StoreError> {
        if self.is_pooled() {
            // PREPARE/EXECUTE are session state, which a pooler does not keep.
            return Err(StoreError::invalid("explaining the hot statements needs a direct connection, not a pooler"));
        }
        let mut conn = self.pool.pool.acquire().await.map_err(db_error)?;
        let mode: String = sqlx::query_scalar("SHOW plan_cache_mode").fetch_one(&mut *conn).await.map_err(db_error)?;
        let mut plans = Vec::new();
        for (n, (name, sql)) in hot_statements().into_iter().enumerate() {
            let prepared = format!("a2_explain_{n}");
            sqlx::raw_sql(&format!("PREPARE {prepared} AS {sql}")).execute(&mut *conn).await.map_err(db_error)?;
            let params: i32 =
                sqlx::query_scalar("SELECT cardinality(parameter_types) FROM pg_prepared_statements WHERE name = $1")
                    .bind(&prepared)
                    .fetch_one(&mut *conn)
                    .await
                    .map_err(db_error)?;
            // A generic plan is made without the values: NULLs explain it as well as any.
            let nulls = vec!["NULL"; usize::try_from(params).unwrap_or(0)].join(", ");
            let lines: Result<Vec<String>, _> =
                sqlx::query_scalar(&format!("EXPLAIN EXECUTE {prepared}({nulls})")).fetch_all(&mut *conn).await;
            // Gone before any error is returned: the connection goes back to the pool.
            sqlx::raw_sql(&format!("DEALLOCATE {prepared}")).execute(&mut *conn).await.map_err(db_error)?;
            plans.push((name, lines.map_err(db_error)?));
        }
        Ok((mode, plans))
    }

    /// The plans the upkeep leader's refresh runs for a refresh of
    /// `contract` looking back to `since` over `sessions`: each statement
    /// prepared and executed under EXPLAIN on the engine's pool, in a
    /// transaction begun as a refresh's is, so the plan is the one it gets.
    pub async fn explain_totals_refresh(
        &self,
        contract: &str,
        since: i64,
        sessions: &[String],
    ) -> Result<Vec<(&'static str, Vec<String>)>, StoreError> {
        let sql = &crate::sql::SQL.totals;
        let (lo, hi) = a2_store::codec::prefix_range(&a2_store::session_key(contract, ""));
        let mut tx = self.pool.pool.begin().await.map_err(db_error)?;
        if let Some(begin) = sql.refresh_begin {
            sqlx::raw_sql(begin).execute(&mut *tx).await.map_err(db_error)?;
        }
        // EXECUTE takes its values written out (a parameter of the EXPLAIN would not reach it).
        let text = |value: &str| format!("'{}'", value.replace('\'', "''"));
        let keys = sessions.iter().map(|s| text(s)).collect::<Vec<_>>().join(", ");
        let (contract, lo, hi) = (text(contract), text(&lo), text(&hi));
        // In the refresh's order, each under the plan mode it runs with: the runs and the changed
        // sessions custom, the per-chunk parts generic.
        let statements = [
            (
                "totals: runs since",
                sql.runs_since,
                format!("{lo}, {hi}, {since}, {}, 1000, {}", since + 4_000, since + 1_000),
            ),
            ("totals: changed sessions", sql.changed_sessions, format!("{contract}, {since}")),
            ("totals: parts that changed", sql.parts_changed, format!("ARRAY[{keys}]::text[]")),
        ];
        let mut plans = Vec::new();
        for (n, (name, statement, values)) in statements.into_iter().enumerate() {
            if let (2, Some(generic)) = (n, sql.refresh_generic) {
                sqlx::raw_sql(generic).execute(&mut *tx).await.map_err(db_error)?;
            }
            let prepared = format!("a2_totals_explain_{n}");
            sqlx::raw_sql(&format!("PREPARE {prepared} AS {statement}")).execute(&mut *tx).await.map_err(db_error)?;
            let explain = format!("EXPLAIN EXECUTE {prepared}({values})");
            let lines = sqlx::query_scalar(&explain).persistent(false).fetch_all(&mut *tx).await.map_err(db_error)?;
            plans.push((name, lines));
        }
        tx.rollback().await.map_err(db_error)?;
        Ok(plans)
    }
}
