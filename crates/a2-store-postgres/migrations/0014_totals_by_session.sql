-- Each session's part of its contract's consumer totals, as the last refresh
-- folded it in: a refresh recomputes only the sessions that changed since
-- the one before (appends stamp a2_sessions.updated_at, runs write
-- a2_attempts), replaces their rows and moves the totals by the difference.
-- A session with no head of a consumer has no row for it.
CREATE TABLE a2_totals_by_session (
    session TEXT COLLATE "C" NOT NULL,
    consumer TEXT COLLATE "C" NOT NULL,
    lag BIGINT NOT NULL,
    dead BIGINT NOT NULL,
    PRIMARY KEY (session, consumer)
);

-- A contract's refresh mark, locked by the refresh so two never fold the
-- same change twice: when it last ran (NULL: never, so the next is a full
-- pass) and where the rolling sweep that re-checks every session has got to.
CREATE TABLE a2_totals_marks (
    contract TEXT COLLATE "C" PRIMARY KEY,
    refreshed_at BIGINT,
    swept_through TEXT COLLATE "C" NOT NULL DEFAULT ''
);

-- Kept attempt rates (the throughput chart): runs that completed or failed, a
-- consumer a minute, folded in by the same refresh; and the seconds that
-- refresh counted last, which the next recounts (see a2-store-sql's rates.rs).
CREATE TABLE a2_attempt_rates (
    contract TEXT COLLATE "C" NOT NULL,
    consumer TEXT COLLATE "C" NOT NULL,
    bucket BIGINT NOT NULL,
    completed BIGINT NOT NULL,
    failed BIGINT NOT NULL,
    PRIMARY KEY (contract, bucket, consumer)
);
CREATE TABLE a2_attempt_rates_tail (
    contract TEXT COLLATE "C" NOT NULL,
    consumer TEXT COLLATE "C" NOT NULL,
    second BIGINT NOT NULL,
    completed BIGINT NOT NULL,
    failed BIGINT NOT NULL,
    PRIMARY KEY (contract, second, consumer)
);
