//! Kept totals folded in by what changed: after any history, an incremental
//! refresh keeps what a full pass computes (and the attempt rates what a
//! count of every run finds); a refresh recomputes only the
//! sessions that changed; a refresh fenced by a lease that moved on writes
//! nothing.

use a2_store::*;

use crate::operations::copy_of;
use crate::support::*;
use crate::StoreFactory;

/// A small deterministic generator (xorshift), so a failing history can be
/// replayed from its seed.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, sides: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % sides
    }
}

/// The consumers of the histories: a log cursor, a log cursor that skips
/// types it does not take, and per-event heads.
fn consumers() -> Vec<StoreConsumer> {
    vec![log("ledger"), StoreConsumer::log("picky", "main").with_types(&["pay"]), StoreConsumer::targeted("job")]
}

/// Incremental: no sweep, so only what the change detection finds is folded in.
fn incremental() -> TotalsRefresh {
    TotalsRefresh { sweep: 0, ..TotalsRefresh::default() }
}

async fn kept_equals_a_full_pass(store: &dyn Store, seed: u64, step: usize) {
    let mut kept = store.consumer_totals_snapshot(None).await.expect("kept").map(|s| s.totals).unwrap_or_default();
    let mut live = store.consumer_totals(None).await.expect("live");
    kept.sort_by(|a, b| (&a.contract, &a.consumer).cmp(&(&b.contract, &b.consumer)));
    live.sort_by(|a, b| (&a.contract, &a.consumer).cmp(&(&b.contract, &b.consumer)));
    assert_eq!(kept, live, "seed {seed}, step {step}: kept totals against a full pass");
    let rates = |kept| AttemptRates { contract: None, since: 0, bucket_ms: 60_000, kept };
    let kept = store.attempt_rates(rates(true)).await.expect("kept rates");
    let counted = store.attempt_rates(rates(false)).await.expect("counted rates");
    assert_eq!(kept, counted, "seed {seed}, step {step}: kept attempt rates against a count of every run");
}

/// One random step of a history on session `s<n>`.
async fn step(store: &dyn Store, clock: &ManualClock, dice: &mut Dice, n: usize) {
    let consumers = consumers();
    let session = format!("s{}", dice.roll(6));
    match dice.roll(9) {
        0..=2 => {
            let events = (0..=dice.roll(2))
                .map(|i| {
                    let kind = if dice.roll(2) == 0 { "pay" } else { "tick" };
                    let id = format!("{session}-{n}-{i}");
                    if dice.roll(3) == 0 {
                        targeted(&id, kind, &[("job", None)])
                    } else {
                        event(&id, kind)
                    }
                })
                .collect();
            append(store, &session, events, &consumers).await;
        }
        3 if dice.roll(3) == 0 => {
            // A consumer no append names: its backfilling cursor is made by this claim, which runs nothing.
            let late = StoreConsumer::log("late", "main").backfilling();
            claim(store, &session, "late-runner", &[late]).await;
        }
        3 | 4 => {
            // Sometimes the picky consumer alone: a claim that only skips untaken events runs nothing.
            let running = if dice.roll(3) == 0 { &consumers[1..2] } else { &consumers[..] };
            let claimed = claim(store, &session, "runner", running).await;
            let heads: Vec<HeldHead> =
                claimed.heads.iter().map(|h| HeldHead { head: h.head.clone(), attempt: h.attempt }).collect();
            if !heads.is_empty() {
                store.head_complete_many(HeadCompleteMany { session: key(&session), heads }).await.expect("complete");
            }
        }
        5 => {
            // Failures, two to a dead letter, so dead letters come and go often.
            let claimed = claim(store, &session, "runner", &consumers).await;
            for held in &claimed.heads {
                let fail = HeadFail { max_failures: 2, ..fail_params(&session, &held.head, held.attempt) };
                store.head_fail(fail).await.expect("fail");
            }
            clock.advance(BACKOFF.max_ms);
        }
        6 => {
            let list = DeadLetterList {
                contract: None,
                session: Some(key(&session)),
                consumer: None,
                cause: None,
                after: None,
                limit: 10,
            };
            let dead = store.dead_letter_list(list).await.expect("dead letters");
            if let Some(letter) = dead.first() {
                let action = if dice.roll(2) == 0 { RedriveAction::Retry } else { RedriveAction::Skip };
                let redrive = DeadLetterRedrive {
                    session: key(&session),
                    consumer: letter.consumer.clone(),
                    index: letter.index,
                    action,
                    audit: None,
                };
                store.dead_letter_redrive(redrive).await.expect("redrive");
            }
        }
        7 if store.session_get(&key(&session)).await.expect("summary").is_some() => {
            if dice.roll(2) == 0 {
                let clear = SessionClear { session: key(&session), if_last_index: None, audit: None, settles: None };
                store.session_clear(clear).await.expect("clear");
            } else {
                let advance =
                    CursorAdvance { session: key(&session), consumer: log("ledger"), through: None, audit: None };
                store.cursor_advance(advance).await.expect("consume");
            }
        }
        7 => {}
        _ => {
            if store.session_get(&key(&session)).await.expect("summary").is_some() {
                let copy = copy_of(store, &session, &format!("copy-{n}")).await;
                store.session_import(copy).await.expect("import");
            }
        }
    }
    clock.advance(i64::try_from(dice.roll(2_500)).unwrap_or(0));
}

/// After random histories (appends, runs, failures, dead letters, redrives,
/// clears, consumes, imports), each incremental refresh keeps exactly what
/// a full pass over every cursor computes.
pub async fn totals_kept_incrementally_match_a_full_pass(factory: &dyn StoreFactory) {
    for seed in [0x9E37_79B9_7F4A_7C15_u64, 0x2545_F491_4F6C_DD1D, 0xD1B5_4A32_D192_ED03] {
        let (store, clock) = open(factory).await;
        let mut dice = Dice(seed);
        store.consumer_totals_refresh(incremental()).await.expect("first refresh");
        for n in 0..60 {
            step(&*store, &clock, &mut dice, n).await;
            if dice.roll(3) == 0 {
                store.consumer_totals_refresh(incremental()).await.expect("refresh");
                kept_equals_a_full_pass(&*store, seed, n).await;
            }
        }
        store.consumer_totals_refresh(incremental()).await.expect("last refresh");
        kept_equals_a_full_pass(&*store, seed, 60).await;
    }
}

/// A refresh recomputes the sessions appended to or run since the last one,
/// not the store: twenty quiet sessions are not looked at again.
pub async fn a_refresh_folds_in_only_what_changed(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = consumers();
    for n in 0..20 {
        append(&*store, &format!("q{n}"), vec![targeted(&format!("q{n}"), "pay", &[("job", None)])], &consumers).await;
    }
    // Past the settling window, in which a refresh looks again at what changed just before the last one.
    clock.advance(60_000);
    let first = store.consumer_totals_refresh(incremental()).await.expect("first refresh");
    assert_eq!((first.full_passes, first.sessions_folded), (1, 20), "nothing kept yet: a full pass");
    clock.advance(60_000);
    let quiet = store.consumer_totals_refresh(incremental()).await.expect("quiet refresh");
    assert_eq!((quiet.full_passes, quiet.sessions_folded), (0, 0), "nothing changed, nothing recomputed");
    clock.advance(60_000);
    append(&*store, "q3", vec![event("q3-more", "pay")], &consumers).await;
    let claimed = claim(&*store, "q7", "runner", &consumers).await;
    let heads = claimed.heads.iter().map(|h| HeldHead { head: h.head.clone(), attempt: h.attempt }).collect();
    store.head_complete_many(HeadCompleteMany { session: key("q7"), heads }).await.expect("complete");
    let after = store.consumer_totals_refresh(incremental()).await.expect("refresh");
    assert_eq!((after.full_passes, after.sessions_folded), (0, 2), "one appended to, one run");
    kept_equals_a_full_pass(&*store, 0, 0).await;
    let full = store.consumer_totals_refresh(TotalsRefresh { full: true, ..incremental() }).await.expect("full");
    assert_eq!((full.full_passes, full.sessions_folded), (1, 20), "asked for: a full pass");
}

/// A refresh fenced by a lease generation that has moved on (its leader
/// paused past the lease, another took over) is refused and writes nothing;
/// the new leader's refresh goes through.
pub async fn a_refresh_under_a_lost_lease_writes_nothing(factory: &dyn StoreFactory) {
    let (store, clock) = open(factory).await;
    let consumers = consumers();
    append(&*store, "s", vec![event("s-1", "pay")], &consumers).await;
    let lease = |owner: &str| UpkeepLease { scope: CONTRACT.into(), owner: owner.into(), ttl_ms: 1_000 };
    let fence = |owner: &str, generation| UpkeepFence { scope: CONTRACT.into(), owner: owner.into(), generation };
    let refresh = |fence| TotalsRefresh { contract: Some(CONTRACT.into()), fence: Some(fence), ..incremental() };
    let first = store.upkeep_lease(lease("a")).await.expect("lease").expect("a leads");
    store.consumer_totals_refresh(refresh(fence("a", first))).await.expect("a refreshes while it leads");
    let kept = store.consumer_totals_snapshot(None).await.expect("kept");
    assert!(kept.is_some());

    clock.advance(1_001);
    let second = store.upkeep_lease(lease("b")).await.expect("lease").expect("b takes over");
    append(&*store, "s", vec![event("s-2", "pay")], &consumers).await;
    let late = store.consumer_totals_refresh(refresh(fence("a", first))).await;
    assert_eq!(late.map(|_| ()).map_err(|e| e.code()), Err("UPKEEP_LEASE_LOST"));
    assert_eq!(store.consumer_totals_snapshot(None).await.expect("kept"), kept, "the lost leader wrote nothing");
    let expired = store.consumer_totals_refresh(refresh(fence("b", second + 1))).await;
    assert_eq!(expired.map(|_| ()).map_err(|e| e.code()), Err("UPKEEP_LEASE_LOST"), "a generation not held");
    store.consumer_totals_refresh(refresh(fence("b", second))).await.expect("b refreshes");
    kept_equals_a_full_pass(&*store, 0, 0).await;
    assert_ne!(store.consumer_totals_snapshot(None).await.expect("kept"), kept);
}
