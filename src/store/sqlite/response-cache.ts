// SQLite storage of the exact response cache (PRODUCT §19): point lookups by org and request hash, each org's
// keys held in memory so that a miss never reads the table (one instance owns a SQLite file, docs/scaling.md);
// puts written in batches on the connection that never waits for a lock, each batch dropping the org's
// expired entries and, past its size bound, its oldest (the org's total kept in memory).

import type { Database } from 'bun:sqlite'
import type { ResponseCacheStore } from '../types'

/** Expired entries dropped per org per batch. */
const BATCH = 100
/**
 * A batch is written this long after its first put: one transaction for the puts of those
 * milliseconds. A put committed on its own cost the serving thread 40–55 µs, about 30 of them the
 * commit; batches of 10 ms still cost ~21 µs a put, most of it reading back the pages the log
 * thread's commits took from this connection's cache; at 250 ms that is spread over enough puts to
 * vanish in the noise (docs/benchmarks.md, "Response cache"). A cache may forget the last 250 ms of
 * answers in a crash.
 */
const FLUSH_MS = 250
/** A batch holding this many bytes of answers, or this many puts, is written at once (memory bound). */
const FLUSH_BYTES = 4 * 1024 * 1024
const FLUSH_PUTS = 1000
/** A batch the log thread's lock kept out is tried again every BUSY_MS, this many times, before it is dropped (a cache may forget). */
const BUSY_RETRIES = 500
const BUSY_MS = 10
/** Puts waiting at most; past it a put is refused (the database has been busy for long). */
const MAX_PENDING = 2000

interface Put {
  orgId: string
  key: string
  value: string
  expiresAt: number
  now: number
  maxOrgBytes: number
  /** The key may be stored already (its size then leaves the org's total); false skips that read. */
  replaces: boolean
}

/** The puts not yet written, and the promise each of their callers holds. */
interface Batch {
  puts: Map<string, Put>
  /** Characters of the answers waiting. */
  size: number
  written: Promise<void>
  resolve: () => void
  reject: (err: unknown) => void
  tries: number
}

const slot = (orgId: string, key: string) => `${orgId}\n${key}`

export class SqliteResponseCache implements ResponseCacheStore {
  private readonly get1
  private readonly keys1
  private readonly write
  /**
   * Each org's stored keys with their expiry (Infinity for those read from the table on the org's
   * first lookup: get's SELECT checks it), so that a miss costs a map lookup instead of a read of the
   * table (about 15–20 µs once the log thread's commits have emptied this connection's page cache;
   * docs/benchmarks.md, "Response cache").
   */
  private readonly known = new Map<string, Map<string, number>>()
  /** Bytes stored per org, read from the table on the org's first put. */
  private readonly totals = new Map<string, number>()
  private batch: Batch | undefined
  private timer: ReturnType<typeof setTimeout> | undefined

  /** `writeDb`: the connection puts are written on, never waiting for a lock (see createSqliteStore). */
  constructor(db: Database, writeDb: Database = db) {
    this.get1 = db.query<{ value: string }, [string, string, number]>('SELECT value FROM response_cache WHERE org_id = ?1 AND key = ?2 AND expires_at > ?3')
    // The primary key's index alone (the table holds the answers): a key read from disk has an unknown expiry, get's SELECT checks it.
    this.keys1 = db.query<{ key: string }, [string]>('SELECT key FROM response_cache WHERE org_id = ?1')
    const q = {
      old: writeDb.query<{ bytes: number }, [string, string]>('SELECT bytes FROM response_cache WHERE org_id = ?1 AND key = ?2'),
      put: writeDb.query<null, [string, string, string, number, number, number]>(
        'INSERT OR REPLACE INTO response_cache (org_id, key, value, bytes, expires_at, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)',
      ),
      total: writeDb.query<{ total: number | null }, [string]>('SELECT sum(bytes) AS total FROM response_cache WHERE org_id = ?1'),
      expired: writeDb.query<{ key: string; bytes: number }, [string, number]>(
        `DELETE FROM response_cache WHERE org_id = ?1 AND key IN
           (SELECT key FROM response_cache WHERE org_id = ?1 AND expires_at <= ?2 LIMIT ${BATCH}) RETURNING key, bytes`,
      ),
      oldest: writeDb.query<{ key: string; bytes: number }, [string]>(
        `DELETE FROM response_cache WHERE org_id = ?1 AND key IN
           (SELECT key FROM response_cache WHERE org_id = ?1 ORDER BY created_at, key LIMIT 1) RETURNING key, bytes`,
      ),
    }
    this.write = writeDb.transaction((puts: Iterable<Put>) => {
      const totals = new Map<string, number>()
      const last = new Map<string, Put>()
      const dropped: [string, string][] = []
      for (const p of puts) {
        let total = totals.get(p.orgId) ?? this.totals.get(p.orgId) ?? q.total.get(p.orgId)?.total ?? 0
        if (p.replaces) total -= q.old.get(p.orgId, p.key)?.bytes ?? 0
        const bytes = Buffer.byteLength(p.value)
        q.put.run(p.orgId, p.key, p.value, bytes, p.expiresAt, p.now)
        totals.set(p.orgId, total + bytes)
        last.set(p.orgId, p)
      }
      for (const [orgId, p] of last) {
        let total = totals.get(orgId) as number
        for (const r of q.expired.all(orgId, p.now)) {
          total -= r.bytes
          dropped.push([orgId, r.key])
        }
        while (total > p.maxOrgBytes) {
          const gone = q.oldest.all(orgId)
          if (!gone.length) break
          for (const r of gone) {
            total -= r.bytes
            dropped.push([orgId, r.key])
          }
        }
        totals.set(orgId, Math.max(0, total))
      }
      return { totals, dropped }
    })
  }

  async get(orgId: string, key: string, now: number): Promise<string | undefined> {
    // A put not written yet is the newest answer for its key.
    const pending = this.batch?.puts.get(slot(orgId, key))
    if (pending) return pending.expiresAt > now ? pending.value : undefined
    const expiresAt = this.keysOf(orgId).get(key)
    if (expiresAt === undefined || expiresAt <= now) return undefined
    return this.get1.get(orgId, key, now)?.value
  }

  private keysOf(orgId: string): Map<string, number> {
    let keys = this.known.get(orgId)
    if (!keys) {
      keys = new Map(this.keys1.all(orgId).map((r) => [r.key, Infinity]))
      this.known.set(orgId, keys)
    }
    return keys
  }

  /** Resolves once the put is written (within FLUSH_MS, later while the database is busy). */
  put(orgId: string, key: string, value: string, expiresAt: number, now: number, maxOrgBytes: number): Promise<void> {
    if (!this.batch) {
      let resolve!: () => void
      let reject!: (err: unknown) => void
      const written = new Promise<void>((res, rej) => {
        resolve = res
        reject = rej
      })
      this.batch = { puts: new Map(), size: 0, written, resolve, reject, tries: 0 }
    }
    const b = this.batch
    if (b.puts.size >= MAX_PENDING) return Promise.reject(new Error(`${MAX_PENDING} answers are waiting for the database: this one is not kept`))
    const known = this.keysOf(orgId)
    b.puts.set(slot(orgId, key), { orgId, key, value, expiresAt, now, maxOrgBytes, replaces: known.has(key) })
    // Known before it is written: get reads it from the batch until then.
    known.set(key, expiresAt)
    b.size += value.length
    if ((b.size >= FLUSH_BYTES || b.puts.size >= FLUSH_PUTS) && b.tries === 0) {
      clearTimeout(this.timer)
      this.timer = setTimeout(() => this.flush(), 0).unref()
    } else this.timer ??= setTimeout(() => this.flush(), FLUSH_MS).unref()
    return b.written
  }

  /** Writes the waiting puts now (also on close); a busy database leaves them for a later try. */
  flush(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    const b = this.batch
    if (!b) return
    try {
      const { totals, dropped } = this.write.immediate(b.puts.values())
      for (const [orgId, total] of totals) this.totals.set(orgId, total)
      for (const [orgId, key] of dropped) this.known.get(orgId)?.delete(key)
      this.batch = undefined
      b.resolve()
    } catch (err) {
      // Locked by the log thread's transaction (this connection never waits): new puts join the batch.
      if ((err as { code?: string }).code?.startsWith('SQLITE_BUSY') && ++b.tries < BUSY_RETRIES) {
        this.timer = setTimeout(() => this.flush(), BUSY_MS).unref()
        return
      }
      this.batch = undefined
      // Keys these puts added are forgotten again; a key stored before stays known (its old entry is still there).
      for (const p of b.puts.values()) if (!p.replaces) this.known.get(p.orgId)?.delete(p.key)
      b.reject(err)
    }
  }
}
