-- Dashboard sessions (docs/dashboard.md): one row per signed-in session, keyed by a hash of its id; signing out deletes it.
CREATE TABLE dashboard_sessions (
  id_hash TEXT PRIMARY KEY,
  expires_at INTEGER NOT NULL,
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions(expires_at);
