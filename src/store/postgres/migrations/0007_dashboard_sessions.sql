-- Dashboard sessions (docs/dashboard.md): one row per signed-in session, keyed by a hash of its id; signing out deletes it.
CREATE TABLE dashboard_sessions (
  id_hash text PRIMARY KEY,
  expires_at bigint NOT NULL,
  created_at text NOT NULL
);
CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions (expires_at);
