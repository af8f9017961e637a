-- The store-backed scheduler's tasks: a delayed append or clear of one session,
-- keyed by the engine's deterministic schedule id, so scheduling twice is one row.
-- `work` holds the task's JSON (`{"kind": "append", "events": [...]}` or
-- `{"kind": "clear", "if_last_index": n}` or, the watchdog, `{"kind": "drain"}`); a delivery leases the row and deletes it.
CREATE TABLE a2_scheduled (
    id TEXT NOT NULL PRIMARY KEY,
    session TEXT NOT NULL,
    contract TEXT NOT NULL,
    name TEXT NOT NULL,
    due_at INTEGER NOT NULL,
    work TEXT NOT NULL,
    trigger TEXT,
    created_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    lease_holder TEXT,
    lease_expires_at INTEGER,
    last_error TEXT
) WITHOUT ROWID;
-- "Due now" for the contracts a server serves, and the Timers view's order.
CREATE INDEX a2_scheduled_due ON a2_scheduled (contract, due_at, id);
CREATE INDEX a2_scheduled_session ON a2_scheduled (session, due_at, id);
