-- The presence plane: one row a (session, participant, field), beside the log
-- and never in it. `value` NULL is a delete's tombstone, kept with the delete's
-- stamp until it expires so an older write arriving late cannot revive the value.
-- `at` is the sender's stamp (last writer wins); `expires_at` the store's clock plus the TTL.
CREATE TABLE a2_presence (
    session TEXT NOT NULL,
    participant TEXT NOT NULL,
    field TEXT NOT NULL,
    value TEXT,
    seen INTEGER NOT NULL,
    at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (session, participant, field)
) WITHOUT ROWID;
-- Pruning what expired, store-wide.
CREATE INDEX a2_presence_expiry ON a2_presence (expires_at);
