-- A contract's sessions, most recently active first, from an index.
CREATE INDEX a2_sessions_by_activity
    ON a2_sessions (substr(session, 1, instr(session, char(31)) - 1), updated_at DESC, session DESC);
