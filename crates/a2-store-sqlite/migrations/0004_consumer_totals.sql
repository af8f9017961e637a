-- Consumer totals as last computed (see Store::consumer_totals_refresh).
CREATE TABLE a2_consumer_totals (
    contract TEXT NOT NULL,
    consumer TEXT NOT NULL,
    sessions INTEGER NOT NULL,
    lagging_sessions INTEGER NOT NULL,
    total_lag INTEGER NOT NULL,
    dead_letters INTEGER NOT NULL,
    computed_at INTEGER NOT NULL,
    PRIMARY KEY (contract, consumer)
) WITHOUT ROWID;
