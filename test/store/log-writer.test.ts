// The write-behind log queue: batches, read-your-writes, retries on a failing store, flush on close, the spool while the database is away.

import { describe, expect, test } from 'bun:test'
import { appendFileSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { StoreUnavailableError } from '../../src/store/errors'
import { LogSpool } from '../../src/store/log-spool'
import { LogWriter } from '../../src/store/log-writer'
import type { LogEntry } from '../../src/domain/log-entry'
import type { LogStore } from '../../src/store/types'

const e = (i: number) => ({ requestId: `r${i}`, orgId: 'o', createdAt: new Date().toISOString() }) as LogEntry

function memoryStore(failFirst = 0) {
  const rows: LogEntry[] = []
  const batches: number[] = []
  let failures = failFirst
  const store: LogStore = {
    async insertLogs(entries) {
      if (failures-- > 0) throw new Error('database is locked')
      batches.push(entries.length)
      for (const x of entries) if (!rows.some((r) => r.requestId === x.requestId)) rows.push(x)
    },
    async getLog() {
      return undefined
    },
    async getLogByResponseId() {
      return undefined
    },
    async pruneLogs() {
      return 0
    },
    async usage() {
      return []
    },
    async spend() {
      return 0
    },
    async queryLogs() {
      return { data: [], nextCursor: null }
    },
    async countLogs() {
      return rows.length
    },
    stats: () => Promise.reject(new Error('not used here')),
  }
  return { store, rows, batches }
}

test('entries are written in batches, off the caller’s path', async () => {
  const { store, rows, batches } = memoryStore()
  const w = new LogWriter(store, { batchSize: 100, intervalMs: 10 })
  for (let i = 0; i < 250; i++) w.write(e(i))
  expect(rows).toHaveLength(0) // nothing written synchronously
  await Bun.sleep(50)
  expect(rows).toHaveLength(250)
  expect(batches.every((n) => n <= 100)).toBe(true)
  expect(batches.length).toBeLessThanOrEqual(4)
})

test('a store that takes larger transactions when behind (catchUpBatches) gets the backlog in them; a short queue still goes as one batch', async () => {
  const { store, rows, batches } = memoryStore()
  const big: LogStore = Object.assign(Object.create(null), store, { catchUpBatches: 4 })
  const w = new LogWriter(big, { batchSize: 100, intervalMs: 5 })
  for (let i = 0; i < 1000; i++) w.write(e(i))
  await w.flush()
  expect(batches).toEqual([400, 400, 200])
  for (let i = 1000; i < 1080; i++) w.write(e(i))
  await w.flush()
  expect(batches.slice(3)).toEqual([80])
  expect(rows).toHaveLength(1080)
  // A writer on the serving thread keeps to batches.
  const onThread = new LogWriter(big, { batchSize: 100, intervalMs: 5, catchUp: false })
  for (let i = 2000; i < 2250; i++) onThread.write(e(i))
  await onThread.flush()
  expect(batches.slice(4)).toEqual([100, 100, 50])
})

test('while the gateway is nearly idle, a batch goes in slices of 10 with other work let in between; under load, whole', async () => {
  const { store, rows, batches } = memoryStore()
  const order: string[] = []
  const insert = store.insertLogs.bind(store)
  store.insertLogs = async (entries) => {
    order.push(`batch of ${entries.length}`)
    // Work that arrives while a slice is written (a request, say) runs before the next slice.
    if (order.length === 1) setImmediate(() => order.push('other work'))
    await insert(entries)
  }
  let quiet = true
  const w = new LogWriter(store, { batchSize: 500, intervalMs: 1000, quiet: () => quiet })
  for (let i = 0; i < 25; i++) w.write(e(i))
  await w.flush()
  expect(batches).toEqual([10, 10, 5])
  expect(order.slice(0, 3)).toEqual(['batch of 10', 'other work', 'batch of 10'])
  quiet = false
  for (let i = 25; i < 325; i++) w.write(e(i))
  await w.flush()
  expect(batches.slice(3)).toEqual([300])
  // Quiet, but behind (more than 250 waiting): whole batches until it has caught up, then slices.
  quiet = true
  for (let i = 325; i < 930; i++) w.write(e(i))
  await w.flush()
  expect(batches.slice(4)).toEqual([500, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 5])
  expect(rows).toHaveLength(930)
})

test('quiet, but retrying after a failed write (a disk that was full, say): the backlog goes as one batch, not in slices', async () => {
  // Each commit writes its index pages to the WAL again: 40 slices of a backlog can need more disk
  // than the one that just failed, and fill it again.
  const { store, rows, batches } = memoryStore(1)
  const w = new LogWriter(store, { batchSize: 500, intervalMs: 5, quiet: () => true, onError: () => {} })
  for (let i = 0; i < 200; i++) w.write(e(i))
  await w.flush() // fails: the entries wait
  for (let t = 0; t < 100 && rows.length < 200; t++) await Bun.sleep(20)
  expect(batches).toEqual([200])
  expect(w.stats).toMatchObject({ written: 200, retries: 1 })
  // The write went well: a quiet writer is back to slices.
  for (let i = 200; i < 215; i++) w.write(e(i))
  await w.flush()
  expect(batches.slice(1)).toEqual([10, 5])
})

test('a queued entry can be read before it is written, and only by its org', () => {
  const { store } = memoryStore()
  const w = new LogWriter(store, { intervalMs: 1000 })
  w.write(e(1))
  expect(w.pendingEntry('o', 'r1')?.requestId).toBe('r1')
  expect(w.pendingEntry('other', 'r1')).toBeUndefined()
})

test('a locked database is retried until the entries are written', async () => {
  const { store, rows } = memoryStore(3)
  const errors: number[] = []
  const w = new LogWriter(store, { intervalMs: 5, onError: (_err, attempt) => errors.push(attempt) })
  for (let i = 0; i < 10; i++) w.write(e(i))
  await Bun.sleep(1200)
  expect(rows).toHaveLength(10)
  expect(errors).toEqual([1, 2, 3])
  expect(w.stats).toMatchObject({ written: 10, dropped: 0, retries: 3 })
})

test("an entry the store cannot turn into rows (a JavaScript error, not the database's) is written without its bodies, or given up; it never holds the entries behind it", async () => {
  const { store, rows } = memoryStore()
  const insert = store.insertLogs.bind(store)
  // A body that is not JSON (r1), and an entry whose head itself cannot be written (r3).
  store.insertLogs = async (entries) => {
    for (const x of entries) {
      if (x.requestBody === 'not json') JSON.parse('')
      if (x.requestId === 'r3') throw new TypeError('a head that cannot be written')
    }
    return insert(entries)
  }
  const settled: [string, string][] = []
  const errors: unknown[] = []
  const w = new LogWriter(store, { batchSize: 100, intervalMs: 5, onError: (err) => errors.push(err), onSettled: (es, how) => settled.push(...es.map((x): [string, string] => [x.requestId, how])) })
  const entries = [0, 1, 2, 3, 4].map(e)
  ;(entries[1] as LogEntry).requestBody = 'not json'
  ;(entries[1] as LogEntry).responseBody = { ok: true }
  for (const x of entries) w.write(x)
  await w.flush()
  expect(rows.map((r) => r.requestId)).toEqual(['r0', 'r1', 'r2', 'r4'])
  expect(rows[1]).toMatchObject({ requestId: 'r1', requestBody: undefined, responseBody: undefined })
  expect(new Map(settled)).toEqual(new Map([['r0', 'written'], ['r1', 'written'], ['r2', 'written'], ['r3', 'dropped'], ['r4', 'written']]))
  expect(w.stats).toMatchObject({ written: 4, dropped: 1, retries: 0 })
  expect(errors).toEqual([])
  // The writer goes on as before.
  w.write(e(5))
  await w.flush()
  expect(rows.at(-1)?.requestId).toBe('r5')
})

test('close() writes everything still queued; what finally fails is counted as dropped', async () => {
  const ok = memoryStore()
  const w = new LogWriter(ok.store, { intervalMs: 60_000 })
  for (let i = 0; i < 5; i++) w.write(e(i))
  await w.close()
  expect(ok.rows).toHaveLength(5)

  const broken = memoryStore(1_000)
  const w2 = new LogWriter(broken.store, { intervalMs: 60_000 })
  w2.write(e(1))
  await w2.close(1)
  expect(w2.stats.dropped).toBe(1)
})

test('a store that takes two batches at once gets two in flight; when one fails, only its entries are written again', async () => {
  const m = memoryStore()
  let inFlight = 0
  let most = 0
  let failNext = true
  const insert = m.store.insertLogs
  const store: LogStore = {
    ...m.store,
    writeConcurrency: 2,
    async insertLogs(entries) {
      inFlight++
      most = Math.max(most, inFlight)
      await Bun.sleep(5)
      inFlight--
      // The second batch of the first pair fails once.
      if (entries[0]?.requestId === 'r100' && failNext) {
        failNext = false
        throw new Error('database is locked')
      }
      return insert(entries)
    },
  }
  const w = new LogWriter(store, { batchSize: 100, intervalMs: 5, onError: () => {} })
  for (let i = 0; i < 400; i++) w.write(e(i))
  await w.flush()
  for (let t = 0; t < 100 && m.rows.length < 400; t++) await Bun.sleep(20)
  expect(most).toBe(2)
  expect(m.rows.map((r) => r.requestId)).toHaveLength(400)
  expect(new Set(m.rows.map((r) => r.requestId)).size).toBe(400)
  // r0–r99 went once; r100–r199 failed and went again, once.
  expect(m.batches.reduce((n, b) => n + b, 0)).toBe(400)
  expect(w.stats).toMatchObject({ written: 400, dropped: 0, retries: 1 })
})

describe('the spool (database unreachable)', () => {
  /** A store that refuses as unreachable while `down` is true. */
  function flakyStore() {
    const m = memoryStore()
    const state = { down: true }
    const insert = m.store.insertLogs
    m.store.insertLogs = async (entries) => {
      if (state.down) throw new StoreUnavailableError('connection refused')
      return insert(entries)
    }
    return { ...m, state }
  }

  test('entries wait on disk while the database is away, then are written once each, in order, across a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-spool-'))
    try {
      const db = flakyStore()
      const first = new LogWriter(db.store, { intervalMs: 5, batchSize: 7, spool: new LogSpool(dir), onError: () => {} })
      for (let i = 0; i < 40; i++) first.write(e(i))
      await Bun.sleep(100)
      for (let i = 40; i < 60; i++) first.write(e(i))
      // Still readable by id while spooled.
      expect(first.pendingEntry('o', 'r3')?.requestId).toBe('r3')
      await first.close(0) // gw stops while the database is still away: nothing is dropped
      expect(first.stats.dropped).toBe(0)
      expect(readdirSync(dir).length).toBeGreaterThan(0)
      expect(db.rows).toHaveLength(0)

      // A new process finds the spool; the database comes back.
      const spool = new LogSpool(dir)
      expect(spool.size).toBe(60)
      const second = new LogWriter(db.store, { intervalMs: 5, batchSize: 7, spool, onError: () => {} })
      second.write(e(60))
      await Bun.sleep(50)
      db.state.down = false
      const deadline = performance.now() + 5000
      while (db.rows.length < 61 && performance.now() < deadline) await Bun.sleep(20)
      expect(db.rows.map((r) => r.requestId)).toEqual(Array.from({ length: 61 }, (_, i) => `r${i}`))
      expect(second.inSpool).toBe(0)
      expect(readdirSync(dir)).toEqual([])
      await second.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('entries that arrive while a long spool is replayed join it on disk (settled at once, none held in memory behind it), and all are written once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-spool-'))
    try {
      new LogSpool(dir).append(Array.from({ length: 50 }, (_, i) => e(i)))
      const db = memoryStore()
      const insert = db.store.insertLogs.bind(db.store)
      db.store.insertLogs = async (entries) => {
        await Bun.sleep(20) // a replay of several batches takes a while
        return insert(entries)
      }
      const settled: [string, string][] = []
      let drained = 0
      const w = new LogWriter(db.store, {
        intervalMs: 5,
        batchSize: 10,
        spool: new LogSpool(dir),
        onSettled: (es, how) => settled.push(...es.map((x): [string, string] => [x.requestId, how])),
        onDrained: () => drained++,
      })
      const draining = w.flush()
      await Bun.sleep(30)
      for (let i = 50; i < 60; i++) w.write(e(i))
      // Before the replay is over, the new entries are on disk (settled as spooled), not waiting in memory.
      const deadline = performance.now() + 2000
      while (settled.filter(([, how]) => how === 'spooled').length < 10 && performance.now() < deadline) await Bun.sleep(5)
      expect(settled.filter(([, how]) => how === 'spooled').map(([id]) => id)).toEqual(Array.from({ length: 10 }, (_, i) => `r${50 + i}`))
      expect(db.rows.length).toBeLessThan(60)
      await draining
      await w.flush()
      expect(db.rows.map((r) => r.requestId)).toEqual(Array.from({ length: 60 }, (_, i) => `r${i}`))
      expect(readdirSync(dir)).toEqual([])
      expect(w.inSpool).toBe(0)
      // The end of the drain is told (the counters changed with nothing settled: /health reads them).
      expect(drained).toBeGreaterThan(0)
      await w.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('a line torn by a crash while appending is skipped; the rest replays', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-spool-'))
    try {
      new LogSpool(dir).append([e(1), e(2)])
      const [seg] = readdirSync(dir)
      appendFileSync(join(dir, seg as string), '{"requestId":"r3","org')
      const spool = new LogSpool(dir)
      expect(spool.size).toBe(2)
      const got: string[] = []
      await spool.replay(async (b) => void got.push(...b.map((x) => x.requestId)), 10)
      expect(got).toEqual(['r1', 'r2'])
      expect(spool.empty).toBe(true)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('the spool folder gw creates (and any missing parent) is readable by its owner only', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-spool-'))
    try {
      new LogSpool(join(dir, 'data', 'spool')).append([e(1)])
      for (const d of ['data', 'data/spool']) expect(`${d} ${(statSync(join(dir, d)).mode & 0o777).toString(8)}`).toBe(`${d} 700`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
