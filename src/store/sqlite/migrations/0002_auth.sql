-- Signing secrets for GwSigned tokens, OIDC issuer configs, and optional per-key rate limits.
CREATE TABLE signing_secrets (
  org_id TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  kid TEXT NOT NULL,
  secret_enc TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (org_id, kid)
) STRICT;

CREATE TABLE oidc_configs (
  org_id TEXT PRIMARY KEY REFERENCES orgs(id) ON DELETE CASCADE,
  issuer TEXT NOT NULL,
  audience TEXT NOT NULL,
  jwks_uri TEXT,
  org_claim TEXT,
  updated_at TEXT NOT NULL
) STRICT;
CREATE INDEX oidc_configs_issuer ON oidc_configs(issuer);

ALTER TABLE service_keys ADD COLUMN requests_per_minute INTEGER;
ALTER TABLE service_keys ADD COLUMN tokens_per_minute INTEGER;
