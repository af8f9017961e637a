use a2_store::StoreError;

/// Map a sqlx error to the store's typed error by SQLSTATE: read-only
/// refusals become `READ_ONLY`, cancelled statements `STORE_TIMEOUT`,
/// lost connections and lock conflicts retryable `STORE_UNAVAILABLE`.
pub fn db_error(error: sqlx::Error) -> StoreError {
    match &error {
        sqlx::Error::Database(db) => {
            let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
            let message = db.message().to_owned();
            match code.as_str() {
                "25006" => StoreError::ReadOnly { message },
                "57014" => StoreError::Timeout { message: format!("{message} (the statement timeout cancelled it)") },
                "40001" | "40P01" | "55P03" | "53300" | "57P01" | "57P02" | "57P03" | "08000" | "08003" | "08006" => {
                    StoreError::unavailable(format!("{message} ({code})"))
                }
                "28000" if message.contains("no encryption") => StoreError::Tls {
                    message: format!(
                        "the server requires TLS ({message}): connect with sslmode=verify-full \
                         (and sslrootcert= naming its CA) or at least sslmode=require"
                    ),
                },
                "28P01" | "28000" => {
                    StoreError::Unavailable { message: format!("authentication failed: {message}"), retryable: false }
                }
                "3D000" => {
                    StoreError::Unavailable { message: format!("no such database: {message}"), retryable: false }
                }
                // A pooler refused a connection setting the server takes; or a
                // named statement met another client's on the same server
                // connection, or was looked for on another: a transaction-mode pooler.
                "08P01" | "42P05" | "26000"
                    if message.contains("unsupported startup parameter") || message.contains("sqlx_s_") =>
                {
                    StoreError::Unavailable {
                        message: format!(
                            "{message} ({code}): this looks like a transaction-mode pooler (PgBouncer, \
                             Supavisor, RDS Proxy) between A2 and Postgres; add pgbouncer=true to the URL"
                        ),
                        retryable: false,
                    }
                }
                "42P01" | "42703" => {
                    StoreError::Schema { message: format!("{message}: the A2 schema is missing or different") }
                }
                "22P05" | "22021" | "54000" => {
                    StoreError::invalid(format!("the value cannot be stored: {message} ({code})"))
                }
                _ => StoreError::Unavailable { message: format!("{message} ({code})"), retryable: false },
            }
        }
        sqlx::Error::Tls(_) => tls_error(&error),
        // rustls reports a refused certificate through the socket, as an I/O error.
        sqlx::Error::Io(io) if io.get_ref().is_some_and(|e| e.to_string().contains("certificate")) => tls_error(&error),
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::WorkerCrashed => {
            StoreError::unavailable(error.to_string())
        }
        sqlx::Error::Configuration(_) => StoreError::invalid(error.to_string()),
        _ => StoreError::Unavailable { message: error.to_string(), retryable: false },
    }
}

/// A TLS failure says what failed, and for a certificate what to check.
fn tls_error(error: &sqlx::Error) -> StoreError {
    let text = error.to_string();
    let message = if text.contains("certificate") {
        format!(
            "the server's certificate was refused ({text}): sslrootcert= must name the CA that signed it, \
             and with verify-full the URL's host must be one the certificate names"
        )
    } else {
        format!("TLS failed: {text}")
    };
    StoreError::Tls { message }
}
