// PostgreSQL storage of the exact response cache (PRODUCT §19), shared by every instance: point lookups
// by org and request hash; a put drops the org's expired entries and, past its size bound, its oldest.

import type { SQL } from 'bun'
import type { ResponseCacheStore } from '../types'
import { q } from './errors'

export class PgResponseCache implements ResponseCacheStore {
  constructor(private readonly sql: SQL) {}

  async get(orgId: string, key: string, now: number): Promise<string | undefined> {
    const [row] = await q<{ value: string }[]>(this.sql`SELECT value FROM response_cache WHERE org_id = ${orgId} AND key = ${key} AND expires_at > ${now}`)
    return row?.value
  }

  async put(orgId: string, key: string, value: string, expiresAt: number, now: number, maxOrgBytes: number): Promise<void> {
    const bytes = Buffer.byteLength(value)
    await q(this.sql`
      INSERT INTO response_cache (org_id, key, value, bytes, expires_at, created_at)
      VALUES (${orgId}, ${key}, ${value}, ${bytes}, ${expiresAt}, ${now})
      ON CONFLICT (org_id, key) DO UPDATE SET value = excluded.value, bytes = excluded.bytes, expires_at = excluded.expires_at, created_at = excluded.created_at`)
    await q(this.sql`DELETE FROM response_cache WHERE org_id = ${orgId} AND expires_at <= ${now}`)
    // The newest entries whose sizes add up to the bound stay; the older ones go.
    await q(this.sql`
      DELETE FROM response_cache WHERE org_id = ${orgId} AND key IN (
        SELECT key FROM (
          SELECT key, sum(bytes) OVER (ORDER BY created_at DESC, key DESC) AS running
          FROM response_cache WHERE org_id = ${orgId}
        ) ranked WHERE running > ${maxOrgBytes})`)
  }
}
