//! What a store tells about the database server behind it, whatever the
//! backend: the operator shows it beside the read-only switch and decides
//! from it (a replica refuses writes), without knowing which backend answered.

use serde::{Deserialize, Serialize};

/// The connection's TLS, as the badge beside read-only shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TlsState {
    /// Plain text.
    Off,
    /// Encrypted, but the server's certificate was not checked (`sslmode=require`/`prefer`).
    Encrypted,
    /// Encrypted to a server whose certificate chains to a trusted root and
    /// names the host connected to (`verify-full`).
    Verified,
    /// Encrypted to a server whose certificate chains to a trusted root, for
    /// whatever host it names (`verify-ca`): any trusted certificate passes.
    VerifiedCaOnly,
}

/// The server and role a store is attached to, read once at connect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatabaseServer {
    /// The host as connected to (a socket directory for a Unix socket).
    pub host: String,
    pub port: u16,
    pub database: String,
    /// The server's version, e.g. `15.19 (Debian 15.19-0+deb12u1)`.
    pub version: String,
    /// The role the connection logged in as.
    pub session_user: String,
    pub tls: TlsState,
    /// The `sslmode` came from the `PGSSLMODE` environment variable, not the
    /// URL (its value): then the verify-full default for a remote host does not apply.
    #[serde(default)]
    pub sslmode_from_env: Option<String>,
    /// A hot standby: it refuses every write and delivers no notifications.
    pub replica: bool,
    /// Reached through a transaction-mode pooler (`?pgbouncer=true`): no
    /// notifications unless a direct `listen_url` was given, so readers poll.
    #[serde(default)]
    pub pooled: bool,
}
