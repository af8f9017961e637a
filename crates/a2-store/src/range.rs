//! Range leases for log cursors: one claim reads ahead the consecutive
//! positions a cursor's consumer takes, so an ordered lane runs many events
//! on one claim. Only the position the cursor stands on is leased; each
//! completion leases the next one to the same holder (`HeadComplete::lease_next`),
//! so a lapse is charged to that one position, never to later ones that never ran.

use crate::{Claimed, ClaimedHead, EventList, HeadClaim, HeadRef, Store, StoreError};

/// Whether `head` is the cursor of one of the claim's log consumers.
pub fn is_log_cursor(params: &HeadClaim, head: &HeadRef) -> bool {
    params.consumers.iter().any(|c| {
        c.name == head.consumer && c.log.as_ref().is_some_and(|log| head.lane.as_deref() == Some(log.lane.as_str()))
    })
}

/// Follow each log cursor the claim took with the next positions of its
/// range, in order: up to `params.range` in all, never past the session head
/// the claim read nor `params.through`, and stopping before the first event
/// the consumer does not take (the next claim skips it, as ever). Each later
/// position is reported as its first attempt, fenced by the holder.
pub async fn read_ranges(store: &dyn Store, params: &HeadClaim, claimed: &mut Claimed) -> Result<(), StoreError> {
    if params.range <= 1 {
        return Ok(());
    }
    let last = params.through.map_or(claimed.session_head, |t| t.min(claimed.session_head));
    let starts: Vec<ClaimedHead> =
        claimed.heads.iter().filter(|h| is_log_cursor(params, &h.head) && h.head.index < last).cloned().collect();
    for start in starts {
        let Some(consumer) = params.consumers.iter().find(|c| c.name == start.head.consumer) else { continue };
        let through = last.min(start.head.index.saturating_add(u64::from(params.range) - 1));
        let list = EventList {
            session: params.session.clone(),
            after: Some(start.head.index),
            before: Some(through + 1),
            limit: params.range,
            newest_first: false,
        };
        let mut expected = start.head.index + 1;
        for event in store.event_list(list).await? {
            if event.index != expected || !consumer.takes(&event.event_type) {
                break;
            }
            expected += 1;
            claimed.heads.push(ClaimedHead {
                head: HeadRef { index: event.index, ..start.head.clone() },
                attempt: 1,
                failure_count: 0,
                lease_expires_at: start.lease_expires_at,
                event,
            });
        }
    }
    Ok(())
}
