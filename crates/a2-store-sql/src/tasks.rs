//! The scheduler's tasks over SQL: one statement each, the claim leasing
//! with `FOR UPDATE SKIP LOCKED` where the dialect has it.

use a2_store::*;

use crate::value::{Arg, Row};
use crate::{page, SqlBackend, SqlStore};

fn task(row: &Row) -> Result<ScheduledTask, StoreError> {
    let key = row.text("session")?;
    let (contract, session_id) = split_session_key(&key);
    Ok(ScheduledTask {
        id: row.text("id")?,
        contract: contract.to_owned(),
        session_id: session_id.to_owned(),
        name: row.text("name")?,
        due_at: row.int("due_at")?,
        work: row.json("work")?,
        trigger: row.opt_json("trigger")?,
        created_at: row.int("created_at")?,
        attempts: row.u32("attempts")?,
        lease_holder: row.opt_text("lease_holder")?,
        lease_expires_at: row.opt_int("lease_expires_at")?,
        last_error: row.opt_text("last_error")?,
    })
}

pub(crate) fn json_of<T: serde::Serialize>(value: &T, what: &str) -> Result<serde_json::Value, StoreError> {
    serde_json::to_value(value).map_err(|e| StoreError::invalid(format!("{what} cannot be stored: {e}")))
}

pub(crate) async fn schedule<B: SqlBackend>(store: &SqlStore<B>, params: TaskSchedule) -> Result<bool, StoreError> {
    check_session_key(&params.session)?;
    let contract = split_session_key(&params.session).0.to_owned();
    let trigger = params.trigger.as_ref().map(|t| json_of(t, "the task's trigger")).transpose()?;
    let args = vec![
        Arg::text(&params.id),
        Arg::text(params.session.as_str()),
        Arg::Text(contract),
        Arg::text(&params.name),
        Arg::Int(params.due_at),
        Arg::Json(json_of(&params.work, "the task's work")?),
        Arg::OptJson(trigger),
        Arg::Int(store.now()),
    ];
    let mut tx = store.backend.begin().await?;
    let kept = tx.fetch_optional(store.sql().task_insert, args).await?.is_some();
    tx.commit().await?;
    Ok(kept)
}

pub(crate) async fn claim<B: SqlBackend>(
    store: &SqlStore<B>,
    params: TaskClaim,
) -> Result<Vec<ScheduledTask>, StoreError> {
    let now = store.now();
    // A server polls every second: on a read connection first, so nothing due costs no write transaction
    // (on SQLite, `BEGIN IMMEDIATE` would queue behind every writer).
    let due = vec![Arg::text(&params.contract), Arg::Int(now)];
    if store.backend.work().await?.fetch_optional(store.sql().task_due, due).await?.is_none() {
        return Ok(Vec::new());
    }
    let args = vec![
        Arg::Text(params.contract),
        Arg::Int(now),
        Arg::text(&params.holder),
        Arg::Int(now + params.ttl_ms),
        page(params.limit),
        Arg::OptText(params.only),
    ];
    let mut tx = store.backend.begin().await?;
    let rows = tx.fetch(store.sql().task_claim, args).await?;
    tx.commit().await?;
    let mut tasks = rows.iter().map(task).collect::<Result<Vec<_>, _>>()?;
    tasks.sort_by(|a, b| (a.due_at, &a.id).cmp(&(b.due_at, &b.id)));
    Ok(tasks)
}

pub(crate) async fn finish<B: SqlBackend>(store: &SqlStore<B>, params: TaskFinish) -> Result<bool, StoreError> {
    let (sql, args) = match params.outcome {
        TaskOutcome::Delivered => (store.sql().task_delete_held, vec![Arg::Text(params.id), Arg::Text(params.holder)]),
        TaskOutcome::Failed { error, retry_at } => (
            store.sql().task_release,
            vec![Arg::Text(params.id), Arg::Text(params.holder), Arg::Text(error), Arg::Int(retry_at)],
        ),
    };
    let mut tx = store.backend.begin().await?;
    let held = tx.fetch_optional(sql, args).await?.is_some();
    tx.commit().await?;
    Ok(held)
}

pub(crate) async fn list<B: SqlBackend>(
    store: &SqlStore<B>,
    params: TaskList,
) -> Result<Vec<ScheduledTask>, StoreError> {
    let (after_due, after_id) = params.after.map_or((None, String::new()), |(due, id)| (Some(due), id));
    let (sql, scope) = match params.session {
        Some(session) => (store.sql().task_list_of_session, Arg::text(session.as_str())),
        None => (store.sql().task_list, Arg::OptText(params.contract)),
    };
    let args = vec![scope, Arg::OptInt(after_due), Arg::Text(after_id), page(params.limit)];
    let rows = store.backend.read().await?.fetch(sql, args).await?;
    rows.iter().map(task).collect()
}

/// Cancel (`hasten: false`) or make due now, with the audit in the same transaction.
pub(crate) async fn change<B: SqlBackend>(
    store: &SqlStore<B>,
    params: TaskChange,
    hasten: bool,
) -> Result<Option<ScheduledTask>, StoreError> {
    let mut tx = store.backend.begin().await?;
    let row = if hasten {
        tx.fetch_optional(store.sql().task_hasten, vec![Arg::text(&params.id), Arg::Int(store.now())]).await?
    } else {
        tx.fetch_optional(store.sql().task_delete, vec![Arg::text(&params.id), Arg::Int(store.now())]).await?
    };
    let changed = row.as_ref().map(task).transpose()?;
    if changed.is_some() {
        let outcome =
            if hasten { serde_json::json!({ "due_now": true }) } else { serde_json::json!({ "cancelled": true }) };
        store.audit_in(tx.as_mut(), params.audit, outcome).await?;
    }
    tx.commit().await?;
    Ok(changed)
}
