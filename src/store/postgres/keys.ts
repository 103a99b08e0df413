// PostgreSQL storage of service keys (only their SHA-256 hashes); last-used times written at most once a second.

import type { SQL } from 'bun'
import { type KeyRow, toKey } from '../rows'
import type { ServiceKeyRecord } from '../../domain/org'
import type { KeyStore } from '../types'
import { q } from './errors'

export class PgKeyStore implements KeyStore {
  /** Last-used times (epoch ms) not yet written, by key id. */
  private readonly touched = new Map<string, number>()
  private touchTimer: ReturnType<typeof setTimeout> | undefined

  constructor(private readonly sql: SQL) {}

  async createServiceKey(rec: Parameters<KeyStore['createServiceKey']>[0]): Promise<ServiceKeyRecord> {
    const [row] = await q<KeyRow[]>(
      this.sql`
        INSERT INTO service_keys (id, org_id, name, key_hash, created_at, requests_per_minute, tokens_per_minute, expires_at, scopes)
        VALUES (${rec.id}, ${rec.orgId}, ${rec.name ?? null}, ${Buffer.from(rec.hash)}, ${new Date().toISOString()},
                ${rec.limits?.requestsPerMinute ?? null}, ${rec.limits?.tokensPerMinute ?? null}, ${rec.expiresAt ?? null}, ${rec.scopes ? JSON.stringify(rec.scopes) : null}::jsonb)
        RETURNING *`,
      `service key "${rec.id}"`,
    )
    if (!row) throw new Error('insert returned nothing')
    return toKey(row)
  }

  async getServiceKey(id: string): Promise<ServiceKeyRecord | undefined> {
    const [row] = await q<KeyRow[]>(this.sql`SELECT * FROM service_keys WHERE id = ${id}`)
    return row ? toKey(row) : undefined
  }

  async listServiceKeys(orgId: string): Promise<ServiceKeyRecord[]> {
    return (await q<KeyRow[]>(this.sql`SELECT * FROM service_keys WHERE org_id = ${orgId} ORDER BY created_at, id`)).map(toKey)
  }

  async revokeServiceKey(orgId: string, id: string): Promise<boolean> {
    const res = await q(
      this.sql`UPDATE service_keys SET revoked_at = ${new Date().toISOString()} WHERE org_id = ${orgId} AND id = ${id} AND revoked_at IS NULL`,
    )
    return res.count > 0
  }

  async expireServiceKey(orgId: string, id: string, expiresAt: string): Promise<boolean> {
    const res = await q(this.sql`UPDATE service_keys SET expires_at = ${expiresAt} WHERE org_id = ${orgId} AND id = ${id} AND revoked_at IS NULL`)
    return res.count > 0
  }

  touchServiceKey(id: string, atMs: number): void {
    this.touched.set(id, atMs)
    this.touchTimer ??= setTimeout(() => void this.flushTouches(), 1000).unref()
  }

  async flushTouches(): Promise<void> {
    clearTimeout(this.touchTimer)
    this.touchTimer = undefined
    if (!this.touched.size) return
    const touched = [...this.touched]
    this.touched.clear()
    const rows = touched.map(([id, at]) => ({ id, at: new Date(at).toISOString() }))
    try {
      await this.sql`
        UPDATE service_keys k SET last_used_at = v.at
        FROM (SELECT * FROM jsonb_to_recordset(${rows}::jsonb) AS x(id text, at text)) v
        WHERE k.id = v.id AND (k.last_used_at IS NULL OR k.last_used_at < v.at)`
    } catch {
      // Database away: keep the newest times for the next flush; a last-used time may lag, nothing else.
      for (const [id, at] of touched) if (!this.touched.has(id)) this.touched.set(id, at)
      this.touchTimer ??= setTimeout(() => void this.flushTouches(), 1000).unref()
    }
  }
}
