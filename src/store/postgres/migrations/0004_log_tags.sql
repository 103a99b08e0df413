-- Metadata tags, one row per key, indexed by org, key, value and time: `metadata=k=v` filters read a
-- page in time order from the index (jsonb + GIN found the rows, but not in order, so a common tag
-- meant fetching and sorting all of them). Same layout as SQLite's request_log_metadata.
CREATE TABLE request_log_tags (
  org_id text NOT NULL,
  key text NOT NULL,
  value text NOT NULL,
  created_at bigint NOT NULL,
  request_id text NOT NULL REFERENCES request_logs(request_id) ON DELETE CASCADE,
  PRIMARY KEY (org_id, key, value, created_at, request_id)
);
CREATE INDEX request_log_tags_request ON request_log_tags(request_id);
INSERT INTO request_log_tags (org_id, key, value, created_at, request_id)
  SELECT l.org_id, m.key, m.value, l.created_at, l.request_id FROM request_logs l, jsonb_each_text(l.metadata) m;
DROP INDEX request_logs_metadata;
