-- The A2 store, version 1. Session keys are '<contract>' || chr(31) || '<session id>';
-- keys compare byte-wise (COLLATE "C") so a contract's sessions are one index range.

CREATE TABLE a2_sessions (
    session TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    head BIGINT NOT NULL,
    clear_index BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE a2_events (
    session TEXT COLLATE "C" NOT NULL,
    idx BIGINT NOT NULL,
    id TEXT NOT NULL,
    type TEXT NOT NULL,
    payload JSONB NOT NULL,
    created_at BIGINT NOT NULL,
    cause JSONB,
    PRIMARY KEY (session, idx)
);

CREATE UNIQUE INDEX a2_events_by_id ON a2_events (session, id);

-- Log cursors (kind 0, idx = next index) and per-event heads (kind 1 lane, 2 concurrent; lane '' = none).
CREATE TABLE a2_heads (
    session TEXT COLLATE "C" NOT NULL,
    consumer TEXT COLLATE "C" NOT NULL,
    lane TEXT COLLATE "C" NOT NULL,
    idx BIGINT NOT NULL,
    kind SMALLINT NOT NULL,
    attempt_count INTEGER NOT NULL DEFAULT 0,
    failure_count INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    failed_at BIGINT,
    lease_holder TEXT,
    lease_expires_at BIGINT,
    next_attempt_at BIGINT,
    PRIMARY KEY (session, consumer, lane, idx)
);

-- Covering, so consumer totals read cursor positions without visiting the table.
CREATE UNIQUE INDEX a2_cursors ON a2_heads (session, consumer) INCLUDE (idx, failed_at) WHERE kind = 0;
CREATE INDEX a2_pending_heads ON a2_heads (session, consumer) INCLUDE (failed_at) WHERE kind <> 0;
CREATE INDEX a2_dead_letters ON a2_heads (session, consumer, lane, idx) WHERE failed_at IS NOT NULL;
CREATE INDEX a2_heads_by_consumer ON a2_heads (consumer, session);

CREATE TABLE a2_snapshots (
    session TEXT COLLATE "C" NOT NULL,
    reducer TEXT COLLATE "C" NOT NULL,
    idx BIGINT NOT NULL,
    state JSONB NOT NULL,
    pins JSONB NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (session, reducer, idx)
);
