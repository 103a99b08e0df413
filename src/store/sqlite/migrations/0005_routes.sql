-- Routes (PRODUCT §13): an org's own model names mapping to weighted targets; `spec` is the route as JSON.
CREATE TABLE routes (
  org_id TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  spec TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (org_id, name)
) STRICT;
