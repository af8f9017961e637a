//! The common claim as one autocommit statement: where the claim is whole
//! (every candidate fresh, a log consumer's cursor on an event it takes
//! included, and every claiming log consumer's cursor there) the picking
//! statement leases it by itself, atomic alone, with no BEGIN and COMMIT
//! round trips around it. Otherwise it leases nothing, and the transactional
//! rules path claims as it always did: a lapsed lease (its lapse must be
//! charged), a cursor on an event its consumer does not take (to be
//! skipped), a log consumer with no cursor yet (to be made), a log claim that
//! found nothing (its cursors may need all three). Nothing the statement
//! leased is left for a later step to lose. A claim without log consumers
//! that found nothing reads what to wait for with two reads of its own.

use std::collections::{HashMap, HashSet};

use a2_store::codec::to_i64;
use a2_store::{Claimed, HeadClaim, Millis, StoreError};

use crate::group::{Batcher, MAX_BATCH};
use crate::rows::leased_head;
use crate::steps::{log_takers, pick_args};
use crate::value::{Arg, Row};
use crate::{SqlBackend, SqlStore};

/// What a picking statement did for one session's claim.
#[derive(Debug)]
pub(crate) enum Picked {
    /// The whole claim, leased.
    Whole(Claimed),
    /// Leased nothing: a head only the rules may take, or a cursor to make or skip on.
    Rules,
    /// Nothing to lease, and no log consumer whose cursor needs seeing to.
    Nothing,
}

/// Claims, merged into one picking statement per flush.
pub(crate) type ClaimBatcher = Batcher<HeadClaim, Result<Picked, StoreError>>;

/// Start merging `store`'s claims, `in_flight` statements at once (the store given must not itself merge them).
pub(crate) fn start_claim_batcher<B: SqlBackend + Clone>(store: SqlStore<B>, in_flight: usize) -> ClaimBatcher {
    Batcher::start(MAX_BATCH, in_flight, move |batch| {
        let store = store.clone();
        async move { store.flush_claims(batch).await }
    })
}

/// The rows of one session's claim as the picking statement left them.
fn picked<'a>(params: &HeadClaim, rows: impl IntoIterator<Item = &'a Row>, now: Millis) -> Result<Picked, StoreError> {
    let mut claimed = Claimed::default();
    for row in rows {
        if !row.bool("fresh")? {
            // A head only the rules may take: the statement leased none of the others.
            return Ok(Picked::Rules);
        }
        claimed.session_head = row.u64("session_head")?;
        claimed.heads.push(leased_head(row, params.session.as_str(), now + params.ttl_ms)?);
    }
    Ok(if !claimed.heads.is_empty() {
        Picked::Whole(claimed)
    } else if params.consumers.iter().any(|c| c.log.is_some()) {
        // A cursor to make or to skip on may stand behind "nothing".
        Picked::Rules
    } else {
        Picked::Nothing
    })
}

/// What claims must share to be picked by one statement: everything but
/// the session and the limit (a claim that excludes heads is never merged).
fn shape(params: &HeadClaim) -> String {
    format!("{:?}", (&params.consumers, params.through, &params.holder, params.ttl_ms))
}

impl<B: SqlBackend> SqlStore<B> {
    /// The whole claim, or `None`: the statement leased nothing and the rules path must claim.
    pub(crate) async fn claim_autocommit(
        &self,
        params: &HeadClaim,
        pick: &str,
        now: Millis,
    ) -> Result<Option<Claimed>, StoreError> {
        let outcome = match &self.claim_batcher {
            Some(batcher) if params.exclude.is_empty() => batcher
                .submit(params.clone())
                .await
                .unwrap_or_else(|| Err(StoreError::unavailable("the store's claim queue stopped")))?,
            _ => self.claim_alone(params, pick, now).await?,
        };
        match outcome {
            Picked::Whole(claimed) => Ok(Some(claimed)),
            Picked::Rules => Ok(None),
            Picked::Nothing => self.claim_waits(params, now).await.map(Some),
        }
    }

    async fn claim_alone(&self, params: &HeadClaim, pick: &str, now: Millis) -> Result<Picked, StoreError> {
        let names = Arg::texts(params.consumers.iter().map(|c| c.name.as_str()));
        let through = Arg::OptInt(params.through.map(to_i64));
        let mut conn = self.backend.write().await?;
        let rows = conn.fetch(pick, pick_args(params, names, through, now, true)).await?;
        picked(params, &rows, now)
    }

    /// A claim that found nothing: the session's head, and when to look again.
    async fn claim_waits(&self, params: &HeadClaim, now: Millis) -> Result<Claimed, StoreError> {
        let key = params.session.as_str();
        let mut conn = self.backend.write().await?;
        let Some((head, _)) = self.session_row(conn.as_mut(), key).await? else {
            return Ok(Claimed::default());
        };
        let names = Arg::texts(params.consumers.iter().map(|c| c.name.as_str()));
        let through = Arg::OptInt(params.through.map(to_i64));
        let waits_args = vec![Arg::text(key), names, through, Arg::Int(now), Arg::Int(to_i64(head))];
        let waits = conn.fetch_one(self.sql().claim_waits, waits_args).await?;
        Ok(Claimed {
            session_head: head,
            busy_until: waits.opt_int("busy_until")?,
            retry_at: waits.opt_int("retry_at")?,
            ..Claimed::default()
        })
    }

    /// Each claim of `batch` picked, in its order: those of one shape and
    /// distinct sessions by one statement, the rest (or all of a statement
    /// that failed: it leased nothing, being one statement alone) one by one.
    async fn flush_claims(&self, batch: Vec<HeadClaim>) -> Vec<Result<Picked, StoreError>> {
        let now = self.now();
        let mut outcomes: Vec<Option<Result<Picked, StoreError>>> = (0..batch.len()).map(|_| None).collect();
        if let (Some(many), true) = (self.sql().claim_pick_many, batch.len() > 1) {
            let mut groups: HashMap<String, Vec<usize>> = HashMap::new();
            let mut seen = HashSet::new();
            for (i, params) in batch.iter().enumerate() {
                // A session twice in one statement would have its heads picked twice.
                if seen.insert((shape(params), params.session.as_str())) {
                    groups.entry(shape(params)).or_default().push(i);
                }
            }
            for members in groups.values().filter(|m| m.len() > 1) {
                if let Ok(picks) = self.claim_many(many, &batch, members, now).await {
                    for (i, pick) in members.iter().zip(picks) {
                        outcomes[*i] = Some(Ok(pick));
                    }
                }
            }
        }
        let mut answers = Vec::with_capacity(batch.len());
        for (params, outcome) in batch.iter().zip(outcomes) {
            answers.push(match (outcome, self.sql().claim_pick) {
                (Some(outcome), _) => outcome,
                (None, Some(pick)) => self.claim_alone(params, pick, now).await,
                (None, None) => Ok(Picked::Rules),
            });
        }
        answers
    }

    /// The claims `members` of `batch` (one shape, distinct sessions) picked by one statement.
    async fn claim_many(
        &self,
        many: &str,
        batch: &[HeadClaim],
        members: &[usize],
        now: Millis,
    ) -> Result<Vec<Picked>, StoreError> {
        let first = &batch[members[0]];
        let names = Arg::texts(first.consumers.iter().map(|c| c.name.as_str()));
        let through = Arg::OptInt(first.through.map(to_i64));
        let (takers, lanes, types, logs) = log_takers(first);
        let args = vec![
            Arg::texts(members.iter().map(|&i| batch[i].session.as_str())),
            names,
            through,
            Arg::Int(now),
            Arg::Ints(members.iter().map(|&i| i64::from(batch[i].limit.max(1))).collect()),
            Arg::text(&first.holder),
            Arg::Int(now + first.ttl_ms),
            takers,
            lanes,
            types,
            logs,
        ];
        let mut conn = self.backend.write().await?;
        let rows = conn.fetch(many, args).await?;
        let mut by_session: HashMap<String, Vec<&Row>> = HashMap::new();
        for row in &rows {
            by_session.entry(row.text("session")?).or_default().push(row);
        }
        members
            .iter()
            .map(|&i| {
                let params = &batch[i];
                picked(params, by_session.get(params.session.as_str()).into_iter().flatten().copied(), now)
            })
            .collect()
    }
}
