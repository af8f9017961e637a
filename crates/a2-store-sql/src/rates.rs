//! Kept attempt rates (the throughput chart): completed and failed runs a
//! consumer a minute, folded in by the totals refresh from the runs that
//! ended since the last one, so the chart reads an hour as sixty rows a
//! consumer instead of every run of the hour.
//!
//! Exactly once per run, without a counter in the drain's path: a refresh
//! recounts, second by second, every run stamped from the settling window
//! before its previous refresh until now; what that previous refresh had
//! counted of those seconds is kept (the tail), and only the difference is
//! added to the minutes.

use std::collections::BTreeMap;

use a2_store::*;

use crate::conn::Conn;
use crate::value::Arg;
use crate::{SqlBackend, SqlStore};

/// The chart's bucket.
pub(crate) const MINUTE_MS: i64 = 60_000;
const SECOND_MS: i64 = 1_000;
/// Kept minutes older than this are pruned: the chart shows at most a day.
const KEPT_MS: i64 = 24 * 60 * MINUTE_MS;

/// Completed and failed runs, by (consumer, bucket).
pub(crate) type Counts = BTreeMap<(String, i64), (i64, i64)>;

fn floor(at: Millis, bucket: i64) -> Millis {
    at.div_euclid(bucket) * bucket
}

async fn count<B: SqlBackend>(
    store: &SqlStore<B>,
    conn: &mut dyn Conn,
    contract: &str,
    (from, to): (Millis, Millis),
    bucket: i64,
) -> Result<Counts, StoreError> {
    let (lo, hi) = crate::rows::contract_range(Some(contract));
    let args = vec![Arg::Text(lo), Arg::Text(hi), Arg::Int(from), Arg::Int(to), Arg::Int(bucket)];
    let rows = conn.fetch(store.sql().totals.rates_count, args).await?;
    rows.iter()
        .map(|r| Ok(((r.text("consumer")?, r.int("bucket")?), (r.int("completed")?, r.int("failed")?))))
        .collect()
}

/// Add `counts` (seconds or minutes) to the kept minutes.
async fn add_to_minutes<B: SqlBackend>(
    store: &SqlStore<B>,
    conn: &mut dyn Conn,
    contract: &str,
    counts: &Counts,
) -> Result<(), StoreError> {
    let mut minutes: Counts = BTreeMap::new();
    for ((consumer, at), (completed, failed)) in counts {
        let minute = minutes.entry((consumer.clone(), floor(*at, MINUTE_MS))).or_default();
        minute.0 += completed;
        minute.1 += failed;
    }
    for ((consumer, minute), (completed, failed)) in minutes.into_iter().filter(|(_, c)| *c != (0, 0)) {
        let args =
            vec![Arg::text(contract), Arg::Text(consumer), Arg::Int(minute), Arg::Int(completed), Arg::Int(failed)];
        conn.execute(store.sql().totals.rates_add, args).await?;
    }
    Ok(())
}

/// Keep the seconds from `now - TOTALS_SETTLE_MS` on: what the next refresh recounts.
async fn keep_tail<B: SqlBackend>(
    store: &SqlStore<B>,
    conn: &mut dyn Conn,
    contract: &str,
    seconds: &Counts,
    now: Millis,
) -> Result<(), StoreError> {
    let sql = store.sql().totals;
    conn.execute(sql.rates_tail_clear, vec![Arg::text(contract)]).await?;
    let from = floor(now - TOTALS_SETTLE_MS, SECOND_MS);
    for ((consumer, second), (completed, failed)) in seconds.iter().filter(|((_, s), _)| *s >= from) {
        let args =
            vec![Arg::text(contract), Arg::text(consumer), Arg::Int(*second), Arg::Int(*completed), Arg::Int(*failed)];
        conn.execute(sql.rates_tail_put, args).await?;
    }
    Ok(())
}

/// Count the contract's last day of runs anew (a full pass).
pub(crate) async fn recount<B: SqlBackend>(
    store: &SqlStore<B>,
    conn: &mut dyn Conn,
    contract: &str,
    now: Millis,
) -> Result<(), StoreError> {
    let sql = store.sql().totals;
    conn.execute(sql.rates_clear, vec![Arg::text(contract)]).await?;
    let split = floor(now - TOTALS_SETTLE_MS, SECOND_MS);
    let minutes = count(store, conn, contract, (floor(now - KEPT_MS, MINUTE_MS), split), MINUTE_MS).await?;
    add_to_minutes(store, conn, contract, &minutes).await?;
    let seconds = count(store, conn, contract, (split, now + 1), SECOND_MS).await?;
    add_to_minutes(store, conn, contract, &seconds).await?;
    keep_tail(store, conn, contract, &seconds, now).await
}

/// A refresh's one read of the runs: the sessions that ran at or after
/// `since`, and by the second the runs a fold recounts.
pub(crate) struct RunsSince {
    pub sessions: std::collections::BTreeSet<String>,
    pub counted: Counts,
}

/// The seconds a fold recounts: from the settling window before the previous refresh.
fn recounted_from(refreshed_at: Millis) -> Millis {
    floor(refreshed_at - TOTALS_SETTLE_MS, SECOND_MS)
}

/// Read the runs that ended at or after `since` (and the seconds a fold
/// after `refreshed_at` recounts) through `now`, in one statement.
pub(crate) async fn runs_since<B: SqlBackend>(
    store: &SqlStore<B>,
    conn: &mut dyn Conn,
    contract: &str,
    (since, refreshed_at): (Millis, Millis),
    now: Millis,
) -> Result<RunsSince, StoreError> {
    let (lo, hi) = crate::rows::contract_range(Some(contract));
    let counted_from = recounted_from(refreshed_at);
    let args = vec![
        Arg::Text(lo),
        Arg::Text(hi),
        Arg::Int(since.min(counted_from)),
        Arg::Int(now + 1),
        Arg::Int(SECOND_MS),
        Arg::Int(counted_from),
    ];
    let mut runs = RunsSince { sessions: Default::default(), counted: Counts::new() };
    for row in conn.fetch(store.sql().totals.runs_since, args).await? {
        match row.opt_text("session")? {
            Some(session) => {
                runs.sessions.insert(session);
            }
            None => {
                let key = (row.text("consumer")?, row.int("bucket")?);
                runs.counted.insert(key, (row.int("completed")?, row.int("failed")?));
            }
        }
    }
    Ok(runs)
}

/// Fold in the runs stamped since the settling window before the previous
/// refresh (`refreshed_at`) through `now` (`seconds`, from [`runs_since`]):
/// recounted by the second, less what that refresh had counted of them.
pub(crate) async fn fold<B: SqlBackend>(
    store: &SqlStore<B>,
    conn: &mut dyn Conn,
    contract: &str,
    refreshed_at: Millis,
    now: Millis,
    seconds: Counts,
) -> Result<(), StoreError> {
    let sql = store.sql().totals;
    let from = recounted_from(refreshed_at);
    let mut delta = seconds.clone();
    for row in &conn.fetch(sql.rates_tail_kept, vec![Arg::text(contract)]).await? {
        let second = row.int("second")?;
        if second < from {
            continue;
        }
        let counted = delta.entry((row.text("consumer")?, second)).or_default();
        counted.0 -= row.int("completed")?;
        counted.1 -= row.int("failed")?;
    }
    add_to_minutes(store, conn, contract, &delta).await?;
    keep_tail(store, conn, contract, &seconds, now).await?;
    conn.execute(sql.rates_prune, vec![Arg::text(contract), Arg::Int(now - KEPT_MS)]).await?;
    Ok(())
}

/// The kept minutes since `since`, as the chart reads them.
pub(crate) async fn kept<B: SqlBackend>(
    store: &SqlStore<B>,
    params: &AttemptRates,
) -> Result<Vec<AttemptRate>, StoreError> {
    let args = vec![Arg::OptText(params.contract.clone()), Arg::Int(floor(params.since, MINUTE_MS))];
    let rows = store.backend.read().await?.fetch(store.sql().totals.rates_kept, args).await?;
    rows.iter().map(crate::rows::attempt_rate).collect()
}
