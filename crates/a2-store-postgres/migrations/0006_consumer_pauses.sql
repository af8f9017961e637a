-- Consumers paused store-wide: claims of every process skip their heads until the row is deleted.
CREATE TABLE a2_consumer_pauses (
    contract TEXT COLLATE "C" NOT NULL,
    consumer TEXT COLLATE "C" NOT NULL,
    actor TEXT NOT NULL,
    reason TEXT NOT NULL,
    paused_at BIGINT NOT NULL,
    PRIMARY KEY (contract, consumer)
);
