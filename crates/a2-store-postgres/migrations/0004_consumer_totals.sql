-- Consumer totals as last computed (see Store::consumer_totals_refresh).
CREATE TABLE a2_consumer_totals (
    contract TEXT COLLATE "C" NOT NULL,
    consumer TEXT COLLATE "C" NOT NULL,
    sessions BIGINT NOT NULL,
    lagging_sessions BIGINT NOT NULL,
    total_lag BIGINT NOT NULL,
    dead_letters BIGINT NOT NULL,
    computed_at BIGINT NOT NULL,
    PRIMARY KEY (contract, consumer)
);
