// SQLite storage of the exact response cache (PRODUCT §19): point lookups by org and request hash; a put
// drops the org's expired entries and, past its size bound, its oldest (the org's total kept in memory).

import type { Database } from 'bun:sqlite'
import type { ResponseCacheStore } from '../types'

/** Expired entries dropped per put. */
const BATCH = 100

export class SqliteResponseCache implements ResponseCacheStore {
  private readonly q
  /** Bytes stored per org, read from the table on the org's first put. */
  private readonly totals = new Map<string, number>()

  constructor(db: Database) {
    this.q = {
      get: db.query<{ value: string }, [string, string, number]>('SELECT value FROM response_cache WHERE org_id = ?1 AND key = ?2 AND expires_at > ?3'),
      old: db.query<{ bytes: number }, [string, string]>('SELECT bytes FROM response_cache WHERE org_id = ?1 AND key = ?2'),
      put: db.query<null, [string, string, string, number, number, number]>(
        'INSERT OR REPLACE INTO response_cache (org_id, key, value, bytes, expires_at, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)',
      ),
      total: db.query<{ total: number | null }, [string]>('SELECT sum(bytes) AS total FROM response_cache WHERE org_id = ?1'),
      expired: db.query<{ bytes: number }, [string, number]>(
        `DELETE FROM response_cache WHERE org_id = ?1 AND key IN
           (SELECT key FROM response_cache WHERE org_id = ?1 AND expires_at <= ?2 LIMIT ${BATCH}) RETURNING bytes`,
      ),
      oldest: db.query<{ bytes: number }, [string]>(
        `DELETE FROM response_cache WHERE org_id = ?1 AND key IN
           (SELECT key FROM response_cache WHERE org_id = ?1 ORDER BY created_at, key LIMIT 1) RETURNING bytes`,
      ),
    }
    this.transaction = db.transaction((orgId: string, key: string, value: string, expiresAt: number, now: number, maxOrgBytes: number) => {
      let total = this.totals.get(orgId) ?? this.q.total.get(orgId)?.total ?? 0
      total -= this.q.old.get(orgId, key)?.bytes ?? 0
      const bytes = Buffer.byteLength(value)
      this.q.put.run(orgId, key, value, bytes, expiresAt, now)
      total += bytes
      for (const r of this.q.expired.all(orgId, now)) total -= r.bytes
      while (total > maxOrgBytes) {
        const dropped = this.q.oldest.all(orgId)
        if (!dropped.length) break
        for (const r of dropped) total -= r.bytes
      }
      this.totals.set(orgId, Math.max(0, total))
    })
  }

  private readonly transaction

  async get(orgId: string, key: string, now: number): Promise<string | undefined> {
    return this.q.get.get(orgId, key, now)?.value
  }

  async put(orgId: string, key: string, value: string, expiresAt: number, now: number, maxOrgBytes: number): Promise<void> {
    this.transaction(orgId, key, value, expiresAt, now, maxOrgBytes)
  }
}
