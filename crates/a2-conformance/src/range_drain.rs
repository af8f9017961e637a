//! Engine scenarios for range leases: what the drain does with a range when
//! it hears of runs in an order other than the store's.

use std::sync::atomic::Ordering;

use a2_engine::*;
use a2_store::Store;
use serde_json::json;

use crate::engine::{eventually, open, record, seen, server_with, snapshot, tick, Pace};
use crate::faulty::Faulty;
use crate::StoreFactory;

/// The last position of a range commits, and before the drain hears so it
/// claims again (another run's completion asked it to) and takes the next
/// range of the same lane. Hearing late of the old range's end must not
/// drop the new range: every position runs, on its lease, and nothing is
/// left leased to a drain that is gone (the demo's seeding left such
/// leases, each lapsing a lease's length later and charged as a failure).
pub async fn a_range_outlives_the_late_end_of_the_range_before(factory: &dyn StoreFactory, pace: Pace) {
    let faulty = Faulty::new(open(factory).await);
    let seen = seen();
    // The log's third position (the new range's first) ends only once the
    // drain has heard of the second's end: that made it claim once more.
    let log = {
        let (seen, faulty) = (seen.clone(), faulty.clone());
        Consumer::builder("log").lane("main").run(move |ctx| {
            let (seen, faulty) = (seen.clone(), faulty.clone());
            async move {
                if ctx.event.index == 3 {
                    eventually("the drain heard of the old range's end", || {
                        faulty.claims.load(Ordering::SeqCst) > faulty.claims_when_it_answered.load(Ordering::SeqCst)
                    })
                    .await;
                }
                record(&seen, "log", ctx.event.index);
                Ok::<(), BoxError>(())
            }
        })
    }
    .unwrap_or_else(|e| panic!("{e}"));
    // The fan's run ends once the log's second position has committed and
    // waits to be heard of: its two events make the drain claim the log's next range.
    let fan = {
        let faulty = faulty.clone();
        Consumer::builder("fan").types(["tick"]).run(move |_| {
            let faulty = faulty.clone();
            async move {
                eventually("the log's range ended in the store", || {
                    faulty.completion_waits_for_a_claim.load(Ordering::SeqCst)
                })
                .await;
                let tock = |n: u64| AppendInput::new("tock", json!({ "n": n }));
                Ok::<_, BoxError>(vec![tock(1), tock(2)])
            }
        })
    }
    .unwrap_or_else(|e| panic!("{e}"));
    if let Ok(mut target) = faulty.answer_after_a_claim.lock() {
        *target = Some(("log".to_owned(), 2));
    }
    let server = server_with(pace, faulty.clone(), vec![log, fan], |b| b.run_in_background(false));
    let session = server.session("s").unwrap_or_else(|e| panic!("{e}"));
    session.append(vec![tick(1), AppendInput::new("stop", json!({ "of": 1 }))]).await.unwrap_or_else(|e| panic!("{e}"));
    let drained = session.drain().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(faulty.completion_waits_for_a_claim.load(Ordering::SeqCst), "the scenario's order came about");
    let mut logged: Vec<u64> = snapshot(&seen).into_iter().map(|(_, index)| index).collect();
    logged.sort_unstable();
    assert_eq!(logged, vec![1, 2, 3, 4], "the log ran every position once");
    assert_eq!(drained.outcome, DrainOutcome::Settled, "nothing is left leased: {drained:?}");
    let heads = faulty.head_list(&a2_store::session_key("shop", "s")).await.unwrap_or_else(|e| panic!("{e}"));
    let cursor = heads.iter().find(|h| h.consumer == "log").cloned();
    let cursor = cursor.unwrap_or_else(|| panic!("no log cursor: {heads:#?}"));
    assert_eq!((cursor.lag, cursor.status.lease_holder.clone()), (0, None), "{cursor:#?}");
}
