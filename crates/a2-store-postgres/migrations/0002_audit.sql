-- Operators' actions: who did what to which session, and how it ended.
CREATE TABLE a2_audit (
    id BIGSERIAL PRIMARY KEY,
    at BIGINT NOT NULL,
    user_name TEXT NOT NULL,
    host TEXT NOT NULL,
    action TEXT NOT NULL,
    contract TEXT,
    session_id TEXT,
    parameters JSONB NOT NULL,
    outcome JSONB NOT NULL
);
