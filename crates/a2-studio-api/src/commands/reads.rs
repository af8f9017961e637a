//! The read commands: each hands its request to the operator, which checks it.

use super::*;

impl Studio {
    pub async fn contract_list(&self, _: NoArgs) -> Result<Vec<String>, ApiError> {
        Ok(self.operator()?.contract_list().await?)
    }

    pub async fn consumer_overview(&self, request: TotalsQuery) -> Result<TotalsSnapshot, ApiError> {
        Ok(self.operator()?.consumer_overview(request).await?)
    }

    pub async fn session_list(&self, request: SessionListRequest) -> Result<SessionPage, ApiError> {
        let operator = self.operator()?;
        let limit = request.limit;
        match request.sort {
            SessionSort::Id => {
                let query = SessionQuery {
                    contract: request.contract,
                    id_prefix: request.id_prefix.filter(|p| !p.is_empty()),
                    has_dead_letters: request.has_dead_letters,
                    lagging: request.lagging,
                    after: request.after,
                    limit,
                };
                let page = operator.session_list(query).await?;
                Ok(SessionPage { items: page.items, next: page.next })
            }
            SessionSort::Activity => {
                if request.id_prefix.as_deref().is_some_and(|p| !p.is_empty())
                    || request.has_dead_letters
                    || request.lagging
                {
                    return Err(ApiError::invalid("filters apply to the by-id order: sort by id to filter"));
                }
                let before = request.after.as_deref().map(str::parse::<ActivityCursor>).transpose()?;
                let page = operator
                    .session_list_by_activity(ActivityQuery { contract: request.contract, before, limit })
                    .await?;
                let next = page.next.as_ref().map(ActivityCursor::to_string);
                Ok(SessionPage { items: page.items, next })
            }
        }
    }

    pub async fn session_get(&self, request: SessionRef) -> Result<SessionSummary, ApiError> {
        Ok(self.operator()?.session_get(&request).await?)
    }

    pub async fn event_list(&self, request: EventQuery) -> Result<Vec<EventView>, ApiError> {
        let events = self.operator()?.event_list(request).await?;
        Ok(events.into_iter().map(EventView::from).collect())
    }

    pub async fn head_list(&self, request: SessionRef) -> Result<Vec<HeadView>, ApiError> {
        Ok(self.operator()?.head_list(&request).await?)
    }

    pub async fn dead_letter_list(&self, request: DeadLetterQuery) -> Result<DeadLetterPage, ApiError> {
        let operator = self.operator()?;
        let session = match (&request.contract, &request.session) {
            (Some(contract), Some(session)) => Some(a2_operator::key(contract, session)?),
            (None, Some(_)) => return Err(ApiError::invalid("a session is named within a contract")),
            _ => None,
        };
        let query = DeadLetterList {
            contract: request.contract,
            session,
            consumer: request.consumer,
            cause: request.cause,
            after: request.after,
            limit: request.limit,
        };
        let page = operator.dead_letter_list(query).await?;
        Ok(DeadLetterPage { items: page.items, next: page.next })
    }

    pub async fn dead_letter_groups(
        &self,
        request: DeadLetterGroupQuery,
    ) -> Result<Vec<a2_operator::model::DeadLetterGroup>, ApiError> {
        Ok(self.operator()?.dead_letter_groups(request.contract.filter(|c| !c.is_empty())).await?)
    }

    pub async fn attempt_rates(
        &self,
        request: ThroughputQuery,
    ) -> Result<Vec<a2_operator::model::AttemptRate>, ApiError> {
        let contract = request.contract.filter(|c| !c.is_empty());
        Ok(self.operator()?.attempt_rates(contract, request.minutes).await?)
    }

    pub async fn attempt_list(&self, request: AttemptQuery) -> Result<AttemptPage, ApiError> {
        let page = self.operator()?.attempt_list(request).await?;
        Ok(AttemptPage { items: page.items, next: page.next })
    }

    pub async fn snapshot_list(&self, request: SessionRef) -> Result<Vec<SnapshotView>, ApiError> {
        let snapshots = self.operator()?.snapshot_list(&request).await?;
        Ok(snapshots
            .into_iter()
            .map(|s| SnapshotView {
                state: json_text(&s.state),
                reducer: s.reducer,
                index: s.index,
                size_bytes: s.size_bytes,
                pins: s.pins,
                created_at: s.created_at,
            })
            .collect())
    }

    pub async fn audit_list(&self, request: AuditQuery) -> Result<Vec<AuditView>, ApiError> {
        let query = AuditList { before: request.before, limit: request.limit, action: None };
        let records = self.operator()?.audit_list(query).await?;
        Ok(records
            .into_iter()
            .map(|r| AuditView {
                id: r.id,
                at: r.entry.at,
                parameters: json_text(&r.entry.parameters),
                outcome: json_text(&r.entry.outcome),
                user: r.entry.user,
                host: r.entry.host,
                db_user: r.entry.db_user,
                action: r.entry.action,
                contract: r.entry.contract,
                session: r.entry.session_id,
            })
            .collect())
    }
}
