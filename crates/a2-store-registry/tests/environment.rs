//! The store a server gets when none is named, by environment.

use std::time::{SystemTime, UNIX_EPOCH};

use a2_engine::{AppendInput, Contract, Server};
use a2_store::OpenedStore;
use a2_store_registry::{dev_store_path, resolve_store, Environment, Opened};
use serde_json::json;

#[tokio::test]
async fn development_gets_the_sqlite_dev_file_tests_memory_production_must_name_its_store() {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("a2-dev-default-{}-{nanos}", std::process::id()));
    let file = dir.join("dev.sqlite");
    let production = resolve_store(Environment::Production, &file).await;
    assert_eq!(production.map(|_| ()).map_err(|e| e.code()), Err("STORE_NOT_CONFIGURED"));
    let test = resolve_store(Environment::Test, &file).await;
    assert!(matches!(test, Ok(Opened::Memory(_))), "tests get the memory store: {test:?}");
    assert!(!file.exists(), "neither production nor test touched the dev file");
    let development = resolve_store(Environment::Development, &file).await.expect("the dev default opens");
    assert!(matches!(development, Opened::Sqlite(_)), "development gets SQLite: {development:?}");
    let contract = Contract::new("shop").and_then(|c| c.event_with("tick", |_| Ok(()))).expect("contract");
    let server = Server::builder(contract, development.store()).build().expect("server");
    server.session("s").expect("session").append(vec![AppendInput::new("tick", json!({}))]).await.expect("append");
    assert!(file.exists(), "development wrote the SQLite dev file");
    assert!(dev_store_path().ends_with("dev.sqlite"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_url_of_no_known_scheme_is_refused_without_echoing_its_password() {
    let clock: std::sync::Arc<dyn a2_store::Clock> = std::sync::Arc::new(a2_store::SystemClock);
    let options = a2_store::OpenOptions::default();
    let error = a2_store_registry::open("postgress://ops:hunter2@db/app", &options, clock).await.expect_err("typo");
    assert_eq!(error.code(), "INVALID_INPUT");
    let text = error.to_string();
    assert!(text.contains("\"postgress\"") && !text.contains("hunter2"), "{text}");
}

/// A libpq conninfo (`host=… password=…`), or any text that is not a URL,
/// is refused naming what it is (its keys, for a conninfo), never itself:
/// the password in it appears in no error.
#[tokio::test]
async fn conninfo_password_never_appears_in_an_error() {
    let clock: std::sync::Arc<dyn a2_store::Clock> = std::sync::Arc::new(a2_store::SystemClock);
    let options = a2_store::OpenOptions::default();
    for text in [
        "host=db.internal user=ops password=hunter2 dbname=app",
        "password=hunter2",
        "hunter2",
        "host=db password='hunter2:x' dbname=app",
        "host=db password = hunter2==",
        "password='pa hunter2=word'",
    ] {
        let error = a2_store_registry::open(text, &options, clock.clone()).await.expect_err("not a store URL");
        assert_eq!(error.code(), "INVALID_INPUT", "{text}");
        let message = error.to_string();
        assert!(!message.contains("hunter2"), "{text}: {message}");
    }
    let error =
        a2_store_registry::open("host=db password=hunter2", &options, clock.clone()).await.expect_err("conninfo");
    assert!(error.to_string().contains("keys: host, password"), "{error}");
    // A Postgres URL the driver cannot use is refused without its password too.
    let error =
        a2_store_registry::open("postgres://ops:hunter2@db:port/app", &options, clock).await.expect_err("bad port");
    assert!(!error.to_string().contains("hunter2"), "{error}");
}
