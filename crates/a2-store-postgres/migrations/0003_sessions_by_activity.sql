-- A contract's sessions, most recently active first, from an index.
CREATE INDEX a2_sessions_by_activity
    ON a2_sessions (split_part(session, chr(31), 1), updated_at DESC, session DESC);
