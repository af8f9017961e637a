//! The action commands: redrive, jobs, consume, clear, pause, change ticks, the demo and reader grants.

use super::*;

impl Studio {
    pub async fn dead_letter_redrive(&self, request: Redrive) -> Result<Redriven, ApiError> {
        let redriven = self.operator()?.dead_letter_redrive(request).await?;
        self.bump();
        Ok(redriven)
    }

    /// Redrive a chosen list, one audit entry each; a target that fails counts as failed, the rest go on.
    pub async fn dead_letter_redrive_many(&self, request: RedriveMany) -> Result<JobProgress, ApiError> {
        let operator = self.writable_operator("redrive")?;
        // Every target is checked before the first is redriven: bad input changes nothing.
        let targets = request
            .targets
            .into_iter()
            .map(|target| {
                event_index(target.index, "the dead letter's index").map(|_| Redrive { target, action: request.action })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut progress = JobProgress { done: 0, total: targets.len() as u64, failed: 0 };
        for target in targets {
            match operator.dead_letter_redrive(target).await {
                Ok(Redriven { redriven: true }) => progress.done += 1,
                Ok(_) | Err(_) => progress.failed += 1,
            }
        }
        self.bump();
        Ok(progress)
    }

    pub async fn job_redrive_all(&self, request: RedriveAll) -> Result<JobView, ApiError> {
        let operator = self.writable_operator("redrive")?;
        // The job runs after this answer: what it would refuse is refused now.
        request.check()?;
        Ok(self.jobs.lock().map_err(lock_error)?.start(operator, request))
    }

    pub async fn job_get(&self, request: JobRef) -> Result<JobView, ApiError> {
        self.jobs.lock().map_err(lock_error)?.get(request.id)
    }

    pub async fn job_cancel(&self, request: JobRef) -> Result<JobView, ApiError> {
        self.jobs.lock().map_err(lock_error)?.cancel(request.id)
    }

    pub async fn consume_preview(&self, request: ConsumeRequest) -> Result<ConsumePreview, ApiError> {
        let plan = self.operator()?.consume_plan(&request.target()).await?;
        let (from_index, events) = (plan.from_index, plan.events);
        Ok(ConsumePreview { events, from_index, through_index: from_index + events.saturating_sub(1) })
    }

    pub async fn session_consume(&self, request: ConsumeRequest) -> Result<Consumed, ApiError> {
        let operator = self.operator()?;
        let export = match request.export_path.as_deref().filter(|p| !p.is_empty()) {
            Some(name) => Some(self.export_file(name)?),
            None => None,
        };
        let consumed = operator.session_consume(&request.target(), request.mode, export.as_deref()).await?;
        self.bump();
        Ok(consumed)
    }

    pub async fn session_clear(&self, request: ClearSession) -> Result<Cleared, ApiError> {
        let cleared = self.operator()?.session_clear(request).await?;
        self.bump();
        Ok(cleared)
    }

    pub async fn consumer_pause(&self, request: PauseRequest) -> Result<PausedConsumer, ApiError> {
        let target = ConsumerRef { contract: request.contract, consumer: request.consumer };
        let paused = self.operator()?.consumer_pause(&target, &request.reason).await?;
        self.bump();
        Ok(paused)
    }

    pub async fn consumer_resume(&self, request: ConsumerRef) -> Result<bool, ApiError> {
        let resumed = self.operator()?.consumer_resume(&request).await?;
        self.bump();
        Ok(resumed)
    }

    pub async fn consumer_pause_list(&self, request: PauseQuery) -> Result<Vec<PausedConsumer>, ApiError> {
        Ok(self.operator()?.consumer_pauses(request.contract.as_deref()).await?)
    }

    /// Where an export named `name` is written: a plain file name, inside
    /// the export directory (made for this user alone), never elsewhere.
    pub(crate) fn export_file(&self, name: &str) -> Result<PathBuf, ApiError> {
        let plain = Path::new(name).file_name().is_some_and(|f| f == std::ffi::OsStr::new(name));
        if !plain || name.starts_with('.') || name.contains(['/', '\\', ':']) {
            return Err(ApiError::invalid(format!(
                "an export is named by a plain file name, written in {}: not {name:?}",
                self.limits.export_dir.display()
            )));
        }
        let dir = &self.limits.export_dir;
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir).map_err(|e| ApiError::invalid(format!("cannot create {}: {e}", dir.display())))?;
        private_dir(dir)?;
        Ok(dir.join(name))
    }

    /// Returns when the store changed since `since`: at once on a Postgres
    /// notification (appends), else after a poll interval, since completions,
    /// redrives and clears by other processes send none.
    pub async fn change_wait(&self, request: ChangeWait) -> Result<ChangeTick, ApiError> {
        let live = self.open().map(|c| c.info.live).unwrap_or(false);
        let poll = if live { LIVE_POLL } else { POLL };
        let wait = Duration::from_millis(u64::from(request.timeout_ms.clamp(100, 60_000))).min(poll);
        let mut versions = self.versions.subscribe();
        let current = *versions.borrow_and_update();
        if current != request.since {
            return Ok(ChangeTick { version: current });
        }
        if tokio::time::timeout(wait, versions.changed()).await.is_err() {
            // Nothing announced: a poll, so whatever others changed shows too.
            self.bump();
        }
        Ok(ChangeTick { version: *self.versions.borrow() })
    }

    pub async fn demo_traffic(&self, request: DemoTraffic) -> Result<DemoTrafficState, ApiError> {
        self.open()?.demo_traffic(request.on)
    }

    pub async fn demo_seed(&self, request: DemoSeed) -> Result<DemoSeeded, ApiError> {
        let operator = self.writable_operator("demo")?;
        if !(0.0..=1.0).contains(&request.fail_rate) {
            return Err(ApiError::invalid(format!("the fail rate must be between 0 and 1, not {}", request.fail_rate)));
        }
        let options = DemoOptions {
            sessions: request.sessions as usize,
            seed: request.seed,
            fail_rate: request.fail_rate,
            bulk: request.bulk,
        };
        let mut events = operator.demo_seed(options).await?;
        if request.long_session > 0 {
            events += operator.demo_seed_long_session("long-00000", request.long_session).await?;
        }
        if request.long_history > 0 {
            events += operator.demo_seed_long_history("history-00000", request.long_history).await?;
        }
        self.bump();
        Ok(DemoSeeded { sessions: request.sessions, events })
    }

    pub async fn reader_role_grant(&self, request: ReaderGrant) -> Result<bool, ApiError> {
        self.operator()?.reader_role_grant(&request.role).await?;
        Ok(true)
    }
}

/// The export directory holds production data: one made here is this
/// user's alone (0700); one found is used only when it is a directory (a
/// symbolic link is not followed) of this user's that nobody else may read,
/// write or enter, rather than trusted as it is.
fn private_dir(dir: &Path) -> Result<(), ApiError> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| ApiError::invalid(format!("{}: {e}", dir.display())))?;
    if !meta.is_dir() {
        return Err(ApiError::invalid(format!(
            "{} is not a directory (a symbolic link is not followed): exports go only into a directory of this user's",
            dir.display()
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
        // SAFETY: geteuid takes nothing and cannot fail.
        let me = unsafe { libc::geteuid() };
        if me != meta.uid() {
            return Err(ApiError::invalid(format!(
                "{} belongs to another user (uid {}): exports go only into a directory of this user's",
                dir.display(),
                meta.uid()
            )));
        }
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(ApiError::invalid(format!(
                "{} is open to other users (mode {mode:03o}): exports hold production data; `chmod 700 {}` first",
                dir.display(),
                dir.display()
            )));
        }
    }
    Ok(())
}
