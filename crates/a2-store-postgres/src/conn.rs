//! The SQL seam over sqlx's Postgres driver: lists bind as arrays, JSON as
//! `jsonb`, and rows decode by each column's declared type.

use std::sync::Arc;

use a2_store::StoreError;
use a2_store_sql::{Arg, Cell, Row};
use serde_json::Value;
use sqlx::postgres::{PgArguments, PgRow, Postgres};
use sqlx::types::Json;
use sqlx::{Column, PgConnection, Row as _, TypeInfo, ValueRef};

use crate::db_error;

type Query<'q> = sqlx::query::Query<'q, Postgres, PgArguments>;

fn bind(query: Query<'_>, arg: Arg) -> Query<'_> {
    match arg {
        Arg::Text(text) => query.bind(text),
        Arg::OptText(text) => query.bind(text),
        Arg::Int(n) => query.bind(n),
        Arg::OptInt(n) => query.bind(n),
        Arg::Json(value) => query.bind(Json(value)),
        Arg::OptJson(value) => query.bind(value.map(Json)),
        Arg::Texts(texts) => query.bind(texts),
        Arg::OptTexts(texts) => query.bind(texts),
        Arg::Ints(ns) => query.bind(ns),
        Arg::OptInts(ns) => query.bind(ns),
        Arg::Jsons(values) => query.bind(values.into_iter().map(Json).collect::<Vec<_>>()),
        Arg::OptJsons(values) => query.bind(values.into_iter().map(|v| v.map(Json)).collect::<Vec<_>>()),
    }
}

fn cell(row: &PgRow, i: usize, type_name: &str) -> Result<Cell, sqlx::Error> {
    Ok(match type_name {
        "INT2" => Cell::Int(i64::from(row.try_get::<i16, _>(i)?)),
        "INT4" => Cell::Int(i64::from(row.try_get::<i32, _>(i)?)),
        "INT8" => Cell::Int(row.try_get(i)?),
        "BOOL" => Cell::Bool(row.try_get(i)?),
        "JSON" | "JSONB" => Cell::Json(row.try_get::<Json<Value>, _>(i)?.0),
        _ => Cell::Text(row.try_get_unchecked(i)?),
    })
}

fn decode(row: &PgRow, columns: Arc<[String]>) -> Result<Row, StoreError> {
    let mut cells = Vec::with_capacity(columns.len());
    for i in 0..columns.len() {
        let null = row.try_get_raw(i).map_err(db_error)?.is_null();
        let cell = if null { Cell::Null } else { cell(row, i, row.column(i).type_info().name()).map_err(db_error)? };
        cells.push(cell);
    }
    Ok(Row::new(columns, cells))
}

a2_store_sql::sqlx_link!(Postgres, PgConnection);

/// A pooled connection for statements that run alone (autocommit when
/// direct): each one gets a transaction of its own, begun with the pool's
/// settings, since a pooler gives settings, and the two halves of sqlx's
/// extended-protocol exchange, only as long as a transaction lasts.
pub(crate) struct EachStatement {
    pub conn: sqlx::pool::PoolConnection<Postgres>,
    pub begin: std::borrow::Cow<'static, str>,
}

impl EachStatement {
    async fn begun(&mut self) -> Result<Link<sqlx::Transaction<'_, Postgres>>, a2_store::StoreError> {
        use sqlx::Connection as _;
        Ok(Link::unnamed(self.conn.begin_with(self.begin.clone()).await.map_err(db_error)?))
    }
}

#[async_trait::async_trait]
impl a2_store_sql::Conn for EachStatement {
    async fn fetch(&mut self, sql: &str, args: Vec<a2_store_sql::Arg>) -> Result<Vec<Row>, a2_store::StoreError> {
        let mut tx = self.begun().await?;
        let rows = tx.fetch(sql, args).await?;
        tx.conn.commit().await.map_err(db_error)?;
        Ok(rows)
    }

    async fn execute(&mut self, sql: &str, args: Vec<a2_store_sql::Arg>) -> Result<u64, a2_store::StoreError> {
        let mut tx = self.begun().await?;
        let changed = tx.execute(sql, args).await?;
        tx.conn.commit().await.map_err(db_error)?;
        Ok(changed)
    }
}
