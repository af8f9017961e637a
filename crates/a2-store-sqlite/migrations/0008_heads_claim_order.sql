-- A session's live heads in the order a claim takes them (oldest event first),
-- as on Postgres: without it every claim read and sorted all of its session's
-- heads, so draining a long session was quadratic.
CREATE INDEX a2_heads_claim_order ON a2_heads (session, idx) WHERE failed_at IS NULL;
