-- Room on each page of a2_heads for a new version of its rows: a claim (lease,
-- attempt, start) changes no indexed column, so with room beside the row its
-- UPDATE is HOT, writing no index entry. Full pages made every claim insert
-- into all four of the table's indexes. Applies to pages written from now on.
ALTER TABLE a2_heads SET (fillfactor = 50);
