//! The SQL seam over sqlx's SQLite driver: lists bind as JSON text for
//! `json_each`, JSON as text, and rows decode by each value's storage class.

use std::sync::Arc;

use a2_store::StoreError;
use a2_store_sql::{Arg, Cell, Row};
use sqlx::sqlite::{Sqlite, SqliteArguments, SqliteRow};
use sqlx::{Row as _, SqliteConnection, TypeInfo, ValueRef};

use crate::db_error;

type Query<'q> = sqlx::query::Query<'q, Sqlite, SqliteArguments<'q>>;

fn bind(query: Query<'_>, arg: Arg) -> Query<'_> {
    match arg {
        Arg::Text(text) => query.bind(text),
        Arg::OptText(text) => query.bind(text),
        Arg::Int(n) => query.bind(n),
        Arg::OptInt(n) => query.bind(n),
        Arg::Json(value) => query.bind(value.to_string()),
        Arg::OptJson(value) => query.bind(value.map(|v| v.to_string())),
        // Each JSON value as its text, so `json_each` hands back what is stored.
        Arg::Jsons(values) => query.bind(json_texts(values.iter().map(|v| Some(v.to_string())))),
        Arg::OptJsons(values) => query.bind(json_texts(values.iter().map(|v| v.as_ref().map(|v| v.to_string())))),
        list => query.bind(list.list_as_json()),
    }
}

fn json_texts(texts: impl Iterator<Item = Option<String>>) -> String {
    serde_json::Value::Array(texts.map(|t| t.map_or(serde_json::Value::Null, serde_json::Value::String)).collect())
        .to_string()
}

fn decode(row: &SqliteRow, columns: Arc<[String]>) -> Result<Row, StoreError> {
    let mut cells = Vec::with_capacity(columns.len());
    for i in 0..columns.len() {
        let raw = row.try_get_raw(i).map_err(db_error)?;
        let cell = if raw.is_null() {
            Cell::Null
        } else {
            match raw.type_info().name() {
                "INTEGER" | "BOOLEAN" => Cell::Int(row.try_get_unchecked(i).map_err(db_error)?),
                "BLOB" => Cell::Text(
                    String::from_utf8_lossy(&row.try_get_unchecked::<Vec<u8>, _>(i).map_err(db_error)?).into(),
                ),
                _ => Cell::Text(row.try_get_unchecked(i).map_err(db_error)?),
            }
        };
        cells.push(cell);
    }
    Ok(Row::new(columns, cells))
}

a2_store_sql::sqlx_link!(Sqlite, SqliteConnection);
