//! The operators' audit log.

use a2_store::codec::{to_i64, to_u64};
use a2_store::{AuditEntry, AuditList, AuditRecord, StoreError};
use sqlx::types::Json;

use crate::rows::get;
use crate::{db_error, PgStore};

/// Write an entry inside the caller's transaction.
pub(crate) async fn insert_audit(conn: &mut sqlx::PgConnection, entry: &AuditEntry) -> Result<u64, StoreError> {
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO a2_audit (at, user_name, host, action, contract, session_id, parameters, outcome) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
    )
    .bind(entry.at)
    .bind(&entry.user)
    .bind(&entry.host)
    .bind(&entry.action)
    .bind(&entry.contract)
    .bind(&entry.session_id)
    .bind(Json(&entry.parameters))
    .bind(Json(&entry.outcome))
    .fetch_one(conn)
    .await
    .map_err(db_error)?;
    Ok(to_u64(id))
}

impl PgStore {
    pub(crate) async fn append_audit(&self, entry: AuditEntry) -> Result<u64, StoreError> {
        self.writable()?;
        let mut conn = self.pool.acquire().await.map_err(db_error)?;
        insert_audit(&mut conn, &entry).await
    }

    pub(crate) async fn list_audit(&self, params: AuditList) -> Result<Vec<AuditRecord>, StoreError> {
        let rows = sqlx::query("SELECT * FROM a2_audit WHERE id < $1 ORDER BY id DESC LIMIT $2")
            .bind(params.before.map_or(i64::MAX, to_i64))
            .bind(i64::try_from(a2_store::page_size(params.limit)).unwrap_or(500))
            .fetch_all(&self.reader)
            .await
            .map_err(db_error)?;
        rows.iter()
            .map(|r| {
                Ok(AuditRecord {
                    id: to_u64(get(r, "id")?),
                    entry: AuditEntry {
                        at: get(r, "at")?,
                        user: get(r, "user_name")?,
                        host: get(r, "host")?,
                        action: get(r, "action")?,
                        contract: get(r, "contract")?,
                        session_id: get(r, "session_id")?,
                        parameters: get::<Json<serde_json::Value>>(r, "parameters")?.0,
                        outcome: get::<Json<serde_json::Value>>(r, "outcome")?.0,
                    },
                })
            })
            .collect()
    }
}
