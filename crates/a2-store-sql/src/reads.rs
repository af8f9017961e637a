//! Inspection reads: one statement each, on a read connection, each served
//! by an index (the EXPLAIN test holds every backend to that).

use a2_store::codec::to_i64;
use a2_store::rules::head_infos;
use a2_store::*;

use crate::conn::Conn;
use crate::rows::{contract_range, dead_letter, event, head_row, snapshot_info, summary};
use crate::value::Arg;
use crate::{page, SqlBackend, SqlStore};

impl<B: SqlBackend> SqlStore<B> {
    pub(crate) async fn read_events(&self, params: EventList) -> Result<Vec<Event>, StoreError> {
        let sql = if params.newest_first { self.sql().events_newest_first } else { self.sql().events_oldest_first };
        let args = vec![
            Arg::text(&params.session),
            Arg::Int(to_i64(params.after.unwrap_or(0))),
            Arg::Int(params.before.map_or(i64::MAX, to_i64)),
            page(params.limit),
        ];
        let rows = self.backend.read().await?.fetch(sql, args).await?;
        rows.iter().map(|r| event(r, &params.session, "")).collect()
    }

    pub(crate) async fn read_sessions(&self, params: SessionList) -> Result<Vec<SessionSummary>, StoreError> {
        let prefix = session_key(&params.contract, params.id_prefix.as_deref().unwrap_or(""));
        let (lo, hi) = codec::prefix_range(&prefix);
        let after = params.after.map(|a| session_key(&params.contract, &a)).unwrap_or_default();
        let args = vec![Arg::Text(lo), Arg::Text(hi), Arg::Text(after), page(params.limit)];
        let rows = self.backend.read().await?.fetch(self.sql().session_page, args).await?;
        rows.iter().map(summary).collect()
    }

    pub(crate) async fn read_sessions_by_activity(
        &self,
        params: SessionsByActivity,
    ) -> Result<Vec<SessionSummary>, StoreError> {
        // The first page starts above every real key: a keyset, never an OR the planner cannot seek on.
        let (at, after) = params
            .before
            .map_or((i64::MAX, "\u{10FFFF}".to_owned()), |(at, id)| (at, session_key(&params.contract, &id)));
        let args = vec![Arg::text(&params.contract), Arg::Int(at), Arg::Text(after), page(params.limit)];
        let rows = self.backend.read().await?.fetch(self.sql().sessions_by_activity, args).await?;
        rows.iter().map(summary).collect()
    }

    pub(crate) async fn read_session(&self, session: &str) -> Result<Option<SessionSummary>, StoreError> {
        let row = self.backend.read().await?.fetch_optional(self.sql().session_get, vec![Arg::text(session)]).await?;
        row.as_ref().map(summary).transpose()
    }

    pub(crate) async fn read_heads(&self, session: &str) -> Result<Vec<HeadInfo>, StoreError> {
        self.heads_on(self.backend.read().await?.as_mut(), session).await
    }

    async fn heads_on(&self, conn: &mut dyn Conn, session: &str) -> Result<Vec<HeadInfo>, StoreError> {
        let rows = conn.fetch(self.sql().heads_of_session, vec![Arg::text(session)]).await?;
        let Some(first) = rows.first() else { return Ok(Vec::new()) };
        let head = first.u64("session_head")?;
        let rows = rows.iter().map(head_row).collect::<Result<Vec<_>, _>>()?;
        Ok(head_infos(session, head, rows))
    }

    pub(crate) async fn read_head_scan(&self, params: HeadScan) -> Result<Vec<HeadInfo>, StoreError> {
        let limit = page_size(params.limit);
        let from = params.after.as_ref().map(|a| a.session.clone()).unwrap_or_default();
        let args = vec![
            Arg::Text(from),
            Arg::OptText(params.consumer.clone()),
            Arg::Int(i64::try_from(limit + 1).unwrap_or(i64::MAX)),
        ];
        let mut conn = self.backend.read().await?;
        let sessions = conn.fetch(self.sql().sessions_with_heads, args).await?;
        let mut found = Vec::new();
        for row in sessions {
            let session = row.text("session")?;
            let infos = self.heads_on(conn.as_mut(), &session).await?;
            found.extend(a2_store::rules::scan_heads([(session, infos)], &params, limit - found.len()));
            if found.len() == limit {
                break;
            }
        }
        Ok(found)
    }

    pub(crate) async fn read_dead_letters(&self, params: DeadLetterList) -> Result<Vec<DeadLetter>, StoreError> {
        let (lo, hi) = contract_range(params.contract.as_deref());
        let after =
            params.after.unwrap_or(HeadKey { session: String::new(), consumer: String::new(), lane: None, index: 0 });
        let args = vec![
            Arg::Text(lo),
            Arg::Text(hi),
            Arg::OptText(params.session),
            Arg::OptText(params.consumer),
            Arg::Text(after.session),
            Arg::Text(after.consumer),
            Arg::text(codec::lane_column(after.lane.as_deref())),
            Arg::Int(to_i64(after.index)),
            page(params.limit),
        ];
        let rows = self.backend.read().await?.fetch(self.sql().dead_letters, args).await?;
        rows.iter().map(dead_letter).collect()
    }

    pub(crate) async fn read_totals(&self, contract: Option<&str>) -> Result<Vec<ConsumerTotal>, StoreError> {
        let (lo, hi) = contract_range(contract);
        let rows =
            self.backend.read().await?.fetch(self.sql().consumer_totals, vec![Arg::Text(lo), Arg::Text(hi)]).await?;
        rows.iter().map(|r| crate::rows::consumer_total(r, "lagging")).collect()
    }

    pub(crate) async fn read_kept_totals(&self, contract: Option<&str>) -> Result<Option<TotalsSnapshot>, StoreError> {
        let rows = self.backend.read().await?.fetch(self.sql().kept_totals, vec![Arg::opt_text(contract)]).await?;
        let mut computed_at: Option<Millis> = None;
        let mut totals = Vec::with_capacity(rows.len());
        for row in &rows {
            let at = row.int("computed_at")?;
            computed_at = Some(computed_at.map_or(at, |c| c.min(at)));
            totals.push(crate::rows::consumer_total(row, "lagging_sessions")?);
        }
        Ok(computed_at.map(|computed_at| TotalsSnapshot { computed_at, totals }))
    }

    pub(crate) async fn read_snapshots(&self, session: &str) -> Result<Vec<SnapshotInfo>, StoreError> {
        let rows = self.backend.read().await?.fetch(self.sql().snapshots_of_session, vec![Arg::text(session)]).await?;
        rows.iter().map(snapshot_info).collect()
    }

    pub(crate) async fn read_snapshot(&self, params: SnapshotGet) -> Result<Option<Snapshot>, StoreError> {
        let args = vec![Arg::Text(params.session), Arg::Text(params.reducer), Arg::Int(to_i64(params.at_most))];
        let row = self.backend.read().await?.fetch_optional(self.sql().snapshot_get, args).await?;
        row.map(|r| {
            Ok(Snapshot {
                reducer: r.text("reducer")?,
                index: r.u64("idx")?,
                state: r.json("state")?,
                pins: r.json("pins")?,
                created_at: r.int("created_at")?,
            })
        })
        .transpose()
    }

    pub(crate) async fn read_runnable(&self, params: SessionsRunnable) -> Result<RunnablePage, StoreError> {
        let (lo, hi) = codec::prefix_range(&session_key(&params.contract, ""));
        let after = params.after.map(|a| session_key(&params.contract, &a)).unwrap_or_default();
        let args = vec![
            Arg::Text(lo),
            Arg::Text(hi),
            Arg::Text(after),
            Arg::Texts(params.consumers),
            Arg::Int(self.now()),
            Arg::Int(i64::from(params.limit.clamp(1, MAX_PAGE))),
        ];
        // The engine's own connections: the rescuer works, it does not inspect.
        let mut conn = self.backend.work().await?;
        let rows = conn.fetch(self.sql().runnable_sessions, args).await?;
        let scanned = rows
            .iter()
            .map(|r| Ok((r.text("session")?, r.bool("runnable")?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(RunnablePage::from_scan(scanned, params.limit))
    }

    pub(crate) async fn read_audit(&self, params: AuditList) -> Result<Vec<AuditRecord>, StoreError> {
        let args = vec![Arg::Int(params.before.map_or(i64::MAX, to_i64)), page(params.limit)];
        let rows = self.backend.read().await?.fetch(self.sql().audit_list, args).await?;
        rows.iter().map(crate::rows::audit_record).collect()
    }
}
