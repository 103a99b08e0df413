// The SQLite response cache's batched writes: a put is read back before it is written, puts of a few
// milliseconds go in one transaction on the connection that never waits, a lock held elsewhere delays
// them (nothing is lost), closing the store writes what waits, and a store opened again knows the keys
// on disk (it holds each org's keys in memory).

import { expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SecretBox } from '../../src/crypto/secret-box'
import { createSqliteStore } from '../../src/store/sqlite'
import { openDatabase } from '../../src/store/sqlite/open'
import { SqliteResponseCache } from '../../src/store/sqlite/response-cache'

const NOW = 1_800_000_000_000

function withDatabase(run: (path: string) => Promise<void>) {
  return async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-cache-store-'))
    try {
      await run(join(dir, 'gw.db'))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

/** A cache on a file database with the two connections the store gives it: `db` reads, `writeDb` never waits. */
function withCache(run: (path: string, cache: SqliteResponseCache, db: Database) => Promise<void>) {
  return withDatabase(async (path) => {
    const db = openDatabase(path)
    const writeDb = openDatabase(path, 0)
    try {
      await run(path, new SqliteResponseCache(db, writeDb), db)
    } finally {
      writeDb.close()
      db.close()
    }
  })
}

/** The rows another connection sees: what is written. */
const rows = (path: string) => {
  const db = new Database(path, { readonly: true })
  try {
    return (db.query('SELECT key, value FROM response_cache ORDER BY key').all() as { key: string; value: string }[]).map((r) => `${r.key}=${r.value}`)
  } finally {
    db.close()
  }
}

test(
  'a put is answered at once and written with the puts of the same few milliseconds, in one transaction',
  withCache(async (path, cache, db) => {
    const a = cache.put('o1', 'a', 'first', NOW + 60_000, NOW, 1e6)
    const b = cache.put('o1', 'b', 'second', NOW + 60_000, NOW, 1e6)
    expect(await cache.get('o1', 'a', NOW)).toBe('first')
    expect(await cache.get('o1', 'a', NOW + 60_000)).toBeUndefined() // expired, written or not
    expect(rows(path)).toEqual([])
    const before = (db.query('PRAGMA data_version').get() as { data_version: number }).data_version
    await Promise.all([a, b])
    expect(rows(path)).toEqual(['a=first', 'b=second'])
    // One commit by the other connection: `db` sees the data version move once.
    expect((db.query('PRAGMA data_version').get() as { data_version: number }).data_version).toBe(before + 1)
    expect(await cache.get('o1', 'b', NOW)).toBe('second')
  }),
)

test(
  'a batch is written after a quarter of a second, or at once when it holds 4 MiB of answers (memory stays bounded)',
  withCache(async (path, cache) => {
    const small = cache.put('o1', 'small', 'x', NOW + 60_000, NOW, 1e9)
    await Bun.sleep(100)
    expect(rows(path)).toEqual([])
    await small
    const big = 'y'.repeat(1024 * 1024)
    const started = performance.now()
    const puts = [0, 1, 2, 3].map((i) => cache.put('o1', `big${i}`, big, NOW + 60_000, NOW, 1e9))
    await Promise.all(puts)
    expect(performance.now() - started).toBeLessThan(240) // not the 250 ms timer
    expect(rows(path).length).toBe(5)
  }),
)

test(
  'a lock held by another connection (the log thread) delays the batch; nothing is lost, and the request path never waits',
  withCache(async (path, cache) => {
    const other = openDatabase(path)
    other.exec('BEGIN IMMEDIATE')
    const started = performance.now()
    const written = cache.put('o1', 'k', 'kept', NOW + 60_000, NOW, 1e6)
    await Bun.sleep(60)
    expect(rows(path)).toEqual([])
    expect(await cache.get('o1', 'k', NOW)).toBe('kept')
    other.exec('COMMIT')
    await written
    expect(performance.now() - started).toBeGreaterThanOrEqual(60)
    expect(rows(path)).toEqual(['k=kept'])
    other.close()
  }),
)

test(
  'closing the store writes the puts still waiting',
  withDatabase(async (path) => {
    const store = createSqliteStore(path, new SecretBox('a-secret-of-at-least-32-characters-000'))
    const written = store.cache.put('o1', 'k', 'kept', NOW + 60_000, NOW, 1e6)
    await store.close()
    await written
    expect(rows(path)).toEqual(['k=kept'])
  }),
)

test(
  'a store opened again answers from the entries on disk, and forgets the ones it drops',
  withDatabase(async (path) => {
    const box = new SecretBox('a-secret-of-at-least-32-characters-000')
    const first = createSqliteStore(path, box)
    await first.cache.put('o1', 'a', 'x'.repeat(400), NOW + 60_000, NOW, 1_000)
    await first.cache.put('o1', 'b', 'y'.repeat(400), NOW + 60_000, NOW + 1, 1_000)
    await first.close()
    const again = createSqliteStore(path, box)
    try {
      expect(await again.cache.get('o1', 'a', NOW + 2)).toBe('x'.repeat(400))
      expect(await again.cache.get('o1', 'nope', NOW + 2)).toBeUndefined()
      // Past the 1,000-byte bound the oldest ('a') goes, from the table and from what the store knows.
      await again.cache.put('o1', 'c', 'z'.repeat(400), NOW + 60_000, NOW + 2, 1_000)
      expect(await again.cache.get('o1', 'a', NOW + 3)).toBeUndefined()
      expect(await again.cache.get('o1', 'b', NOW + 3)).toBe('y'.repeat(400))
      expect(rows(path).map((r) => r.slice(0, 3))).toEqual(['b=y', 'c=z'])
    } finally {
      await again.close()
    }
  }),
)
