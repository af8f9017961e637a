//! Background jobs (bulk redrive): started by one command, watched and
//! cancelled by others, so both transports need nothing but request/response.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use a2_operator::{JobProgress, Operator, RedriveAll};

use crate::ErrorCode;
use crate::{ApiError, JobView};

/// Jobs remembered at most, finished ones dropped oldest first.
const KEPT: usize = 64;

#[derive(Default)]
pub(crate) struct Jobs {
    next: u32,
    /// Started jobs by id, running or finished.
    running: HashMap<u32, Arc<Job>>,
}

struct Job {
    progress: Mutex<JobProgress>,
    cancelled: AtomicBool,
    outcome: Mutex<Option<Result<JobProgress, ApiError>>>,
}

impl Job {
    fn view(&self, id: u32) -> JobView {
        let progress = self.progress.lock().map(|p| *p).unwrap_or_default();
        let outcome = self.outcome.lock().ok().and_then(|o| o.clone());
        JobView {
            id,
            progress: match &outcome {
                Some(Ok(done)) => *done,
                _ => progress,
            },
            finished: outcome.is_some(),
            cancelled: self.cancelled.load(Ordering::Relaxed),
            error: outcome.and_then(Result::err),
        }
    }
}

impl Jobs {
    pub fn start(&mut self, operator: Operator, job: RedriveAll) -> JobView {
        // Finished jobs are kept for their last look, a bounded number of them.
        if self.running.len() >= KEPT {
            let mut finished: Vec<u32> = self
                .running
                .iter()
                .filter(|(_, job)| job.outcome.lock().is_ok_and(|o| o.is_some()))
                .map(|(id, _)| *id)
                .collect();
            finished.sort_unstable();
            let excess = self.running.len().saturating_sub(KEPT / 2);
            for id in finished.into_iter().take(excess) {
                self.running.remove(&id);
            }
        }
        self.next += 1;
        let id = self.next;
        let state = Arc::new(Job {
            progress: Mutex::new(JobProgress::default()),
            cancelled: AtomicBool::new(false),
            outcome: Mutex::new(None),
        });
        self.running.insert(id, state.clone());
        let task_state = state.clone();
        tokio::spawn(async move {
            let watched = task_state.clone();
            let result = operator
                .dead_letter_redrive_all(
                    job,
                    || watched.cancelled.load(Ordering::Relaxed),
                    |progress| {
                        if let Ok(mut kept) = watched.progress.lock() {
                            *kept = progress;
                        }
                    },
                )
                .await
                .map_err(ApiError::from);
            if let Ok(mut outcome) = task_state.outcome.lock() {
                *outcome = Some(result);
            }
        });
        state.view(id)
    }

    pub fn get(&self, id: u32) -> Result<JobView, ApiError> {
        self.running
            .get(&id)
            .map(|job| job.view(id))
            .ok_or_else(|| ApiError::new(ErrorCode::NotFound, format!("no job {id}")))
    }

    pub fn cancel(&self, id: u32) -> Result<JobView, ApiError> {
        let job = self.running.get(&id).ok_or_else(|| ApiError::new(ErrorCode::NotFound, format!("no job {id}")))?;
        job.cancelled.store(true, Ordering::Relaxed);
        Ok(job.view(id))
    }
}
