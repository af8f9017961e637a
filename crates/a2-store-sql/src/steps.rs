//! The steps several store operations share (a session's bounds, new
//! cursors, skipping untaken events, an append inside a transaction, writing
//! head states back, settling a head, the audit record): statements from the
//! backend, decisions from `a2_store::rules`, so every backend does them the same way.

use a2_store::codec::{kind_code, lane_column, target_kind, to_i64};
use a2_store::rules::{check_batch, check_origin, head_infos, plan_batch, BatchPlan, HeadState};
use a2_store::*;

use crate::conn::Conn;
use crate::each::run_each;
use crate::rows::{event, head_ref, head_row, head_state};
use crate::value::Arg;
use crate::{SqlBackend, SqlStore};

/// The arguments naming one head: (consumer, lane, idx).
fn head_args(head: &HeadRef) -> [Arg; 3] {
    [Arg::text(&head.consumer), Arg::text(lane_column(head.lane.as_deref())), Arg::Int(to_i64(head.index))]
}

pub(crate) fn session_head_args(key: &str, head: &HeadRef) -> Vec<Arg> {
    std::iter::once(Arg::text(key)).chain(head_args(head)).collect()
}

pub(crate) fn held_head_args(held: &HeldHead) -> Vec<Arg> {
    head_args(&held.head).into_iter().chain([Arg::Int(i64::from(held.attempt))]).collect()
}

/// The arguments of `claim_pick`: the candidates' filter, the lease it
/// gives, the heads this holder gave up (never picked again by it), and
/// what each log consumer takes (its cursor is leased in place only on those);
/// `alone`: the statement runs on its own and leases only a whole claim.
pub(crate) fn pick_args(params: &HeadClaim, names: Arg, through: Arg, now: Millis, alone: bool) -> Vec<Arg> {
    let excluded = &params.exclude;
    let mut args = vec![
        Arg::text(&params.session),
        names,
        through,
        Arg::Int(now),
        Arg::Int(i64::from(params.limit.max(1))),
        Arg::text(&params.holder),
        Arg::Int(now + params.ttl_ms),
        Arg::texts(excluded.iter().map(|h| h.consumer.as_str())),
        Arg::texts(excluded.iter().map(|h| lane_column(h.lane.as_deref()))),
        Arg::Ints(excluded.iter().map(|h| to_i64(h.index)).collect()),
    ];
    // What each log consumer takes: a row a type, or one row with no type for all of them.
    let (mut takers, mut lanes, mut types) = (Vec::new(), Vec::new(), Vec::new());
    for consumer in &params.consumers {
        let Some(log) = &consumer.log else { continue };
        let taken: Vec<Option<String>> = match &log.types {
            Some(types) => types.iter().cloned().map(Some).collect(),
            None => vec![None],
        };
        for taken in taken {
            takers.push(consumer.name.clone());
            lanes.push(log.lane.clone());
            types.push(taken);
        }
    }
    // The cursors the statement counts are those of the consumers in `takers`: one that takes no type is not one.
    let mut logs = takers.clone();
    logs.sort_unstable();
    logs.dedup();
    args.extend([Arg::Texts(takers), Arg::Texts(lanes), Arg::OptTexts(types)]);
    args.extend([Arg::Int(i64::from(alone)), Arg::Int(i64::try_from(logs.len()).unwrap_or(i64::MAX))]);
    args
}

impl<B: SqlBackend> SqlStore<B> {
    /// A session's heads as the Studio shows them, on `conn`.
    pub(crate) async fn heads_on(&self, conn: &mut dyn Conn, session: &str) -> Result<Vec<HeadInfo>, StoreError> {
        let rows = conn.fetch(self.sql().heads_of_session, vec![Arg::text(session)]).await?;
        let Some(first) = rows.first() else { return Ok(Vec::new()) };
        let head = first.u64("session_head")?;
        let rows = rows.iter().map(head_row).collect::<Result<Vec<_>, _>>()?;
        Ok(head_infos(session, head, rows))
    }

    /// `(head, clear_index)` of a session, if it exists.
    pub(crate) async fn session_row(&self, conn: &mut dyn Conn, key: &str) -> Result<Option<(u64, u64)>, StoreError> {
        let row = conn.fetch_optional(self.sql().session_row, vec![Arg::text(key)]).await?;
        row.map(|r| Ok((r.u64("head")?, r.u64("clear_index")?))).transpose()
    }

    /// Give log consumers without a cursor here one: after the head, or after
    /// the clear boundary when backfilling. Existing cursors are left alone.
    pub(crate) async fn ensure_cursors(
        &self,
        conn: &mut dyn Conn,
        key: &str,
        bounds: (u64, u64),
        consumers: &[StoreConsumer],
    ) -> Result<(), StoreError> {
        let mut rows = AppendRows::default();
        rows.push_cursors(key, bounds, consumers);
        let made = run_each(conn, &self.sql().cursors_ensure, &[], &rows.cursors).await?;
        // A new cursor (a backfill's, lagging) counts in the totals: stamp the session for the next refresh.
        if !made.is_empty() {
            conn.execute(self.sql().session_touch, vec![Arg::Int(self.now()), Arg::text(key)]).await?;
        }
        Ok(())
    }

    /// Move a cursor no live attempt holds past events its consumer does not
    /// take; a lapsed attempt on such an event is dropped with the move.
    pub(crate) async fn skip_untaken(
        &self,
        conn: &mut dyn Conn,
        key: &str,
        head: u64,
        consumer: &StoreConsumer,
        now: Millis,
    ) -> Result<(), StoreError> {
        let Some(LogSpec { types: Some(types), .. }) = &consumer.log else { return Ok(()) };
        let args = vec![
            Arg::text(key),
            Arg::text(&consumer.name),
            Arg::texts(types),
            Arg::Int(to_i64(head + 1)),
            Arg::Int(to_i64(head)),
            Arg::Int(now),
        ];
        // A move changes the cursor's lag: stamp the session so the next totals refresh folds it in.
        if conn.execute(self.sql().untaken_skip, args).await? > 0 {
            conn.execute(self.sql().session_touch, vec![Arg::Int(now), Arg::text(key)]).await?;
        }
        Ok(())
    }

    /// Append a batch inside `conn`'s transaction: all ids present is an
    /// idempotent no-op (`duplicate`), a mix of present and new is refused.
    /// The head it returns is the session's after the append, read under the
    /// session row's lock, so no second read of the row is needed.
    pub(crate) async fn append_in_tx(
        &self,
        conn: &mut dyn Conn,
        key: &str,
        events: Vec<NewEvent>,
        consumers: &[StoreConsumer],
        origin_index: Option<u64>,
        now: Millis,
    ) -> Result<Appended, StoreError> {
        check_batch(key, &events)?;
        if events.is_empty() {
            let head = self.session_row(conn, key).await?.map_or(0, |(h, _)| h);
            return Ok(Appended { head, events: Vec::new(), duplicate: false });
        }
        // Lock (creating if need be) the session row: appends to one session serialize here.
        let row = conn.fetch_one(self.sql().session_open, vec![Arg::text(key), Arg::Int(now)]).await?;
        let (head, clear) = (row.u64("head")?, row.u64("clear_index")?);
        check_origin(key, origin_index, clear)?;
        let ids: Vec<&str> = events.iter().map(|e| e.id.as_str()).collect();
        let present = conn.fetch(self.sql().events_by_ids, vec![Arg::text(key), Arg::texts(&ids)]).await?;
        let present: Vec<Event> = present.iter().map(|r| event(r, key, "")).collect::<Result<_, _>>()?;
        let present_ids: Vec<&str> = present.iter().map(|e| e.id.as_str()).collect();
        if plan_batch(key, &events, &present_ids)? == BatchPlan::AllPresent {
            let stored = ids.iter().filter_map(|id| present.iter().find(|e| e.id == *id).cloned()).collect();
            return Ok(Appended { head, events: stored, duplicate: true });
        }
        let mut rows = AppendRows::default();
        let appended = rows.push(key, (head, clear), events, consumers, now)?;
        rows.write(self, conn, now).await?;
        conn.execute(self.sql().session_advance, vec![Arg::Int(to_i64(appended.head)), Arg::Int(now), Arg::text(key)])
            .await?;
        Ok(appended)
    }

    /// Write back the states of many heads.
    pub(crate) async fn put_states(
        &self,
        conn: &mut dyn Conn,
        key: &str,
        heads: &[(HeadRef, HeadState)],
    ) -> Result<(), StoreError> {
        let rows: Vec<Vec<Arg>> = heads
            .iter()
            .map(|(head, s)| {
                head_args(head)
                    .into_iter()
                    .chain([
                        Arg::Int(i64::from(s.status.attempt_count)),
                        Arg::Int(i64::from(s.status.failure_count)),
                        Arg::OptText(s.status.last_error.clone()),
                        Arg::OptInt(s.status.failed_at),
                        Arg::OptText(s.status.lease_holder.clone()),
                        Arg::OptInt(s.status.lease_expires_at),
                        Arg::OptInt(s.status.next_attempt_at),
                        Arg::OptInt(s.attempt_started_at),
                        Arg::OptText(s.status.last_error.as_deref().map(error_cause)),
                    ])
                    .collect()
            })
            .collect();
        run_each(conn, &self.sql().head_states_put, &[Arg::text(key)], &rows).await?;
        Ok(())
    }

    /// A range goes on: a settled cursor's next position, up to `head`, is
    /// leased to `holder` as attempt 1 with the range's expiry, unless its
    /// consumer is paused. Whether it was.
    pub(crate) async fn lease_next(
        &self,
        conn: &mut dyn Conn,
        key: &str,
        settled: &HeadRef,
        ran: &HeadState,
        holder: &str,
        head: u64,
    ) -> Result<bool, StoreError> {
        let next = HeadRef { index: settled.index + 1, ..settled.clone() };
        let contract = a2_store::split_session_key(key).0;
        let pause = vec![Arg::text(contract), Arg::text(&next.consumer)];
        if next.index > head || conn.fetch_optional(self.sql().pause_get, pause).await?.is_some() {
            return Ok(false);
        }
        let mut state = HeadState::default();
        state.status.attempt_count = 1;
        state.status.lease_holder = Some(holder.to_owned());
        state.status.lease_expires_at = ran.status.lease_expires_at;
        state.attempt_started_at = Some(self.now());
        self.put_states(conn, key, &[(next, state)]).await?;
        Ok(true)
    }

    /// Lock a head row and return its kind and state.
    pub(crate) async fn lock_head(
        &self,
        conn: &mut dyn Conn,
        key: &str,
        head: &HeadRef,
    ) -> Result<Option<(i64, HeadState)>, StoreError> {
        let row = conn.fetch_optional(self.sql().head_lock, session_head_args(key, head)).await?;
        row.map(|r| Ok((r.int("kind")?, head_state(&r)?))).transpose()
    }

    /// Settle a head: move a cursor on, or drop a per-event head.
    pub(crate) async fn settle(
        &self,
        conn: &mut dyn Conn,
        key: &str,
        head: &HeadRef,
        kind: i64,
    ) -> Result<(), StoreError> {
        let sql = if kind == 0 { self.sql().cursor_settle } else { self.sql().event_head_settle };
        conn.execute(sql, session_head_args(key, head)).await?;
        Ok(())
    }

    pub(crate) async fn redrive_in(&self, conn: &mut dyn Conn, params: &DeadLetterRedrive) -> Result<bool, StoreError> {
        let key = params.session.as_str();
        let args = vec![Arg::text(key), Arg::text(&params.consumer), Arg::Int(to_i64(params.index))];
        let Some(row) = conn.fetch_optional(self.sql().dead_letter_lock, args).await? else { return Ok(false) };
        let head = head_ref(&row)?;
        match params.action {
            RedriveAction::Skip => self.settle(conn, key, &head, row.int("kind")?).await?,
            RedriveAction::Retry => {
                let mut state = head_state(&row)?;
                state.retry();
                self.put_states(conn, key, &[(head, state)]).await?;
            }
        }
        conn.execute(self.sql().session_touch, vec![Arg::Int(self.now()), Arg::text(key)]).await?;
        Ok(true)
    }

    pub(crate) async fn clear_in(&self, conn: &mut dyn Conn, params: &SessionClear) -> Result<Cleared, StoreError> {
        let key = Arg::text(&params.session);
        let Some(row) = conn.fetch_optional(self.sql().session_lock, vec![key.clone()]).await? else {
            return Ok(Cleared { cleared: params.if_last_index.is_none_or(|i| i == 0), index: 0 });
        };
        let head = row.u64("head")?;
        if params.if_last_index.is_some_and(|i| i != head) {
            return Ok(Cleared { cleared: false, index: head });
        }
        let boundary = Arg::Int(to_i64(head));
        let sql = self.sql();
        let now = Arg::Int(self.now());
        conn.execute(sql.attempts_cleared, vec![key.clone(), boundary.clone(), now]).await?;
        conn.execute(sql.clear_session, vec![boundary.clone(), Arg::Int(self.now()), key.clone()]).await?;
        conn.execute(sql.clear_cursors, vec![boundary.clone(), key.clone()]).await?;
        conn.execute(sql.clear_event_heads, vec![key.clone(), boundary]).await?;
        conn.execute(sql.clear_snapshots, vec![key]).await?;
        Ok(Cleared { cleared: true, index: head })
    }

    /// Record how attempts ended (see [`Statements::attempts_put`](crate::Statements)).
    pub(crate) async fn attempts_put(
        &self,
        conn: &mut dyn Conn,
        key: &str,
        attempts: &[Attempt],
    ) -> Result<(), StoreError> {
        let rows: Vec<Vec<Arg>> = attempts
            .iter()
            .map(|a| {
                let appended = (!a.appended.is_empty()).then(|| serde_json::json!(a.appended));
                vec![
                    Arg::text(&a.consumer),
                    Arg::text(lane_column(a.lane.as_deref())),
                    Arg::Int(to_i64(a.index)),
                    Arg::Int(i64::from(a.attempt)),
                    Arg::OptText(a.holder.clone()),
                    Arg::OptInt(a.started_at),
                    Arg::Int(a.ended_at),
                    Arg::Int(i64::from(a.outcome.code())),
                    Arg::OptText(a.error.clone()),
                    Arg::OptJson(appended),
                ]
            })
            .collect();
        run_each(conn, &self.sql().attempts_put, &[Arg::text(key)], &rows).await?;
        Ok(())
    }

    /// Record an action's audit entry, if it has one, with its outcome, in
    /// the action's own transaction: the action and its record commit
    /// together, or neither does.
    pub(crate) async fn audit_in(
        &self,
        conn: &mut dyn Conn,
        audit: Option<AuditEntry>,
        outcome: serde_json::Value,
    ) -> Result<(), StoreError> {
        if let Some(mut entry) = audit {
            entry.outcome = outcome;
            self.audit_insert(conn, &entry).await?;
        }
        Ok(())
    }

    /// Write an audit entry inside the caller's transaction.
    pub(crate) async fn audit_insert(&self, conn: &mut dyn Conn, entry: &AuditEntry) -> Result<u64, StoreError> {
        let args = vec![
            Arg::Int(entry.at),
            Arg::text(&entry.user),
            Arg::text(&entry.host),
            Arg::text(&entry.action),
            Arg::OptText(entry.contract.clone()),
            Arg::OptText(entry.session_id.clone()),
            Arg::Json(entry.parameters.clone()),
            Arg::Json(entry.outcome.clone()),
            Arg::OptText(entry.db_user.clone()),
        ];
        conn.fetch_one(self.sql().audit_insert, args).await?.u64("id")
    }
}

/// The rows appends write (events, their heads, new log cursors), each naming
/// its session, so one statement of each kind serves the appends of many sessions.
#[derive(Default)]
pub(crate) struct AppendRows {
    events: Vec<Vec<Arg>>,
    heads: Vec<Vec<Arg>>,
    cursors: Vec<Vec<Arg>>,
}

impl AppendRows {
    /// The rows of `events` appended to `key` after its head (`bounds` is the
    /// session's (head, clear index) before the append); the append as stored.
    pub(crate) fn push(
        &mut self,
        key: &str,
        bounds: (u64, u64),
        events: Vec<NewEvent>,
        consumers: &[StoreConsumer],
        now: Millis,
    ) -> Result<Appended, StoreError> {
        self.push_cursors(key, bounds, consumers);
        let head = bounds.0;
        let mut stored = Vec::with_capacity(events.len());
        for (offset, new) in events.into_iter().enumerate() {
            let index = head + 1 + offset as u64;
            for target in &new.targets {
                self.heads.push(vec![
                    Arg::text(key),
                    Arg::text(&target.consumer),
                    Arg::text(lane_column(target.lane.as_deref())),
                    Arg::Int(to_i64(index)),
                    Arg::Int(i64::from(kind_code(target_kind(target.lane.as_deref())))),
                ]);
            }
            let cause = CauseColumn::json(new.cause.as_ref(), new.scheduled_by.as_ref())?;
            self.events.push(vec![
                Arg::text(key),
                Arg::Int(to_i64(index)),
                Arg::text(&new.id),
                Arg::text(&new.event_type),
                Arg::Json(new.payload.clone()),
                Arg::OptJson(cause),
            ]);
            stored.push(Event {
                id: new.id,
                event_type: new.event_type,
                payload: new.payload,
                index,
                session: key.to_owned(),
                created_at: now,
                cause: new.cause,
                scheduled_by: new.scheduled_by,
            });
        }
        Ok(Appended { head: head + stored.len() as u64, events: stored, duplicate: false })
    }

    /// A cursor for each log consumer of `key`, where it has none: after the
    /// head, or after the clear boundary when backfilling.
    fn push_cursors(&mut self, key: &str, (head, clear): (u64, u64), consumers: &[StoreConsumer]) {
        for (consumer, log) in consumers.iter().filter_map(|c| c.log.as_ref().map(|log| (c, log))) {
            let next = if log.backfill { clear + 1 } else { head + 1 };
            self.cursors.push(vec![
                Arg::text(key),
                Arg::text(&consumer.name),
                Arg::text(&log.lane),
                Arg::Int(to_i64(next)),
            ]);
        }
    }

    /// Write the rows: one statement of each kind (or one a row, as the backend runs them).
    pub(crate) async fn write<B: SqlBackend>(
        self,
        store: &SqlStore<B>,
        conn: &mut dyn Conn,
        now: Millis,
    ) -> Result<(), StoreError> {
        let sql = store.sql();
        run_each(conn, &sql.events_insert, &[Arg::Int(now)], &self.events).await?;
        run_each(conn, &sql.event_heads_insert, &[], &self.heads).await?;
        run_each(conn, &sql.cursors_ensure, &[], &self.cursors).await?;
        Ok(())
    }
}
