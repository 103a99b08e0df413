-- gw's PostgreSQL schema: the same records as the SQLite store (src/store/sqlite/migrations), in one step.
CREATE TABLE orgs (
  id text PRIMARY KEY,
  name text NOT NULL,
  policy jsonb NOT NULL DEFAULT '{}',
  created_at text NOT NULL
);

CREATE TABLE provider_keys (
  org_id text NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  provider text NOT NULL,
  api_key_enc text NOT NULL,
  base_url text,
  enabled boolean NOT NULL DEFAULT true,
  updated_at text NOT NULL,
  PRIMARY KEY (org_id, provider)
);

CREATE TABLE service_keys (
  id text PRIMARY KEY,
  org_id text NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  name text,
  key_hash bytea NOT NULL,
  created_at text NOT NULL,
  revoked_at text,
  last_used_at text,
  requests_per_minute integer,
  tokens_per_minute integer
);
CREATE INDEX service_keys_org ON service_keys(org_id);

CREATE TABLE signing_secrets (
  org_id text NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  kid text NOT NULL,
  secret_enc text NOT NULL,
  created_at text NOT NULL,
  PRIMARY KEY (org_id, kid)
);

CREATE TABLE oidc_configs (
  org_id text PRIMARY KEY REFERENCES orgs(id) ON DELETE CASCADE,
  issuer text NOT NULL,
  audience text NOT NULL,
  jwks_uri text,
  org_claim text,
  updated_at text NOT NULL
);
CREATE INDEX oidc_configs_issuer ON oidc_configs(issuer);

CREATE TABLE prompts (
  id text PRIMARY KEY,
  org_id text NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  slug text NOT NULL,
  name text,
  published_version integer,
  created_at text NOT NULL,
  UNIQUE (org_id, slug)
);

CREATE TABLE prompt_versions (
  prompt_id text NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
  version integer NOT NULL,
  system_template text,
  user_template text NOT NULL,
  variables jsonb NOT NULL,
  model text NOT NULL,
  temperature double precision,
  max_tokens integer,
  content_hash text NOT NULL,
  created_at text NOT NULL,
  PRIMARY KEY (prompt_id, version)
);

CREATE TABLE prompt_partials (
  org_id text NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  name text NOT NULL,
  template text NOT NULL,
  updated_at text NOT NULL,
  PRIMARY KEY (org_id, name)
);

-- One row per request. `entry` is the whole entry as JSON text (parsed by gw, never by SQL);
-- the columns beside it exist to be filtered and ordered on. `metadata` holds the entry's
-- metadata with every value as text, so `metadata=k=v` filters are `@>` containment on a GIN index.
CREATE TABLE request_logs (
  request_id text PRIMARY KEY,
  org_id text NOT NULL,
  created_at bigint NOT NULL,
  model text,
  requested_model text,
  status integer NOT NULL,
  end_user_id text,
  metadata jsonb NOT NULL,
  entry text NOT NULL,
  request_body text,
  response_body text
);
CREATE INDEX request_logs_org_time ON request_logs(org_id, created_at DESC, request_id DESC);
CREATE INDEX request_logs_metadata ON request_logs USING gin (metadata jsonb_path_ops);
