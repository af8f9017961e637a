-- The A2 store, version 1. Session keys are '<contract>' || char(31) || '<session id>'.

CREATE TABLE a2_sessions (
    session TEXT NOT NULL PRIMARY KEY,
    head INTEGER NOT NULL,
    clear_index INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE a2_events (
    session TEXT NOT NULL,
    idx INTEGER NOT NULL,
    id TEXT NOT NULL,
    type TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    cause TEXT,
    PRIMARY KEY (session, idx)
) WITHOUT ROWID;

CREATE UNIQUE INDEX a2_events_by_id ON a2_events (session, id);

-- Log cursors (kind 0, idx = next index) and per-event heads (kind 1 lane, 2 concurrent; lane '' = none).
CREATE TABLE a2_heads (
    session TEXT NOT NULL,
    consumer TEXT NOT NULL,
    lane TEXT NOT NULL,
    idx INTEGER NOT NULL,
    kind INTEGER NOT NULL,
    attempt_count INTEGER NOT NULL DEFAULT 0,
    failure_count INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    failed_at INTEGER,
    lease_holder TEXT,
    lease_expires_at INTEGER,
    next_attempt_at INTEGER,
    PRIMARY KEY (session, consumer, lane, idx)
) WITHOUT ROWID;

CREATE UNIQUE INDEX a2_cursors ON a2_heads (session, consumer) WHERE kind = 0;
CREATE INDEX a2_dead_letters ON a2_heads (session, consumer, lane, idx) WHERE failed_at IS NOT NULL;
CREATE INDEX a2_heads_by_consumer ON a2_heads (consumer, session);

CREATE TABLE a2_snapshots (
    session TEXT NOT NULL,
    reducer TEXT NOT NULL,
    idx INTEGER NOT NULL,
    state TEXT NOT NULL,
    pins TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session, reducer, idx)
) WITHOUT ROWID;
