-- The presence plane: one row a (session, participant, field), beside the log
-- and never in it. `value` NULL is a delete's tombstone, kept with the delete's
-- stamp until it expires so an older write arriving late cannot revive the value.
-- `at` is the sender's stamp (last writer wins); `expires_at` the store's clock plus the TTL.
-- Unlogged would lose it on a crash, which presence can afford, but a replica
-- could then not show it: it stays logged.
CREATE TABLE a2_presence (
    session TEXT COLLATE "C" NOT NULL,
    participant TEXT COLLATE "C" NOT NULL,
    field TEXT COLLATE "C" NOT NULL,
    value JSONB,
    seen BIGINT NOT NULL,
    at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (session, participant, field)
);
-- Pruning what expired, store-wide.
CREATE INDEX a2_presence_expiry ON a2_presence (expires_at);
