// PostgreSQL storage of the MCP gateway (PRODUCT §20): servers and users' OAuth tokens sealed at rest, service keys' tool policies.

import type { SQL } from 'bun'
import type { SecretBox } from '../../crypto/secret-box'
import { type McpServerRecord, mcpSealedFor, type ToolPolicy } from '../../mcp/records'
import type { McpStore } from '../../mcp/store'
import { q } from './errors'

interface ServerRow {
  name: string
  url: string
  spec_enc: string
  updated_at: string
}

export class PgMcpStore implements McpStore {
  constructor(
    private readonly sql: SQL,
    private readonly box: SecretBox,
  ) {}

  private toServer(orgId: string, r: ServerRow): McpServerRecord {
    const spec = JSON.parse(this.box.open(r.spec_enc, mcpSealedFor.server(orgId, r.name))) as Omit<McpServerRecord, 'name' | 'updatedAt'>
    return { ...spec, name: r.name, updatedAt: r.updated_at }
  }

  async putServer(orgId: string, rec: Omit<McpServerRecord, 'updatedAt'>): Promise<McpServerRecord> {
    const { name, ...spec } = rec
    const sealed = this.box.seal(JSON.stringify(spec), mcpSealedFor.server(orgId, name))
    const row = await q(
      this.sql.begin(async (tx) => {
        const [before] = await tx`SELECT url FROM mcp_servers WHERE org_id = ${orgId} AND name = ${name} FOR UPDATE`
        if (before && (before as { url: string }).url !== rec.url) {
          await tx`UPDATE mcp_servers SET oauth_client_enc = NULL WHERE org_id = ${orgId} AND name = ${name}`
          await tx`DELETE FROM mcp_user_tokens WHERE org_id = ${orgId} AND server = ${name}`
        }
        const [r] = await tx`
          INSERT INTO mcp_servers (org_id, name, url, spec_enc, updated_at) VALUES (${orgId}, ${name}, ${rec.url}, ${sealed}, ${new Date().toISOString()})
          ON CONFLICT (org_id, name) DO UPDATE SET url = excluded.url, spec_enc = excluded.spec_enc, updated_at = excluded.updated_at
          RETURNING name, url, spec_enc, updated_at`
        return r as ServerRow | undefined
      }),
    )
    if (!row) throw new Error('upsert returned nothing')
    return this.toServer(orgId, row)
  }

  async getServers(orgId: string): Promise<McpServerRecord[]> {
    const rows = await q<ServerRow[]>(this.sql`SELECT name, url, spec_enc, updated_at FROM mcp_servers WHERE org_id = ${orgId} ORDER BY name`)
    return rows.map((r) => this.toServer(orgId, r))
  }

  async deleteServer(orgId: string, name: string): Promise<boolean> {
    return (await q(this.sql`DELETE FROM mcp_servers WHERE org_id = ${orgId} AND name = ${name}`)).count > 0
  }

  async getOAuthClient(orgId: string, server: string): Promise<string | undefined> {
    const [row] = await q<{ oauth_client_enc: string | null }[]>(this.sql`SELECT oauth_client_enc FROM mcp_servers WHERE org_id = ${orgId} AND name = ${server}`)
    return row?.oauth_client_enc ? this.box.open(row.oauth_client_enc, mcpSealedFor.client(orgId, server)) : undefined
  }

  async putOAuthClient(orgId: string, server: string, json: string): Promise<void> {
    const sealed = this.box.seal(json, mcpSealedFor.client(orgId, server))
    await q(this.sql`UPDATE mcp_servers SET oauth_client_enc = ${sealed} WHERE org_id = ${orgId} AND name = ${server}`)
  }

  async getUserTokens(orgId: string, server: string, endUser: string): Promise<string | undefined> {
    const [row] = await q<{ tokens_enc: string }[]>(
      this.sql`SELECT tokens_enc FROM mcp_user_tokens WHERE org_id = ${orgId} AND server = ${server} AND end_user = ${endUser}`,
    )
    return row ? this.box.open(row.tokens_enc, mcpSealedFor.userTokens(orgId, server, endUser)) : undefined
  }

  async putUserTokens(orgId: string, server: string, endUser: string, json: string): Promise<void> {
    const sealed = this.box.seal(json, mcpSealedFor.userTokens(orgId, server, endUser))
    await q(this.sql`
      INSERT INTO mcp_user_tokens (org_id, server, end_user, tokens_enc, updated_at) VALUES (${orgId}, ${server}, ${endUser}, ${sealed}, ${new Date().toISOString()})
      ON CONFLICT (org_id, server, end_user) DO UPDATE SET tokens_enc = excluded.tokens_enc, updated_at = excluded.updated_at`)
  }

  async deleteUserTokens(orgId: string, server: string, endUser: string): Promise<boolean> {
    return (await q(this.sql`DELETE FROM mcp_user_tokens WHERE org_id = ${orgId} AND server = ${server} AND end_user = ${endUser}`)).count > 0
  }

  async listUserGrants(orgId: string, server: string): Promise<{ endUser: string; updatedAt: string }[]> {
    const rows = await q<{ end_user: string; updated_at: string }[]>(
      this.sql`SELECT end_user, updated_at FROM mcp_user_tokens WHERE org_id = ${orgId} AND server = ${server} ORDER BY end_user`,
    )
    return rows.map((r) => ({ endUser: r.end_user, updatedAt: r.updated_at }))
  }

  async putKeyPolicy(orgId: string, keyId: string, policy: ToolPolicy): Promise<void> {
    const spec = JSON.stringify(policy)
    await q(this.sql`
      INSERT INTO mcp_key_policies (key_id, org_id, spec) VALUES (${keyId}, ${orgId}, ${spec})
      ON CONFLICT (key_id) DO UPDATE SET spec = excluded.spec`)
  }

  async getKeyPolicy(keyId: string): Promise<ToolPolicy | undefined> {
    const [row] = await q<{ spec: string }[]>(this.sql`SELECT spec FROM mcp_key_policies WHERE key_id = ${keyId}`)
    return row ? (JSON.parse(row.spec) as ToolPolicy) : undefined
  }
}
