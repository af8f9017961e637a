-- Operators' actions: who did what to which session, and how it ended.
CREATE TABLE a2_audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    user_name TEXT NOT NULL,
    host TEXT NOT NULL,
    action TEXT NOT NULL,
    contract TEXT,
    session_id TEXT,
    parameters TEXT NOT NULL,
    outcome TEXT NOT NULL
);
