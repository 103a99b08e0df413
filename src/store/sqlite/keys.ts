// SQLite storage of service keys (only their SHA-256 hashes).

import type { Database } from 'bun:sqlite'
import { type KeyRow, toKey } from '../rows'
import type { ServiceKeyRecord } from '../../domain/org'
import type { KeyStore } from '../types'
import { insertOnce } from './errors'

export class SqliteKeyStore implements KeyStore {
  private readonly q
  /** last-used times waiting to be written; flushed at most once a second. */
  /** Last-used times (epoch ms) not yet written, by key id. */
  private readonly touched = new Map<string, number>()
  private touchTimer: ReturnType<typeof setTimeout> | undefined

  /** `writeDb`: the connection last-used times are written on, never waiting for a lock (see createSqliteStore). */
  constructor(
    db: Database,
    private readonly writeDb: Database = db,
  ) {
    this.q = {
      insert: db.query<KeyRow, [string, string, string | null, Uint8Array, string, number | null, number | null, string | null, string | null]>(
        `INSERT INTO service_keys (id, org_id, name, key_hash, created_at, requests_per_minute, tokens_per_minute, expires_at, scopes)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING *`,
      ),
      expire: db.query<null, [string, string, string]>(
        'UPDATE service_keys SET expires_at = ?3 WHERE org_id = ?1 AND id = ?2 AND revoked_at IS NULL',
      ),
      get: db.query<KeyRow, [string]>('SELECT * FROM service_keys WHERE id = ?1'),
      list: db.query<KeyRow, [string]>('SELECT * FROM service_keys WHERE org_id = ?1 ORDER BY created_at'),
      revoke: db.query<null, [string, string, string]>(
        'UPDATE service_keys SET revoked_at = ?3 WHERE org_id = ?1 AND id = ?2 AND revoked_at IS NULL',
      ),
      touch: writeDb.query<null, [string, string]>('UPDATE service_keys SET last_used_at = ?2 WHERE id = ?1'),
    }
  }

  async createServiceKey(rec: Parameters<KeyStore['createServiceKey']>[0]) {
    const row = insertOnce(`service key "${rec.id}"`, () =>
      this.q.insert.get(
        rec.id,
        rec.orgId,
        rec.name ?? null,
        rec.hash,
        new Date().toISOString(),
        rec.limits?.requestsPerMinute ?? null,
        rec.limits?.tokensPerMinute ?? null,
        rec.expiresAt ?? null,
        rec.scopes ? JSON.stringify(rec.scopes) : null,
      ),
    )
    if (!row) throw new Error('insert returned nothing')
    return toKey(row)
  }

  async getServiceKey(id: string) {
    const row = this.q.get.get(id)
    return row ? toKey(row) : undefined
  }

  async listServiceKeys(orgId: string) {
    return this.q.list.all(orgId).map(toKey)
  }

  async revokeServiceKey(orgId: string, id: string) {
    return this.q.revoke.run(orgId, id, new Date().toISOString()).changes > 0
  }

  async expireServiceKey(orgId: string, id: string, expiresAt: string) {
    return this.q.expire.run(orgId, id, expiresAt).changes > 0
  }

  touchServiceKey(id: string, atMs: number): void {
    this.touched.set(id, atMs)
    this.touchTimer ??= setTimeout(() => this.flushTouches(), 1000).unref()
  }

  flushTouches(): void {
    clearTimeout(this.touchTimer)
    this.touchTimer = undefined
    if (!this.touched.size) return
    try {
      this.writeDb.transaction(() => {
        for (const [id, at] of this.touched) this.q.touch.run(id, new Date(at).toISOString())
      })()
      this.touched.clear()
    } catch {
      // Database busy or full: keep them for the next flush; a last-used time may lag, nothing else.
      this.touchTimer = setTimeout(() => this.flushTouches(), 1000).unref()
    }
  }
}
