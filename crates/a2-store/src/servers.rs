//! The process registry: each running engine server keeps one row (who it
//! is, where it runs, what it serves), refreshed on a heartbeat, so an
//! operator can tell "nobody serves this consumer" from "all done". A claim
//! writes nothing here: what a process is running comes from the leases its
//! holders hold.

use serde::{Deserialize, Serialize};

use crate::types::{ConsumerTotal, HeadKind, Millis};

/// A server that missed this many beats in a row is taken for gone.
pub const MISSED_BEATS: i64 = 3;

/// A row not refreshed for a day is pruned by the next beat of any server.
pub const SERVER_KEPT_MS: i64 = 86_400_000;

/// A consumer as a server declares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DeclaredConsumer {
    pub name: String,
    pub kind: HeadKind,
    /// A string-lane consumer's lane.
    pub lane: Option<String>,
    /// The event types it takes; empty means every type of the contract.
    pub types: Vec<String>,
}

/// What a server says of itself on every beat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ServerInfo {
    pub contract: String,
    pub host: String,
    pub pid: u32,
    /// The engine's version, and the app's when it named one.
    pub version: String,
    pub consumers: Vec<DeclaredConsumer>,
    pub max_running: u32,
    /// How often it beats: it is gone after `MISSED_BEATS` of them.
    pub beat_ms: i64,
    pub started_at: Millis,
    /// The prefix of every lease holder of this server's drains.
    pub holder_prefix: String,
    /// How often it refreshes the kept totals while it leads the upkeep
    /// (0: not said, a server of an older version).
    #[serde(default)]
    pub totals_refresh_ms: i64,
}

/// A live server that leads a contract's upkeep, as the Overview names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RefreshedBy {
    pub contract: String,
    /// Its registry id (`a2 processes --id`).
    pub process: String,
    pub host: String,
    pub pid: u32,
    /// 0: the server did not say.
    pub every_ms: i64,
}

/// Register or refresh a server; the store stamps `last_seen` with its own
/// clock and prunes rows not seen for `SERVER_KEPT_MS`, in one statement.
#[derive(Debug, Clone)]
pub struct ServerBeat {
    pub id: String,
    pub info: ServerInfo,
}

/// A registered server as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ServerRecord {
    pub id: String,
    #[serde(flatten)]
    pub info: ServerInfo,
    pub last_seen: Millis,
}

impl ServerRecord {
    /// Whether it beat within `MISSED_BEATS` of its own beats before `now`.
    pub fn is_live(&self, now: Millis) -> bool {
        now.saturating_sub(self.last_seen) <= MISSED_BEATS.saturating_mul(self.info.beat_ms.max(1))
    }
}

/// The heads whose live lease a holder under `holder_prefix` holds (a
/// process's drains lease as `<server id>/<drain>`): what a process runs now.
#[derive(Debug, Clone)]
pub struct HeadsLeased {
    pub holder_prefix: String,
    pub limit: u32,
}

/// A head leased now, as a process's page lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct LeasedHead {
    pub contract: String,
    pub session_id: String,
    pub consumer: String,
    pub lane: Option<String>,
    /// The event it runs (a cursor: the next index).
    pub index: u64,
    pub attempt: u32,
    pub holder: String,
    pub lease_expires_at: Millis,
}

/// Every kept server (live and recently gone), one contract's or all, oldest first.
#[derive(Debug, Clone, Default)]
pub struct ServerList {
    pub contract: Option<String>,
}

/// A consumer of a contract as the kept servers declare it: what an
/// overview lists even when it has no heads (caught up, or never fed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CatalogConsumer {
    pub contract: String,
    pub consumer: DeclaredConsumer,
    /// Live servers that declare it: 0 means nobody serves it now.
    pub served_by: u32,
    /// The newest beat of any kept server that declares it.
    pub last_served: Millis,
}

/// The union of what the kept servers declare, by contract and consumer
/// name; a consumer declared differently by two servers is shown as the
/// newest one declares it.
pub fn consumer_catalog(servers: &[ServerRecord], now: Millis) -> Vec<CatalogConsumer> {
    let mut catalog: std::collections::BTreeMap<(String, String), CatalogConsumer> = std::collections::BTreeMap::new();
    for server in servers {
        let live = server.is_live(now);
        for declared in &server.info.consumers {
            let key = (server.info.contract.clone(), declared.name.clone());
            let entry = catalog.entry(key).or_insert_with(|| CatalogConsumer {
                contract: server.info.contract.clone(),
                consumer: declared.clone(),
                served_by: 0,
                last_served: server.last_seen,
            });
            if server.last_seen >= entry.last_served {
                entry.consumer = declared.clone();
                entry.last_served = server.last_seen;
            }
            entry.served_by += u32::from(live);
        }
    }
    catalog.into_values().collect()
}

/// Who serves a consumer, by the process registry: the first question on
/// call is whether anything is working on it at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum Serving {
    /// This many live processes declare it.
    Served { by: u32 },
    /// Work waits (lag or dead letters) and no live process declares it.
    Nobody,
    /// Declared lately, nothing waiting, no live process now.
    Idle,
    /// It has heads, but no kept process declares it: a deploy removed it,
    /// or the processes that ran it stopped cleanly (a clean stop removes the row).
    Undeclared,
}

/// Who serves `total`'s consumer, by `catalog`.
pub fn serving_of(total: &ConsumerTotal, catalog: &[CatalogConsumer]) -> Serving {
    let entry = catalog.iter().find(|c| c.contract == total.contract && c.consumer.name == total.consumer);
    match entry {
        Some(c) if c.served_by > 0 => Serving::Served { by: c.served_by },
        _ if total.total_lag > 0 || total.dead_letters > 0 => Serving::Nobody,
        Some(_) => Serving::Idle,
        None => Serving::Undeclared,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(lag: u64, dead: u64) -> ConsumerTotal {
        ConsumerTotal {
            contract: "shop".into(),
            consumer: "mailer".into(),
            sessions: 1,
            lagging_sessions: u64::from(lag > 0),
            total_lag: lag,
            dead_letters: dead,
            served: None,
        }
    }

    fn declared(served_by: u32) -> CatalogConsumer {
        CatalogConsumer {
            contract: "shop".into(),
            consumer: DeclaredConsumer { name: "mailer".into(), kind: HeadKind::Log, lane: None, types: Vec::new() },
            served_by,
            last_served: 0,
        }
    }

    /// Served counts live processes; nobody when work waits and none serves;
    /// idle is told from a consumer no kept process declares.
    #[test]
    fn serving_tells_served_nobody_idle_and_undeclared_apart() {
        assert_eq!(serving_of(&total(3, 0), &[declared(2)]), Serving::Served { by: 2 });
        assert_eq!(serving_of(&total(3, 0), &[declared(0)]), Serving::Nobody);
        assert_eq!(serving_of(&total(0, 1), &[]), Serving::Nobody);
        assert_eq!(serving_of(&total(0, 0), &[declared(0)]), Serving::Idle);
        assert_eq!(serving_of(&total(0, 0), &[]), Serving::Undeclared);
    }

    fn server(id: &str, last_seen: Millis, consumers: &[&str]) -> ServerRecord {
        let declared = |name: &&str| DeclaredConsumer {
            name: (*name).to_owned(),
            kind: HeadKind::Concurrent,
            lane: None,
            types: Vec::new(),
        };
        ServerRecord {
            id: id.to_owned(),
            info: ServerInfo {
                contract: "shop".into(),
                host: "h".into(),
                pid: 1,
                version: "v".into(),
                consumers: consumers.iter().map(declared).collect(),
                max_running: 1,
                beat_ms: 10_000,
                started_at: 0,
                holder_prefix: id.to_owned(),
                totals_refresh_ms: 0,
            },
            last_seen,
        }
    }

    /// A server three beats late no longer serves; what it declared stays listed.
    #[test]
    fn the_catalog_counts_only_live_servers_as_serving() {
        let servers = [server("a", 100_000, &["mailer", "charger"]), server("b", 40_000, &["mailer", "ledger"])];
        let catalog = consumer_catalog(&servers, 100_000);
        let seen: Vec<(&str, u32, Millis)> =
            catalog.iter().map(|c| (c.consumer.name.as_str(), c.served_by, c.last_served)).collect();
        assert_eq!(seen, vec![("charger", 1, 100_000), ("ledger", 0, 40_000), ("mailer", 1, 100_000)]);
        assert!(servers[0].is_live(130_000) && !servers[0].is_live(130_001));
    }
}
