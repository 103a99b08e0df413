-- Daily usage roll-ups (PRODUCT §11), written in the same transaction as the log entries they sum,
-- and kept when raw entries are pruned. dim '' is the whole day; value '' is "none".
CREATE TABLE usage_daily (
  org_id text NOT NULL,
  dim text NOT NULL,
  day text NOT NULL,
  value text NOT NULL,
  requests bigint NOT NULL,
  errors bigint NOT NULL,
  input_tokens bigint NOT NULL,
  cached_input_tokens bigint NOT NULL,
  cache_write_tokens bigint NOT NULL,
  output_tokens bigint NOT NULL,
  reasoning_tokens bigint NOT NULL,
  cost_usd double precision NOT NULL,
  priced bigint NOT NULL,
  PRIMARY KEY (org_id, dim, day, value)
);

-- Retention prunes oldest first across all orgs.
CREATE INDEX request_logs_time ON request_logs(created_at);
