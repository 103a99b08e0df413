-- Orgs, their provider keys and service keys, and the request log.
CREATE TABLE orgs (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  policy TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL
) STRICT;

CREATE TABLE provider_keys (
  org_id TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  provider TEXT NOT NULL,
  api_key_enc TEXT NOT NULL,
  base_url TEXT,
  enabled INTEGER NOT NULL DEFAULT 1,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (org_id, provider)
) STRICT;

CREATE TABLE service_keys (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  name TEXT,
  key_hash BLOB NOT NULL,
  created_at TEXT NOT NULL,
  revoked_at TEXT,
  last_used_at TEXT
) STRICT;
CREATE INDEX service_keys_org ON service_keys(org_id);

-- One row per request. `entry` holds the whole log entry as JSON; the columns beside it exist
-- only to be filtered and ordered on.
CREATE TABLE request_logs (
  request_id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  model TEXT,
  requested_model TEXT,
  status INTEGER NOT NULL,
  end_user_id TEXT,
  entry TEXT NOT NULL
) STRICT;
CREATE INDEX request_logs_org_time ON request_logs(org_id, created_at DESC, request_id DESC);

-- Metadata tags, one row per key, so `metadata=k=v` filters are index seeks, not JSON scans.
CREATE TABLE request_log_metadata (
  org_id TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  request_id TEXT NOT NULL,
  PRIMARY KEY (org_id, key, value, created_at, request_id)
) STRICT, WITHOUT ROWID;

-- Request and response bodies, kept apart so they can be dropped without touching the log.
CREATE TABLE request_log_bodies (
  request_id TEXT PRIMARY KEY,
  request_body TEXT,
  response_body TEXT
) STRICT;
