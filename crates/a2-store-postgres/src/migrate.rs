//! Migrating the schema. Direct, sqlx's migrator runs as it always has.
//! Through a transaction-mode pooler it cannot: it holds a session advisory
//! lock across transactions (the unlock may land on another server
//! connection, leaving the lock held) and prepares named statements. There
//! the pending migrations run in one transaction under the same lock taken
//! for that transaction only, and write the same ledger (`_sqlx_migrations`),
//! so either way of opening reads the other's work.

use std::time::Instant;

use a2_store::StoreError;
use sqlx::migrate::{MigrateError, Migrator};
use sqlx::PgConnection;

use crate::route::{simple, Db};
use crate::{db_error, newer_schema};

/// Bring the schema up to `migrator`'s newest version; returns the versions
/// this call applied (empty when it was up to date), so the open can put
/// a change of a production schema on record.
pub(crate) async fn run(pool: &Db, migrator: &Migrator) -> Result<Vec<i64>, StoreError> {
    let before = applied_versions(pool).await?;
    if pool.prepared() {
        migrator.run(&pool.pool).await.map_err(|e| match e {
            MigrateError::VersionMissing(v) => newer_schema(v),
            MigrateError::Execute(e) => db_error(e),
            other => StoreError::Schema { message: format!("migrating: {other}") },
        })?;
    } else {
        let mut conn = pool.conn().await?;
        in_one_transaction(&mut conn, migrator).await?;
        conn.done().await?;
    }
    let after = applied_versions(pool).await?;
    Ok(after.into_iter().filter(|version| !before.contains(version)).collect())
}

/// The versions the ledger records as applied (none when there is no ledger yet).
async fn applied_versions(pool: &Db) -> Result<Vec<i64>, StoreError> {
    let mut conn = pool.conn().await?;
    let ledger: Option<String> = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations')::text")
        .persistent(false)
        .fetch_one(&mut *conn)
        .await
        .map_err(db_error)?;
    let versions = match ledger {
        None => Vec::new(),
        Some(_) => sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
            .persistent(false)
            .fetch_all(&mut *conn)
            .await
            .map_err(db_error)?,
    };
    conn.done().await?;
    Ok(versions)
}

/// sqlx's own lock key for this database, so a direct migrator and a pooled one exclude each other.
fn lock_id(database: &str) -> i64 {
    const CRC_IEEE: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
    0x3d32ad9e * i64::from(CRC_IEEE.checksum(database.as_bytes()))
}

async fn in_one_transaction(conn: &mut PgConnection, migrator: &Migrator) -> Result<(), StoreError> {
    let database: String = sqlx::query_scalar("SELECT current_database()")
        .persistent(false)
        .fetch_one(&mut *conn)
        .await
        .map_err(db_error)?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .persistent(false)
        .bind(lock_id(&database))
        .execute(&mut *conn)
        .await
        .map_err(db_error)?;
    simple(
        conn,
        "CREATE TABLE IF NOT EXISTS _sqlx_migrations (version BIGINT PRIMARY KEY, description TEXT NOT NULL, \
         installed_on TIMESTAMPTZ NOT NULL DEFAULT now(), success BOOLEAN NOT NULL, checksum BYTEA NOT NULL, \
         execution_time BIGINT NOT NULL)",
    )
    .await?;
    let applied: Vec<(i64, bool, Vec<u8>)> =
        sqlx::query_as("SELECT version, success, checksum FROM _sqlx_migrations ORDER BY version")
            .persistent(false)
            .fetch_all(&mut *conn)
            .await
            .map_err(db_error)?;
    if let Some((version, ..)) = applied.iter().find(|(_, success, _)| !success) {
        return Err(StoreError::Schema {
            message: format!("migration {version} stopped part-way on an earlier open: repair it by hand"),
        });
    }
    for (version, _, checksum) in &applied {
        match migrator.iter().find(|m| m.version == *version) {
            None => return Err(newer_schema(*version)),
            Some(known) if known.checksum.as_ref() != checksum.as_slice() => {
                return Err(StoreError::Schema {
                    message: format!("migration {version} was applied from a different file than this binary's"),
                })
            }
            Some(_) => {}
        }
    }
    let pending = migrator.iter().filter(|m| !m.migration_type.is_down_migration());
    for migration in pending.filter(|m| !applied.iter().any(|(v, ..)| *v == m.version)) {
        if migration.no_tx {
            return Err(StoreError::Schema {
                message: format!(
                    "migration {} must run outside a transaction: open this store once through a direct URL",
                    migration.version
                ),
            });
        }
        let started = Instant::now();
        simple(conn, &migration.sql).await?;
        let took = i64::try_from(started.elapsed().as_nanos()).unwrap_or(i64::MAX);
        sqlx::query(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES ($1, $2, TRUE, $3, $4)",
        )
        .persistent(false)
        .bind(migration.version)
        .bind(migration.description.as_ref())
        .bind(migration.checksum.as_ref())
        .bind(took)
        .execute(&mut *conn)
        .await
        .map_err(db_error)?;
    }
    Ok(())
}
