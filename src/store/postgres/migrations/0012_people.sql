-- People (PRODUCT §18): users and roles, personal admin tokens, first-sign-in links, the append-only audit log,
-- dashboard sessions bound to a user, and service keys with expiry and scopes.
CREATE TABLE users (
  id text PRIMARY KEY,
  email text NOT NULL UNIQUE,
  name text,
  role text NOT NULL,
  orgs jsonb NOT NULL,
  password_hash text,
  created_at text NOT NULL,
  updated_at text NOT NULL
);

CREATE TABLE admin_tokens (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  name text,
  token_hash bytea NOT NULL,
  created_at text NOT NULL,
  last_used_at text
);
CREATE INDEX admin_tokens_user ON admin_tokens (user_id);

CREATE TABLE sign_in_links (
  link_hash text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  expires_at bigint NOT NULL
);

-- Append-only (docs/auth.md, "The audit log"): UPDATE and TRUNCATE are refused by triggers for every role, and
-- DELETE too unless the deleting transaction set gw.audit_prune (only the retention pruner does).
CREATE TABLE audit_log (
  seq bigserial PRIMARY KEY,
  id text NOT NULL UNIQUE,
  time text NOT NULL,
  time_ms bigint NOT NULL,
  actor_kind text NOT NULL,
  actor_id text,
  actor_email text,
  action text NOT NULL,
  org_id text,
  target text NOT NULL,
  before_json jsonb,
  after_json jsonb,
  request_id text,
  ip text
);
CREATE INDEX audit_log_org ON audit_log (org_id, seq);
CREATE INDEX audit_log_time ON audit_log (time_ms);
CREATE FUNCTION gw_audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND coalesce(current_setting('gw.audit_prune', true), '') = 'on' THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'audit log entries are never changed (%)', TG_OP;
END $$;
CREATE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION gw_audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION gw_audit_log_append_only();

ALTER TABLE dashboard_sessions ADD COLUMN user_id text REFERENCES users(id) ON DELETE CASCADE;

ALTER TABLE service_keys ADD COLUMN expires_at text;
ALTER TABLE service_keys ADD COLUMN scopes jsonb;
