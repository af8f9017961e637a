//! How this store's statements reach Postgres: straight to the server, or
//! through a transaction-mode pooler (PgBouncer, Supavisor, RDS Proxy),
//! chosen by `?pgbouncer=true` in the URL as Prisma does. A pooler hands each
//! transaction to whichever server connection is free, so in pooled mode
//! nothing may outlive a transaction: every statement runs inside one that
//! begins with its own settings (`BEGIN READ ONLY; SET LOCAL …`), statements
//! are sent unnamed (a named one would collide with another client's on the
//! server it lands on), and there is no LISTEN, session setting or session
//! advisory lock.

use std::borrow::Cow;

use a2_store::StoreError;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgPool, Postgres};
use sqlx::PgConnection;

use crate::db_error;

/// What the URL asked of the route, with A2's own parameters taken out
/// (they are not the driver's, and it would log them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UrlRoute {
    /// The URL as the driver reads it.
    pub url: String,
    /// `pgbouncer=true`: a transaction-mode pooler stands between us and the server.
    pub pooled: bool,
    /// `listen_url=…`: a direct URL for notifications, where the pooler cannot carry LISTEN.
    pub listen_url: Option<String>,
}

/// The URL parameters sqlx-postgres reads; any other it would log with its value.
const DRIVER_PARAMETERS: &[&str] = &[
    "sslmode",
    "ssl-mode",
    "sslrootcert",
    "ssl-root-cert",
    "ssl-ca",
    "sslcert",
    "ssl-cert",
    "sslkey",
    "ssl-key",
    "statement-cache-capacity",
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "application_name",
    "options",
];

/// Split A2's parameters (`pgbouncer`, `listen_url`) off a Postgres URL.
pub fn url_route(url: &str) -> Result<UrlRoute, StoreError> {
    let Ok(mut parsed) = url::Url::parse(url) else {
        // Not a URL the `url` crate reads (e.g. a key=value string): the driver judges it.
        return Ok(UrlRoute { url: url.to_owned(), ..UrlRoute::default() });
    };
    let (mut pooled, mut listen_url, mut kept) = (false, None, Vec::new());
    for (key, value) in parsed.query_pairs() {
        match key.as_ref() {
            "pgbouncer" => {
                pooled = match value.as_ref() {
                    "true" | "1" | "on" => true,
                    "false" | "0" | "off" => false,
                    other => {
                        return Err(StoreError::invalid(format!("pgbouncer={other:?}: say pgbouncer=true or false")))
                    }
                }
            }
            "listen_url" => listen_url = Some(value.into_owned()),
            // `options[search_path]=…`: sqlx's own form of one server setting.
            known if DRIVER_PARAMETERS.contains(&known) || known.starts_with("options[") => {
                kept.push((key.into_owned(), value.into_owned()))
            }
            // The driver would log it, value and all (a mistyped `pasword=` is a password in the log).
            unknown => {
                return Err(StoreError::invalid(format!(
                    "the URL parameter {unknown:?} is not one A2 or its Postgres driver reads (they are: pgbouncer, listen_url, {})",
                    DRIVER_PARAMETERS.join(", ")
                )))
            }
        }
    }
    if !pooled && listen_url.is_some() {
        return Err(StoreError::invalid("listen_url is for a pooled URL: add pgbouncer=true, or drop listen_url"));
    }
    if kept.is_empty() {
        parsed.set_query(None);
    } else {
        parsed.query_pairs_mut().clear().extend_pairs(kept);
    }
    Ok(UrlRoute { url: parsed.into(), pooled, listen_url })
}

/// The `BEGIN` of a pooled transaction: read-only when asked, with each
/// setting a direct connection would have set once at connect. Names and
/// values are this crate's own (a schema name is checked before it gets here).
pub(crate) fn begin_statement(read_only: bool, settings: &[(&str, String)]) -> String {
    let mut begin = String::from(if read_only { "BEGIN READ ONLY" } else { "BEGIN" });
    for (name, value) in settings {
        begin.push_str(&format!("; SET LOCAL {name} = '{value}'"));
    }
    begin
}

/// A pool and how its transactions begin: `None` when it reaches the server directly.
#[derive(Debug, Clone)]
pub(crate) struct Db {
    pub pool: PgPool,
    begin: Option<Cow<'static, str>>,
}

impl Db {
    /// `begin`: `None` when direct; through a pooler, the `BEGIN` its transactions open with.
    pub fn new(pool: PgPool, begin: Option<String>) -> Self {
        Self { pool, begin: begin.map(Cow::Owned) }
    }

    /// Whether statements may be prepared by name and kept (only when direct).
    pub fn prepared(&self) -> bool {
        self.begin.is_none()
    }

    /// The `BEGIN` a pooled transaction opens with.
    pub fn begin_statement(&self) -> Option<Cow<'static, str>> {
        self.begin.clone()
    }

    /// A connection to run a few statements on: as it is when direct; when
    /// pooled, inside one transaction begun with this pool's settings, which
    /// [`DbConn::done`] commits (dropped, it rolls back). Statements on it
    /// must be unprepared ([`Db::prepared`]) where they run pooled.
    pub async fn conn(&self) -> Result<DbConn, StoreError> {
        self.acquire().await.map_err(db_error)
    }

    /// [`Db::conn`] with the driver's error, for callers that read its SQLSTATE.
    pub async fn acquire(&self) -> Result<DbConn, sqlx::Error> {
        Ok(match &self.begin {
            None => DbConn::Direct(self.pool.acquire().await?),
            Some(begin) => DbConn::Pooled(self.pool.begin_with(begin.clone()).await?),
        })
    }
}

/// Run `sql` (statements without parameters) as one simple query: nothing
/// is prepared, so it is the same direct or pooled.
pub(crate) async fn simple(conn: &mut PgConnection, sql: &str) -> Result<(), StoreError> {
    use sqlx::Executor as _;
    conn.execute(sql).await.map(drop).map_err(db_error)
}

/// A connection from [`Db::conn`].
pub(crate) enum DbConn {
    Direct(PoolConnection<Postgres>),
    Pooled(sqlx::Transaction<'static, Postgres>),
}

impl DbConn {
    /// Commit what a pooled connection's transaction did.
    pub async fn done(self) -> Result<(), StoreError> {
        self.commit().await.map_err(db_error)
    }

    /// [`DbConn::done`] with the driver's error.
    pub async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            Self::Direct(_) => Ok(()),
            Self::Pooled(tx) => tx.commit().await,
        }
    }
}

impl std::ops::Deref for DbConn {
    type Target = PgConnection;
    fn deref(&self) -> &PgConnection {
        match self {
            Self::Direct(conn) => conn,
            Self::Pooled(tx) => tx,
        }
    }
}

impl std::ops::DerefMut for DbConn {
    fn deref_mut(&mut self) -> &mut PgConnection {
        match self {
            Self::Direct(conn) => conn,
            Self::Pooled(tx) => tx,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pooler_flags_come_off_the_url() {
        let route = url_route("postgres://ops@pool:6432/app?sslmode=require&pgbouncer=true").expect("url");
        assert_eq!(
            route,
            UrlRoute { url: "postgres://ops@pool:6432/app?sslmode=require".into(), pooled: true, listen_url: None }
        );
        let route = url_route("postgres://ops@pool:6432/app?pgbouncer=true&listen_url=postgres%3A%2F%2Fops%40db%2Fapp")
            .expect("url");
        assert_eq!(route.url, "postgres://ops@pool:6432/app");
        assert_eq!(route.listen_url.as_deref(), Some("postgres://ops@db/app"));
        assert!(!url_route("postgres://ops@db/app").expect("url").pooled);
        assert!(!url_route("postgres://ops@db/app?pgbouncer=false").expect("url").pooled);
        assert_eq!(url_route("postgres://ops@db/app?pgbouncer=yes").expect_err("typo").code(), "INVALID_INPUT");
        assert_eq!(url_route("postgres://ops@db/app?listen_url=x").expect_err("unpooled").code(), "INVALID_INPUT");
    }

    #[test]
    fn unknown_url_parameters_are_refused_by_name_without_their_value() {
        let error = url_route("postgres://ops@db/app?sslmode=require&pasword=hunter2").expect_err("a typo");
        assert_eq!(error.code(), "INVALID_INPUT");
        let text = error.to_string();
        assert!(text.contains("\"pasword\"") && !text.contains("hunter2"), "{text}");
        let known = url_route("postgres://ops@db/app?application_name=x&sslrootcert=/ca.pem&options=-c%20a%3Db");
        assert!(known.is_ok(), "{known:?}");
    }

    #[test]
    fn a_pooled_transaction_carries_its_own_settings() {
        let settings = [("search_path", "a2_x".to_owned()), ("statement_timeout", "5000".to_owned())];
        assert_eq!(
            begin_statement(true, &settings),
            "BEGIN READ ONLY; SET LOCAL search_path = 'a2_x'; SET LOCAL statement_timeout = '5000'"
        );
        assert_eq!(begin_statement(false, &[]), "BEGIN");
    }
}
