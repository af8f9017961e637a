//! Search, written once for both SQL backends: a page of session keys, then
//! one statement for the first match of each (a window over that key range
//! only), so every call is bounded by the sessions it looks at.

use a2_store::codec::{prefix_range, to_i64};
use a2_store::search::{containment_leaves, scan_size};
use a2_store::*;
use serde_json::Value;

use crate::rows::event;
use crate::statements::PayloadBinding;
use crate::value::Arg;
use crate::{SqlBackend, SqlStore};

impl<B: SqlBackend> SqlStore<B> {
    /// The payload pattern as this backend's statements take it.
    fn payload_arg(&self, filter: &EventMatch) -> Result<Arg, StoreError> {
        filter.check()?;
        let Some(pattern) = &filter.payload else { return Ok(Arg::OptJson(None)) };
        Ok(match self.sql().payload_binding {
            PayloadBinding::Document => Arg::OptJson(Some(pattern.clone())),
            PayloadBinding::Leaves => {
                let leaves = containment_leaves(pattern)?;
                Arg::OptJson(Some(Value::Array(
                    leaves.into_iter().map(|(path, value)| Value::Array(vec![Value::String(path), value])).collect(),
                )))
            }
        })
    }

    pub(crate) async fn search_sessions(&self, params: SessionSearch) -> Result<SessionSearchPage, StoreError> {
        let payload = self.payload_arg(&params.filter)?;
        let (lo, hi) = prefix_range(&session_key(&params.contract, ""));
        let after = params.after.as_deref().map(|a| session_key(&params.contract, a)).unwrap_or_default();
        let scan = scan_size(params.scan);
        let mut conn = self.backend.read().await?;
        let page = vec![Arg::Text(lo), Arg::Text(hi), Arg::Text(after.into()), Arg::Int(i64::from(scan))];
        let keys: Vec<String> = conn
            .fetch(self.sql().search_sessions, page)
            .await?
            .iter()
            .map(|r| r.text("session"))
            .collect::<Result<_, _>>()?;
        let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
            return Ok(SessionSearchPage::default());
        };
        let args = vec![
            Arg::text(first),
            Arg::text(last),
            payload,
            Arg::OptText(params.filter.event_type.clone()),
            Arg::OptText(params.filter.event_id.clone()),
        ];
        let rows = conn.fetch(self.sql().search_matches, args).await?;
        let found = rows
            .iter()
            .map(|row| {
                let key = row.text("session")?;
                let session_id = split_session_key(&key).1.to_owned();
                Ok(SessionMatch { first: event(row, &key, "")?, matches: row.u64("matches")?, session_id })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let full = keys.len() >= scan as usize;
        Ok(SessionSearchPage {
            found,
            scanned: keys.len() as u64,
            scanned_through: full.then(|| split_session_key(last).1.to_owned()),
        })
    }

    pub(crate) async fn filter_events(&self, params: EventFilter) -> Result<EventFilterPage, StoreError> {
        let payload = self.payload_arg(&params.filter)?;
        let key = Arg::text(&params.session);
        let after = Arg::Int(to_i64(params.after.unwrap_or(0)));
        let scan = scan_size(params.scan);
        let mut conn = self.backend.read().await?;
        let chunk = conn
            .fetch_one(self.sql().filter_chunk, vec![key.clone(), after.clone(), Arg::Int(i64::from(scan))])
            .await?;
        let Some(last) = chunk.opt_int("last")? else { return Ok(EventFilterPage::default()) };
        let args = vec![
            key,
            after,
            Arg::Int(last),
            payload,
            Arg::OptText(params.filter.event_type.clone()),
            Arg::OptText(params.filter.event_id.clone()),
        ];
        let rows = conn.fetch(self.sql().filter_events, args).await?;
        let events = rows.iter().map(|r| event(r, &params.session, "")).collect::<Result<Vec<_>, _>>()?;
        let full = chunk.u64("looked")? >= u64::from(scan);
        Ok(EventFilterPage { events, scanned_through: full.then(|| u64::try_from(last).unwrap_or(0)) })
    }
}
