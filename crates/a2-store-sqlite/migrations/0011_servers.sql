-- The process registry: one row a running engine server, refreshed on its
-- heartbeat, deleted on a clean shutdown, pruned a day after its last beat.
-- `info` is what the server declares (host, pid, version, consumers, beat).
CREATE TABLE a2_servers (
    id TEXT PRIMARY KEY,
    contract TEXT NOT NULL,
    info TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    last_seen INTEGER NOT NULL
);
CREATE INDEX a2_servers_by_contract ON a2_servers (contract, started_at);
