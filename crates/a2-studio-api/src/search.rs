//! Search commands: each call is one bounded store call, so the UI walks a
//! search page by page, shows how far it got, and stops when asked.

use a2_operator::model::EventMatch;
use a2_operator::{path_pattern, SearchQuery};

use crate::*;

/// Sessions a search call looks at unless asked otherwise.
const SEARCH_SCAN: u32 = 500;
/// Events a session filter call looks at unless asked otherwise.
const FILTER_SCAN: u32 = 1_000;

fn payload_of(text: Option<&str>) -> Result<Option<serde_json::Value>, ApiError> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else { return Ok(None) };
    serde_json::from_str(text)
        .map(Some)
        .map_err(|e| ApiError::invalid(format!("the payload pattern is not JSON ({e}): {text}")))
}

fn given(text: Option<String>) -> Option<String> {
    text.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty())
}

impl Studio {
    pub async fn session_search(&self, request: SearchRequest) -> Result<SearchPage, ApiError> {
        let operator = self.operator()?;
        let filter = EventMatch {
            payload: payload_of(request.payload.as_deref())?,
            event_type: given(request.event_type),
            event_id: given(request.event_id),
        };
        let total = match request.after {
            None => Some(operator.session_count(&request.contract).await?),
            Some(_) => None,
        };
        let query = SearchQuery {
            contract: request.contract,
            filter,
            after: request.after,
            scan: request.scan.unwrap_or(SEARCH_SCAN),
        };
        let page = operator.session_search(query).await?;
        let found = page
            .found
            .into_iter()
            .map(|m| SearchHit { session: m.session_id, matches: m.matches, first: EventView::from(m.first) })
            .collect();
        Ok(SearchPage { found, scanned: page.scanned, scanned_through: page.scanned_through, total })
    }

    pub async fn event_filter(&self, request: EventFilterRequest) -> Result<EventFilterView, ApiError> {
        let payload = match (payload_of(request.payload.as_deref())?, given(request.path)) {
            (Some(_), Some(_)) => return Err(ApiError::invalid("filter by a payload pattern or by a path, not both")),
            (Some(pattern), None) => Some(pattern),
            (None, Some(path)) => Some(path_pattern(&path)?),
            (None, None) => None,
        };
        let filter = EventMatch { payload, event_type: given(request.event_type), event_id: None };
        let target = a2_operator::SessionRef::new(request.contract, request.session);
        let page =
            self.operator()?.event_filter(&target, filter, request.after, request.scan.unwrap_or(FILTER_SCAN)).await?;
        Ok(EventFilterView {
            events: page.events.into_iter().map(EventView::from).collect(),
            scanned_through: page.scanned_through,
        })
    }

    /// Index event payloads (Postgres) so payload searches are answered from the index.
    pub async fn payload_index(&self, _: NoArgs) -> Result<bool, ApiError> {
        Ok(self.operator()?.payload_index().await?)
    }
}
