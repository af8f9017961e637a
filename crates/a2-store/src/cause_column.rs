//! How an event's provenance is kept in one JSON column by the SQL stores.

use serde::{Deserialize, Serialize};

use crate::{Cause, ScheduledBy};

/// What a SQL store keeps in an event's `cause` column: why the event exists,
/// a consumer's run, a scheduled delivery, or neither (an external append).
/// One JSON column, so older rows (a bare cause) read as they always did.
#[derive(Debug, Serialize)]
pub struct CauseColumn<'a> {
    #[serde(flatten)]
    pub cause: Option<&'a Cause>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduled_by: Option<&'a ScheduledBy>,
}

impl<'a> CauseColumn<'a> {
    /// The column of an event: `None` (SQL NULL) when nothing caused it.
    pub fn of(cause: Option<&'a Cause>, scheduled_by: Option<&'a ScheduledBy>) -> Option<Self> {
        (cause.is_some() || scheduled_by.is_some()).then_some(Self { cause, scheduled_by })
    }
}

/// A `cause` column read back: see [`CauseColumn`]. A cause that is there
/// but unreadable is an error, not "no cause".
#[derive(Debug, Default)]
pub struct StoredCause {
    pub cause: Option<Cause>,
    pub scheduled_by: Option<ScheduledBy>,
}

impl<'de> Deserialize<'de> for StoredCause {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut map = serde_json::Map::deserialize(deserializer)?;
        let scheduled_by =
            map.remove("scheduled_by").map(serde_json::from_value).transpose().map_err(D::Error::custom)?;
        let cause = match map.is_empty() {
            true => None,
            false => Some(serde_json::from_value(serde_json::Value::Object(map)).map_err(D::Error::custom)?),
        };
        Ok(Self { cause, scheduled_by })
    }
}

impl CauseColumn<'_> {
    /// The column's JSON, for a driver that binds a `Value`.
    pub fn json(
        cause: Option<&Cause>,
        scheduled_by: Option<&ScheduledBy>,
    ) -> Result<Option<serde_json::Value>, crate::StoreError> {
        CauseColumn::of(cause, scheduled_by)
            .map(|c| serde_json::to_value(&c))
            .transpose()
            .map_err(|e| crate::StoreError::invalid(format!("an event's cause cannot be stored: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cause() -> Cause {
        Cause { consumer: "mailer".into(), lane: None, index: 3, attempt: 2, batch_size: Some(2) }
    }

    fn read(text: &str) -> StoredCause {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn cause_column_round_trips_either_part() {
        let by = ScheduledBy { task: "t-1".into(), name: "reminder".into() };
        let c = cause();
        assert!(CauseColumn::of(None, None).is_none());
        for (cause, scheduled_by) in [(Some(&c), None), (None, Some(&by)), (Some(&c), Some(&by))] {
            let text = serde_json::to_string(&CauseColumn::of(cause, scheduled_by)).unwrap_or_default();
            let back = read(&text);
            assert_eq!(back.cause.as_ref(), cause, "{text}");
            assert_eq!(back.scheduled_by.as_ref(), scheduled_by, "{text}");
        }
    }

    #[test]
    fn an_unreadable_cause_is_an_error_not_no_cause() {
        let broken = serde_json::from_str::<StoredCause>(r#"{"consumer":"mailer","index":"three"}"#);
        assert!(broken.is_err(), "{broken:?}");
    }

    #[test]
    fn a_bare_cause_written_before_schedules_reads_as_before() {
        let back = read(r#"{"consumer":"mailer","lane":null,"index":3,"attempt":2,"batch_size":2}"#);
        assert_eq!(back.cause, Some(cause()));
        assert_eq!(back.scheduled_by, None);
    }
}
