-- Consumers paused store-wide: claims of every process skip their heads until the row is deleted.
CREATE TABLE a2_consumer_pauses (
    contract TEXT NOT NULL,
    consumer TEXT NOT NULL,
    actor TEXT NOT NULL,
    reason TEXT NOT NULL,
    paused_at INTEGER NOT NULL,
    PRIMARY KEY (contract, consumer)
) WITHOUT ROWID;
