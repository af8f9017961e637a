//! Every read and action of the operator API on memory, SQLite and Postgres,
//! and the read-only refusals.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use a2_operator::{
    Actor, Attached, ClearSession, ConsumeMode, ConsumeTarget, DeadLetterRef, EventQuery, Mode, Operator,
    OperatorError, Redrive, SessionQuery, SessionRef, StoreKind, TotalsQuery,
};
use a2_store::*;
use serde_json::json;

static NEXT: AtomicU64 = AtomicU64::new(0);

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("a2-operator-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir.join(format!("{name}-{}", NEXT.fetch_add(1, Ordering::SeqCst)))
}

async fn store_of(kind: StoreKind) -> Arc<dyn Store> {
    let (url, schema) = match kind {
        StoreKind::Memory => ("memory:".to_owned(), None),
        StoreKind::Sqlite => (format!("sqlite:{}", scratch("store.sqlite").display()), None),
        StoreKind::Postgres => (a2_test_support::postgres_url(), Some(a2_test_support::fresh_schema("op"))),
    };
    let options = a2_store::OpenOptions { schema, ..Default::default() };
    match a2_store_registry::open(&url, &options, Arc::new(SystemClock)).await {
        Ok(opened) => a2_store::OpenedStore::store(&opened),
        Err(error) => panic!("opening {url}: {error}"),
    }
}

fn event(id: &str, targets: Vec<Target>) -> NewEvent {
    NewEvent {
        id: id.into(),
        event_type: "order.placed".into(),
        payload: json!({ "id": id }),
        cause: None,
        scheduled_by: None,
        targets,
    }
}

/// Sessions o-0..o-4 with 4 events each; `mailer` (string lane) everywhere,
/// `charger` (concurrent) dead at index 1 of o-1 and o-3.
async fn seed(store: &dyn Store) {
    let consumers = vec![StoreConsumer::log("mailer", "main"), StoreConsumer::targeted("charger")];
    for s in 0..5 {
        let key = session_key("shop", &format!("o-{s}"));
        store.cursor_wake(CursorWake { session: key.clone(), consumer: consumers[0].clone() }).await.ok();
        let charged = vec![Target { consumer: "charger".into(), lane: None }];
        let events = (1..=4).map(|n| event(&format!("e{n}"), if n == 1 { charged.clone() } else { vec![] })).collect();
        store
            .event_append(EventAppend {
                session: key.clone(),
                events,
                consumers: consumers.clone(),
                origin_index: None,
            })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        if s % 2 == 1 {
            let claim = HeadClaim {
                session: key.clone(),
                holder: "seed".into(),
                ttl_ms: 30_000,
                consumers: vec![consumers[1].clone()],
                through: None,
                exclude: vec![],
                max_failures: 1,
                limit: 10,
                range: 1,
            };
            for head in store.head_claim(claim).await.unwrap_or_else(|e| panic!("{e}")).heads {
                let fail = HeadFail {
                    session: key.clone(),
                    head: head.head,
                    attempt: head.attempt,
                    error: "card declined".into(),
                    aborted: false,
                    max_failures: 1,
                    backoff: Backoff::default(),
                };
                store.head_fail(fail).await.unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
    store
        .snapshot_put(SnapshotPut {
            session: session_key("shop", "o-0"),
            reducer: "totals".into(),
            index: 2,
            state: json!({ "n": 2 }),
            pin: None,
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

fn shop(session: &str) -> SessionRef {
    SessionRef::new("shop", session)
}

fn redrive(session: &str, consumer: &str, index: u64, action: RedriveAction) -> Redrive {
    let target = DeadLetterRef { contract: "shop".into(), session: session.into(), consumer: consumer.into(), index };
    Redrive { target, action }
}

fn consume(session: &str, consumer: &str, through: Option<u64>) -> ConsumeTarget {
    ConsumeTarget { contract: "shop".into(), session: session.into(), consumer: consumer.into(), through }
}

/// Stamp scenarios `async fn name(kind: StoreKind)` as one test per store:
/// `name::memory`, `name::sqlite`, `name::postgres`.
macro_rules! on_every_store {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            use super::StoreKind;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn memory() {
                super::$scenario(StoreKind::Memory).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$scenario(StoreKind::Sqlite).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$scenario(StoreKind::Postgres).await;
            }
        }
    )*};
}

on_every_store!(
    demo_seed_is_audited,
    demo_seed_refuses_a_store_it_did_not_create,
    serve_app_refuses_a_store_the_demo_does_not_own,
    failed_consume_is_audited,
    import_checks_events_against_the_contract,
    read_only_overview_reads_kept_totals
);

fn operator(store: Arc<dyn Store>, kind: StoreKind, mode: Mode) -> Operator {
    Operator::new(Attached::new(store, kind, mode), Actor { user: "tester".into(), host: "here".into() })
}

async fn reads_and_actions(kind: StoreKind) {
    let store = store_of(kind).await;
    seed(&*store).await;
    let op = operator(store.clone(), kind, Mode::ReadWrite);
    assert_eq!(op.contract_list().await.unwrap_or_default(), vec!["shop".to_owned()]);
    let all = op
        .session_list(SessionQuery { contract: "shop".into(), limit: 2, ..Default::default() })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(all.items.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(), vec!["o-0", "o-1"]);
    assert_eq!(all.next.as_deref(), Some("o-1"));
    let dead = op
        .session_list(SessionQuery { contract: "shop".into(), has_dead_letters: true, limit: 10, ..Default::default() })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(dead.items.iter().map(|s| s.session_id.as_str()).collect::<Vec<_>>(), vec!["o-1", "o-3"]);
    assert!(dead.next.is_none());
    let summary = op.session_get(&shop("o-1")).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((summary.head, summary.dead_letters), (4, 1));
    let events = op
        .event_list(EventQuery {
            contract: "shop".into(),
            session: "o-1".into(),
            after: Some(1),
            before: None,
            newest_first: false,
            limit: 2,
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(events.iter().map(|e| e.index).collect::<Vec<_>>(), vec![2, 3]);
    assert_eq!(events[0].session, "o-1");
    let heads = op.head_list(&shop("o-1")).await.unwrap_or_else(|e| panic!("{e}"));
    let charger = heads.iter().find(|h| h.consumer == "charger").unwrap_or_else(|| panic!("charger head"));
    assert!(charger.dead && charger.reason.starts_with("dead-lettered at 1"), "{}", charger.reason);
    let mailer = heads.iter().find(|h| h.consumer == "mailer").unwrap_or_else(|| panic!("mailer head"));
    assert_eq!((mailer.next_index, mailer.lag), (1, 4));
    assert!(mailer.reason.starts_with("runnable: 4 behind"), "{}", mailer.reason);
    assert!(mailer.oldest_pending_age_ms.is_some_and(|age| age >= 0));
    let totals = op.consumer_totals(Some("shop")).await.unwrap_or_else(|e| panic!("{e}"));
    let charger_total = totals.iter().find(|t| t.consumer == "charger").unwrap_or_else(|| panic!("charger total"));
    assert_eq!(charger_total.dead_letters, 2);
    let letters =
        op.dead_letter_list(DeadLetterList { limit: 1, ..Default::default() }).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(letters.items.len(), 1);
    let rest = op
        .dead_letter_list(DeadLetterList { after: letters.next.clone(), limit: 10, ..Default::default() })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rest.items.iter().map(|d| d.session_id.as_str()).collect::<Vec<_>>(), vec!["o-3"]);
    assert_eq!(op.snapshot_list(&shop("o-0")).await.unwrap_or_default().len(), 1);
    assert_eq!(op.session_get(&shop("nope")).await.map_err(|e| e.code()), Err("NOT_FOUND"));

    // Actions, each audited.
    assert!(
        op.dead_letter_redrive(redrive("o-1", "charger", 1, RedriveAction::Skip))
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .redriven
    );
    assert!(
        !op.dead_letter_redrive(redrive("o-1", "charger", 1, RedriveAction::Skip))
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .redriven
    );
    assert!(
        op.dead_letter_redrive(redrive("o-3", "charger", 1, RedriveAction::Retry))
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .redriven
    );
    assert_eq!(
        op.dead_letter_list(DeadLetterList { limit: 10, ..Default::default() }).await.map(|p| p.items.len()).ok(),
        Some(0)
    );
    assert_eq!(op.consume_preview(&consume("o-2", "mailer", Some(3))).await.ok(), Some(3));
    assert_eq!(
        op.session_consume(&consume("o-2", "mailer", Some(3)), ConsumeMode::Ack, None).await.map(|c| c.index).ok(),
        Some(3)
    );
    let out = scratch("export.jsonl");
    assert_eq!(
        op.session_consume(&consume("o-2", "mailer", None), ConsumeMode::Export, Some(&out))
            .await
            .map(|c| c.index)
            .ok(),
        Some(4)
    );
    let exported = std::fs::read_to_string(&out).unwrap_or_default();
    assert_eq!(exported.lines().count(), 1, "the export holds event 4 only");
    assert!(exported.contains("\"index\":4"), "{exported}");
    assert_eq!(
        op.session_consume(&consume("o-2", "charger", None), ConsumeMode::Ack, None).await.map_err(|e| e.code()),
        Err("INVALID_INPUT")
    );
    let unwritable = std::path::Path::new("/proc/no/such/dir/out.jsonl");
    let refused = op.session_consume(&consume("o-0", "mailer", None), ConsumeMode::Export, Some(unwritable)).await;
    assert_eq!(refused.map_err(|e| e.code()), Err("INVALID_INPUT"));
    assert_eq!(
        op.head_list(&shop("o-0"))
            .await
            .ok()
            .and_then(|h| h.into_iter().find(|h| h.consumer == "mailer"))
            .map(|h| h.next_index),
        Some(1),
        "nothing moved"
    );
    let missed = op
        .session_clear(ClearSession { contract: "shop".into(), session: "o-4".into(), if_last_index: Some(3) })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!missed.cleared);
    let cleared = op
        .session_clear(ClearSession { contract: "shop".into(), session: "o-4".into(), if_last_index: Some(4) })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((cleared.cleared, cleared.index), (true, 4));
    let audit =
        op.audit_list(AuditList { before: None, limit: 50, action: None }).await.unwrap_or_else(|e| panic!("{e}"));
    let actions: Vec<&str> = audit.iter().map(|r| r.entry.action.as_str()).collect();
    assert_eq!(
        actions,
        vec![
            "clear",
            "clear",
            "consume.export",
            "consume.export.start",
            "consume.ack",
            "redrive.retry",
            "redrive.skip",
            "redrive.skip"
        ]
    );
    assert!(audit.iter().all(|r| r.entry.user == "tester" && r.entry.contract.as_deref() == Some("shop")));
    assert_eq!(audit[0].entry.outcome, json!({ "cleared": true, "index": 4 }));

    // Read-only: every action refused before the store is touched.
    let ro = operator(store.clone(), kind, Mode::ReadOnly);
    let before = op.audit_list(AuditList { before: None, limit: 50, action: None }).await.map(|a| a.len()).ok();
    let refusals: Vec<Result<(), OperatorError>> = vec![
        ro.dead_letter_redrive(redrive("o-1", "charger", 1, RedriveAction::Retry)).await.map(|_| ()),
        ro.session_clear(ClearSession { contract: "shop".into(), session: "o-0".into(), if_last_index: None })
            .await
            .map(|_| ()),
        ro.session_consume(&consume("o-0", "mailer", None), ConsumeMode::Ack, None).await.map(|_| ()),
    ];
    for refusal in refusals {
        let error = refusal.expect_err("read-only refuses");
        assert_eq!((error.code(), error.exit_code()), ("READ_ONLY", 3));
    }
    assert_eq!(
        op.audit_list(AuditList { before: None, limit: 50, action: None }).await.map(|a| a.len()).ok(),
        before,
        "nothing was written"
    );
    assert_eq!(ro.session_get(&shop("o-0")).await.map(|s| s.clear_index).ok(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_reads_and_actions() {
    reads_and_actions(StoreKind::Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_reads_and_actions() {
    reads_and_actions(StoreKind::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_reads_and_actions() {
    reads_and_actions(StoreKind::Postgres).await;
}

/// Seeding the demo writes sessions and runs consumers: it is on record
/// like every other write, with what it wrote.
async fn demo_seed_is_audited(kind: StoreKind) {
    let store = store_of(kind).await;
    let op = operator(store, kind, Mode::ReadWrite);
    let options = a2_operator::demo::DemoOptions { sessions: 2, fail_rate: 0.0, bulk: true, ..Default::default() };
    let events = op.demo_seed(options).await.unwrap_or_else(|e| panic!("{e}"));
    let audit =
        op.audit_list(AuditList { before: None, limit: 10, action: None }).await.unwrap_or_else(|e| panic!("{e}"));
    let seeded = audit.iter().map(|r| &r.entry).find(|e| e.action == "demo.seed");
    let seeded = seeded.unwrap_or_else(|| panic!("no demo.seed entry: {audit:?}"));
    assert_eq!(seeded.contract.as_deref(), Some("shop"));
    assert_eq!(seeded.parameters["sessions"], json!(2));
    assert_eq!(seeded.outcome, json!({ "events": events }));
}

/// The demo's consumers run on every `shop` session: it seeds an empty store
/// or one it seeded before, never a store whose sessions are someone's own.
async fn demo_seed_refuses_a_store_it_did_not_create(kind: StoreKind) {
    let store = store_of(kind).await;
    seed(&*store).await;
    let op = operator(store.clone(), kind, Mode::ReadWrite);
    let before = store.session_count("shop").await.unwrap_or_else(|e| panic!("{e}"));
    let options = a2_operator::demo::DemoOptions { sessions: 2, fail_rate: 0.0, bulk: true, ..Default::default() };
    let error = op.demo_seed(options).await.expect_err("a store the demo did not create");
    assert_eq!(error.code(), "NOT_A_DEMO_STORE", "{error}");
    assert!(error.to_string().contains("shop"), "names what the store holds: {error}");
    assert_eq!(store.session_count("shop").await.ok(), Some(before), "nothing written");
    let long = op.demo_seed_long_session("long-00000", 3).await.expect_err("nor one long session");
    assert_eq!(long.code(), "NOT_A_DEMO_STORE");
    let fresh = operator(store_of(kind).await, kind, Mode::ReadWrite);
    fresh.demo_seed(options).await.unwrap_or_else(|e| panic!("an empty store is seeded: {e}"));
    fresh.demo_seed(options).await.unwrap_or_else(|e| panic!("and its own store again: {e}"));
}

/// `a2 serve-app` runs the demo's handlers on every `shop` session, so its
/// server is built only on a store the demo owns: empty, or seeded by it.
async fn serve_app_refuses_a_store_the_demo_does_not_own(kind: StoreKind) {
    let store = store_of(kind).await;
    seed(&*store).await;
    let op = operator(store.clone(), kind, Mode::ReadWrite);
    let error = op.demo_server().await.map(|_| ()).expect_err("a store the demo did not create");
    assert_eq!(error.code(), "NOT_A_DEMO_STORE", "{error}");
    assert!(error.to_string().contains("serve the demo app"), "says what was refused: {error}");
    let fresh = operator(store_of(kind).await, kind, Mode::ReadWrite);
    let server = fresh.demo_server().await.unwrap_or_else(|e| panic!("an empty store is the demo's: {e}"));
    let order = a2_engine::AppendInput::new("order.placed", json!({ "customer": "c-1", "amount": 10 }));
    let pushed = server.session("pushed").unwrap_or_else(|e| panic!("{e}")).append(vec![order]).await;
    pushed.unwrap_or_else(|e| panic!("a push: {e}"));
    server.stop().await;
    let again = fresh.demo_server().await.unwrap_or_else(|e| panic!("the store it served is still the demo's: {e}"));
    again.stop().await;
    let options = a2_operator::demo::DemoOptions { sessions: 1, fail_rate: 0.0, bulk: true, ..Default::default() };
    fresh.demo_seed(options).await.unwrap_or_else(|e| panic!("{e}"));
    let server = fresh.demo_server().await.unwrap_or_else(|e| panic!("and so is one it seeded: {e}"));
    server.stop().await;
}

/// A consume in run mode that fails halfway (here its consumer is paused
/// after the second event) has moved the cursor: the audit log holds its
/// start and its end, with the error and how far it got.
async fn failed_consume_is_audited(kind: StoreKind) {
    use a2_engine::{AppendInput, BoxError, Consumer, Contract, Server};

    let store = store_of(kind).await;
    let pauser = store.clone();
    let mailer = Consumer::builder("mailer")
        .lane("main")
        .types(["order.placed"])
        .run(move |ctx| {
            let store = pauser.clone();
            async move {
                if ctx.event.index == 2 {
                    let pause = ConsumerPause {
                        contract: "shop".into(),
                        consumer: "mailer".into(),
                        actor: "on call".into(),
                        reason: "halfway".into(),
                        audit: None,
                    };
                    store.consumer_pause(pause).await?;
                }
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let contract =
        Contract::new("shop").and_then(|c| c.event_with("order.placed", |_| Ok(()))).unwrap_or_else(|e| panic!("{e}"));
    let server = Server::builder(contract, store.clone())
        .consumer(mailer)
        .run_in_background(false)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let placed = (1..=4).map(|n| AppendInput::new("order.placed", json!({ "n": n }))).collect();
    let session = server.session("o-9").unwrap_or_else(|e| panic!("{e}"));
    session.append(placed).await.unwrap_or_else(|e| panic!("{e}"));
    let mut op = operator(store.clone(), kind, Mode::ReadWrite);
    op.host(server);
    let failed = op.session_consume(&consume("o-9", "mailer", None), ConsumeMode::Run, None).await;
    assert_eq!(failed.map_err(|e| e.code()), Err("CONSUMER_PAUSED"));
    let audit =
        op.audit_list(AuditList { before: None, limit: 10, action: None }).await.unwrap_or_else(|e| panic!("{e}"));
    let actions: Vec<&str> = audit.iter().map(|r| r.entry.action.as_str()).collect();
    assert_eq!(actions, vec!["consume.run", "consume.run.start"], "its start and its end");
    assert_eq!(audit[1].entry.parameters, json!({ "consumer": "mailer", "through": null, "from": 1 }));
    let outcome = &audit[0].entry.outcome;
    assert_eq!((&outcome["error"]["code"], &outcome["reached"]), (&json!("CONSUMER_PAUSED"), &json!(2)), "{outcome}");
}

/// An import into a store whose contract this process hosts is checked
/// against that contract, event by event, before anything is written; the
/// copy's pending work runs here unless the import parks it as dead letters.
async fn import_checks_events_against_the_contract(kind: StoreKind) {
    use a2_engine::{AppendInput, BoxError, Consumer, Contract, Server};
    use a2_operator::{ImportPending, PARKED_ON_IMPORT};

    let contract = || {
        Contract::new("shop")
            .and_then(|c| {
                c.event_with("order.placed", |p| match p.get("n").and_then(|n| n.as_u64()) {
                    Some(_) => Ok(()),
                    None => Err("n must be a number".into()),
                })
            })
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let mailer = || {
        Consumer::builder("mailer")
            .lane("main")
            .types(["order.placed"])
            .run(|_| async { Ok::<(), BoxError>(()) })
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let server = |store: Arc<dyn Store>| {
        Server::builder(contract(), store)
            .consumer(mailer())
            .run_in_background(false)
            .build()
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let source = store_of(StoreKind::Memory).await;
    let placed = (1..=2).map(|n| AppendInput::new("order.placed", json!({ "n": n }))).collect();
    let session = server(source.clone()).session("o-1").unwrap_or_else(|e| panic!("{e}"));
    session.append(placed).await.unwrap_or_else(|e| panic!("{e}"));
    let copy = operator(source, StoreKind::Memory, Mode::ReadWrite)
        .session_export(&shop("o-1"), a2_operator::WHOLE_SESSION_MAX_EVENTS)
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let target = store_of(kind).await;
    let mut op = operator(target.clone(), kind, Mode::ReadWrite);
    op.host(server(target.clone()));
    let mut bad_payload = copy.clone();
    bad_payload.events[1].payload = json!({ "n": "two" });
    let refused = op.session_import(bad_payload, None, ImportPending::Run).await;
    let refused = refused.map(|_| ()).map_err(|e| (e.code(), e.to_string()));
    assert!(matches!(&refused, Err(("INVALID_PAYLOAD", m)) if m.contains("event 2")), "{refused:?}");
    let mut bad_type = copy.clone();
    bad_type.events[0].event_type = "order.shredded".into();
    let refused = op.session_import(bad_type, None, ImportPending::Run).await;
    assert_eq!(refused.map(|_| ()).map_err(|e| e.code()), Err("UNKNOWN_EVENT_TYPE"));
    assert_eq!(
        op.session_get(&shop("o-1")).await.map(|_| ()).map_err(|e| e.code()),
        Err("NOT_FOUND"),
        "nothing written"
    );

    let (_, imported) =
        op.session_import(copy.clone(), Some("o-parked"), ImportPending::Park).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((imported.events, imported.pending, imported.parked), (2, 1, true));
    let letters = op.dead_letter_list(DeadLetterList { limit: 10, ..Default::default() }).await;
    let letters: Vec<_> = letters.map(|p| p.items).unwrap_or_default();
    assert_eq!(
        letters
            .iter()
            .map(|l| (l.session_id.as_str(), l.consumer.as_str(), l.index, l.last_error.as_deref()))
            .collect::<Vec<_>>(),
        vec![("o-parked", "mailer", 1, Some(PARKED_ON_IMPORT))],
        "the pending cursor waits as a dead letter"
    );
    let (_, imported) = op.session_import(copy, None, ImportPending::Run).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((imported.pending, imported.parked), (1, false), "left pending, and said so");
}

/// The overview lists every consumer the registered processes declare,
/// an idle one (no heads) with a row of zeros, and says who serves each;
/// `process_list` shows the processes, live first.
#[tokio::test]
async fn overview_lists_idle_consumers_and_who_serves_them() {
    let clock = Arc::new(ManualClock::new(1_000_000));
    let store: Arc<dyn Store> = Arc::new(a2_store::memory::MemoryStore::new(clock.clone()));
    seed(&*store).await;
    let declared =
        |name: &str| DeclaredConsumer { name: name.into(), kind: HeadKind::Concurrent, lane: None, types: vec![] };
    let info = |consumers: Vec<DeclaredConsumer>| ServerInfo {
        contract: "shop".into(),
        host: "worker-1".into(),
        pid: 7,
        version: "v1".into(),
        consumers,
        max_running: 4,
        beat_ms: 10_000,
        started_at: 1,
        holder_prefix: "w1/".into(),
        totals_refresh_ms: 2_000,
    };
    let beat = |id: &str, consumers| ServerBeat { id: id.into(), info: info(consumers) };
    store.server_beat(beat("old", vec![declared("charger")])).await.unwrap_or_else(|e| panic!("{e}"));
    clock.advance(60_000);
    store.server_beat(beat("new", vec![declared("mailer"), declared("idle")])).await.unwrap_or_else(|e| panic!("{e}"));
    // The old process led before it died: its lease lapsed, and the new one leads now.
    let lease = |owner: &str| UpkeepLease { scope: "shop".into(), owner: owner.into(), ttl_ms: 30_000 };
    store.upkeep_lease(lease("new")).await.unwrap_or_else(|e| panic!("{e}"));
    for mode in [Mode::ReadWrite, Mode::ReadOnly] {
        let op = operator(store.clone(), StoreKind::Memory, mode);
        let overview = op
            .consumer_overview(TotalsQuery { contract: None, max_age_ms: 0, live: false, recompute: false })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let idle = overview.totals.iter().find(|t| t.consumer == "idle").map(|t| (t.sessions, t.total_lag));
        assert_eq!(idle, Some((0, 0)), "{mode:?}: the idle consumer has a row");
        let by: Vec<(&str, &str, i64)> =
            overview.refreshed_by.iter().map(|r| (r.process.as_str(), r.host.as_str(), r.every_ms)).collect();
        assert_eq!(by, vec![("new", "worker-1", 2_000)], "{mode:?}: who keeps the totals, and how often");
        let served: Vec<(&str, u32)> =
            overview.catalog.iter().map(|c| (c.consumer.name.as_str(), c.served_by)).collect();
        assert_eq!(
            served,
            vec![("charger", 0), ("idle", 1), ("mailer", 1)],
            "{mode:?}: the old process missed its beats"
        );
        let serving = |consumer: &str| overview.totals.iter().find(|t| t.consumer == consumer).and_then(|t| t.served);
        assert_eq!(serving("mailer"), Some(Serving::Served { by: 1 }));
        assert_eq!(
            serving("charger"),
            Some(Serving::Nobody),
            "{mode:?}: dead letters wait and no live process runs it"
        );
        assert_eq!(serving("idle"), Some(Serving::Served { by: 1 }));
        let processes = op.process_list(None).await.unwrap_or_else(|e| panic!("{e}"));
        let listed: Vec<(&str, bool)> = processes.iter().map(|p| (p.server.id.as_str(), p.live)).collect();
        assert_eq!(listed, vec![("new", true), ("old", false)], "{mode:?}: live first");
        assert_eq!(op.process_heads("new").await.map(|h| h.len()).ok(), Some(0), "{mode:?}: it leases nothing");
        assert_eq!(op.process_heads("a/b").await.map(|_| ()).map_err(|e| e.code()), Err("INVALID_INPUT"));
    }
}

/// A read-only connection reads the kept totals whatever their age and
/// never runs an aggregate over the store (a counting wrapper proves it);
/// with none kept it says so; `live` computes them, and says so.
async fn read_only_overview_reads_kept_totals(kind: StoreKind) {
    use a2_conformance::faulty::Faulty;
    use std::sync::atomic::Ordering::SeqCst;

    let store = store_of(kind).await;
    seed(&*store).await;
    let counted = Faulty::new(store.clone());
    let ro = operator(counted.clone(), kind, Mode::ReadOnly);
    let query = |live| TotalsQuery { contract: None, max_age_ms: 5_000, live, recompute: false };
    let none = ro.consumer_overview(query(false)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((none.origin, none.totals.len()), (TotalsOrigin::Missing, 0), "none kept, none computed");
    assert_eq!(counted.totals_computed.load(SeqCst), 0, "no aggregate ran");
    // The throughput chart reads the kept minutes (none yet), never every run of the hour.
    ro.attempt_rates(None, 60).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(counted.rates_counted.load(SeqCst), 0, "no count of runs");

    let rw = operator(store.clone(), kind, Mode::ReadWrite);
    let refreshed = rw.consumer_overview(query(false)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(refreshed.origin, TotalsOrigin::Live, "a read-write connection refreshes what is missing");
    // Older than asked: read-only still reads them, and shows their age.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let strict = TotalsQuery { max_age_ms: 1, ..query(false) };
    let kept = ro.consumer_overview(strict).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((kept.origin, kept.computed_at), (TotalsOrigin::Kept, refreshed.computed_at));
    assert_eq!(kept.totals, refreshed.totals);
    assert_eq!(counted.totals_computed.load(SeqCst), 0, "still no aggregate ran");

    // The full pass is a read-write repair.
    let recompute = TotalsQuery { recompute: true, ..query(false) };
    assert_eq!(ro.consumer_overview(recompute.clone()).await.map(|_| ()).map_err(|e| e.code()), Err("READ_ONLY"));
    assert_eq!(counted.totals_computed.load(SeqCst), 0, "refused before any aggregate");
    let recomputed = rw.consumer_overview(recompute).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((recomputed.origin, &recomputed.totals), (TotalsOrigin::Live, &refreshed.totals));

    let live = ro.consumer_overview(query(true)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((live.origin, live.totals), (TotalsOrigin::Live, refreshed.totals), "asked in so many words");
    assert_eq!(counted.totals_computed.load(SeqCst), 1);
}

/// A redrive answers once it is committed: the hosted consumer that runs the
/// retried head afterwards (here one that never finishes) does not hold the answer.
#[tokio::test]
async fn redrive_returns_when_committed_not_when_the_consumer_ran() {
    use a2_engine::{BoxError, Consumer, Contract, Server};

    let clock = Arc::new(ManualClock::new(1_000_000));
    let store: Arc<dyn Store> = Arc::new(a2_store::memory::MemoryStore::new(clock.clone()));
    let slow = [StoreConsumer::targeted("slow")];
    let target = vec![Target { consumer: "slow".into(), lane: None }];
    let append = EventAppend {
        session: session_key("shop", "o-1"),
        events: vec![event("e1", target)],
        consumers: slow.to_vec(),
        origin_index: None,
    };
    store.event_append(append).await.unwrap_or_else(|e| panic!("{e}"));
    for _ in 0..10 {
        clock.advance(86_400_000);
        let claim = HeadClaim {
            session: session_key("shop", "o-1"),
            holder: "h".into(),
            ttl_ms: 30_000,
            consumers: slow.to_vec(),
            through: None,
            exclude: Vec::new(),
            max_failures: 10,
            limit: 1,
            range: 1,
        };
        let claimed = store.head_claim(claim).await.unwrap_or_else(|e| panic!("{e}"));
        let head = claimed.heads.first().unwrap_or_else(|| panic!("a head to fail"));
        let fail = HeadFail {
            session: session_key("shop", "o-1"),
            head: head.head.clone(),
            attempt: head.attempt,
            error: "boom".into(),
            aborted: false,
            max_failures: 10,
            backoff: Backoff::default(),
        };
        store.head_fail(fail).await.unwrap_or_else(|e| panic!("{e}"));
    }

    let started = Arc::new(tokio::sync::Notify::new());
    let signal = started.clone();
    let hanging = Consumer::builder("slow")
        .types(["order.placed"])
        .run(move |_| {
            let started = signal.clone();
            async move {
                started.notify_one();
                std::future::pending::<()>().await;
                Ok::<(), BoxError>(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let contract =
        Contract::new("shop").and_then(|c| c.event_with("order.placed", |_| Ok(()))).unwrap_or_else(|e| panic!("{e}"));
    let server = Server::builder(contract, store.clone())
        .consumer(hanging)
        .run_in_background(false)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut op = Operator::new(Attached::new(store, StoreKind::Memory, Mode::ReadWrite), Actor::current());
    op.host(server);
    let answer = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        op.dead_letter_redrive(redrive("o-1", "slow", 1, RedriveAction::Retry)),
    )
    .await
    .unwrap_or_else(|_| panic!("the redrive waited for the consumer's run"));
    assert!(answer.unwrap_or_else(|e| panic!("{e}")).redriven);
    tokio::time::timeout(std::time::Duration::from_secs(5), started.notified())
        .await
        .unwrap_or_else(|_| panic!("the hosted consumer did not run the retried head"));
}

/// The Timers view's API: the demo's reminders are listed soonest first and
/// paged; "deliver now" delivers one through the hosted demo server (its
/// event lands in the session) and leaves the others; cancel deletes one;
/// both are audited, and a read-only connection is refused both.
async fn timers_list_deliver_and_cancel(kind: StoreKind) {
    use a2_operator::{TimerQuery, TimerRef};

    let store = store_of(kind).await;
    let mut rw = operator(store.clone(), kind, Mode::ReadWrite);
    let options = a2_operator::demo::DemoOptions { sessions: 3, fail_rate: 0.0, ..Default::default() };
    rw.demo_seed(options).await.unwrap_or_else(|e| panic!("{e}"));
    rw.demo_host().unwrap_or_else(|e| panic!("{e}"));

    let all = rw.timer_list(&TimerQuery::default()).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(all.items.len() >= 3, "a reminder per order: {:?}", all.items);
    assert!(all.items.windows(2).all(|w| (w[0].due_at, &w[0].id) <= (w[1].due_at, &w[1].id)), "soonest first");
    let first = all.items[0].clone();
    assert_eq!((first.kind.as_str(), first.name.as_str(), first.overdue), ("append", "payment-reminder", false));
    assert!(first.due_in_ms > 3_600_000, "due in a day: {first:?}");
    assert_eq!(first.events[0].event_type, "payment.reminder");
    assert_eq!(first.trigger.as_ref().and_then(|t| t.consumer.as_deref()), Some("reminders"));
    let paged =
        rw.timer_list(&TimerQuery { limit: 1, ..TimerQuery::default() }).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(paged.items.iter().map(|t| &t.id).collect::<Vec<_>>(), [&first.id]);
    let rest = TimerQuery { after: paged.next, ..TimerQuery::default() };
    assert_eq!(rw.timer_list(&rest).await.map(|p| p.items.len()).ok(), Some(all.items.len() - 1));
    let of_session =
        TimerQuery { contract: Some("shop".into()), session: Some(first.session.clone()), ..TimerQuery::default() };
    let of_session = rw.timer_list(&of_session).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(of_session.items.iter().all(|t| t.session == first.session) && !of_session.items.is_empty());
    let lone_session = TimerQuery { session: Some("order-00001".into()), ..TimerQuery::default() };
    assert!(matches!(rw.timer_list(&lone_session).await, Err(OperatorError::Invalid { .. })));

    // The seed clears order-00000: its reminders would be delivered as no-ops.
    let first = all.items.iter().find(|t| t.session != "order-00000").cloned().unwrap_or_else(|| panic!("{all:?}"));
    let ro = operator(store.clone(), kind, Mode::ReadOnly);
    let target = TimerRef { id: first.id.clone() };
    assert!(matches!(ro.timer_deliver(&target).await, Err(OperatorError::ReadOnly { .. })));
    assert!(matches!(ro.timer_cancel(&target).await, Err(OperatorError::ReadOnly { .. })));

    let events_of = |session: &str| EventQuery {
        contract: "shop".into(),
        session: session.into(),
        after: None,
        before: None,
        newest_first: false,
        limit: 100,
    };
    let before = rw.event_list(events_of(&first.session)).await.unwrap_or_else(|e| panic!("{e}")).len();
    let delivered = rw.timer_deliver(&target).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(delivered.delivered, "the hosted demo server delivered it");
    let after = rw.event_list(events_of(&first.session)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(after.len(), before + 1);
    assert_eq!(after.last().map(|e| e.event_type.as_str()), Some("payment.reminder"));
    let left = rw.timer_list(&TimerQuery::default()).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(left.items.len(), all.items.len() - 1, "only that timer was delivered");
    assert!(matches!(rw.timer_deliver(&target).await, Err(OperatorError::NotFound { .. })));

    let second = TimerRef { id: left.items[0].id.clone() };
    let cancelled = rw.timer_cancel(&second).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cancelled.id, second.id);
    assert!(matches!(rw.timer_cancel(&second).await, Err(OperatorError::NotFound { .. })));
    let audit =
        store.audit_list(AuditList { before: None, limit: 10, action: None }).await.unwrap_or_else(|e| panic!("{e}"));
    let actions: Vec<&str> = audit.iter().map(|r| r.entry.action.as_str()).collect();
    assert_eq!(&actions[..2], ["timer.cancel", "timer.deliver"], "{actions:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_timers_list_deliver_and_cancel() {
    timers_list_deliver_and_cancel(StoreKind::Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_timers_list_deliver_and_cancel() {
    timers_list_deliver_and_cancel(StoreKind::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_timers_list_deliver_and_cancel() {
    timers_list_deliver_and_cancel(StoreKind::Postgres).await;
}

/// The Presence tab's API: the demo's agents on their orders, live values
/// with their stamps and time left, counted per contract; a read-only
/// connection reads them too.
async fn presence_lists_who_is_in_a_session(kind: StoreKind) {
    let store = store_of(kind).await;
    let rw = operator(store.clone(), kind, Mode::ReadWrite);
    let options = a2_operator::demo::DemoOptions { sessions: 8, fail_rate: 0.0, ..Default::default() };
    rw.demo_seed(options).await.unwrap_or_else(|e| panic!("{e}"));
    let ro = operator(store, kind, Mode::ReadOnly);
    for op in [&rw, &ro] {
        let cells = op.presence_list(&shop("order-00003")).await.unwrap_or_else(|e| panic!("{e}"));
        let shown: Vec<_> =
            cells.iter().map(|c| (c.participant.as_str(), c.field.as_str(), c.value.as_str())).collect();
        assert_eq!(shown, [("agent-0", "typing", "true"), ("agent-0", "viewing", "\"payment\"")]);
        let ttl = a2_operator::demo::PRESENCE_TTL.as_millis() as i64;
        assert!(cells.iter().all(|c| c.expires_in_ms > 0 && c.expires_in_ms <= ttl), "{cells:?}");
        assert!(op.presence_list(&shop("order-00002")).await.unwrap_or_else(|e| panic!("{e}")).is_empty());
        let counts = op.presence_sessions().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(counts, [a2_operator::ContractPresence { contract: "shop".into(), sessions: 2 }]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_presence_lists_who_is_in_a_session() {
    presence_lists_who_is_in_a_session(StoreKind::Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_presence_lists_who_is_in_a_session() {
    presence_lists_who_is_in_a_session(StoreKind::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_presence_lists_who_is_in_a_session() {
    presence_lists_who_is_in_a_session(StoreKind::Postgres).await;
}
