-- Attempt history: every run of a head (outcome codes: 0 completed, 1 failed,
-- 2 lapsed, 3 superseded, 4 aborted, 5 cleared), written in the transaction of
-- the outcome it records. A head's attempts, a session's (kept in head order;
-- the timeline lays it out by time itself) and a contract's for throughput (a
-- dev store's size: no time index to keep) are ranges of the primary key.
ALTER TABLE a2_heads ADD COLUMN attempt_started_at INTEGER;
-- The last error with its numbers, ids and UUIDs masked: dead letters group on it.
ALTER TABLE a2_heads ADD COLUMN last_error_cause TEXT;

CREATE TABLE a2_attempts (
    session TEXT NOT NULL,
    consumer TEXT NOT NULL,
    lane TEXT NOT NULL,
    idx INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    holder TEXT,
    started_at INTEGER,
    ended_at INTEGER NOT NULL,
    outcome INTEGER NOT NULL,
    error TEXT,
    appended TEXT,
    PRIMARY KEY (session, consumer, lane, idx, attempt)
) WITHOUT ROWID;

