-- Saved prompts: one row per prompt, its numbered immutable versions, and the org's named partials.
CREATE TABLE prompts (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  slug TEXT NOT NULL,
  name TEXT,
  published_version INTEGER,
  created_at TEXT NOT NULL,
  UNIQUE (org_id, slug)
) STRICT;

CREATE TABLE prompt_versions (
  prompt_id TEXT NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
  version INTEGER NOT NULL,
  system_template TEXT,
  user_template TEXT NOT NULL,
  variables TEXT NOT NULL,
  model TEXT NOT NULL,
  temperature REAL,
  max_tokens INTEGER,
  -- Hash of the version's content, so prompts-as-code files make a version only when they change.
  content_hash TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (prompt_id, version)
) STRICT;

CREATE TABLE prompt_partials (
  org_id TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  template TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (org_id, name)
) STRICT;
