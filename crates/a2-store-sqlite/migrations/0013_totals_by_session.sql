-- Each session's part of its contract's consumer totals, as the last refresh
-- folded it in: a refresh recomputes only the sessions that changed since
-- the one before (appends stamp a2_sessions.updated_at, runs write
-- a2_attempts), replaces their rows and moves the totals by the difference.
-- A session with no head of a consumer has no row for it.
CREATE TABLE a2_totals_by_session (
    session TEXT NOT NULL,
    consumer TEXT NOT NULL,
    lag INTEGER NOT NULL,
    dead INTEGER NOT NULL,
    PRIMARY KEY (session, consumer)
) WITHOUT ROWID;

-- A contract's refresh mark: when it last ran (NULL: never, so the next is a
-- full pass) and where the rolling sweep that re-checks every session has got to.
CREATE TABLE a2_totals_marks (
    contract TEXT PRIMARY KEY,
    refreshed_at INTEGER,
    swept_through TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;

-- The runs that ended since the last refresh: the sessions it recomputes.
CREATE INDEX a2_attempts_by_end ON a2_attempts (ended_at);

-- Kept attempt rates (the throughput chart): runs that completed or failed, a
-- consumer a minute, folded in by the same refresh; and the seconds that
-- refresh counted last, which the next recounts (see a2-store-sql's rates.rs).
CREATE TABLE a2_attempt_rates (
    contract TEXT NOT NULL,
    consumer TEXT NOT NULL,
    bucket INTEGER NOT NULL,
    completed INTEGER NOT NULL,
    failed INTEGER NOT NULL,
    PRIMARY KEY (contract, bucket, consumer)
) WITHOUT ROWID;
CREATE TABLE a2_attempt_rates_tail (
    contract TEXT NOT NULL,
    consumer TEXT NOT NULL,
    second INTEGER NOT NULL,
    completed INTEGER NOT NULL,
    failed INTEGER NOT NULL,
    PRIMARY KEY (contract, second, consumer)
) WITHOUT ROWID;
