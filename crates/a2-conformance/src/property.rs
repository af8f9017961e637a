//! The fencing property: whatever the interleaving of claims, renewals,
//! lease expiries, completions and failures across 2–4 holders, a head is
//! completed at most once, and only by its latest attempt.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use a2_store::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::support::*;
use crate::StoreFactory;

#[derive(Debug, Clone)]
enum Op {
    Claim(usize),
    Renew(usize),
    Complete(usize),
    Fail(usize),
    /// Let every lease lapse.
    Expire,
    /// A little time passes (renewals keep leases alive through it).
    Tick,
}

fn op(holders: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..holders).prop_map(Op::Claim),
        1 => (0..holders).prop_map(Op::Renew),
        3 => (0..holders).prop_map(Op::Complete),
        1 => (0..holders).prop_map(Op::Fail),
        1 => Just(Op::Expire),
        1 => Just(Op::Tick),
    ]
}

fn case() -> impl Strategy<Value = (usize, Vec<Op>)> {
    (2usize..=4).prop_flat_map(|holders| (Just(holders), proptest::collection::vec(op(holders), 1..60)))
}

/// How many random interleavings to run (`A2_PROPTEST_CASES`, default 1,000).
fn cases() -> u32 {
    std::env::var("A2_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000)
}

pub fn fencing_property(factory: &dyn StoreFactory) {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => panic!("a tokio runtime for the property test: {error}"),
    };
    // One store for every case, each case in its own session: cases stay
    // independent without paying for a fresh database each.
    let clock = Arc::new(ManualClock::default());
    let store = runtime.block_on(factory.open(clock.clone()));
    let next = std::sync::atomic::AtomicU64::new(0);
    let mut runner = TestRunner::new(Config { cases: cases(), failure_persistence: None, ..Config::default() });
    let result = runner.run(&case(), |(holders, ops)| {
        let session = format!("p{}", next.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
        runtime.block_on(run_case(&*store, &clock, &session, holders, ops)).map_err(TestCaseError::fail)
    });
    if let Err(error) = result {
        panic!("fencing property failed: {error}");
    }
}

async fn run_case(
    store: &dyn Store,
    clock: &ManualClock,
    session: &str,
    holders: usize,
    ops: Vec<Op>,
) -> Result<(), String> {
    let consumers = [log("cursor"), StoreConsumer::targeted("par")];
    store
        .cursor_wake(CursorWake { session: key(session), consumer: log("cursor") })
        .await
        .map_err(|e| e.to_string())?;
    let events = (0..3).map(|i| targeted(&format!("e{i}"), "tick", &[("par", None)])).collect();
    store
        .event_append(EventAppend { session: key(session), events, consumers: consumers.to_vec() })
        .await
        .map_err(|e| e.to_string())?;
    let mut held: Vec<Vec<HeldHead>> = vec![Vec::new(); holders];
    let mut latest: HashMap<HeadRef, u32> = HashMap::new();
    let mut completed: HashSet<HeadRef> = HashSet::new();
    for op in ops {
        match op {
            Op::Claim(h) => {
                let mut params = claim_params(session, &format!("holder-{h}"), &consumers);
                params.limit = 2;
                let claimed = store.head_claim(params).await.map_err(|e| e.to_string())?;
                for head in claimed.heads {
                    let previous = latest.insert(head.head.clone(), head.attempt).unwrap_or(0);
                    if head.attempt <= previous {
                        return Err(format!("{} claimed with attempt {} after {previous}", head.head, head.attempt));
                    }
                    if completed.contains(&head.head) {
                        return Err(format!("{} claimed again after it completed", head.head));
                    }
                    held[h].push(HeldHead { head: head.head, attempt: head.attempt });
                }
            }
            Op::Renew(h) => {
                let params = HeadRenew {
                    session: key(session),
                    holder: format!("holder-{h}"),
                    ttl_ms: TTL,
                    heads: held[h].clone(),
                };
                let renewed = store.head_renew(params).await.map_err(|e| e.to_string())?;
                for head in &renewed.renewed {
                    let current = latest.get(head).copied();
                    if !held[h].iter().any(|x| &x.head == head && Some(x.attempt) == current) {
                        return Err(format!(
                            "holder-{h} renewed {head} without holding its latest attempt {current:?}"
                        ));
                    }
                }
            }
            Op::Complete(h) | Op::Fail(h) => {
                if held[h].is_empty() {
                    continue;
                }
                let HeldHead { head, attempt } = held[h].remove(0);
                if matches!(op, Op::Fail(_)) {
                    let outcome =
                        store.head_fail(fail_params(session, &head, attempt)).await.map_err(|e| e.to_string())?;
                    if outcome != FailOutcome::Superseded && latest.get(&head) != Some(&attempt) {
                        return Err(format!("a stale attempt {attempt} of {head} recorded a failure"));
                    }
                    continue;
                }
                let params = HeadComplete {
                    session: key(session),
                    head: head.clone(),
                    attempt,
                    events: vec![],
                    consumers: consumers.to_vec(),
                };
                if let CompleteOutcome::Completed { .. } =
                    store.head_complete(params).await.map_err(|e| e.to_string())?
                {
                    if !completed.insert(head.clone()) {
                        return Err(format!("{head} completed twice"));
                    }
                    if latest.get(&head) != Some(&attempt) {
                        return Err(format!(
                            "{head} completed by attempt {attempt}, not the latest {:?}",
                            latest.get(&head)
                        ));
                    }
                }
            }
            Op::Expire => clock.advance(TTL + BACKOFF.max_ms),
            Op::Tick => clock.advance(TTL / 4),
        }
    }
    Ok(())
}
