//! Kept consumer totals, folded in by what changed. Each session's part of
//! its consumers' totals (lag, dead letters) is kept as the last refresh
//! computed it; a refresh recomputes only the sessions that changed since the
//! one before (appends and operator moves stamp `a2_sessions.updated_at`,
//! runs write `a2_attempts`, both already in the transactions that move
//! heads: the drain writes nothing more), plus a rolling slice of every
//! session, replaces the parts that differ and moves the totals by the
//! difference. A contract never refreshed, or `full`, gets a full pass.

use std::collections::{BTreeMap, BTreeSet};

use a2_store::codec::to_i64;
use a2_store::*;

use crate::conn::Conn;
use crate::each::run_each;
use crate::rows::contract_range;
use crate::value::{Arg, Row};
use crate::{RowsStatement, SqlBackend, SqlStore};

/// Sessions whose parts one statement computes or rewrites.
const FOLD_CHUNK: usize = 1_000;

/// A dialect's statements for kept totals.
#[derive(Debug, Clone, Copy)]
pub struct TotalsStatements {
    /// Run first in a refresh's transaction: Postgres plans its statements for
    /// the values at hand (the engine's pool plans generic, and a generic
    /// `updated_at >= $2` looks like a third of the table: a scan).
    pub refresh_begin: Option<&'static str>,
    /// Run alone (autocommit) before a refresh, where the runs' time index
    /// needs it: Postgres's BRIN on `a2_attempts.ended_at` matches every page
    /// range not yet summarized, and autovacuum summarizes only now and then,
    /// so without this the refresh's time-range read grows with the runs
    /// written since the last vacuum, not with the seconds asked for. Best
    /// effort: a lock it cannot have at once (a vacuum holds it) is left for
    /// the next refresh, and a refusal for good (a role that does not own the
    /// table, a read-only store) stops the asking; the refresh is then slower,
    /// not wrong.
    pub runs_index_catch_up: Option<&'static str>,
    /// Run once the changed sessions are found: back to the pool's generic
    /// plans for the per-chunk statements, which are keyed (planning each
    /// chunk's CTE afresh cost ~30 ms a refresh).
    pub refresh_generic: Option<&'static str>,
    /// (contract) → refreshed_at, swept_through: the contract's mark, created if new, locked
    /// where the database locks rows (so two refreshes never fold one change twice)
    pub mark_lock: &'static str,
    /// (contract, refreshed_at, swept_through)
    pub mark_put: &'static str,
    /// (contract): the next refresh is a full pass (an import brings heads no stamp tells of)
    pub mark_forget: &'static str,
    /// (contract, since) → session: appended to or moved by an operator (`updated_at`) at or
    /// after `since` (the sessions run since then come from `runs_since`)
    pub changed_sessions: &'static str,
    /// (lo, hi, since, to, bucket ms, counted_from) → session, consumer, bucket, completed, failed:
    /// one read of the runs that ended in [since, to), as two kinds of row: each session that ran
    /// (`session` set, the rest null), and the runs that ended in [counted_from, to) counted by
    /// consumer and bucket (`session` null); `counted_from` ≥ `since`
    pub runs_since: &'static str,
    /// (lo, hi) → session, consumer, lag, dead: each session's part, computed from its heads
    pub parts_in_range: &'static str,
    /// (sessions) → session, consumer, lag, dead, was_lag, was_dead: each part of those sessions
    /// computed from their heads that differs from the one kept (`lag`/`dead` null for a part that
    /// is no more, `was_*` null for a part not kept yet)
    pub parts_changed: &'static str,
    /// per part (session, consumer): parts that are no more (the session has no head of the consumer now)
    pub parts_drop: RowsStatement,
    /// (lo, hi)
    pub parts_drop_range: &'static str,
    /// per part (session, consumer, lag, dead): written, or rewritten in place
    pub parts_put: RowsStatement,
    /// (contract): the contract's kept totals, before they are written anew
    pub totals_clear: &'static str,
    /// (scope, owner, generation, now) → a row while that lease holds; where the database
    /// locks rows it is locked against a takeover until the refresh commits
    pub upkeep_fence: &'static str,
    // ── kept attempt rates (see `rates`) ──
    /// (lo, hi, from, to, bucket ms) → consumer, bucket, completed, failed: runs that ended in [from, to)
    pub rates_count: &'static str,
    /// (contract, consumer, minute, completed, failed): added to the kept minute
    pub rates_add: &'static str,
    /// (contract)
    pub rates_clear: &'static str,
    /// (contract, before): minutes older than `before` dropped
    pub rates_prune: &'static str,
    /// (contract) → consumer, second, completed, failed: the seconds the last refresh counted last
    pub rates_tail_kept: &'static str,
    /// (contract)
    pub rates_tail_clear: &'static str,
    /// (contract, consumer, second, completed, failed)
    pub rates_tail_put: &'static str,
    /// (contract?, since) → contract, consumer, bucket, completed, failed by bucket
    pub rates_kept: &'static str,
}

/// One consumer's part of one session's totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Part {
    lag: i64,
    dead: i64,
}

/// Parts by session, then consumer.
type Parts = BTreeMap<String, BTreeMap<String, Part>>;

/// What parts add up to for one consumer.
#[derive(Debug, Clone, Copy, Default)]
struct Sum {
    sessions: i64,
    lagging: i64,
    lag: i64,
    dead: i64,
}

impl Sum {
    fn add(&mut self, part: Part, sign: i64) {
        self.sessions += sign;
        self.lagging += sign * i64::from(part.lag > 0);
        self.lag += sign * part.lag;
        self.dead += sign * part.dead;
    }
}

fn parts(rows: &[Row]) -> Result<Parts, StoreError> {
    let mut parts = Parts::new();
    for r in rows {
        let part = Part { lag: r.int("lag")?, dead: r.int("dead")? };
        parts.entry(r.text("session")?).or_default().insert(r.text("consumer")?, part);
    }
    Ok(parts)
}

fn part_rows<'a>(parts: impl IntoIterator<Item = (&'a String, &'a BTreeMap<String, Part>)>) -> Vec<Vec<Arg>> {
    let rows = parts.into_iter().flat_map(|(session, of)| of.iter().map(move |(consumer, p)| (session, consumer, p)));
    rows.map(|(session, consumer, p)| vec![Arg::text(session), Arg::text(consumer), Arg::Int(p.lag), Arg::Int(p.dead)])
        .collect()
}

/// Add (or with `sign` -1 take away) a session's parts to each consumer's sum.
fn add_parts(sums: &mut BTreeMap<String, Sum>, of_session: &BTreeMap<String, Part>, sign: i64) {
    for (consumer, part) in of_session {
        sums.entry(consumer.clone()).or_default().add(*part, sign);
    }
}

/// Refresh the kept totals of one contract, or of every contract (each in
/// a transaction of its own).
pub(crate) async fn refresh<B: SqlBackend>(
    store: &SqlStore<B>,
    params: TotalsRefresh,
) -> Result<TotalsRefreshed, StoreError> {
    let contract = params.contract.as_deref().filter(|c| !c.is_empty());
    let contracts = match contract {
        Some(c) => vec![c.to_owned()],
        None => store.contract_list().await?,
    };
    if let Some(catch_up) = store.sql().totals.runs_index_catch_up {
        catch_up_runs_index(store, catch_up).await;
    }
    let (mut sessions_folded, mut full_passes) = (0u64, 0u32);
    for name in &contracts {
        let (folded, full) = refresh_contract(store, name, &params).await?;
        sessions_folded += folded;
        full_passes += u32::from(full);
    }
    let snapshot = store.consumer_totals_snapshot(contract).await?.unwrap_or_else(|| TotalsSnapshot {
        computed_at: store.now(),
        totals: Vec::new(),
        catalog: Vec::new(),
        origin: TotalsOrigin::Kept,
        refreshed_by: Vec::new(),
    });
    Ok(TotalsRefreshed { snapshot, sessions_folded, full_passes })
}

/// See [`TotalsStatements::runs_index_catch_up`].
async fn catch_up_runs_index<B: SqlBackend>(store: &SqlStore<B>, statement: &str) {
    use std::sync::atomic::Ordering;
    if store.runs_index_refused.load(Ordering::Relaxed) {
        return;
    }
    let caught_up = async { store.backend.write().await?.execute(statement, Vec::new()).await.map(drop) };
    match caught_up.await {
        Ok(()) => {}
        Err(error) if error.is_retryable() => {
            tracing::debug!(%error, "the runs' time index was not caught up this time");
        }
        // A read-only attach may not summarize, and its refresh is refused anyway: nothing to say.
        Err(error @ StoreError::ReadOnly { .. }) => {
            store.runs_index_refused.store(true, Ordering::Relaxed);
            tracing::debug!(%error, "a read-only store does not catch up the runs' time index");
        }
        Err(error) => {
            store.runs_index_refused.store(true, Ordering::Relaxed);
            tracing::warn!(%error, "the runs' time index cannot be caught up; totals refreshes read more of a2_attempts");
        }
    }
}

async fn refresh_contract<B: SqlBackend>(
    store: &SqlStore<B>,
    contract: &str,
    params: &TotalsRefresh,
) -> Result<(u64, bool), StoreError> {
    let sql = store.sql().totals;
    let mut tx = store.backend.begin().await?;
    if let Some(begin) = sql.refresh_begin {
        tx.execute(begin, Vec::new()).await?;
    }
    if let Some(fence) = &params.fence {
        let args = vec![
            Arg::text(&fence.scope),
            Arg::text(&fence.owner),
            Arg::Int(to_i64(fence.generation)),
            Arg::Int(store.now()),
        ];
        if tx.fetch_optional(sql.upkeep_fence, args).await?.is_none() {
            return Err(StoreError::UpkeepLeaseLost {
                scope: fence.scope.clone(),
                owner: fence.owner.clone(),
                generation: fence.generation,
            });
        }
    }
    let mark = tx.fetch_one(sql.mark_lock, vec![Arg::text(contract)]).await?;
    let refreshed_at = mark.opt_int("refreshed_at")?;
    // Read under the mark's lock, and never before the last refresh's: a refresh that waited for the
    // lock behind another must not stamp an earlier time than the one it follows (the rates' tail
    // would then be recounted from before what was already added).
    let now = store.now().max(refreshed_at.unwrap_or(Millis::MIN));
    let (folded, full, swept_through) = match refreshed_at {
        Some(refreshed_at) if !params.full => {
            // An append's stamp may be up to SESSION_RESTAMP_MS older than the append itself.
            let since = refreshed_at.saturating_sub(TOTALS_SETTLE_MS + SESSION_RESTAMP_MS);
            let sweep = (params.sweep, mark.text("swept_through")?);
            // The runs first: they read a time range, planned for the values at hand.
            let runs = crate::rates::runs_since(store, tx.as_mut(), contract, (since, refreshed_at), now).await?;
            crate::rates::fold(store, tx.as_mut(), contract, refreshed_at, now, runs.counted).await?;
            let changed = Changed { since, ran: runs.sessions, sweep };
            let (folded, swept) = fold_changed(store, tx.as_mut(), contract, changed, now).await?;
            (folded, false, swept)
        }
        _ => {
            let folded = full_pass(store, tx.as_mut(), contract, now).await?;
            crate::rates::recount(store, tx.as_mut(), contract, now).await?;
            (folded, true, String::new())
        }
    };
    tx.execute(sql.mark_put, vec![Arg::text(contract), Arg::Int(now), Arg::Text(swept_through)]).await?;
    tx.commit().await?;
    Ok((folded, full))
}

/// Recompute every session's part of the contract, a chunk of sessions a
/// statement, and write its totals from them.
async fn full_pass<B: SqlBackend>(
    store: &SqlStore<B>,
    conn: &mut dyn Conn,
    contract: &str,
    now: Millis,
) -> Result<u64, StoreError> {
    let sql = store.sql().totals;
    let (mut lo, hi) = contract_range(Some(contract));
    conn.execute(sql.parts_drop_range, vec![Arg::text(&lo), Arg::text(&hi)]).await?;
    let mut sums: BTreeMap<String, Sum> = BTreeMap::new();
    let mut sessions = 0u64;
    loop {
        let nth = vec![Arg::text(&lo), Arg::text(&hi), Arg::Int(i64::from(store.totals_chunk))];
        let end = conn.fetch_optional(store.sql().session_nth, nth).await?.map(|r| r.text("session")).transpose()?;
        let upto = end.clone().unwrap_or_else(|| hi.clone());
        let found = parts(&conn.fetch(sql.parts_in_range, vec![Arg::text(&lo), Arg::text(&upto)]).await?)?;
        sessions += found.len() as u64;
        for of_session in found.values() {
            add_parts(&mut sums, of_session, 1);
        }
        if !found.is_empty() {
            run_each(conn, &sql.parts_put, &[], &part_rows(&found)).await?;
        }
        match end {
            Some(end) => lo = end,
            None => break,
        }
    }
    write_totals(store, conn, contract, &sums, now).await?;
    Ok(sessions)
}

/// What a refresh folds in besides its sweep: the sessions appended to or
/// moved at or after `since`, and `ran`, those whose runs ended since then.
struct Changed {
    since: Millis,
    ran: BTreeSet<String>,
    /// (sessions a slice, the last one swept)
    sweep: (u32, String),
}

/// Fold in the sessions that changed, and the next slice of the rolling
/// sweep; returns how many sessions were recomputed and where the sweep now
/// stands.
async fn fold_changed<B: SqlBackend>(
    store: &SqlStore<B>,
    conn: &mut dyn Conn,
    contract: &str,
    Changed { since, ran: mut sessions, sweep: (sweep, swept) }: Changed,
    now: Millis,
) -> Result<(u64, String), StoreError> {
    let sql = store.sql().totals;
    let (lo, hi) = contract_range(Some(contract));
    for row in conn.fetch(sql.changed_sessions, vec![Arg::text(contract), Arg::Int(since)]).await? {
        sessions.insert(row.text("session")?);
    }
    let swept = if sweep == 0 {
        swept
    } else {
        let args = vec![Arg::text(&lo), Arg::text(&hi), Arg::Text(swept), Arg::Int(i64::from(sweep))];
        let slice = conn.fetch(store.sql().search_sessions, args).await?;
        let slice: Vec<String> = slice.iter().map(|r| r.text("session")).collect::<Result<_, _>>()?;
        // A short slice reached the contract's end: the next sweep starts over.
        let next =
            if slice.len() >= sweep as usize { slice.last().cloned().unwrap_or_default() } else { String::new() };
        sessions.extend(slice);
        next
    };
    if let Some(generic) = sql.refresh_generic {
        conn.execute(generic, Vec::new()).await?;
    }

    let mut delta: BTreeMap<String, Sum> = BTreeMap::new();
    let sessions: Vec<String> = sessions.into_iter().collect();
    for chunk in sessions.chunks(FOLD_CHUNK) {
        let differ = conn.fetch(sql.parts_changed, vec![Arg::texts(chunk)]).await?;
        let (mut gone, mut rows) = (Vec::new(), Vec::new());
        for row in &differ {
            let (session, consumer) = (row.text("session")?, row.text("consumer")?);
            let part = |lag: &str, dead: &str| -> Result<Option<Part>, StoreError> {
                match row.opt_int(lag)? {
                    Some(lag) => Ok(Some(Part { lag, dead: row.opt_int(dead)?.unwrap_or(0) })),
                    None => Ok(None),
                }
            };
            let sum = delta.entry(consumer.clone()).or_default();
            if let Some(was) = part("was_lag", "was_dead")? {
                sum.add(was, -1);
            }
            match part("lag", "dead")? {
                // Rewritten in place (a part's columns are in no index, so an update stays on its page).
                Some(now) => {
                    sum.add(now, 1);
                    rows.push(vec![Arg::Text(session), Arg::Text(consumer), Arg::Int(now.lag), Arg::Int(now.dead)]);
                }
                // The session has no head of the consumer now.
                None => gone.push(vec![Arg::Text(session), Arg::Text(consumer)]),
            }
        }
        if !gone.is_empty() {
            run_each(conn, &sql.parts_drop, &[], &gone).await?;
        }
        if !rows.is_empty() {
            run_each(conn, &sql.parts_put, &[], &rows).await?;
        }
    }
    let kept = conn.fetch(store.sql().kept_totals, vec![Arg::text(contract)]).await?;
    let mut sums: BTreeMap<String, Sum> = BTreeMap::new();
    for row in &kept {
        let total = crate::rows::consumer_total(row, "lagging_sessions")?;
        let sum = Sum {
            sessions: to_i64(total.sessions),
            lagging: to_i64(total.lagging_sessions),
            lag: to_i64(total.total_lag),
            dead: to_i64(total.dead_letters),
        };
        sums.insert(total.consumer, sum);
    }
    for (consumer, d) in delta {
        let sum = sums.entry(consumer).or_default();
        sum.sessions += d.sessions;
        sum.lagging += d.lagging;
        sum.lag += d.lag;
        sum.dead += d.dead;
    }
    write_totals(store, conn, contract, &sums, now).await?;
    Ok((sessions.len() as u64, swept))
}

/// Write the contract's totals anew, every row stamped `now`; a consumer no
/// session has a head of has no row (as a full pass finds none).
async fn write_totals<B: SqlBackend>(
    store: &SqlStore<B>,
    conn: &mut dyn Conn,
    contract: &str,
    sums: &BTreeMap<String, Sum>,
    now: Millis,
) -> Result<(), StoreError> {
    conn.execute(store.sql().totals.totals_clear, vec![Arg::text(contract)]).await?;
    for (consumer, sum) in sums.iter().filter(|(_, s)| s.sessions > 0) {
        let args = vec![
            Arg::text(contract),
            Arg::text(consumer),
            Arg::Int(sum.sessions),
            Arg::Int(sum.lagging),
            Arg::Int(sum.lag),
            Arg::Int(sum.dead),
            Arg::Int(now),
        ];
        conn.execute(store.sql().totals_put, args).await?;
    }
    Ok(())
}
