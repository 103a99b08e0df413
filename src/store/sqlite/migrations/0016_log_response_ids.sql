-- The id of a Responses answer OpenAI gave and gw relayed (`resp_…`): previous_response_id sent with
-- another provider's model finds that answer's entry by it (PRODUCT §12, docs/apis.md). Set on those
-- entries only; the index holds no other row.
ALTER TABLE request_logs ADD COLUMN response_id TEXT;
CREATE INDEX request_logs_org_response ON request_logs(org_id, response_id) WHERE response_id IS NOT NULL;
