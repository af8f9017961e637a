//! The common claim as one autocommit statement: the picking statement
//! leases the fresh heads (a log consumer's cursor on an event it takes
//! included) by itself and is atomic alone, with no BEGIN and COMMIT round
//! trips around it. What it cannot do alone goes to the transactional rules
//! path: a lapsed lease (its lapse must be charged), a cursor on an event its
//! consumer does not take (to be skipped), a log consumer with no cursor yet
//! (to be made), and a claim of log consumers that leased nothing (the
//! cursors may need all three). A claim without log consumers that found
//! nothing reads what to wait for with two reads of its own.

use a2_store::codec::to_i64;
use a2_store::{Claimed, ClaimedHead, HeadClaim, Millis, StoreError};

use crate::rows::{event, head_ref};
use crate::steps::pick_args;
use crate::value::Arg;
use crate::{SqlBackend, SqlStore};

/// What the autocommit pick did.
pub(crate) enum Picked {
    /// The claim is whole: what it leased, or (nothing leased) what the session waits for.
    Whole(Claimed),
    /// It leased these, and saw heads only the rules path may take.
    Partly(Claimed),
}

impl<B: SqlBackend> SqlStore<B> {
    pub(crate) async fn claim_autocommit(
        &self,
        params: &HeadClaim,
        pick: &str,
        now: Millis,
    ) -> Result<Picked, StoreError> {
        let key = params.session.as_str();
        let names = Arg::texts(params.consumers.iter().map(|c| c.name.as_str()));
        let through = Arg::OptInt(params.through.map(to_i64));
        let mut conn = self.backend.work().await?;
        let rows = conn.fetch(pick, pick_args(params, names.clone(), through.clone(), now)).await?;
        let mut claimed = Claimed::default();
        let mut logs: Vec<&str> =
            params.consumers.iter().filter(|c| c.log.is_some()).map(|c| c.name.as_str()).collect();
        logs.sort_unstable();
        logs.dedup();
        let mut rules = false;
        for row in &rows {
            claimed.session_head = row.u64("session_head")?;
            // A claiming log consumer with no cursor yet: the rules path makes it.
            rules |= row.u64("cursors")? < logs.len() as u64;
            if !row.bool("fresh")? {
                // Locked by the statement and released at its end, unchanged: the rules path takes it again.
                rules = true;
                continue;
            }
            claimed.heads.push(ClaimedHead {
                head: head_ref(row)?,
                attempt: row.u32("attempt_count")?,
                failure_count: row.u32("failure_count")?,
                lease_expires_at: now + params.ttl_ms,
                event: event(row, key, "e_")?,
            });
        }
        if rules || (claimed.heads.is_empty() && !logs.is_empty()) {
            return Ok(Picked::Partly(claimed));
        }
        if claimed.heads.is_empty() {
            let Some((head, _)) = self.session_row(conn.as_mut(), key).await? else {
                return Ok(Picked::Whole(Claimed::default()));
            };
            claimed.session_head = head;
            let waits_args = vec![Arg::text(key), names, through, Arg::Int(now), Arg::Int(to_i64(head))];
            let waits = conn.fetch_one(self.sql().claim_waits, waits_args).await?;
            claimed.busy_until = waits.opt_int("busy_until")?;
            claimed.retry_at = waits.opt_int("retry_at")?;
        }
        Ok(Picked::Whole(claimed))
    }
}
