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
pub(crate) fn cases() -> u32 {
    std::env::var("A2_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000)
}

/// One store for every case of a property, each case in its own session:
/// cases stay independent without paying for a fresh database each.
pub(crate) struct Harness {
    runtime: tokio::runtime::Runtime,
    pub clock: Arc<ManualClock>,
    pub store: Arc<dyn Store>,
    next: std::sync::atomic::AtomicU64,
}

impl Harness {
    pub(crate) fn open(factory: &dyn StoreFactory) -> Self {
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(runtime) => runtime,
            Err(error) => panic!("a tokio runtime for the property test: {error}"),
        };
        let clock = Arc::new(ManualClock::default());
        let store = runtime.block_on(factory.open(clock.clone()));
        Self { runtime, clock, store, next: std::sync::atomic::AtomicU64::new(0) }
    }

    /// Run `cases` cases of `strategy`, each given its own case number; panic naming the property on a failure.
    pub(crate) fn check<'a, S: Strategy>(
        &'a self,
        property: &str,
        cases: u32,
        strategy: &S,
        run: impl Fn(u64, S::Value) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + 'a>>,
    ) {
        let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
        let result = runner.run(strategy, |value| {
            let case = self.next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.runtime.block_on(run(case, value)).map_err(TestCaseError::fail)
        });
        if let Err(error) = result {
            panic!("{property} property failed: {error}");
        }
    }
}

pub fn fencing_property(factory: &dyn StoreFactory) {
    let h = Harness::open(factory);
    let (store, clock) = (&*h.store, &*h.clock);
    h.check("fencing", cases(), &case(), |case, (holders, ops)| {
        Box::pin(async move { run_case(store, clock, &format!("p{case}"), holders, ops).await })
    });
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
        .event_append(EventAppend { session: key(session), events, consumers: consumers.to_vec(), origin_index: None })
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
                    holder: None,
                    lease_next: false,
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

// ── the types property ──────────────────────────────────────────────

#[derive(Debug, Clone)]
enum TypesOp {
    /// An external append of a `work` (taken by `worker`) or `audit` (taken by `auditor`) event.
    Append {
        audit: bool,
    },
    Claim(usize),
    /// Holder's oldest head appends an event inline, as a run does, with its cause.
    RunAppends {
        holder: usize,
        audit: bool,
    },
    Complete(usize),
    /// Settle every head a holder has through the batched path.
    CompleteMany(usize),
    /// A claim and a completion at once, so a SQL store interleaves their statements.
    ClaimDuringComplete {
        claimer: usize,
        completer: usize,
    },
    Lapse,
    Tick,
}

fn types_op(holders: usize) -> impl Strategy<Value = TypesOp> {
    prop_oneof![
        3 => any::<bool>().prop_map(|audit| TypesOp::Append { audit }),
        3 => (0..holders).prop_map(TypesOp::Claim),
        2 => ((0..holders), any::<bool>()).prop_map(|(holder, audit)| TypesOp::RunAppends { holder, audit }),
        2 => (0..holders).prop_map(TypesOp::Complete),
        1 => (0..holders).prop_map(TypesOp::CompleteMany),
        2 => ((0..holders), (0..holders)).prop_map(|(claimer, completer)| TypesOp::ClaimDuringComplete { claimer, completer }),
        1 => Just(TypesOp::Lapse),
        1 => Just(TypesOp::Tick),
    ]
}

/// Whatever the interleaving of appends (taken and untaken types, inline
/// appends from runs), claims, completions, lapses and takeovers, a log
/// consumer with `types` runs only events of those types, and its cursor
/// only moves forward.
pub fn types_property(factory: &dyn StoreFactory) {
    let h = Harness::open(factory);
    let strategy =
        (2usize..=3).prop_flat_map(|holders| (Just(holders), proptest::collection::vec(types_op(holders), 1..50)));
    let (store, clock) = (&*h.store, &*h.clock);
    h.check("types", (cases() / 4).max(50), &strategy, |case, (holders, ops)| {
        Box::pin(async move { run_types_case(store, clock, &format!("t{case}"), holders, ops).await })
    });
}

fn typed_consumers() -> [StoreConsumer; 2] {
    [
        StoreConsumer::log("worker", "main").with_types(&["work"]).backfilling(),
        StoreConsumer::log("auditor", "main").with_types(&["audit"]).backfilling(),
    ]
}

fn taken_by(consumer: &str) -> &'static str {
    if consumer == "worker" {
        "work"
    } else {
        "audit"
    }
}

struct TypesCase<'a> {
    store: &'a dyn Store,
    session: &'a str,
    held: Vec<Vec<ClaimedHead>>,
    cursors: HashMap<String, u64>,
    appended: u64,
}

impl TypesCase<'_> {
    async fn append(&mut self, audit: bool, cause: Option<Cause>) -> Result<(), String> {
        self.appended += 1;
        let mut new = event(&format!("x{}", self.appended), if audit { "audit" } else { "work" });
        new.cause = cause;
        let params = EventAppend {
            session: key(self.session),
            events: vec![new],
            consumers: typed_consumers().to_vec(),
            origin_index: None,
        };
        self.store.event_append(params).await.map(|_| ()).map_err(|e| e.to_string())
    }

    async fn claim(&mut self, holder: usize) -> Result<(), String> {
        let params = claim_params(self.session, &format!("holder-{holder}"), &typed_consumers());
        let claimed = self.store.head_claim(params).await.map_err(|e| e.to_string())?;
        for head in claimed.heads {
            if head.event.event_type != taken_by(&head.head.consumer) {
                return Err(format!(
                    "{} was handed event {} of type {:?}, which it does not take",
                    head.head.consumer, head.head.index, head.event.event_type
                ));
            }
            self.held[holder].push(head);
        }
        Ok(())
    }

    async fn complete(&mut self, holder: usize) -> Result<(), String> {
        if self.held[holder].is_empty() {
            return Ok(());
        }
        let head = self.held[holder].remove(0);
        let params = HeadComplete {
            session: key(self.session),
            head: head.head,
            attempt: head.attempt,
            events: Vec::new(),
            consumers: typed_consumers().to_vec(),
            holder: None,
            lease_next: false,
        };
        self.store.head_complete(params).await.map(|_| ()).map_err(|e| e.to_string())
    }

    async fn check_cursors(&mut self) -> Result<(), String> {
        let heads = self.store.head_list(&key(self.session)).await.map_err(|e| e.to_string())?;
        for head in heads.iter().filter(|h| h.kind == HeadKind::Log) {
            let before = self.cursors.insert(head.consumer.clone(), head.next_index).unwrap_or(0);
            if head.next_index < before {
                return Err(format!("{}'s cursor moved back from {before} to {}", head.consumer, head.next_index));
            }
        }
        Ok(())
    }
}

async fn run_types_case(
    store: &dyn Store,
    clock: &ManualClock,
    session: &str,
    holders: usize,
    ops: Vec<TypesOp>,
) -> Result<(), String> {
    let mut case = TypesCase { store, session, held: vec![Vec::new(); holders], cursors: HashMap::new(), appended: 0 };
    case.append(false, None).await?;
    for op in ops {
        match op {
            TypesOp::Append { audit } => case.append(audit, None).await?,
            TypesOp::Claim(h) => case.claim(h).await?,
            TypesOp::RunAppends { holder, audit } => {
                if let Some(head) = case.held[holder].first() {
                    let cause = Cause {
                        consumer: head.head.consumer.clone(),
                        lane: head.head.lane.clone(),
                        index: head.head.index,
                        attempt: head.attempt,
                        batch_size: None,
                    };
                    case.append(audit, Some(cause)).await?;
                }
            }
            TypesOp::Complete(h) => case.complete(h).await?,
            TypesOp::CompleteMany(h) => {
                let heads = case.held[h].drain(..).map(|c| HeldHead { head: c.head, attempt: c.attempt }).collect();
                let params = HeadCompleteMany { session: key(session), heads };
                store.head_complete_many(params).await.map_err(|e| e.to_string())?;
            }
            TypesOp::ClaimDuringComplete { claimer, completer } => {
                // Two sessions of work at once: the completer's head is taken out first so the
                // claim's result can be recorded without sharing `case` between the two futures.
                if case.held[completer].is_empty() {
                    case.claim(claimer).await?;
                } else {
                    let head = case.held[completer].remove(0);
                    let complete = HeadComplete {
                        session: key(session),
                        head: head.head,
                        attempt: head.attempt,
                        events: Vec::new(),
                        consumers: typed_consumers().to_vec(),
                        holder: None,
                        lease_next: false,
                    };
                    let params = claim_params(session, &format!("holder-{claimer}"), &typed_consumers());
                    let (claimed, completed) = tokio::join!(store.head_claim(params), store.head_complete(complete));
                    completed.map_err(|e| e.to_string())?;
                    for head in claimed.map_err(|e| e.to_string())?.heads {
                        if head.event.event_type != taken_by(&head.head.consumer) {
                            return Err(format!(
                                "{} was handed event {} of type {:?} during a completion",
                                head.head.consumer, head.head.index, head.event.event_type
                            ));
                        }
                        case.held[claimer].push(head);
                    }
                }
            }
            TypesOp::Lapse => clock.advance(TTL + 1),
            TypesOp::Tick => clock.advance(TTL / 4),
        }
        case.check_cursors().await?;
    }
    Ok(())
}
