-- The exact response cache (PRODUCT §19; docs/policy.md, "Response cache"): one answer per org and
-- request hash, with its expiry and size; the oldest of an org go first past its size bound.
CREATE TABLE response_cache (
  org_id TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (org_id, key)
) STRICT, WITHOUT ROWID;
CREATE INDEX response_cache_age ON response_cache(org_id, created_at);
CREATE INDEX response_cache_expiry ON response_cache(org_id, expires_at);
