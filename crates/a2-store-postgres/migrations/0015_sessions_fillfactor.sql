-- Room on each page of a2_sessions for a new version of its rows: an append
-- moves the session's head and restamps updated_at at most once a second, so
-- most appends change no indexed column and, with room beside the row, their
-- UPDATE is HOT, writing no index entry. Applies to pages written from now on.
ALTER TABLE a2_sessions SET (fillfactor = 80);
