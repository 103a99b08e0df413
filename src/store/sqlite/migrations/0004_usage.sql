-- Daily usage roll-ups (PRODUCT §11), written in the same transaction as the log entries they sum,
-- and kept when raw entries are pruned. dim '' is the whole day; value '' is "none".
CREATE TABLE usage_daily (
  org_id TEXT NOT NULL,
  dim TEXT NOT NULL,
  day TEXT NOT NULL,
  value TEXT NOT NULL,
  requests INTEGER NOT NULL,
  errors INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  cached_input_tokens INTEGER NOT NULL,
  cache_write_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  reasoning_tokens INTEGER NOT NULL,
  cost_usd REAL NOT NULL,
  priced INTEGER NOT NULL,
  PRIMARY KEY (org_id, dim, day, value)
) STRICT, WITHOUT ROWID;

-- Retention prunes oldest first across all orgs.
CREATE INDEX request_logs_time ON request_logs(created_at);

-- Roll up what is already logged, so reports cover the time before this migration.
INSERT INTO usage_daily
SELECT org_id, dim, day, value, count(*), sum(status >= 400),
  sum(max(0, prompt - cached - written)), sum(cached), sum(written), sum(completion - reasoning), sum(reasoning),
  coalesce(sum(cost), 0), count(cost)
FROM (
  SELECT l.org_id, l.status, substr(json_extract(l.entry, '$.createdAt'), 1, 10) AS day,
    coalesce(json_extract(l.entry, '$.usage.promptTokens'), 0) AS prompt,
    coalesce(json_extract(l.entry, '$.usage.cachedTokens'), 0) AS cached,
    coalesce(json_extract(l.entry, '$.usage.cacheWriteTokens'), 0) AS written,
    coalesce(json_extract(l.entry, '$.usage.completionTokens'), 0) AS completion,
    min(coalesce(json_extract(l.entry, '$.usage.reasoningTokens'), 0), coalesce(json_extract(l.entry, '$.usage.completionTokens'), 0)) AS reasoning,
    json_extract(l.entry, '$.costUsd') AS cost,
    d.dim, d.value
  FROM request_logs l
  JOIN (
    SELECT request_id, '' AS dim, '' AS value FROM request_logs
    UNION ALL SELECT request_id, 'model', coalesce(model, requested_model, '') FROM request_logs
    UNION ALL SELECT request_id, 'provider', coalesce(json_extract(entry, '$.provider'), '') FROM request_logs
    UNION ALL SELECT request_id, 'key', CASE json_extract(entry, '$.authMode') WHEN 'GwKey' THEN coalesce(json_extract(entry, '$.subject'), '')
      ELSE coalesce(json_extract(entry, '$.authMode'), '') END FROM request_logs
    UNION ALL SELECT request_id, 'endUser', coalesce(end_user_id, '') FROM request_logs
    UNION ALL SELECT request_id, 'metadata.' || key, value FROM request_log_metadata
  ) d ON d.request_id = l.request_id
)
GROUP BY org_id, dim, day, value;
