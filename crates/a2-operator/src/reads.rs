//! The operator's reads: contracts, sessions, events, heads, totals, dead
//! letters, attempts, snapshots and the audit log; none writes.

use a2_store::*;

use crate::*;

/// Kept figures refreshed within this are being kept by a running server
/// (it refreshes every few seconds); older, nobody is refreshing them.
pub const KEPT_FRESH_MS: i64 = 30_000;

impl Operator {
    pub async fn contract_list(&self) -> Result<Vec<String>> {
        Ok(self.store().contract_list().await?)
    }

    /// Sessions of a contract by id; filters read on until the page fills
    /// (at most ten store pages, so a filter that matches little stays cheap).
    pub async fn session_list(&self, query: SessionQuery) -> Result<Page<SessionSummary, String>> {
        let limit = page_limit(query.limit)? as usize;
        // Unfiltered, a store page is the page; filtered, read wider pages to fill it.
        let filtered = query.has_dead_letters || query.lagging;
        let fetch = if filtered { MAX_PAGE } else { limit as u32 };
        let mut items = Vec::new();
        let mut after = query.after.clone();
        for _ in 0..10 {
            let page = self
                .store()
                .session_list(SessionList {
                    contract: query.contract.clone(),
                    id_prefix: query.id_prefix.clone(),
                    after: after.clone(),
                    limit: fetch,
                })
                .await?;
            let full = page.len() == fetch as usize;
            for summary in page {
                after = Some(summary.session_id.clone());
                if (query.has_dead_letters && summary.dead_letters == 0) || (query.lagging && summary.lag == 0) {
                    continue;
                }
                items.push(summary);
                if items.len() == limit {
                    return Ok(Page { next: after, items });
                }
            }
            if !full {
                return Ok(Page { items, next: None });
            }
        }
        Ok(Page { items, next: after })
    }

    /// Sessions of a contract, most recently active first (appends, clears and redrives count).
    pub async fn session_list_by_activity(&self, query: ActivityQuery) -> Result<Page<SessionSummary, ActivityCursor>> {
        let limit = page_limit(query.limit)?;
        let before = query.before.map(|c| (c.at, c.session));
        let params = SessionsByActivity { contract: query.contract, before, limit };
        let items = self.store().session_list_by_activity(params).await?;
        let next = (items.len() == limit as usize)
            .then(|| items.last().map(|s| ActivityCursor { at: s.updated_at, session: s.session_id.clone() }))
            .flatten();
        Ok(Page { items, next })
    }

    pub async fn session_get(&self, target: &SessionRef) -> Result<SessionSummary> {
        let SessionRef { contract, session } = target;
        self.store()
            .session_get(&target.key()?)
            .await?
            .ok_or_else(|| OperatorError::NotFound { what: format!("session '{session}' of contract '{contract}'") })
    }

    pub async fn event_list(&self, query: EventQuery) -> Result<Vec<Event>> {
        let target = query.session_ref();
        let EventQuery { session, after, before, newest_first, limit, .. } = query;
        let limit = page_limit(limit)?;
        self.session_get(&target).await?;
        let mut events =
            self.store().event_list(EventList { session: target.key()?, after, before, limit, newest_first }).await?;
        for event in &mut events {
            event.session.clone_from(&session);
        }
        Ok(events)
    }

    pub async fn head_list(&self, session: &SessionRef) -> Result<Vec<HeadView>> {
        let now = self.now();
        let heads = self.store().head_list(&session.key()?).await?;
        self.exists_if_empty(&heads, session).await?;
        Ok(heads.into_iter().map(|h| HeadView::from_info(h, now)).collect())
    }

    /// Consumer totals computed now: a pass over every cursor (seconds on a big store).
    pub async fn consumer_totals(&self, contract: Option<&str>) -> Result<Vec<ConsumerTotal>> {
        Ok(self.store().consumer_totals(contract).await?)
    }

    /// Consumer totals: the kept ones when fresh enough; on a read-write
    /// connection, else refreshed (and kept). A read-only connection (a
    /// replica too) never computes them unless `live` is asked: an inspection
    /// tool left open on production must not be a load on it.
    pub async fn consumer_overview(&self, query: TotalsQuery) -> Result<TotalsSnapshot> {
        let contract = query.contract.as_deref().filter(|c| !c.is_empty());
        let max_age_ms = i64::from(query.max_age_ms);
        let now = self.now();
        if query.recompute {
            self.writable("recomputing the kept totals")?;
            let full = TotalsRefresh { contract: contract.map(str::to_owned), full: true, ..TotalsRefresh::default() };
            let mut fresh = self.store().consumer_totals_refresh(full).await?.snapshot;
            fresh.totals.retain(|t| contract.is_none_or(|c| c == t.contract));
            return self.catalogued(TotalsSnapshot { origin: TotalsOrigin::Live, ..fresh }, contract).await;
        }
        let kept = self.store().consumer_totals_snapshot(contract).await?;
        let snapshot = match kept {
            Some(kept) if !query.live && (now - kept.computed_at <= max_age_ms || self.is_read_only()) => kept,
            None if !query.live && self.is_read_only() => TotalsSnapshot {
                computed_at: now,
                totals: Vec::new(),
                catalog: Vec::new(),
                origin: TotalsOrigin::Missing,
                refreshed_by: Vec::new(),
            },
            _ if self.is_read_only() => TotalsSnapshot {
                computed_at: now,
                totals: self.store().consumer_totals(contract).await?,
                catalog: Vec::new(),
                origin: TotalsOrigin::Live,
                refreshed_by: Vec::new(),
            },
            _ => {
                let refresh = TotalsRefresh { contract: contract.map(str::to_owned), ..TotalsRefresh::default() };
                let mut fresh = self.store().consumer_totals_refresh(refresh).await?.snapshot;
                fresh.totals.retain(|t| contract.is_none_or(|c| c == t.contract));
                TotalsSnapshot { origin: TotalsOrigin::Live, ..fresh }
            }
        };
        self.catalogued(snapshot, contract).await
    }

    /// The totals with every consumer the kept servers declare: one with no
    /// heads (caught up, or never fed) gets a row of zeros, and each says who
    /// serves it. When the registry cannot be read, the totals say nothing of
    /// who serves (`served: None`) rather than "nobody".
    async fn catalogued(&self, mut snapshot: TotalsSnapshot, contract: Option<&str>) -> Result<TotalsSnapshot> {
        let servers = match self.store().server_list(ServerList { contract: contract.map(str::to_owned) }).await {
            Ok(servers) => servers,
            Err(error) => {
                tracing::warn!(code = error.code(), %error, "could not read the process registry");
                return Ok(snapshot);
            }
        };
        let catalog = consumer_catalog(&servers, self.now());
        // With no totals at all, a row of zeros would say "caught up": only the catalog is told.
        let idle_rows = if snapshot.origin == TotalsOrigin::Missing { &[][..] } else { &catalog[..] };
        for entry in idle_rows {
            let listed = |t: &ConsumerTotal| t.contract == entry.contract && t.consumer == entry.consumer.name;
            if !snapshot.totals.iter().any(listed) {
                snapshot.totals.push(ConsumerTotal {
                    contract: entry.contract.clone(),
                    consumer: entry.consumer.name.clone(),
                    sessions: 0,
                    lagging_sessions: 0,
                    total_lag: 0,
                    dead_letters: 0,
                    served: None,
                });
            }
        }
        snapshot.totals.sort_by(|a, b| (&a.contract, &a.consumer).cmp(&(&b.contract, &b.consumer)));
        for total in &mut snapshot.totals {
            total.served = Some(serving_of(total, &catalog));
        }
        snapshot.catalog = catalog;
        snapshot.refreshed_by = self.refreshers(&servers).await;
        Ok(snapshot)
    }

    /// The live leaders among `servers`: who refreshes the kept totals. A
    /// lease table that cannot be read names nobody (the age still tells).
    async fn refreshers(&self, servers: &[ServerRecord]) -> Vec<RefreshedBy> {
        let now = self.now();
        let leaders = match self.store().upkeep_leaders().await {
            Ok(leaders) => leaders,
            Err(error) => {
                tracing::warn!(code = error.code(), %error, "could not read who leads the upkeep");
                return Vec::new();
            }
        };
        let leading = |l: &UpkeepLeader| servers.iter().find(|s| s.id == l.owner && s.info.contract == l.scope);
        leaders
            .iter()
            .filter(|l| l.expires_at > now)
            .filter_map(|l| leading(l).filter(|s| s.is_live(now)))
            .map(|s| RefreshedBy {
                contract: s.info.contract.clone(),
                process: s.id.clone(),
                host: s.info.host.clone(),
                pid: s.info.pid,
                every_ms: s.info.totals_refresh_ms,
            })
            .collect()
    }

    /// What one process runs now: the heads its drains (and its scheduler)
    /// lease, read by its holder prefix; a page at most.
    pub async fn process_heads(&self, id: &str) -> Result<Vec<LeasedHead>> {
        if id.is_empty() || id.contains('/') {
            return Err(OperatorError::invalid(format!("{id:?} is not a process id (as a2 processes lists them)")));
        }
        let params = HeadsLeased { holder_prefix: format!("{id}/"), limit: MAX_PAGE };
        Ok(self.store().head_list_leased(params).await?)
    }

    /// The processes that serve (or lately served) this store, live first.
    pub async fn process_list(&self, contract: Option<&str>) -> Result<Vec<ProcessView>> {
        let now = self.now();
        let servers = self.store().server_list(ServerList { contract: contract.map(str::to_owned) }).await?;
        let leaders = self.store().upkeep_leaders().await?;
        let leads = |server: &ServerRecord| {
            leaders.iter().any(|l| l.scope == server.info.contract && l.owner == server.id && l.expires_at > now)
        };
        let mut views: Vec<ProcessView> = servers
            .into_iter()
            .map(|server| ProcessView { live: server.is_live(now), leads_upkeep: leads(&server), server })
            .collect();
        views.sort_by_key(|v| !v.live);
        Ok(views)
    }

    pub async fn dead_letter_list(&self, query: DeadLetterList) -> Result<Page<DeadLetter, HeadKey>> {
        let limit = page_limit(query.limit)?;
        let query = DeadLetterList { limit, consumer: non_empty(query.consumer), ..query };
        let items = self.store().dead_letter_list(query).await?;
        let next = (items.len() == limit as usize).then(|| items.last().map(DeadLetter::key)).flatten();
        Ok(Page { items, next })
    }

    /// A session's attempts: newest first (a head's history) or oldest first (its timeline).
    pub async fn attempt_list(&self, query: AttemptQuery) -> Result<Page<Attempt, AttemptKey>> {
        let session = query.session_ref();
        let AttemptQuery { consumer, index, after, oldest_first, limit, .. } = query;
        let limit = page_limit(limit)?;
        let consumer = non_empty(consumer);
        let params = AttemptList { session: session.key()?, consumer, index, after, oldest_first, limit };
        let items = self.store().attempt_list(params).await?;
        self.exists_if_empty(&items, &session).await?;
        let next = (items.len() == limit as usize).then(|| items.last().map(Attempt::key)).flatten();
        Ok(Page { items, next })
    }

    /// Each consumer's completions and failures per minute over the last `minutes`, from the attempt history.
    pub async fn attempt_rates(&self, contract: Option<String>, minutes: u32) -> Result<Vec<AttemptRate>> {
        if !(1..=24 * 60).contains(&minutes) {
            return Err(OperatorError::invalid(format!("minutes must be between 1 and 1440, not {minutes}")));
        }
        let since = self.now() - i64::from(minutes) * 60_000;
        // A read-only look, or one the upkeep leader keeps fresh, reads the kept minutes: never every run since.
        let kept = self.is_read_only() || self.totals_kept_fresh(contract.as_deref()).await?;
        Ok(self.store().attempt_rates(AttemptRates { contract, since, bucket_ms: 60_000, kept }).await?)
    }

    /// Some server refreshed the kept figures within [`KEPT_FRESH_MS`].
    async fn totals_kept_fresh(&self, contract: Option<&str>) -> Result<bool> {
        let kept = self.store().consumer_totals_snapshot(contract).await?;
        Ok(kept.is_some_and(|k| self.now() - k.computed_at <= KEPT_FRESH_MS))
    }

    /// Dead letters grouped by consumer and cause, largest group first.
    pub async fn dead_letter_groups(&self, contract: Option<String>) -> Result<Vec<DeadLetterGroup>> {
        Ok(self.store().dead_letter_groups(DeadLetterGroups { contract, ..DeadLetterGroups::default() }).await?)
    }

    pub async fn snapshot_list(&self, session: &SessionRef) -> Result<Vec<SnapshotInfo>> {
        let snapshots = self.store().snapshot_list(&session.key()?).await?;
        self.exists_if_empty(&snapshots, session).await?;
        Ok(snapshots)
    }

    /// An empty page may mean no such session: only then is the session looked up,
    /// so the common read costs one query, not two.
    pub(crate) async fn exists_if_empty<T>(&self, page: &[T], session: &SessionRef) -> Result<()> {
        if page.is_empty() {
            self.session_get(session).await?;
        }
        Ok(())
    }

    pub async fn audit_list(&self, query: AuditList) -> Result<Vec<AuditRecord>> {
        let query = AuditList { limit: page_limit(query.limit)?, ..query };
        Ok(self.store().audit_list(query).await?)
    }
}
