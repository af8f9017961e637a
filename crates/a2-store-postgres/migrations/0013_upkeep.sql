-- The upkeep lease: one row a contract, naming the server that leads its
-- store-wide upkeep until `expires_at`; `generation` counts changes of owner.
CREATE TABLE a2_upkeep (
    scope TEXT COLLATE "C" PRIMARY KEY,
    owner TEXT COLLATE "C" NOT NULL,
    generation BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
