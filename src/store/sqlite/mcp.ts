// SQLite storage of the MCP gateway (PRODUCT §20): servers and users' OAuth tokens sealed at rest, service keys' tool policies.

import type { Database } from 'bun:sqlite'
import type { SecretBox } from '../../crypto/secret-box'
import { type McpServerRecord, mcpSealedFor, type ToolPolicy } from '../../mcp/records'
import type { McpStore } from '../../mcp/store'

interface ServerRow {
  name: string
  url: string
  spec_enc: string
  updated_at: string
}

export class SqliteMcpStore implements McpStore {
  private readonly q

  constructor(
    private readonly db: Database,
    private readonly box: SecretBox,
  ) {
    this.q = {
      url: db.query<{ url: string }, [string, string]>('SELECT url FROM mcp_servers WHERE org_id = ?1 AND name = ?2'),
      put: db.query<ServerRow, [string, string, string, string, string]>(
        `INSERT INTO mcp_servers (org_id, name, url, spec_enc, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (org_id, name) DO UPDATE SET url = ?3, spec_enc = ?4, updated_at = ?5 RETURNING name, url, spec_enc, updated_at`,
      ),
      forget: db.query<null, [string, string]>('UPDATE mcp_servers SET oauth_client_enc = NULL WHERE org_id = ?1 AND name = ?2'),
      forgetTokens: db.query<null, [string, string]>('DELETE FROM mcp_user_tokens WHERE org_id = ?1 AND server = ?2'),
      list: db.query<ServerRow, [string]>('SELECT name, url, spec_enc, updated_at FROM mcp_servers WHERE org_id = ?1 ORDER BY name'),
      delete: db.query<null, [string, string]>('DELETE FROM mcp_servers WHERE org_id = ?1 AND name = ?2'),
      client: db.query<{ oauth_client_enc: string | null }, [string, string]>('SELECT oauth_client_enc FROM mcp_servers WHERE org_id = ?1 AND name = ?2'),
      putClient: db.query<null, [string, string, string]>('UPDATE mcp_servers SET oauth_client_enc = ?3 WHERE org_id = ?1 AND name = ?2'),
      tokens: db.query<{ tokens_enc: string }, [string, string, string]>('SELECT tokens_enc FROM mcp_user_tokens WHERE org_id = ?1 AND server = ?2 AND end_user = ?3'),
      putTokens: db.query<null, [string, string, string, string, string]>(
        `INSERT INTO mcp_user_tokens (org_id, server, end_user, tokens_enc, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (org_id, server, end_user) DO UPDATE SET tokens_enc = ?4, updated_at = ?5`,
      ),
      deleteTokens: db.query<null, [string, string, string]>('DELETE FROM mcp_user_tokens WHERE org_id = ?1 AND server = ?2 AND end_user = ?3'),
      grants: db.query<{ end_user: string; updated_at: string }, [string, string]>(
        'SELECT end_user, updated_at FROM mcp_user_tokens WHERE org_id = ?1 AND server = ?2 ORDER BY end_user',
      ),
      putPolicy: db.query<null, [string, string, string]>('INSERT OR REPLACE INTO mcp_key_policies (key_id, org_id, spec) VALUES (?1, ?2, ?3)'),
      policy: db.query<{ spec: string }, [string]>('SELECT spec FROM mcp_key_policies WHERE key_id = ?1'),
    }
  }

  private toServer(orgId: string, r: ServerRow): McpServerRecord {
    const spec = JSON.parse(this.box.open(r.spec_enc, mcpSealedFor.server(orgId, r.name))) as Omit<McpServerRecord, 'name' | 'updatedAt'>
    return { ...spec, name: r.name, updatedAt: r.updated_at }
  }

  async putServer(orgId: string, rec: Omit<McpServerRecord, 'updatedAt'>): Promise<McpServerRecord> {
    const { name, ...spec } = rec
    const row = this.db.transaction(() => {
      const before = this.q.url.get(orgId, name)
      if (before && before.url !== rec.url) {
        this.q.forget.run(orgId, name)
        this.q.forgetTokens.run(orgId, name)
      }
      return this.q.put.get(orgId, name, rec.url, this.box.seal(JSON.stringify(spec), mcpSealedFor.server(orgId, name)), new Date().toISOString())
    })()
    if (!row) throw new Error('upsert returned nothing')
    return this.toServer(orgId, row)
  }

  async getServers(orgId: string): Promise<McpServerRecord[]> {
    return this.q.list.all(orgId).map((r) => this.toServer(orgId, r))
  }

  async deleteServer(orgId: string, name: string): Promise<boolean> {
    return this.q.delete.run(orgId, name).changes > 0
  }

  async getOAuthClient(orgId: string, server: string): Promise<string | undefined> {
    const enc = this.q.client.get(orgId, server)?.oauth_client_enc
    return enc ? this.box.open(enc, mcpSealedFor.client(orgId, server)) : undefined
  }

  async putOAuthClient(orgId: string, server: string, json: string): Promise<void> {
    this.q.putClient.run(orgId, server, this.box.seal(json, mcpSealedFor.client(orgId, server)))
  }

  async getUserTokens(orgId: string, server: string, endUser: string): Promise<string | undefined> {
    const enc = this.q.tokens.get(orgId, server, endUser)?.tokens_enc
    return enc ? this.box.open(enc, mcpSealedFor.userTokens(orgId, server, endUser)) : undefined
  }

  async putUserTokens(orgId: string, server: string, endUser: string, json: string): Promise<void> {
    this.q.putTokens.run(orgId, server, endUser, this.box.seal(json, mcpSealedFor.userTokens(orgId, server, endUser)), new Date().toISOString())
  }

  async deleteUserTokens(orgId: string, server: string, endUser: string): Promise<boolean> {
    return this.q.deleteTokens.run(orgId, server, endUser).changes > 0
  }

  async listUserGrants(orgId: string, server: string): Promise<{ endUser: string; updatedAt: string }[]> {
    return this.q.grants.all(orgId, server).map((r) => ({ endUser: r.end_user, updatedAt: r.updated_at }))
  }

  async putKeyPolicy(orgId: string, keyId: string, policy: ToolPolicy): Promise<void> {
    this.q.putPolicy.run(keyId, orgId, JSON.stringify(policy))
  }

  async getKeyPolicy(keyId: string): Promise<ToolPolicy | undefined> {
    const row = this.q.policy.get(keyId)
    return row ? (JSON.parse(row.spec) as ToolPolicy) : undefined
  }
}
