-- Routes (PRODUCT §13), and several named, weighted keys per provider per org; the single key of
-- PUT /admin/orgs/:org/providers/:provider is the one named "default".
CREATE TABLE routes (
  org_id text NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  name text NOT NULL,
  spec jsonb NOT NULL,
  updated_at text NOT NULL,
  PRIMARY KEY (org_id, name)
);

ALTER TABLE provider_keys ADD COLUMN name text NOT NULL DEFAULT 'default';
ALTER TABLE provider_keys ADD COLUMN weight double precision NOT NULL DEFAULT 1;
ALTER TABLE provider_keys DROP CONSTRAINT provider_keys_pkey;
ALTER TABLE provider_keys ADD PRIMARY KEY (org_id, provider, name);
