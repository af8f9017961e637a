//! Store-level scenarios, the facts every backend must show on manual time,
//! gathered from the modules named by the surface they test (appends,
//! claims, failures, completions, clears, grouping, inspection, operations,
//! history, fidelity), and the helpers they share.

use a2_store::*;

use crate::support::*;

pub use crate::appends::*;
pub use crate::batching::*;
pub use crate::claims::*;
pub use crate::clears::*;
pub use crate::completions::*;
pub use crate::failures::*;
pub use crate::fidelity::*;
pub use crate::grouped::*;
pub use crate::history::*;
pub use crate::inspection::*;
pub use crate::operations::*;
pub use crate::presence_cells::*;
pub use crate::ranges::*;
pub use crate::registry::{heads_leased_are_listed_by_process, servers_register_and_expire};
pub use crate::tasks::*;
pub use crate::totals::*;
pub use crate::upkeep::upkeep_lease_is_held_by_one_owner_at_a_time;

pub(crate) fn complete(
    session: &str,
    head: &HeadRef,
    attempt: u32,
    events: Vec<NewEvent>,
    consumers: &[StoreConsumer],
) -> HeadComplete {
    HeadComplete {
        session: key(session),
        head: head.clone(),
        attempt,
        events,
        consumers: consumers.to_vec(),
        holder: None,
        lease_next: false,
    }
}

pub(crate) async fn complete_ok(store: &dyn Store, session: &str, claimed: &ClaimedHead, consumers: &[StoreConsumer]) {
    let outcome = store.head_complete(complete(session, &claimed.head, claimed.attempt, Vec::new(), consumers)).await;
    assert!(matches!(outcome, Ok(CompleteOutcome::Completed { .. })), "complete {}: {outcome:?}", claimed.head);
}

/// Fail the one claimable head of `consumer` until it is dead, claiming for
/// that consumer alone so no other head is left leased.
pub(crate) async fn fail_until_dead(
    store: &dyn Store,
    clock: &ManualClock,
    session: &str,
    consumers: &[StoreConsumer],
    consumer: &str,
) -> HeadRef {
    let only: Vec<StoreConsumer> = consumers.iter().filter(|c| c.name == consumer).cloned().collect();
    for _ in 0..10 {
        clock.advance(BACKOFF.max_ms);
        let claimed = claim(store, session, "h", &only).await;
        let head = claimed.heads.first().expect("a head to fail");
        if let FailOutcome::DeadLettered { .. } =
            store.head_fail(fail_params(session, &head.head, head.attempt)).await.expect("fail")
        {
            return head.head.clone();
        }
    }
    panic!("consumer '{consumer}' did not dead-letter after 10 failures");
}
