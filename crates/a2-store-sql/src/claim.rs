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

use a2_store::codec::to_i64;
use a2_store::{Claimed, HeadClaim, Millis, StoreError};

use crate::rows::leased_head;
use crate::steps::pick_args;
use crate::value::Arg;
use crate::{SqlBackend, SqlStore};

impl<B: SqlBackend> SqlStore<B> {
    /// The whole claim, or `None`: the statement leased nothing and the rules path must claim.
    pub(crate) async fn claim_autocommit(
        &self,
        params: &HeadClaim,
        pick: &str,
        now: Millis,
    ) -> Result<Option<Claimed>, StoreError> {
        let key = params.session.as_str();
        let names = Arg::texts(params.consumers.iter().map(|c| c.name.as_str()));
        let through = Arg::OptInt(params.through.map(to_i64));
        let mut conn = self.backend.write().await?;
        let rows = conn.fetch(pick, pick_args(params, names.clone(), through.clone(), now, true)).await?;
        let mut claimed = Claimed::default();
        for row in &rows {
            if !row.bool("fresh")? {
                // A head only the rules may take: the statement leased none of the others.
                return Ok(None);
            }
            claimed.session_head = row.u64("session_head")?;
            claimed.heads.push(leased_head(row, key, now + params.ttl_ms)?);
        }
        if !claimed.heads.is_empty() {
            return Ok(Some(claimed));
        }
        if params.consumers.iter().any(|c| c.log.is_some()) {
            // A cursor to make or to skip on may stand behind "nothing".
            return Ok(None);
        }
        let Some((head, _)) = self.session_row(conn.as_mut(), key).await? else {
            return Ok(Some(Claimed::default()));
        };
        claimed.session_head = head;
        let waits_args = vec![Arg::text(key), names, through, Arg::Int(now), Arg::Int(to_i64(head))];
        let waits = conn.fetch_one(self.sql().claim_waits, waits_args).await?;
        claimed.busy_until = waits.opt_int("busy_until")?;
        claimed.retry_at = waits.opt_int("retry_at")?;
        Ok(Some(claimed))
    }
}
