-- Cheaper log batches (docs/benchmarks.md, "Several instances"). A batch's roll-up cells go in as
-- one usage_pending row in the batch's own statement; folding sums pending rows into usage_daily
-- (one row per group) and deletes them in one transaction, so every batch counts exactly once,
-- whichever instance folds it. Reports read usage_all: the folded rows plus those still pending.
CREATE TABLE usage_pending (
  id bigserial PRIMARY KEY,
  cells jsonb NOT NULL
);
CREATE VIEW usage_all AS
  SELECT org_id, dim, day, value, requests, errors, input_tokens, cached_input_tokens, cache_write_tokens, output_tokens,
    reasoning_tokens, cost_usd, priced FROM usage_daily
  UNION ALL
  SELECT c.org_id, c.dim, c.day, c.value, c.requests, c.errors, c.input_tokens, c.cached_input_tokens, c.cache_write_tokens,
    c.output_tokens, c.reasoning_tokens, c.cost_usd, c.priced
  FROM usage_pending p, jsonb_to_recordset(p.cells) AS c(org_id text, dim text, day text, value text, requests bigint, errors bigint,
    input_tokens bigint, cached_input_tokens bigint, cache_write_tokens bigint, output_tokens bigint, reasoning_tokens bigint,
    cost_usd double precision, priced bigint);
-- Folding rewrites the same roll-up rows every second: room on each page keeps those updates HOT.
ALTER TABLE usage_daily SET (fillfactor = 50);
-- Tags are deleted with their entries by pruneLogs itself: a foreign key checked (and a row
-- locked) per tag cost more than the tag's insert.
ALTER TABLE request_log_tags DROP CONSTRAINT request_log_tags_request_id_fkey;
DROP INDEX request_log_tags_request;
