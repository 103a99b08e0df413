-- People (PRODUCT §18): users and roles, personal admin tokens, first-sign-in links, the append-only audit log,
-- dashboard sessions bound to a user, and service keys with expiry and scopes.
CREATE TABLE users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL UNIQUE,
  name TEXT,
  role TEXT NOT NULL,
  orgs TEXT NOT NULL,
  password_hash TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) STRICT;

CREATE TABLE admin_tokens (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  name TEXT,
  token_hash BLOB NOT NULL,
  created_at TEXT NOT NULL,
  last_used_at TEXT
) STRICT;
CREATE INDEX admin_tokens_user ON admin_tokens(user_id);

CREATE TABLE sign_in_links (
  link_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  expires_at INTEGER NOT NULL
) STRICT;

-- Never updated; deleted only by the audit retention (GW_AUDIT_RETENTION, forever by default).
CREATE TABLE audit_log (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  time TEXT NOT NULL,
  time_ms INTEGER NOT NULL,
  actor_kind TEXT NOT NULL,
  actor_id TEXT,
  actor_email TEXT,
  action TEXT NOT NULL,
  org_id TEXT,
  target TEXT NOT NULL,
  before_json TEXT,
  after_json TEXT,
  request_id TEXT,
  ip TEXT
) STRICT;
CREATE INDEX audit_log_org ON audit_log(org_id, seq);
CREATE INDEX audit_log_time ON audit_log(time_ms);
CREATE TRIGGER audit_log_append_only BEFORE UPDATE ON audit_log
BEGIN
  SELECT RAISE(ABORT, 'audit log entries are never changed');
END;

ALTER TABLE dashboard_sessions ADD COLUMN user_id TEXT REFERENCES users(id) ON DELETE CASCADE;

ALTER TABLE service_keys ADD COLUMN expires_at TEXT;
ALTER TABLE service_keys ADD COLUMN scopes TEXT;
