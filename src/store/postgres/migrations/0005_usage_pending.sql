-- Cheaper log batches (docs/scaling.md; `npm run bench:cluster` measures the writer). A batch's roll-up cells go in as
-- one usage_pending row in the batch's own statement; folding sums pending rows into usage_daily
-- (one row per group) and deletes them in one transaction, so every batch counts exactly once,
-- whichever instance folds it. Reports read usage_all: the folded rows plus those still pending.
CREATE TABLE usage_pending (
  id bigserial PRIMARY KEY,
  cells jsonb NOT NULL
);
-- A batch's cells, each an array in usage_daily's column order (half the bytes of objects).
CREATE FUNCTION usage_cells(cells jsonb) RETURNS SETOF usage_daily LANGUAGE sql IMMUTABLE AS $$
  SELECT c->>0, c->>1, c->>2, c->>3, (c->>4)::bigint, (c->>5)::bigint, (c->>6)::bigint, (c->>7)::bigint, (c->>8)::bigint,
    (c->>9)::bigint, (c->>10)::bigint, (c->>11)::double precision, (c->>12)::bigint
  FROM jsonb_array_elements(cells) c
$$;
CREATE VIEW usage_all AS
  SELECT * FROM usage_daily
  UNION ALL
  SELECT c.* FROM usage_pending p, usage_cells(p.cells) c;
-- Folding rewrites the same roll-up rows every second: room on each page keeps those updates HOT.
ALTER TABLE usage_daily SET (fillfactor = 50);
-- Tags are deleted with their entries by pruneLogs itself: a foreign key checked (and a row
-- locked) per tag cost more than the tag's insert.
ALTER TABLE request_log_tags DROP CONSTRAINT request_log_tags_request_id_fkey;
DROP INDEX request_log_tags_request;
