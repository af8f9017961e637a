-- The process registry: one row a running engine server, refreshed on its
-- heartbeat, deleted on a clean shutdown, pruned a day after its last beat.
-- `info` is what the server declares (host, pid, version, consumers, beat).
CREATE TABLE a2_servers (
    id TEXT COLLATE "C" PRIMARY KEY,
    contract TEXT COLLATE "C" NOT NULL,
    info JSONB NOT NULL,
    started_at BIGINT NOT NULL,
    last_seen BIGINT NOT NULL
);
CREATE INDEX a2_servers_by_contract ON a2_servers (contract, started_at);
