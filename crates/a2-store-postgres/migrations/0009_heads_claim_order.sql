-- A session's live heads in the order a claim takes them (oldest event first):
-- without it every claim read and sorted all of its session's heads, 27 ms a
-- claim at 20,000 pending heads, so draining a long session was quadratic. The
-- index yields them by index; the claim's sort by (idx, consumer, lane) is then
-- incremental and stops at its limit. Dead heads leave it: they are never claimed.
CREATE INDEX a2_heads_claim_order ON a2_heads (session, idx) WHERE failed_at IS NULL;
