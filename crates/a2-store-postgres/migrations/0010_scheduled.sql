-- The store-backed scheduler's tasks: a delayed append or clear of one session,
-- keyed by the engine's deterministic schedule id, so scheduling twice is one row.
-- `work` holds the task's JSON (`{"kind": "append", "events": [...]}` or
-- `{"kind": "clear", "if_last_index": n}` or, the watchdog, `{"kind": "drain"}`); a delivery leases the row
-- (`FOR UPDATE SKIP LOCKED`) and deletes it.
CREATE TABLE a2_scheduled (
    id TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    session TEXT COLLATE "C" NOT NULL,
    contract TEXT COLLATE "C" NOT NULL,
    name TEXT NOT NULL,
    due_at BIGINT NOT NULL,
    work JSONB NOT NULL,
    trigger JSONB,
    created_at BIGINT NOT NULL,
    attempts INT NOT NULL DEFAULT 0,
    lease_holder TEXT,
    lease_expires_at BIGINT,
    last_error TEXT
);
-- "Due now" for the contracts a server serves, and the Timers view's order.
CREATE INDEX a2_scheduled_due ON a2_scheduled (contract, due_at, id);
CREATE INDEX a2_scheduled_session ON a2_scheduled (session, due_at, id);
