-- The logs API's filters (docs/architecture.md "Logs API"): each one reads a range of its own index in
-- time order, so a page walks no more than FILTER_WINDOW entries whatever the filter matches; the same
-- indexes as SQLite's migration 0008 (request_logs_org_time serves since/until alone).
CREATE INDEX request_logs_org_user ON request_logs(org_id, end_user_id, created_at DESC, request_id DESC);
CREATE INDEX request_logs_org_model ON request_logs(org_id, model, created_at DESC, request_id DESC);
CREATE INDEX request_logs_org_requested_model ON request_logs(org_id, requested_model, created_at DESC, request_id DESC);
CREATE INDEX request_logs_org_status ON request_logs(org_id, status, created_at DESC, request_id DESC);
-- `status=success` / `status=error`: the class as an expression, so both are one equality.
CREATE INDEX request_logs_org_failed ON request_logs(org_id, (status >= 400), created_at DESC, request_id DESC);
