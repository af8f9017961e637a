//! The server as its runs see it: [`RunHost`] over the core, so a run can
//! append, read state and consume without the consumer module knowing the
//! server (the run holds the core as a trait object).

use a2_store::SessionKey;
use std::sync::Arc;

use a2_store::{Cause, Event, HeadRef, Store};
use tokio_util::sync::CancellationToken;

use crate::consumer::ScheduleWork;
use crate::consumer::{HostFuture, RunHost};
use crate::scheduler::ScheduleOrigin;
use crate::server_core::ServerCore;
use crate::signals::SessionSignals;
use crate::{AppendInput, Consumer, StateAt, Timing};

impl RunHost for ServerCore {
    fn store(&self) -> &Arc<dyn Store> {
        ServerCore::store(self)
    }

    fn key(&self, session_id: &str) -> SessionKey {
        ServerCore::key(self, session_id)
    }

    fn append<'a>(
        self: Arc<Self>,
        session_id: &'a str,
        events: Vec<AppendInput>,
        cause: Cause,
        id_for: Box<dyn Fn(usize) -> String + Send + Sync + 'a>,
    ) -> HostFuture<'a, Vec<Event>> {
        Box::pin(async move { ServerCore::append(&self, session_id, events, Some(cause), &*id_for).await })
    }

    fn state<'a>(
        self: Arc<Self>,
        session_id: &'a str,
        reducer: &'a str,
        through: Option<u64>,
        pin: Option<HeadRef>,
        origin: Option<u64>,
    ) -> HostFuture<'a, StateAt> {
        Box::pin(async move { ServerCore::state(&self, session_id, reducer, through, pin, origin).await })
    }

    fn consume<'a>(
        self: Arc<Self>,
        session_id: &'a str,
        consumer: &'a Consumer,
        through: Option<u64>,
        waiter: &'a str,
        cancel: Option<CancellationToken>,
    ) -> HostFuture<'a, u64> {
        Box::pin(
            async move { crate::consume::consume(&self, session_id, consumer, through, Some(waiter), cancel).await },
        )
    }

    fn signals(&self, key: SessionKey) -> SessionSignals {
        ServerCore::signals(self, key)
    }

    fn schedule<'a>(
        self: Arc<Self>,
        session_id: &'a str,
        name: &'a str,
        timing: Timing,
        work: ScheduleWork,
        origin: ScheduleOrigin,
    ) -> HostFuture<'a, String> {
        Box::pin(async move { ServerCore::schedule(&self, session_id, name, &timing, work, Some(&origin)).await })
    }

    fn set_presence<'a>(
        self: Arc<Self>,
        session_id: &'a str,
        patch: crate::PresencePatch,
        default_seen: u64,
    ) -> HostFuture<'a, ()> {
        Box::pin(async move { ServerCore::set_presence(&self, session_id, patch, default_seen).await })
    }

    fn presence<'a>(self: Arc<Self>, session_id: &'a str) -> HostFuture<'a, crate::PresenceMap> {
        Box::pin(async move { ServerCore::presence(&self, session_id).await })
    }
}
