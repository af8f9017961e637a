-- The upkeep lease: one row a contract, naming the server that leads its
-- store-wide upkeep until `expires_at`; `generation` counts changes of owner.
CREATE TABLE a2_upkeep (
    scope TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    generation INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
