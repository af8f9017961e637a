use a2_store::StoreError;

/// Map a sqlx error to the store's typed error. SQLite's own "readonly"
/// codes become `READ_ONLY`; lock and I/O trouble is retryable.
pub fn db_error(error: sqlx::Error) -> StoreError {
    match &error {
        sqlx::Error::Database(db) => {
            let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
            let primary = code.parse::<i64>().map(|c| c & 0xff).unwrap_or(-1);
            match primary {
                // SQLITE_READONLY
                8 => StoreError::ReadOnly { message: db.message().to_owned() },
                // SQLITE_BUSY, SQLITE_LOCKED, SQLITE_IOERR, SQLITE_FULL
                5 | 6 | 10 | 13 => StoreError::unavailable(db.message().to_owned()),
                // SQLITE_CANTOPEN, SQLITE_NOTADB, SQLITE_CORRUPT
                14 | 26 | 11 => StoreError::Unavailable { message: db.message().to_owned(), retryable: false },
                _ => StoreError::Unavailable { message: format!("{} (code {code})", db.message()), retryable: false },
            }
        }
        sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::PoolClosed | sqlx::Error::WorkerCrashed => {
            StoreError::unavailable(error.to_string())
        }
        _ => StoreError::Unavailable { message: error.to_string(), retryable: false },
    }
}
