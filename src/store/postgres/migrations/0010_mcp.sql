-- The MCP gateway (PRODUCT §20): upstream servers (their spec sealed whole: headers and bearer secrets are
-- credentials), the OAuth client gw registered with each, each end user's tokens (sealed), and the tool
-- policies of service keys.
CREATE TABLE mcp_servers (
  org_id TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  url TEXT NOT NULL,
  spec_enc TEXT NOT NULL,
  oauth_client_enc TEXT,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (org_id, name)
);

CREATE TABLE mcp_user_tokens (
  org_id TEXT NOT NULL,
  server TEXT NOT NULL,
  end_user TEXT NOT NULL,
  tokens_enc TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (org_id, server, end_user),
  FOREIGN KEY (org_id, server) REFERENCES mcp_servers(org_id, name) ON DELETE CASCADE
);

CREATE TABLE mcp_key_policies (
  key_id TEXT PRIMARY KEY REFERENCES service_keys(id) ON DELETE CASCADE,
  org_id TEXT NOT NULL,
  spec TEXT NOT NULL
);
