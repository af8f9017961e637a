//! What a connection promises is checked, not trusted: a read-only attach
//! reads `transaction_read_only` back from the server, and a pooled URL's
//! `listen_url` may not ask for weaker TLS than the URL it sits in.

use std::sync::Arc;
use std::time::Duration;

use a2_store::SystemClock;
use a2_store_postgres::{Access, PgOptions, Postgres};

async fn admin() -> sqlx::PgPool {
    let url = a2_test_support::postgres_url();
    sqlx::PgPool::connect(&url).await.unwrap_or_else(|e| panic!("admin connection to {url}: {e}"))
}

fn options(access: Access) -> PgOptions {
    PgOptions { access, max_connections: 2, connect_timeout: Duration::from_secs(5), ..PgOptions::default() }
}

/// A proxy in front of Postgres that drops the startup settings (as a
/// session pooler told to ignore `options`, or a careless proxy, does): the
/// read-only attach through it would be a read-write session. It is refused
/// (`READ_ONLY`, saying what the server reported) before anything is read;
/// the same attach made directly is read-only and opens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_attach_refuses_a_session_that_is_not_read_only() {
    let database = a2_test_support::fresh_schema("rop");
    let admin = admin().await;
    sqlx::query(&format!("CREATE DATABASE {database}")).execute(&admin).await.unwrap_or_else(|e| panic!("{e}"));
    let base = a2_test_support::postgres_url();
    let direct = base.rsplit_once('/').map(|(server, _)| format!("{server}/{database}")).unwrap_or_default();
    let made = Postgres::connect(&direct, options(Access::ReadWrite), Arc::new(SystemClock)).await;
    made.unwrap_or_else(|e| panic!("{e}")).close().await;

    let proxy = a2_test_support::settings_dropping_proxy_in_front_of(&direct).unwrap_or_else(|e| panic!("{e}"));
    let refused = Postgres::connect(&proxy, options(Access::ReadOnly), Arc::new(SystemClock)).await;
    let error = refused.err().unwrap_or_else(|| panic!("a read-write session was attached as read-only"));
    assert_eq!(error.code(), "READ_ONLY", "{error}");
    assert!(error.to_string().contains("transaction_read_only = off"), "{error}");

    let direct_read_only = Postgres::connect(&direct, options(Access::ReadOnly), Arc::new(SystemClock)).await;
    direct_read_only.unwrap_or_else(|e| panic!("a direct read-only attach: {e}")).close().await;
    let drop = format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)");
    sqlx::query(&drop).execute(&admin).await.unwrap_or_else(|e| panic!("{e}"));
}

/// `listen_url` carries the same password on a connection of its own: it
/// may ask for as much TLS as the main URL or more, never less, counting the
/// verify-full a host that is not this machine gets by default. Refused
/// before any connection is made (`INVALID_INPUT`, naming both levels).
#[tokio::test]
async fn listen_url_never_gets_weaker_tls_than_the_main_url() {
    let pooled = |main: &str, listen: &str| {
        let listen: String = url::form_urlencoded::byte_serialize(listen.as_bytes()).collect();
        format!("{main}{}pgbouncer=true&listen_url={listen}", if main.contains('?') { "&" } else { "?" })
    };
    let weaker = [
        // A remote host's default is verify-full: prefer is weaker.
        pooled("postgres://a2@db.invalid:6432/app", "postgres://a2@db.invalid/app?sslmode=prefer"),
        pooled("postgres://a2@127.0.0.1:6432/app?sslmode=require", "postgres://a2@listen.invalid/app?sslmode=prefer"),
        pooled("postgres://a2@db.invalid:6432/app?sslmode=require", "postgres://a2@db.invalid/app?sslmode=disable"),
        pooled(
            "postgres://a2@db.invalid:6432/app?sslmode=verify-full",
            "postgres://a2@db.invalid/app?sslmode=verify-ca",
        ),
    ];
    for url in &weaker {
        let refused = Postgres::connect(url, options(Access::ReadOnly), Arc::new(SystemClock)).await;
        let error = refused.err().unwrap_or_else(|| panic!("{url} was attached"));
        assert_eq!(error.code(), "INVALID_INPUT", "{url}: {error}");
        assert!(error.to_string().contains("weaker than the URL's sslmode="), "{url}: {error}");
    }
    // As strong or stronger passes the check (and then fails to reach a host that does not exist).
    let held = [
        pooled("postgres://a2@db.invalid:6432/app", "postgres://a2@db.invalid/app"),
        // This machine's end of a tunnel is off the network: its plaintext is no weaker link.
        pooled("postgres://a2@db.invalid:6432/app", "postgres://a2@127.0.0.1:15432/app?sslmode=disable"),
        pooled("postgres://a2@db.invalid:6432/app?sslmode=require", "postgres://a2@db.invalid/app?sslmode=verify-full"),
    ];
    for url in &held {
        let attached = Postgres::connect(url, options(Access::ReadOnly), Arc::new(SystemClock)).await;
        let error = attached.err().unwrap_or_else(|| panic!("{url} reached a host that does not exist"));
        assert!(!error.to_string().contains("weaker than the URL's"), "{url}: {error}");
    }
}
