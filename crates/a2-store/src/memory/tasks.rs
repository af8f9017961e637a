//! The memory store's scheduled tasks: one map under its own lock, each
//! call atomic the way a SQL transaction is.

use std::collections::BTreeMap;

use crate::store::page_size;
use crate::tasks::*;
use crate::types::Millis;

/// Tasks by id.
#[derive(Debug, Default)]
pub(super) struct Tasks(BTreeMap<String, ScheduledTask>);

impl Tasks {
    pub(super) fn schedule(&mut self, params: TaskSchedule, now: Millis) -> bool {
        if self.0.contains_key(&params.id) {
            return false;
        }
        let (contract, session_id) = crate::split_session_key(&params.session);
        let task = ScheduledTask {
            id: params.id.clone(),
            contract: contract.to_owned(),
            session_id: session_id.to_owned(),
            name: params.name,
            due_at: params.due_at,
            work: params.work,
            trigger: params.trigger,
            created_at: now,
            attempts: 0,
            lease_holder: None,
            lease_expires_at: None,
            last_error: None,
        };
        self.0.insert(params.id, task);
        true
    }

    pub(super) fn claim(&mut self, params: &TaskClaim, now: Millis) -> Vec<ScheduledTask> {
        let mut due: Vec<&mut ScheduledTask> = self
            .0
            .values_mut()
            .filter(|t| t.claimable(now) && params.contract == t.contract)
            .filter(|t| params.only.as_ref().is_none_or(|id| *id == t.id))
            .collect();
        due.sort_by(|a, b| (a.due_at, &a.id).cmp(&(b.due_at, &b.id)));
        due.into_iter()
            .take(page_size(params.limit))
            .map(|task| {
                task.attempts += 1;
                task.lease_holder = Some(params.holder.clone());
                task.lease_expires_at = Some(now + params.ttl_ms);
                task.clone()
            })
            .collect()
    }

    pub(super) fn finish(&mut self, params: TaskFinish) -> bool {
        let Some(task) = self.0.get_mut(&params.id) else { return false };
        if task.lease_holder.as_deref() != Some(params.holder.as_str()) {
            return false;
        }
        match params.outcome {
            TaskOutcome::Delivered => {
                self.0.remove(&params.id);
            }
            TaskOutcome::Failed { error, retry_at } => {
                task.last_error = Some(error);
                task.due_at = retry_at;
                task.lease_holder = None;
                task.lease_expires_at = None;
            }
        }
        true
    }

    /// Delete a task its holder still holds; `false` when it does not.
    pub(super) fn settle(&mut self, held: &TaskHeld) -> bool {
        let holds = self.0.get(&held.id).is_some_and(|t| t.lease_holder.as_deref() == Some(held.holder.as_str()));
        if holds {
            self.0.remove(&held.id);
        }
        holds
    }

    pub(super) fn list(&self, params: &TaskList) -> Vec<ScheduledTask> {
        let mut tasks: Vec<&ScheduledTask> = self
            .0
            .values()
            .filter(|t| params.contract.as_ref().is_none_or(|c| *c == t.contract))
            .filter(|t| {
                params
                    .session
                    .as_ref()
                    .is_none_or(|s| crate::split_session_key(s) == (t.contract.as_str(), t.session_id.as_str()))
            })
            .filter(|t| params.after.as_ref().is_none_or(|(at, id)| (t.due_at, &t.id) > (*at, id)))
            .collect();
        tasks.sort_by(|a, b| (a.due_at, &a.id).cmp(&(b.due_at, &b.id)));
        tasks.into_iter().take(page_size(params.limit)).cloned().collect()
    }

    pub(super) fn cancel(&mut self, id: &str, now: Millis) -> Option<ScheduledTask> {
        // A task a live delivery holds may already be half delivered: it is not cancelled.
        if self.0.get(id)?.lease_expires_at.is_some_and(|until| until > now) {
            return None;
        }
        self.0.remove(id)
    }

    pub(super) fn hasten(&mut self, id: &str, now: Millis) -> Option<ScheduledTask> {
        let task = self.0.get_mut(id)?;
        task.due_at = task.due_at.min(now);
        Some(task.clone())
    }
}
