//! The operator's actions: redrive (one, or all matching as a job), reader
//! grants, clear, consume and pause; each refused read-only and audited.

use std::io::Write;
use std::sync::Arc;

use a2_engine::{BoxError, Consumer, Contract, Server, Session};
use a2_store::*;
use serde_json::json;

use crate::*;

impl Operator {
    /// Retry or skip one dead letter; `redriven: false` when the head is not dead.
    pub async fn dead_letter_redrive(&self, redrive: Redrive) -> Result<Redriven> {
        let target = redrive.target.session_ref();
        let Redrive { target: DeadLetterRef { contract, session, consumer, index }, action } = redrive;
        let (contract, session) = (contract.as_str(), session.as_str());
        let name = match action {
            RedriveAction::Retry => "redrive.retry",
            RedriveAction::Skip => "redrive.skip",
        };
        self.writable(name)?;
        event_index(index, "the dead letter's index")?;
        if consumer.is_empty() {
            return Err(OperatorError::invalid("a redrive names the dead letter's consumer"));
        }
        self.session_get(&target).await?;
        let audit = self.entry(name, contract, session, json!({ "consumer": consumer, "index": index }));
        let params = DeadLetterRedrive { session: target.key()?, consumer, index, action, audit: Some(audit) };
        let (redriven, hosted) = self.redrive_committed(contract, session, params).await?;
        drain_after_answer(hosted.into_iter().collect());
        Ok(Redriven { redriven })
    }

    /// Redrive every dead letter matching the filter, as a job: `progress`
    /// hears after each one; `cancelled` stops it between two. Each redrive
    /// is audited in its own transaction as it happens (a crash mid-job
    /// leaves the record of what was done); a closing entry says how the job
    /// ended, failed included.
    pub async fn dead_letter_redrive_all(
        &self,
        job: RedriveAll,
        cancelled: impl Fn() -> bool,
        mut progress: impl FnMut(JobProgress),
    ) -> Result<JobProgress> {
        let action_name = match job.action {
            RedriveAction::Retry => "redrive.all.retry",
            RedriveAction::Skip => "redrive.all.skip",
        };
        self.writable(action_name)?;
        job.check()?;
        let job = RedriveAll { contract: non_empty(job.contract), consumer: non_empty(job.consumer), ..job };
        let mut state = JobProgress::default();
        let result = self.redrive_each(&job, action_name, &cancelled, &mut state, &mut progress).await;
        let mut entry = self.wide_entry(
            action_name,
            job.contract.as_deref(),
            json!({ "consumer": job.consumer, "stop_at": job.stop_at, "rate": job.rate }),
        );
        entry.outcome = match &result {
            Ok(()) => {
                json!({ "done": state.done, "total": state.total, "failed": state.failed, "cancelled": cancelled() })
            }
            Err(error) => json!({ "done": state.done, "total": state.total, "failed": state.failed,
                                  "error": { "code": error.code(), "message": error.to_string() } }),
        };
        let recorded = self.store().audit_append(entry).await;
        result?;
        recorded?;
        Ok(state)
    }

    /// Every redrive's one path: the engine's when this process hosts the
    /// contract, the store's otherwise; either way it returns once committed.
    /// A hosted session whose head was redriven comes back, for the caller to
    /// drain (the hosted server runs no background work in the Studio).
    async fn redrive_committed(
        &self,
        contract: &str,
        session_id: &str,
        params: DeadLetterRedrive,
    ) -> Result<(bool, Option<Session>)> {
        match (self.hosted.iter().find(|s| s.contract().name() == contract), params.audit) {
            (Some(server), Some(audit)) => {
                let session = server.session(session_id)?;
                let redriven = session.redrive_audited(&params.consumer, params.index, params.action, audit).await?;
                // A skip unblocks what waited behind the letter as a retry reruns it: both drain.
                Ok((redriven, redriven.then_some(session)))
            }
            (_, audit) => Ok((self.store().dead_letter_redrive(DeadLetterRedrive { audit, ..params }).await?, None)),
        }
    }

    async fn redrive_each(
        &self,
        job: &RedriveAll,
        action_name: &str,
        cancelled: &impl Fn() -> bool,
        state: &mut JobProgress,
        progress: &mut impl FnMut(JobProgress),
    ) -> Result<()> {
        let stop_at = job.stop_at.unwrap_or(u64::MAX);
        // The matching set as it stands now: later dead letters wait for the next job.
        let mut targets = Vec::new();
        let mut after = None;
        while (targets.len() as u64) < stop_at {
            let query = DeadLetterList {
                contract: job.contract.clone(),
                consumer: job.consumer.clone(),
                cause: job.cause.clone(),
                after: after.clone(),
                limit: MAX_PAGE,
                ..Default::default()
            };
            let page = self.store().dead_letter_list(query).await?;
            let Some(last) = page.last() else { break };
            after = Some(last.key());
            targets.extend(
                page.into_iter().take(usize::try_from(stop_at).unwrap_or(usize::MAX).saturating_sub(targets.len())),
            );
        }
        state.total = targets.len() as u64;
        progress(*state);
        let pause = job.rate.map(|r| std::time::Duration::from_secs_f64(1.0 / r));
        // Hosted sessions with redriven heads, each drained once when the job is done.
        let mut to_drain: Vec<Session> = Vec::new();
        for letter in targets {
            if cancelled() {
                break;
            }
            let contract = letter.contract.clone();
            let audit = self.entry(
                action_name,
                &contract,
                &letter.session_id,
                json!({ "consumer": letter.consumer, "index": letter.index, "job": true }),
            );
            let params = DeadLetterRedrive {
                session: letter.key().session,
                consumer: letter.consumer.clone(),
                index: letter.index,
                action: job.action,
                audit: Some(audit),
            };
            match self.redrive_committed(&contract, &letter.session_id, params).await {
                Ok((true, hosted)) => {
                    state.done += 1;
                    if let Some(session) = hosted.filter(|s| !to_drain.iter().any(|d: &Session| d.id() == s.id())) {
                        to_drain.push(session);
                    }
                }
                Ok((false, _)) => state.failed += 1,
                // A store that stopped answering ends the job; one letter's refusal does not.
                Err(error) if error.is_retryable() => {
                    drain_after_answer(to_drain);
                    return Err(error);
                }
                Err(_) => state.failed += 1,
            }
            progress(*state);
            if let Some(pause) = pause {
                tokio::time::sleep(pause).await;
            }
        }
        drain_after_answer(to_drain);
        Ok(())
    }

    /// Let a Postgres role read this store and nothing more: attached
    /// read-only with that role, the database itself refuses every write.
    pub async fn reader_role_grant(&self, role: &str) -> Result<()> {
        self.writable("grant.reader")?;
        let Some(opened) = self.attached.opened.as_ref().filter(|o| o.has_roles()) else {
            return Err(OperatorError::invalid("reader roles are a Postgres feature: this store is not Postgres"));
        };
        opened.reader_role_grant(role).await?;
        let mut entry = self.wide_entry("grant.reader", None, json!({ "role": role }));
        entry.outcome = json!({ "granted": true });
        self.store().audit_append(entry).await?;
        Ok(())
    }

    /// Clear a session through its head, only if the head is still `if_last_index` when given.
    pub async fn session_clear(&self, clear: ClearSession) -> Result<Cleared> {
        let target = SessionRef::new(&clear.contract, &clear.session);
        let if_last_index = clear.if_last_index;
        self.writable("clear")?;
        self.session_get(&target).await?;
        let audit =
            Some(self.entry("clear", &target.contract, &target.session, json!({ "if_last_index": if_last_index })));
        Ok(self
            .store()
            .session_clear(SessionClear { session: target.key()?, if_last_index, audit, settles: None })
            .await?)
    }

    /// How many events a consume through `through` would take.
    pub async fn consume_preview(&self, target: &ConsumeTarget) -> Result<u64> {
        Ok(self.consume_plan(target).await?.events)
    }

    /// Where a consume through `through` would start and how many events it would take.
    pub async fn consume_plan(&self, target: &ConsumeTarget) -> Result<ConsumePlan> {
        target.through.map(|t| event_index(t, "through")).transpose()?;
        let cursor = self.log_cursor(target).await?;
        let through = target.through.unwrap_or(cursor.session_head).min(cursor.session_head);
        Ok(ConsumePlan { from_index: cursor.next_index, events: (through + 1).saturating_sub(cursor.next_index) })
    }

    async fn log_cursor(&self, target: &ConsumeTarget) -> Result<HeadView> {
        let (session, consumer) = (target.session.as_str(), target.consumer.as_str());
        let heads = self.head_list(&target.session_ref()).await?;
        let Some(head) = heads.into_iter().find(|h| h.consumer == consumer) else {
            return Err(OperatorError::NotFound { what: format!("consumer '{consumer}' in session '{session}'") });
        };
        if head.kind != HeadKind::Log {
            return Err(OperatorError::invalid(format!(
                "consumer '{consumer}' has no string lane, so it has no position to consume through"
            )));
        }
        Ok(head)
    }

    /// Move a string-lane consumer through an index: with its own code where
    /// this process hosts its contract, by exporting each event, or by
    /// acknowledging them all in one store call.
    pub async fn session_consume(
        &self,
        target: &ConsumeTarget,
        mode: ConsumeMode,
        export_to: Option<&std::path::Path>,
    ) -> Result<Consumed> {
        target.through.map(|t| event_index(t, "through")).transpose()?;
        let ConsumeTarget { contract, session, consumer, through } = target;
        let (contract, session, consumer, through) = (contract.as_str(), session.as_str(), consumer.as_str(), *through);
        let action = match mode {
            ConsumeMode::Run => "consume.run",
            ConsumeMode::Ack => "consume.ack",
            ConsumeMode::Export => "consume.export",
        };
        self.writable(action)?;
        let cursor = self.log_cursor(target).await?;
        if mode == ConsumeMode::Ack {
            return self.cursor_ack(target, &cursor).await;
        }
        let parameters = json!({ "consumer": consumer, "through": through, "from": cursor.next_index });
        // A run or an export moves the cursor a head at a time (one transaction each), so it
        // is recorded before it starts and again when it ends, however it ends: a consume that
        // fails halfway has moved a production cursor, and the log says how far.
        let prepared = self.consume_prepare(target, mode, &cursor, export_to)?;
        self.store()
            .audit_append(self.entry(&format!("{action}.start"), contract, session, parameters.clone()))
            .await?;
        let result = match prepared {
            Prepared::Hosted(server, own) => match server.session(session) {
                Ok(hosted) => hosted.consume(&own, through).await.map_err(OperatorError::from),
                Err(error) => Err(error.into()),
            },
            Prepared::Export(operator) => self.consume_exporting(contract, session, &operator, through).await,
        };
        let mut entry = self.entry(action, contract, session, parameters);
        entry.outcome = match &result {
            Ok(index) => json!(Consumed { index: *index }),
            Err(error) => {
                // How far it got: the cursor as it stands now, if the store still answers.
                let reached = self.log_cursor(target).await.ok().map(|c| c.next_index.saturating_sub(1));
                json!({ "error": { "code": error.code(), "message": error.to_string() }, "reached": reached })
            }
        };
        let recorded = self.store().audit_append(entry).await;
        let index = result?;
        recorded?;
        Ok(Consumed { index })
    }

    /// What a run or an export consumes with, checked before anything is recorded or moved.
    fn consume_prepare(
        &self,
        target: &ConsumeTarget,
        mode: ConsumeMode,
        cursor: &HeadView,
        export_to: Option<&std::path::Path>,
    ) -> Result<Prepared> {
        let (contract, consumer) = (target.contract.as_str(), target.consumer.as_str());
        if mode == ConsumeMode::Run {
            let hosted = self.hosted.iter().find(|s| s.contract().name() == contract);
            let Some((server, own)) = hosted.and_then(|s| s.consumer(consumer).map(|c| (s, c))) else {
                return Err(OperatorError::invalid(format!(
                    "this process does not run consumer '{consumer}' of contract '{contract}': use ack or export"
                )));
            };
            return Ok(Prepared::Hosted(server.clone(), own));
        }
        let Some(path) = export_to else {
            return Err(OperatorError::invalid("export needs a file to write (--out)"));
        };
        let sink = Arc::new(std::sync::Mutex::new(
            export_file(path).map_err(|e| OperatorError::invalid(format!("cannot write {}: {e}", path.display())))?,
        ));
        let lane = cursor.lane.clone().unwrap_or_default();
        let operator = Consumer::builder(consumer).lane(lane).run(move |ctx| {
            let sink = sink.clone();
            async move {
                let line = serde_json::to_string(&ctx.event)?;
                let mut file = sink.lock().map_err(|_| "the export file lock was poisoned")?;
                writeln!(file, "{line}")?;
                file.flush()?;
                Ok::<(), BoxError>(())
            }
        })?;
        Ok(Prepared::Export(operator))
    }

    /// Consume with the exporting consumer, on a server of its own that runs nothing else.
    async fn consume_exporting(
        &self,
        contract: &str,
        session: &str,
        operator: &Consumer,
        through: Option<u64>,
    ) -> Result<u64> {
        let server =
            Server::builder(Contract::new(contract)?, self.attached.store.clone()).run_in_background(false).build()?;
        Ok(server.session(session)?.consume(operator, through).await?)
    }
}

/// A consume's means, made ready before the consume is recorded.
enum Prepared {
    /// The hosted server's own consumer runs the events.
    Hosted(Server, Consumer),
    /// Each event is written to the export file.
    Export(Consumer),
}

/// Drain hosted sessions whose heads were redriven, after the answer, one session
/// at a time, so a bulk redrive never starts a drain per letter.
fn drain_after_answer(sessions: Vec<Session>) {
    if sessions.is_empty() {
        return;
    }
    tokio::spawn(async move {
        for session in sessions {
            if let Err(error) = session.drain().await {
                tracing::warn!(code = error.code(), %error, "the drain after a redrive failed; the rescuer retries");
            }
        }
    });
}
