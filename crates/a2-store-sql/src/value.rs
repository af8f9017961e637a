//! Values crossing the SQL seam: what a statement is given ([`Arg`]) and
//! what a row holds ([`Row`]), so the shared layer never names a driver type.

use std::sync::Arc;

use a2_store::codec::{to_u32, to_u64};
use a2_store::StoreError;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A value bound to a statement's next parameter. Lists bind as arrays where
/// the database has them (Postgres) and as JSON text elsewhere (SQLite's
/// `json_each`); JSON binds as `jsonb` or as text.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    Text(String),
    OptText(Option<String>),
    Int(i64),
    OptInt(Option<i64>),
    Json(Value),
    OptJson(Option<Value>),
    Texts(Vec<String>),
    OptTexts(Vec<Option<String>>),
    Ints(Vec<i64>),
    OptInts(Vec<Option<i64>>),
    Jsons(Vec<Value>),
    OptJsons(Vec<Option<Value>>),
}

impl Arg {
    pub fn text(value: impl Into<String>) -> Self {
        Self::Text(value.into())
    }

    pub fn opt_text(value: Option<impl Into<String>>) -> Self {
        Self::OptText(value.map(Into::into))
    }

    pub fn texts<S: AsRef<str>>(values: impl IntoIterator<Item = S>) -> Self {
        Self::Texts(values.into_iter().map(|v| v.as_ref().to_owned()).collect())
    }

    /// A list as JSON text, for databases without arrays.
    pub fn list_as_json(&self) -> Option<String> {
        let value = match self {
            Self::Texts(v) => serde_json::to_value(v),
            Self::OptTexts(v) => serde_json::to_value(v),
            Self::Ints(v) => serde_json::to_value(v),
            Self::OptInts(v) => serde_json::to_value(v),
            Self::Jsons(v) => serde_json::to_value(v),
            Self::OptJsons(v) => serde_json::to_value(v),
            _ => return None,
        };
        value.ok().map(|v| v.to_string())
    }
}

/// One decoded column.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Bool(bool),
    Text(String),
    Json(Value),
}

/// A row, decoded by the backend into cells; the column names are shared by
/// every row of one result, not copied per row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    columns: Arc<[String]>,
    cells: Vec<Cell>,
}

fn missing(column: &str) -> StoreError {
    StoreError::Schema { message: format!("column {column:?} is missing from the result") }
}

fn wrong(column: &str, want: &str, got: &Cell) -> StoreError {
    StoreError::Schema { message: format!("column {column:?} holds {got:?}, not {want}") }
}

impl Row {
    /// `cells` in the order of `columns`.
    pub fn new(columns: Arc<[String]>, cells: Vec<Cell>) -> Self {
        Self { columns, cells }
    }

    fn cell(&self, column: &str) -> Result<&Cell, StoreError> {
        self.columns
            .iter()
            .position(|name| name == column)
            .and_then(|i| self.cells.get(i))
            .ok_or_else(|| missing(column))
    }

    pub fn opt_int(&self, column: &str) -> Result<Option<i64>, StoreError> {
        match self.cell(column)? {
            Cell::Null => Ok(None),
            Cell::Int(n) => Ok(Some(*n)),
            Cell::Bool(b) => Ok(Some(i64::from(*b))),
            other => Err(wrong(column, "an integer", other)),
        }
    }

    pub fn int(&self, column: &str) -> Result<i64, StoreError> {
        self.opt_int(column)?.ok_or_else(|| wrong(column, "an integer", &Cell::Null))
    }

    pub fn u64(&self, column: &str) -> Result<u64, StoreError> {
        Ok(to_u64(self.int(column)?))
    }

    pub fn u32(&self, column: &str) -> Result<u32, StoreError> {
        Ok(to_u32(self.int(column)?))
    }

    pub fn bool(&self, column: &str) -> Result<bool, StoreError> {
        match self.cell(column)? {
            Cell::Bool(b) => Ok(*b),
            Cell::Int(n) => Ok(*n != 0),
            other => Err(wrong(column, "a boolean", other)),
        }
    }

    pub fn opt_text(&self, column: &str) -> Result<Option<String>, StoreError> {
        match self.cell(column)? {
            Cell::Null => Ok(None),
            Cell::Text(text) => Ok(Some(text.clone())),
            other => Err(wrong(column, "text", other)),
        }
    }

    pub fn text(&self, column: &str) -> Result<String, StoreError> {
        self.opt_text(column)?.ok_or_else(|| wrong(column, "text", &Cell::Null))
    }

    /// A JSON column: `jsonb` where the database has it, JSON text elsewhere.
    pub fn opt_json<T: DeserializeOwned>(&self, column: &str) -> Result<Option<T>, StoreError> {
        let bad =
            |e: serde_json::Error| StoreError::Schema { message: format!("stored {column} is not what A2 wrote: {e}") };
        match self.cell(column)? {
            Cell::Null => Ok(None),
            Cell::Json(value) => serde_json::from_value(value.clone()).map(Some).map_err(bad),
            Cell::Text(text) => serde_json::from_str(text).map(Some).map_err(bad),
            other => Err(wrong(column, "JSON", other)),
        }
    }

    pub fn json<T: DeserializeOwned>(&self, column: &str) -> Result<T, StoreError> {
        self.opt_json(column)?.ok_or_else(|| wrong(column, "JSON", &Cell::Null))
    }
}
