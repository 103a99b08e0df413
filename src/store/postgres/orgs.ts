// PostgreSQL storage of orgs, their policies and their (encrypted) provider keys.

import type { SQL } from 'bun'
import { type SecretBox, sealedFor } from '../../crypto/secret-box'
import { compatColumn, type OrgRow, type ProviderRow, sealedKey, toOrg, toProvider } from '../rows'
import type { Org, Policy, ProviderRecord } from '../../domain/org'
import type { OrgStore } from '../types'
import { q } from './errors'

export class PgOrgStore implements OrgStore {
  constructor(
    private readonly sql: SQL,
    private readonly box: SecretBox,
  ) {}

  async createOrg(org: { id: string; name: string }): Promise<Org> {
    const [row] = await q<OrgRow[]>(
      this.sql`INSERT INTO orgs (id, name, created_at) VALUES (${org.id}, ${org.name}, ${new Date().toISOString()}) RETURNING *`,
      `org "${org.id}"`,
    )
    if (!row) throw new Error('insert returned nothing')
    return toOrg(row)
  }

  async getOrg(id: string): Promise<Org | undefined> {
    const [row] = await q<OrgRow[]>(this.sql`SELECT * FROM orgs WHERE id = ${id}`)
    return row ? toOrg(row) : undefined
  }

  async listOrgs(): Promise<Org[]> {
    return (await q<OrgRow[]>(this.sql`SELECT * FROM orgs ORDER BY id`)).map(toOrg)
  }

  async putPolicy(orgId: string, policy: Policy): Promise<void> {
    await q(this.sql`UPDATE orgs SET policy = ${policy}::jsonb WHERE id = ${orgId}`)
  }

  async putProvider(orgId: string, rec: Omit<ProviderRecord, 'updatedAt'>): Promise<ProviderRecord> {
    const enc = this.box.seal(sealedKey(rec), sealedFor.providerKey(orgId, rec.provider, rec.name))
    const compat = compatColumn(rec)
    const at = new Date().toISOString()
    const [row] = await q<ProviderRow[]>(this.sql`
      INSERT INTO provider_keys (org_id, provider, name, api_key_enc, base_url, enabled, weight, updated_at, compat)
      VALUES (${orgId}, ${rec.provider}, ${rec.name}, ${enc}, ${rec.baseUrl ?? null}, ${rec.enabled}, ${rec.weight}, ${at}, ${compat}::jsonb)
      ON CONFLICT (org_id, provider, name) DO UPDATE
        SET api_key_enc = excluded.api_key_enc, base_url = excluded.base_url, enabled = excluded.enabled,
            weight = excluded.weight, updated_at = excluded.updated_at, compat = excluded.compat
      RETURNING *`)
    if (!row) throw new Error('upsert returned nothing')
    return toProvider(this.box, row)
  }

  async deleteProviderKey(orgId: string, provider: string, name: string): Promise<boolean> {
    return (await q(this.sql`DELETE FROM provider_keys WHERE org_id = ${orgId} AND provider = ${provider} AND name = ${name}`)).count > 0
  }

  async getProviders(orgId: string): Promise<ProviderRecord[]> {
    const rows = await q<ProviderRow[]>(this.sql`SELECT * FROM provider_keys WHERE org_id = ${orgId} ORDER BY provider, name`)
    return rows.map((r) => toProvider(this.box, r))
  }

  async openOneKey(): Promise<void> {
    const [row] = await q<ProviderRow[]>(this.sql`SELECT * FROM provider_keys LIMIT 1`)
    if (row) toProvider(this.box, row)
  }
}
