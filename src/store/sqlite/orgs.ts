// SQLite storage of orgs, their policies and their (encrypted) provider keys.

import type { Database } from 'bun:sqlite'
import { type SecretBox, sealedFor } from '../../crypto/secret-box'
import { compatColumn, type OrgRow, type ProviderRow, sealedKey, toOrg, toProvider } from '../rows'
import type { Org, Policy, ProviderRecord } from '../../domain/org'
import type { OrgStore } from '../types'
import { insertOnce } from './errors'

export class SqliteOrgStore implements OrgStore {
  private readonly q
  constructor(
    db: Database,
    private readonly box: SecretBox,
  ) {
    this.q = {
      insert: db.query<OrgRow, [string, string, string]>(
        'INSERT INTO orgs (id, name, created_at) VALUES (?1, ?2, ?3) RETURNING *',
      ),
      get: db.query<OrgRow, [string]>('SELECT * FROM orgs WHERE id = ?1'),
      list: db.query<OrgRow, []>('SELECT * FROM orgs ORDER BY id'),
      policy: db.query<null, [string, string]>('UPDATE orgs SET policy = ?2 WHERE id = ?1'),
      putProvider: db.query<ProviderRow, [string, string, string, string, string | null, number, number, string, string | null]>(
        `INSERT INTO provider_keys (org_id, provider, name, api_key_enc, base_url, enabled, weight, updated_at, compat)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT (org_id, provider, name) DO UPDATE SET api_key_enc = ?4, base_url = ?5, enabled = ?6, weight = ?7, updated_at = ?8, compat = ?9
         RETURNING *`,
      ),
      providers: db.query<ProviderRow, [string]>('SELECT * FROM provider_keys WHERE org_id = ?1 ORDER BY provider, name'),
      anyKey: db.query<ProviderRow, []>('SELECT * FROM provider_keys LIMIT 1'),
      deleteKey: db.query<null, [string, string, string]>('DELETE FROM provider_keys WHERE org_id = ?1 AND provider = ?2 AND name = ?3'),
    }
  }

  async createOrg(org: { id: string; name: string }): Promise<Org> {
    const row = insertOnce(`org "${org.id}"`, () => this.q.insert.get(org.id, org.name, new Date().toISOString()))
    if (!row) throw new Error('insert returned nothing')
    return toOrg(row)
  }

  async getOrg(id: string): Promise<Org | undefined> {
    const row = this.q.get.get(id)
    return row ? toOrg(row) : undefined
  }

  async listOrgs(): Promise<Org[]> {
    return this.q.list.all().map(toOrg)
  }

  async putPolicy(orgId: string, policy: Policy): Promise<void> {
    this.q.policy.run(orgId, JSON.stringify(policy))
  }

  async putProvider(orgId: string, rec: Omit<ProviderRecord, 'updatedAt'>): Promise<ProviderRecord> {
    const row = this.q.putProvider.get(
      orgId,
      rec.provider,
      rec.name,
      this.box.seal(sealedKey(rec), sealedFor.providerKey(orgId, rec.provider, rec.name)),
      rec.baseUrl ?? null,
      rec.enabled ? 1 : 0,
      rec.weight,
      new Date().toISOString(),
      rec.compat || rec.vertex || rec.bedrock ? JSON.stringify(compatColumn(rec)) : null,
    )
    if (!row) throw new Error('upsert returned nothing')
    return toProvider(this.box, row)
  }

  async getProviders(orgId: string): Promise<ProviderRecord[]> {
    return this.q.providers.all(orgId).map((r) => toProvider(this.box, r))
  }

  async deleteProviderKey(orgId: string, provider: string, name: string): Promise<boolean> {
    return this.q.deleteKey.run(orgId, provider, name).changes > 0
  }

  async openOneKey(): Promise<void> {
    const row = this.q.anyKey.get()
    if (row) toProvider(this.box, row)
  }
}
