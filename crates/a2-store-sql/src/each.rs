//! Statements over many rows: one list-bound statement where the database
//! has arrays, one statement over the rows as JSON where it has `json_each`,
//! else one statement per row, from the same row values.

use a2_store::StoreError;
use serde_json::Value;

use crate::conn::Conn;
use crate::statements::RowsStatement;
use crate::value::{Arg, Row};

/// One column of a batch as a list, every row holding the same kind of value.
macro_rules! list {
    ($cells:expr, $column:expr, $one:ident, $many:ident) => {
        Arg::$many(
            $cells
                .map(|cell| match cell {
                    Some(Arg::$one(value)) => Ok(value),
                    other => Err(mixed($column, other)),
                })
                .collect::<Result<_, _>>()?,
        )
    };
}

/// Columns of `rows` as lists, one [`Arg`] per column.
fn transpose(rows: &[Vec<Arg>]) -> Result<Vec<Arg>, StoreError> {
    let Some(first) = rows.first() else { return Ok(Vec::new()) };
    let mut columns = Vec::with_capacity(first.len());
    for (column, kind) in first.iter().enumerate() {
        let cells = rows.iter().map(|row| row.get(column).cloned());
        let list = match kind {
            Arg::Text(_) => list!(cells, column, Text, Texts),
            Arg::OptText(_) => list!(cells, column, OptText, OptTexts),
            Arg::Int(_) => list!(cells, column, Int, Ints),
            Arg::OptInt(_) => list!(cells, column, OptInt, OptInts),
            Arg::Json(_) => list!(cells, column, Json, Jsons),
            Arg::OptJson(_) => list!(cells, column, OptJson, OptJsons),
            other => return Err(mixed(column, Some(other.clone()))),
        };
        columns.push(list);
    }
    Ok(columns)
}

fn mixed(column: usize, got: Option<Arg>) -> StoreError {
    StoreError::invalid(format!("column {column} of a batch holds {got:?}, unlike its first row"))
}

/// The argument lists `each` runs with: one list-bound call, or one per row.
fn each_args(
    each: &RowsStatement,
    leading: &[Arg],
    rows: &[Vec<Arg>],
) -> Result<Vec<(&'static str, Vec<Arg>)>, StoreError> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    Ok(match *each {
        RowsStatement::Lists(sql) => vec![(sql, leading.iter().cloned().chain(transpose(rows)?).collect())],
        RowsStatement::PerRow(sql) => {
            rows.iter().map(|row| (sql, leading.iter().chain(row).cloned().collect())).collect()
        }
        RowsStatement::JsonRows(sql) => {
            let rows = rows.iter().map(|row| row.iter().map(cell_json).collect()).collect::<Result<Vec<_>, _>>()?;
            let rows = Value::Array(rows.into_iter().map(Value::Array).collect());
            vec![(sql, leading.iter().cloned().chain([Arg::Text(rows.to_string())]).collect())]
        }
    })
}

/// One row value as JSON, for [`RowsStatement::JsonRows`]. A JSON value travels as
/// its text (read with `->>`), so what is stored is serde_json's text to the
/// byte, not the database's rendering of it (number forms, escapes).
fn cell_json(arg: &Arg) -> Result<Value, StoreError> {
    Ok(match arg {
        Arg::Text(v) => Value::from(v.as_str()),
        Arg::OptText(v) => v.as_deref().map_or(Value::Null, Value::from),
        Arg::Int(v) => Value::from(*v),
        Arg::OptInt(v) => v.map_or(Value::Null, Value::from),
        Arg::Json(v) => Value::String(v.to_string()),
        Arg::OptJson(v) => v.as_ref().map_or(Value::Null, |v| Value::String(v.to_string())),
        list => return Err(StoreError::invalid(format!("a row value is a list ({list:?}), not one value"))),
    })
}

/// Run `each` over `rows` and gather what its calls return.
pub(crate) async fn run_each(
    conn: &mut dyn Conn,
    each: &RowsStatement,
    leading: &[Arg],
    rows: &[Vec<Arg>],
) -> Result<Vec<Row>, StoreError> {
    let mut returned = Vec::new();
    for (sql, args) in each_args(each, leading, rows)? {
        returned.extend(conn.fetch(sql, args).await?);
    }
    Ok(returned)
}
