-- The database role an operator acted as, beside the OS user (Postgres session_user).
ALTER TABLE a2_audit ADD COLUMN db_user TEXT;
