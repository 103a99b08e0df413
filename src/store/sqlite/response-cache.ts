// SQLite storage of the exact response cache (PRODUCT §19): point lookups by org and request hash on the
// serving thread, each org's keys held in memory so that a miss never reads the table (one instance owns a
// SQLite file, docs/scaling.md); puts written by the log thread in the transaction of their request's log
// entry (SqliteCacheWrites), each batch dropping the org's expired entries and, past its size bound, its oldest.

import type { Database } from 'bun:sqlite'
import { keptValue } from '../../cache/kept-answer'
import type { CachePut, KeptAnswers, ResponseCacheStore } from '../types'

/** Expired entries dropped per org per batch. */
const EXPIRED_PER_BATCH = 100
/**
 * Characters of answers handed to the log thread and not yet written, at most: past it an answer is
 * not kept (the log thread is far behind; its queue already holds the requests back, LogPath.maxQueue).
 */
const MAX_HANDED_OVER = 64 * 1024 * 1024
/** Dropped keys waiting to be reported, at most: past it they are let go (a key known and gone costs one read, then a miss). */
const MAX_DROPPED = 100_000

const slot = (orgId: string, key: string) => `${orgId}\n${key}`

/** What one batch of puts did to the table; it holds once the batch's transaction committed (SqliteCacheWrites.committed). */
export interface CacheBatch {
  /** Bytes stored per org after the batch. */
  totals: Map<string, number>
  /** Keys (slots) the batch dropped: expired, or past the org's bound. */
  dropped: string[]
}

/**
 * The response cache's writes on one connection, inside the caller's transaction: on the log thread,
 * the log batch's (src/store/sqlite/logs.ts); a direct put's otherwise. Each org's stored bytes are
 * kept in memory, read from the table on the org's first put: one writer writes a database's cache at
 * a time (the log thread's; its in-process stand-in, LogPath's fallback, only once no log thread runs).
 */
export class SqliteCacheWrites {
  private readonly totals = new Map<string, number>()
  private dropped: string[] = []
  private readonly q

  constructor(db: Database) {
    this.q = {
      old: db.query<{ bytes: number }, [string, string]>('SELECT bytes FROM response_cache WHERE org_id = ?1 AND key = ?2'),
      put: db.query<null, [string, string, string, number, number, number]>(
        'INSERT OR REPLACE INTO response_cache (org_id, key, value, bytes, expires_at, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)',
      ),
      total: db.query<{ total: number | null }, [string]>('SELECT sum(bytes) AS total FROM response_cache WHERE org_id = ?1'),
      expired: db.query<{ key: string; bytes: number }, [string, number]>(
        `DELETE FROM response_cache WHERE org_id = ?1 AND key IN
           (SELECT key FROM response_cache WHERE org_id = ?1 AND expires_at <= ?2 LIMIT ${EXPIRED_PER_BATCH}) RETURNING key, bytes`,
      ),
      oldest: db.query<{ key: string; bytes: number }, [string]>(
        `DELETE FROM response_cache WHERE org_id = ?1 AND key IN
           (SELECT key FROM response_cache WHERE org_id = ?1 ORDER BY created_at, rowid LIMIT 1) RETURNING key, bytes`,
      ),
    }
  }

  /**
   * Stores the puts in order (a later put of a key replaces an earlier one), then drops each org's
   * expired entries (up to EXPIRED_PER_BATCH) and its oldest while it holds more than the bound of its
   * last put. Runs inside the caller's transaction; `committed` once it committed.
   */
  write(puts: Iterable<CachePut>): CacheBatch {
    const { q } = this
    const totals = new Map<string, number>()
    const last = new Map<string, CachePut>()
    const dropped: string[] = []
    for (const p of puts) {
      // A relayed stream's answer is made here; one that is not kept (not complete, too large) is not written.
      const value = keptValue(p)
      if (!value) continue
      const total = (totals.get(p.orgId) ?? this.totals.get(p.orgId) ?? q.total.get(p.orgId)?.total ?? 0) - (p.replaces === false ? 0 : (q.old.get(p.orgId, p.key)?.bytes ?? 0))
      const bytes = Buffer.byteLength(value)
      q.put.run(p.orgId, p.key, value, bytes, p.expiresAt, p.now)
      totals.set(p.orgId, total + bytes)
      last.set(p.orgId, p)
    }
    for (const [orgId, p] of last) {
      let total = totals.get(orgId) as number
      for (const r of q.expired.all(orgId, p.now)) {
        total -= r.bytes
        dropped.push(slot(orgId, r.key))
      }
      while (total > p.maxOrgBytes) {
        const gone = q.oldest.all(orgId)
        if (!gone.length) break
        for (const r of gone) {
          total -= r.bytes
          dropped.push(slot(orgId, r.key))
        }
      }
      totals.set(orgId, Math.max(0, total))
    }
    return { totals, dropped }
  }

  /** The batch's transaction committed: its totals hold, and its dropped keys wait for takeDropped. */
  committed(b: CacheBatch): void {
    for (const [orgId, total] of b.totals) this.totals.set(orgId, total)
    if (this.dropped.length + b.dropped.length > MAX_DROPPED) this.dropped = []
    for (const s of b.dropped) this.dropped.push(s)
  }

  /** Keys dropped since the last call, for the serving thread's known keys (KeptAnswers.forget). */
  takeDropped(): string[] {
    const taken = this.dropped
    this.dropped = []
    return taken
  }
}

let lastRefusal = -Infinity

/** Characters a handed-over put holds: its answer, or a relayed stream's text (whichever it came with). */
const handedSize = (p: CachePut) => ('stream' in p ? p.stream.events.text.length : p.value.length)

/**
 * One org's stored keys, each with its expiry (Infinity for those read from the table on the org's first
 * lookup: get's SELECT checks it), or with its put while that is handed to the log thread and not yet
 * written (the newest answer for the key, answered from memory). A miss costs a map lookup instead of a
 * read of the table (about 15–20 µs once the log thread's commits have emptied this connection's page
 * cache; docs/benchmarks.md, "Response cache").
 */
type OrgKeys = Map<string, number | CachePut>

export class SqliteResponseCache implements ResponseCacheStore, KeptAnswers {
  private readonly get1
  private readonly keys1
  private readonly putNow: (put: CachePut) => CacheBatch
  /** By org (one map lookup per org, then the key: no string is built per request). */
  private readonly orgs = new Map<string, OrgKeys>()
  /** Characters of the answers handed over and not yet written. */
  private handedSize = 0
  /** The log path writes this cache's puts (server.ts hands it to the log path when the store holds the cache). */
  readonly keptByLog: KeptAnswers = this

  /**
   * `db`: the serving thread's connection, for lookups. `writes`: the writes on the connection that
   * never waits for a lock (see createSqliteStore), used by `put` alone.
   */
  constructor(
    db: Database,
    private readonly writes: SqliteCacheWrites,
    writeDb: Database = db,
  ) {
    this.get1 = db.query<{ value: string }, [string, string, number]>('SELECT value FROM response_cache WHERE org_id = ?1 AND key = ?2 AND expires_at > ?3')
    // The primary key's index alone (the table holds the answers): a key read from disk has an unknown expiry, get's SELECT checks it.
    this.keys1 = db.query<{ key: string }, [string]>('SELECT key FROM response_cache WHERE org_id = ?1')
    const put = writeDb.transaction((p: CachePut) => writes.write([p]))
    this.putNow = (p) => put.immediate(p)
  }

  async get(orgId: string, key: string, now: number): Promise<string | undefined> {
    const known = this.org(orgId).get(key)
    if (known === undefined) return undefined
    if (typeof known !== 'number') {
      if (known.expiresAt <= now) return undefined
      // A relayed stream's answer not written yet is made here for this repeat (the log thread makes the same).
      return keptValue(known)
    }
    return known > now ? this.get1.get(orgId, key, now)?.value : undefined
  }

  private org(orgId: string): OrgKeys {
    let org = this.orgs.get(orgId)
    if (!org) {
      org = new Map(this.keys1.all(orgId).map((r) => [r.key, Infinity]))
      this.orgs.set(orgId, org)
    }
    return org
  }

  /**
   * Writes at once, in a transaction of its own on the connection that never waits (a database another
   * connection holds locked rejects it). gw's requests hand their puts to the log thread instead (handOver).
   */
  async put(orgId: string, key: string, value: string, expiresAt: number, now: number, maxOrgBytes: number): Promise<void> {
    const batch = this.putNow({ orgId, key, value, expiresAt, now, maxOrgBytes })
    this.writes.committed(batch)
    this.org(orgId).set(key, expiresAt)
    this.forget(this.writes.takeDropped())
  }

  /** Notes the put as handed over, and whether its key may be stored already (`replaces`: else the log thread skips reading its old size). */
  handOver(put: CachePut): boolean {
    if (this.handedSize + handedSize(put) > MAX_HANDED_OVER) {
      // Said once a minute at most: while the log thread is behind every miss would say it.
      if (put.now - lastRefusal >= 60_000) {
        lastRefusal = put.now
        console.error(`gw: ${this.handedSize} characters of answers wait for the log thread: new answers are not kept in the response cache until it catches up (said once a minute at most)`)
      }
      return false
    }
    const org = this.org(put.orgId)
    const before = org.get(put.key)
    if (before !== undefined && typeof before !== 'number') this.handedSize -= handedSize(before)
    put.replaces = before !== undefined
    org.set(put.key, put)
    this.handedSize += handedSize(put)
    return true
  }

  settled(put: CachePut): void {
    const org = this.orgs.get(put.orgId)
    if (org?.get(put.key) !== put) return
    org.set(put.key, put.expiresAt)
    this.handedSize -= handedSize(put)
  }

  forget(slots: readonly string[]): void {
    for (const s of slots) {
      const at = s.lastIndexOf('\n')
      const org = this.orgs.get(s.slice(0, at))
      const key = s.slice(at + 1)
      // A later put of the key, not written yet, is known again.
      if (typeof org?.get(key) === 'number') org?.delete(key)
    }
  }
}
