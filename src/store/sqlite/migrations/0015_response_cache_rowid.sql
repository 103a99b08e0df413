-- The response cache as a rowid table (docs/benchmarks.md, "Response cache"): its answers are appended in
-- order and only the small primary-key index takes a random place, where a WITHOUT ROWID table put each
-- answer (a kilobyte or more) in a random leaf. A batch of puts cost the serving thread 47 µs per answer
-- that way against 21 as a rowid table, at 40,000 answers. The kept answers are dropped: it is a cache.
DROP TABLE response_cache;
CREATE TABLE response_cache (
  org_id TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (org_id, key)
) STRICT;
CREATE INDEX response_cache_age ON response_cache(org_id, created_at);
CREATE INDEX response_cache_expiry ON response_cache(org_id, expires_at);
