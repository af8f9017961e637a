-- Attempt history: every run of a head (outcome codes: 0 completed, 1 failed,
-- 2 lapsed, 3 superseded, 4 aborted, 5 cleared), written in the transaction of
-- the outcome it records. A head's attempts and a session's are ranges of the
-- primary key (a session's history is kept in head order; the timeline lays it
-- out by time itself); the last hour's (throughput), a range of
-- a2_attempts_by_time. One row and one B-tree entry an attempt, no more: the
-- drain pays for every one.
ALTER TABLE a2_heads ADD COLUMN attempt_started_at BIGINT;
-- The last error with its numbers, ids and UUIDs masked: dead letters group on it.
ALTER TABLE a2_heads ADD COLUMN last_error_cause TEXT;

CREATE TABLE a2_attempts (
    session TEXT COLLATE "C" NOT NULL,
    consumer TEXT COLLATE "C" NOT NULL,
    lane TEXT COLLATE "C" NOT NULL,
    idx BIGINT NOT NULL,
    attempt INTEGER NOT NULL,
    holder TEXT,
    started_at BIGINT,
    ended_at BIGINT NOT NULL,
    outcome SMALLINT NOT NULL,
    error TEXT,
    appended JSONB,
    PRIMARY KEY (session, consumer, lane, idx, attempt)
);

-- BRIN: attempts arrive in time order, so block-range summaries find the last hour
-- at almost no cost to the writes that add them (a small table is read whole).
CREATE INDEX a2_attempts_by_time ON a2_attempts USING BRIN (ended_at);
