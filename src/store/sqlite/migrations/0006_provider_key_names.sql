-- Several keys per provider per org (PRODUCT §13): each has a name and a weight; the single key of
-- PUT /admin/orgs/:org/providers/:provider is the one named "default".
CREATE TABLE provider_keys_named (
  org_id TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  provider TEXT NOT NULL,
  name TEXT NOT NULL,
  api_key_enc TEXT NOT NULL,
  base_url TEXT,
  enabled INTEGER NOT NULL DEFAULT 1,
  weight REAL NOT NULL DEFAULT 1,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (org_id, provider, name)
) STRICT;
INSERT INTO provider_keys_named (org_id, provider, name, api_key_enc, base_url, enabled, weight, updated_at)
  SELECT org_id, provider, 'default', api_key_enc, base_url, enabled, 1, updated_at FROM provider_keys;
DROP TABLE provider_keys;
ALTER TABLE provider_keys_named RENAME TO provider_keys;
