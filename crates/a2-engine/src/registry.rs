//! This server's row in the store's process registry: written when its
//! background starts, refreshed every `DrainTimings::server_beat`, deleted on
//! a clean shutdown. A beat that fails is logged and tried again at the next
//! one: the registry tells operators who serves what; it never stops work.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2_store::{DeclaredConsumer, HeadKind, ServerBeat, ServerInfo, Store, UpkeepFence, UpkeepLease, UpkeepRelease};
use tokio_util::sync::CancellationToken;

use crate::consumer::Lane;
use crate::server_core::ServerCore;
use crate::timings::millis;

/// The shortest beat: a zero in the timings must not turn the loop into a hammer.
const MIN_BEAT: Duration = Duration::from_secs(1);

/// A consumer as the registry shows it.
pub(crate) fn declared(consumer: &crate::Consumer) -> DeclaredConsumer {
    let (kind, lane) = match &consumer.def.lane {
        Lane::Log(lane) => (HeadKind::Log, Some(lane.clone())),
        Lane::Function(_) => (HeadKind::Lane, None),
        Lane::Concurrent => (HeadKind::Concurrent, None),
    };
    DeclaredConsumer {
        name: consumer.name().to_owned(),
        kind,
        lane,
        types: consumer.def.types.clone().unwrap_or_default(),
    }
}

/// What this server says of itself on every beat.
pub(crate) fn beat_of(core: &ServerCore) -> ServerBeat {
    let actor = a2_store::Actor::of_process();
    let version = match core.app_version() {
        Some(app) => format!("{app} (a2-engine {})", env!("CARGO_PKG_VERSION")),
        None => format!("a2-engine {}", env!("CARGO_PKG_VERSION")),
    };
    ServerBeat {
        id: core.server_id().to_owned(),
        info: ServerInfo {
            contract: core.contract().name().to_owned(),
            host: actor.host.clone(),
            pid: std::process::id(),
            version,
            consumers: core.consumers().iter().map(declared).collect(),
            max_running: core.max_running(),
            beat_ms: millis(core.timings().server_beat),
            started_at: core.started_at(),
            holder_prefix: core.holder_prefix(),
            totals_refresh_ms: millis(core.timings().totals_refresh),
        },
    }
}

/// Beat until `shutdown`, then remove the row: a process that dies instead
/// leaves it to go stale (gone after `MISSED_BEATS`, pruned after a day).
/// Each beat also takes or keeps the contract's upkeep lease (three beats
/// long), and `leading` holds the lease while this server holds it (its
/// generation fences the upkeep's writes); on shutdown the
/// lease is let go, so another server leads at its next beat.
pub(crate) async fn keep_registered(
    store: Arc<dyn Store>,
    beat: ServerBeat,
    every: Duration,
    shutdown: CancellationToken,
    leading: Arc<Mutex<Option<UpkeepFence>>>,
) {
    let every = every.max(MIN_BEAT);
    let lease = UpkeepLease {
        scope: beat.info.contract.clone(),
        owner: beat.id.clone(),
        ttl_ms: crate::timings::millis(every).saturating_mul(a2_store::MISSED_BEATS),
    };
    let mut failing = false;
    loop {
        // Lead only while the lease is surely held: a renewal that fails lets go at once.
        let held = store.upkeep_lease(lease.clone()).await;
        let fence = match &held {
            Ok(Some(generation)) => {
                Some(UpkeepFence { scope: lease.scope.clone(), owner: lease.owner.clone(), generation: *generation })
            }
            _ => None,
        };
        *leading.lock().unwrap_or_else(|p| p.into_inner()) = fence;
        if let Err(error) = held {
            tracing::debug!(code = error.code(), %error, "could not take or keep the upkeep lease");
        }
        match store.server_beat(beat.clone()).await {
            Ok(()) => failing = false,
            // Once a failing spell, not every beat: a store this role cannot write would fill the log.
            Err(error) if !failing => {
                failing = true;
                tracing::warn!(code = error.code(), %error, server = %beat.id, "could not refresh this server's registry row");
            }
            Err(error) => tracing::debug!(code = error.code(), %error, "the registry beat still fails"),
        }
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = shutdown.cancelled() => break,
        }
    }
    *leading.lock().unwrap_or_else(|p| p.into_inner()) = None;
    let release = UpkeepRelease { scope: lease.scope, owner: lease.owner };
    if let Err(error) = store.upkeep_release(release).await {
        tracing::debug!(code = error.code(), %error, "could not let the upkeep lease go; it expires by itself");
    }
    if let Err(error) = store.server_remove(&beat.id).await {
        tracing::debug!(code = error.code(), %error, server = %beat.id, "could not remove this server's registry row");
    }
}
