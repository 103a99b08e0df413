-- The figures of each log entry as columns, so the admin usage and stats reports (docs/dashboard.md)
-- aggregate from one covering index instead of parsing the JSON of every entry.
ALTER TABLE request_logs ADD COLUMN provider TEXT;
ALTER TABLE request_logs ADD COLUMN key_id TEXT;
ALTER TABLE request_logs ADD COLUMN latency_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE request_logs ADD COLUMN ttft_ms INTEGER;
ALTER TABLE request_logs ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE request_logs ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE request_logs ADD COLUMN completion_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE request_logs ADD COLUMN cost_usd REAL;

UPDATE request_logs SET
  provider = json_extract(entry, '$.provider'),
  key_id = CASE json_extract(entry, '$.authMode') WHEN 'GwKey' THEN json_extract(entry, '$.subject') END,
  latency_ms = coalesce(json_extract(entry, '$.latencyMs'), 0),
  ttft_ms = json_extract(entry, '$.ttftMs'),
  prompt_tokens = coalesce(json_extract(entry, '$.usage.promptTokens'), 0),
  cached_tokens = coalesce(json_extract(entry, '$.usage.cachedTokens'), 0),
  completion_tokens = coalesce(json_extract(entry, '$.usage.completionTokens'), 0),
  cost_usd = json_extract(entry, '$.costUsd');

-- Covers every column the reports read: a report over a time range is one index range scan.
CREATE INDEX request_logs_org_figures ON request_logs(
  org_id, created_at, model, provider, key_id, end_user_id, status,
  latency_ms, ttft_ms, prompt_tokens, cached_tokens, completion_tokens, cost_usd
);

-- `user=` filters on the log list seek here instead of scanning the org's entries in time order.
CREATE INDEX request_logs_org_user ON request_logs(org_id, end_user_id, created_at DESC, request_id DESC);
