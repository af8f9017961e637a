//! The operators' audit log.

use a2_store::codec::{to_i64, to_u64};
use a2_store::{AuditEntry, AuditList, AuditRecord, StoreError};

use crate::rows::get;
use crate::{db_error, SqliteStore};

fn json_text(value: &serde_json::Value) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::invalid(e.to_string()))
}

fn json_value(text: &str) -> Result<serde_json::Value, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Schema { message: format!("audit entry: {e}") })
}

/// Write an entry inside the caller's transaction.
pub(crate) async fn insert_audit(conn: &mut sqlx::SqliteConnection, entry: &AuditEntry) -> Result<u64, StoreError> {
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO a2_audit (at, user_name, host, action, contract, session_id, parameters, outcome) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(entry.at)
    .bind(&entry.user)
    .bind(&entry.host)
    .bind(&entry.action)
    .bind(&entry.contract)
    .bind(&entry.session_id)
    .bind(json_text(&entry.parameters)?)
    .bind(json_text(&entry.outcome)?)
    .fetch_one(conn)
    .await
    .map_err(db_error)?;
    Ok(to_u64(id))
}

impl SqliteStore {
    pub(crate) async fn append_audit(&self, entry: AuditEntry) -> Result<u64, StoreError> {
        let mut tx = self.begin().await?;
        let id = insert_audit(&mut tx, &entry).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(id)
    }

    pub(crate) async fn list_audit(&self, params: AuditList) -> Result<Vec<AuditRecord>, StoreError> {
        let rows = sqlx::query("SELECT * FROM a2_audit WHERE id < ? ORDER BY id DESC LIMIT ?")
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
                        parameters: json_value(&get::<String>(r, "parameters")?)?,
                        outcome: json_value(&get::<String>(r, "outcome")?)?,
                    },
                })
            })
            .collect()
    }
}
