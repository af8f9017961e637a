//! Which running consumer waits in `consume` on which, per session: a wait
//! that would close a cycle would never end, so it is refused instead.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

type Waits = Arc<Mutex<HashMap<String, HashMap<String, String>>>>;

/// The waits of one server, shared by every run it hosts.
#[derive(Default, Clone)]
pub(crate) struct ConsumeWaits(Waits);

/// A run's wait in `consume`, recorded while it lasts. One that would close
/// a cycle is not recorded: it may only return what is already done.
pub(crate) struct ConsumeWait {
    waits: Waits,
    session: String,
    recorded: Option<String>,
    /// The waiter, when waiting would close a cycle.
    pub cycle: Option<String>,
}

impl ConsumeWaits {
    /// Record that `waiter` (a running consumer, if any) waits on `target`;
    /// checked and recorded under one lock, so two runs cannot both pass.
    pub fn record(&self, session_id: &str, waiter: Option<&str>, target: &str) -> ConsumeWait {
        let mut wait =
            ConsumeWait { waits: self.0.clone(), session: session_id.to_owned(), recorded: None, cycle: None };
        let Some(waiter) = waiter else { return wait };
        let mut all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let waits = all.entry(session_id.to_owned()).or_default();
        let mut next = Some(target.to_owned());
        while let Some(name) = next {
            if name == waiter {
                wait.cycle = Some(waiter.to_owned());
                return wait;
            }
            next = waits.get(&name).cloned();
        }
        waits.insert(waiter.to_owned(), target.to_owned());
        wait.recorded = Some(waiter.to_owned());
        wait
    }
}

impl Drop for ConsumeWait {
    fn drop(&mut self) {
        let Some(waiter) = self.recorded.take() else { return };
        let mut all = self.waits.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(waits) = all.get_mut(&self.session) {
            waits.remove(&waiter);
            if waits.is_empty() {
                all.remove(&self.session);
            }
        }
    }
}
