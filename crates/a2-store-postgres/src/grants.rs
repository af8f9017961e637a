//! The reader role: SELECT on A2's own tables in the store's schema and
//! nothing else, so an attach with it is refused every write by Postgres.
//! Tables later migrations add are granted when a read-write open migrates,
//! to every role that can read `a2_events` already.

use sqlx::{Connection as _, PgConnection};

use crate::error::db_error;
use crate::route::simple;
use a2_store::StoreError;

/// A2's tables in the current schema: its own (`a2_…`) and the migration ledger
/// a read-only attach checks the schema version against.
const A2_TABLES: &str = "SELECT c.relname::text FROM pg_class c \
     WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') \
     AND (c.relname LIKE 'a2\\_%' OR c.relname = '_sqlx_migrations') ORDER BY 1";

/// The store's schema and the A2 tables in it.
async fn a2_tables(conn: &mut PgConnection) -> Result<(String, Vec<String>), StoreError> {
    let schema: String = sqlx::query_scalar("SELECT current_schema()")
        .persistent(false)
        .fetch_one(&mut *conn)
        .await
        .map_err(db_error)?;
    let tables: Vec<String> =
        sqlx::query_scalar(A2_TABLES).persistent(false).fetch_all(&mut *conn).await.map_err(db_error)?;
    Ok((schema, tables))
}

/// An identifier quoted for SQL, whatever it holds.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Let `role` read the A2 tables and nothing more. Refused for `public`
/// (everyone), a role that does not exist, a superuser or a role that
/// bypasses row security, and a role that can already write an A2 table:
/// a reader that can write protects nothing.
pub(crate) async fn reader_role_grant(conn: &mut PgConnection, role: &str) -> Result<(), StoreError> {
    if role == "public" || role.starts_with("pg_") {
        return Err(StoreError::invalid(format!("{role:?} is not a role of its own: name the reader role")));
    }
    let found: Option<bool> = sqlx::query_scalar("SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = $1")
        .bind(role)
        .persistent(false)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db_error)?;
    match found {
        None => return Err(StoreError::invalid(format!("there is no role {role:?}: CREATE ROLE {role} LOGIN first"))),
        Some(true) => {
            return Err(StoreError::invalid(format!(
                "role {role:?} is a superuser (or bypasses row security): it can write"
            )))
        }
        Some(false) => {}
    }
    let (schema, tables) = a2_tables(conn).await?;
    if let Some(refusal) = writer_within(conn, role, &schema).await? {
        return Err(StoreError::invalid(refusal));
    }
    // A savepoint where the caller's transaction holds the connection (pooled), else a transaction.
    let mut tx = conn.begin().await.map_err(db_error)?;
    simple(&mut tx, &format!("GRANT USAGE ON SCHEMA {} TO {}", quoted(&schema), quoted(role))).await?;
    for table in &tables {
        simple(&mut tx, &format!("GRANT SELECT ON {}.{} TO {}", quoted(&schema), quoted(table), quoted(role))).await?;
    }
    tx.commit().await.map_err(db_error)
}

/// Every role `role` can act as: itself and each role it is a member of,
/// directly or not, whether it inherits (`NOINHERIT` only means a `SET ROLE`
/// first). Each one is checked: one that is a superuser, owns the schema or
/// can write an A2 table makes `role` a writer.
const WRITERS_WITHIN: &str = "\
    WITH schema AS (SELECT n.oid, n.nspowner FROM pg_namespace n WHERE n.nspname = $2), \
    tables AS (SELECT c.oid, c.relname FROM pg_class c, schema s WHERE c.relnamespace = s.oid AND c.relkind IN ('r', 'p') \
        AND (c.relname LIKE 'a2\\_%' OR c.relname = '_sqlx_migrations')) \
    SELECT r.rolname::text, \
        CASE WHEN r.rolsuper OR r.rolbypassrls THEN 'is a superuser (or bypasses row security)' \
             WHEN r.oid = (SELECT nspowner FROM schema) THEN 'owns the schema' \
             ELSE 'can write ' || (SELECT min(t.relname)::text FROM tables t \
                 WHERE has_table_privilege(r.oid, t.oid, 'INSERT,UPDATE,DELETE,TRUNCATE')) END, \
        (SELECT o.rolname::text FROM pg_roles o WHERE o.oid = (SELECT nspowner FROM schema)) \
    FROM pg_roles r \
    WHERE pg_has_role($1, r.oid, 'MEMBER') \
      AND (r.rolsuper OR r.rolbypassrls OR r.oid = (SELECT nspowner FROM schema) \
           OR EXISTS (SELECT 1 FROM tables t WHERE has_table_privilege(r.oid, t.oid, 'INSERT,UPDATE,DELETE,TRUNCATE'))) \
    ORDER BY r.rolname <> $1, 1 LIMIT 1";

/// Why `role` cannot be the reader, if it can write by any role it may act
/// as; the refusal names that role, what it can do, and who owns the schema.
async fn writer_within(conn: &mut PgConnection, role: &str, schema: &str) -> Result<Option<String>, StoreError> {
    let found: Option<(String, Option<String>, Option<String>)> = sqlx::query_as(WRITERS_WITHIN)
        .bind(role)
        .bind(schema)
        .persistent(false)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db_error)?;
    Ok(found.map(|(writer, what, owner)| {
        let what = what.unwrap_or_else(|| "can write".into());
        let owner = owner.map_or_else(String::new, |o| format!(" (schema {schema:?} is owned by {o:?})"));
        if writer == role {
            format!("role {role:?} {what}: it cannot be the reader{owner}")
        } else {
            format!("role {role:?} is a member of {writer:?}, which {what}: it cannot be the reader (NOINHERIT or not, SET ROLE reaches it){owner}")
        }
    }))
}

/// After a migration: every role that reads `a2_events` (and is not its
/// owner) reads every A2 table, the new ones included.
pub(crate) async fn regrant_readers(conn: &mut PgConnection) -> Result<(), StoreError> {
    let readers: Vec<String> = sqlx::query_scalar(
        "SELECT r.rolname::text FROM pg_roles r \
         WHERE NOT r.rolsuper AND r.rolname <> (SELECT tableowner FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'a2_events') \
         AND r.rolname NOT LIKE 'pg\\_%' \
         AND has_table_privilege(r.oid, (quote_ident(current_schema()) || '.a2_events')::regclass, 'SELECT') \
         AND NOT has_table_privilege(r.oid, (quote_ident(current_schema()) || '.a2_events')::regclass, 'INSERT')",
    )
    .persistent(false)
    .fetch_all(&mut *conn)
    .await
    .map_err(db_error)?;
    if readers.is_empty() {
        return Ok(());
    }
    let (schema, tables) = a2_tables(conn).await?;
    for role in &readers {
        for table in &tables {
            simple(conn, &format!("GRANT SELECT ON {}.{} TO {}", quoted(&schema), quoted(table), quoted(role))).await?;
        }
    }
    Ok(())
}
