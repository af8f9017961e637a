//! What the Studio tells an operator about the database it attached to —
//! which server, as which role, over what TLS — and the checks that keep an
//! attach from changing a database that is not an A2 store.

use sqlx::postgres::{PgConnectOptions, PgSslMode};
use sqlx::PgConnection;

use a2_store::{DatabaseServer, StoreError, TlsState};
use a2_store_sql::{read_ledger, Ledger};

use crate::db_error;

/// Hosts that are this machine; a Unix socket directory counts as this machine.
pub fn is_local_host(host: &str) -> bool {
    host.starts_with('/') || matches!(host, "" | "localhost" | "127.0.0.1" | "::1" | "[::1]")
}

/// Whether the URL (or `PGSSLMODE`) chose an `sslmode` itself. A `PGSSLMODE`
/// that is empty or no mode at all chooses nothing (the driver ignores it too).
pub(crate) fn names_sslmode(url: &str) -> bool {
    url_names_sslmode(url) || env_sslmode().is_some()
}

/// `PGSSLMODE`, when it names a mode the driver takes.
fn env_sslmode() -> Option<String> {
    let mode = std::env::var("PGSSLMODE").ok()?;
    mode.parse::<PgSslMode>().is_ok().then_some(mode)
}

fn url_names_sslmode(url: &str) -> bool {
    url::Url::parse(url).map(|u| u.query_pairs().any(|(k, _)| k == "sslmode" || k == "ssl-mode")).unwrap_or(false)
}

/// `PGSSLMODE`'s value when it, not the URL, chose the `sslmode`: the badge says so.
pub(crate) fn sslmode_from_env(url: &str) -> Option<String> {
    if url_names_sslmode(url) {
        return None;
    }
    env_sslmode()
}

/// A host that is not this machine is reached with `verify-full` unless the URL says otherwise.
pub(crate) fn default_tls(url: &str, connect: PgConnectOptions) -> PgConnectOptions {
    if names_sslmode(url) || is_local_host(connect.get_host()) {
        connect
    } else {
        connect.ssl_mode(PgSslMode::VerifyFull)
    }
}

/// How much a connection's TLS promises, weakest first (libpq's order).
fn tls_rank(mode: PgSslMode) -> u8 {
    match mode {
        PgSslMode::Disable => 0,
        PgSslMode::Allow => 1,
        PgSslMode::Prefer => 2,
        PgSslMode::Require => 3,
        PgSslMode::VerifyCa => 4,
        PgSslMode::VerifyFull => 5,
    }
}

fn tls_name(mode: PgSslMode) -> &'static str {
    match mode {
        PgSslMode::Disable => "disable",
        PgSslMode::Allow => "allow",
        PgSslMode::Prefer => "prefer",
        PgSslMode::Require => "require",
        PgSslMode::VerifyCa => "verify-ca",
        PgSslMode::VerifyFull => "verify-full",
    }
}

/// A pooled URL's `listen_url` is a second connection with the same
/// password: to a host that is not this machine it may not ask for weaker
/// TLS than the main URL (after the default of verify-full for such a host).
/// A plaintext or `prefer` listen link beside a verified main one would leak
/// the notification channel and could be redirected. (A main URL that trusts
/// its own `sslrootcert` needs one on `listen_url` too: checked at connect.)
pub(crate) fn listen_tls_holds(main: &PgConnectOptions, listen: &PgConnectOptions) -> Result<(), StoreError> {
    let (asked, held) = (listen.get_ssl_mode(), main.get_ssl_mode());
    // This machine's own end (an SSH tunnel, a socket) is off the network: nothing on it to redirect.
    let local = listen.get_host().starts_with('/') || is_local_host(listen.get_host());
    if !local && tls_rank(asked) < tls_rank(held) {
        return Err(StoreError::invalid(format!(
            "listen_url asks for sslmode={}, weaker than the URL's sslmode={}: give listen_url at least sslmode={}",
            tls_name(asked),
            tls_name(held),
            tls_name(held)
        )));
    }
    Ok(())
}

/// Whether the session `conn` is on is read-only now, as the server says:
/// the startup setting a read-only attach asks for can be dropped by a proxy
/// or a pooler in front, and then nothing but this check would notice.
pub(crate) async fn prove_read_only(conn: &mut PgConnection) -> Result<(), StoreError> {
    let setting: String =
        sqlx::query_scalar("SHOW transaction_read_only").persistent(false).fetch_one(conn).await.map_err(db_error)?;
    if setting != "on" {
        return Err(StoreError::ReadOnly {
            message: format!(
                "this read-only attach is not read-only: the server reports transaction_read_only = {setting} for \
                 its session (a pooler or proxy in front may have dropped the startup setting; through PgBouncer \
                 in transaction mode add pgbouncer=true), so it was refused before reading anything"
            ),
        });
    }
    Ok(())
}

/// Read which server and role `reader` reaches, and how its connection is
/// protected. Through a pooler the server's view of TLS is the pooler's own
/// link, so the badge goes by what the driver demanded of ours (`prefer`,
/// which may or may not have encrypted, reads as off).
pub(crate) async fn describe(
    reader: &mut PgConnection,
    connect: &PgConnectOptions,
    (pooled, sslmode_from_env): (bool, Option<String>),
) -> Result<DatabaseServer, StoreError> {
    let (database, version, session_user, ssl, replica): (String, String, String, Option<bool>, bool) = sqlx::query_as(
        "SELECT current_database()::text, current_setting('server_version'), session_user::text, \
         (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()), pg_is_in_recovery()",
    )
    .persistent(false)
    .fetch_one(reader)
    .await
    .map_err(db_error)?;
    let demanded = matches!(connect.get_ssl_mode(), PgSslMode::Require | PgSslMode::VerifyCa | PgSslMode::VerifyFull);
    let encrypted = if pooled { demanded } else { ssl.unwrap_or(false) };
    let tls = match (encrypted, connect.get_ssl_mode()) {
        (false, _) => TlsState::Off,
        (true, PgSslMode::VerifyFull) => TlsState::Verified,
        (true, PgSslMode::VerifyCa) => TlsState::VerifiedCaOnly,
        (true, _) => TlsState::Encrypted,
    };
    Ok(DatabaseServer {
        host: connect.get_host().to_owned(),
        port: connect.get_port(),
        database,
        version,
        session_user,
        tls,
        sslmode_from_env,
        replica,
        pooled,
    })
}

/// How far a standby's data trails its primary, in milliseconds: 0 when it
/// has replayed all it received (an idle primary sends nothing, and the last
/// replayed commit's age would read as lag), else the age of that commit.
/// `None` before it replayed anything.
pub(crate) async fn replica_delay_ms(reader: &mut PgConnection) -> Result<Option<i64>, StoreError> {
    sqlx::query_scalar(
        "SELECT CASE \
           WHEN pg_last_wal_receive_lsn() IS NOT NULL AND pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0 \
           ELSE (EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()) * 1000)::bigint END",
    )
    .persistent(false)
    .fetch_one(reader)
    .await
    .map_err(db_error)
}

/// The A2 tables this binary knows, in the connection's schema.
const A2_TABLES: &str =
    "'a2_sessions', 'a2_events', 'a2_heads', 'a2_snapshots', 'a2_audit', 'a2_consumer_totals', 'a2_consumer_pauses', 'a2_attempts', 'a2_scheduled', 'a2_presence'";

/// What the schema a read-write attach would migrate holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Contents {
    Empty,
    A2Store,
    /// Tables, and no migration ledger: nothing proves any of them A2's
    /// (a table that happens to be named `a2_events` does not).
    Other,
    /// A migration ledger that is not A2's, or A2's with another file's migration.
    Foreign(String),
}

pub(crate) async fn contents(conn: &mut PgConnection) -> Result<Contents, StoreError> {
    let (tables, has_ledger): (i64, bool) = sqlx::query_as(
        "SELECT COUNT(*), bool_or(tablename = '_sqlx_migrations') IS TRUE \
         FROM pg_tables WHERE schemaname = current_schema()",
    )
    .persistent(false)
    .fetch_one(&mut *conn)
    .await
    .map_err(db_error)?;
    if tables == 0 {
        return Ok(Contents::Empty);
    }
    if !has_ledger {
        return Ok(Contents::Other);
    }
    Ok(match ledger(conn).await? {
        // Only sqlx's bookkeeping table: a first migration that stopped half-way is ours to finish.
        Ledger::Empty if tables == 1 => Contents::A2Store,
        Ledger::Empty => Contents::Other,
        Ledger::Ours => Contents::A2Store,
        Ledger::Foreign { why } => Contents::Foreign(why),
    })
}

/// The migration ledger of the connection's schema, judged against this binary's migrations.
pub(crate) async fn ledger(conn: &mut PgConnection) -> Result<Ledger, StoreError> {
    let applied: Vec<(i64, Vec<u8>)> =
        sqlx::query_as("SELECT version, checksum FROM _sqlx_migrations ORDER BY version")
            .persistent(false)
            .fetch_all(conn)
            .await
            .map_err(db_error)?;
    Ok(read_ledger(crate::MIGRATOR.iter().map(|m| (m.version, m.checksum.as_ref())), &applied))
}

/// Whether the connected role could change any A2 table in any way: a
/// read-only attach with such a role is protected by the session setting alone.
pub(crate) async fn role_can_write(reader: &mut PgConnection) -> Result<bool, StoreError> {
    sqlx::query_scalar(&format!(
        "SELECT COALESCE(bool_or(has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE')), false) \
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relname IN ({A2_TABLES})"
    ))
    .persistent(false)
    .fetch_one(reader)
    .await
    .map_err(db_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_machine_is_local() {
        for host in ["localhost", "127.0.0.1", "::1", "/var/run/postgresql", ""] {
            assert!(is_local_host(host), "{host}");
        }
        for host in ["db.example.com", "10.0.0.5", "127.0.0.2", "localhost.evil"] {
            assert!(!is_local_host(host), "{host}");
        }
    }

    #[test]
    fn a_remote_host_is_verified_unless_the_url_says_otherwise() {
        use std::str::FromStr;
        let open = |url: &str| default_tls(url, PgConnectOptions::from_str(url).expect("url")).get_ssl_mode();
        if std::env::var_os("PGSSLMODE").is_some() {
            return;
        }
        assert!(matches!(open("postgres://ops@db.example.com/app"), PgSslMode::VerifyFull));
        assert!(matches!(open("postgres://ops@localhost/app?host=db.prod"), PgSslMode::VerifyFull));
        assert!(matches!(open("postgres://ops@db.example.com/app?sslmode=require"), PgSslMode::Require));
        assert!(matches!(open("postgres://ops@127.0.0.1/app"), PgSslMode::Prefer));
    }
}
