// The log path off the serving thread: a real log thread (Bun Worker) writing to a SQLite file or PostgreSQL; every entry exactly once when the thread is killed mid-batch, at shutdown with a full queue, through a database outage (spool), and a slow database holds the serving thread back instead of growing it.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { SQL } from 'bun'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { LogPath } from '../../src/store/log-path'
import type { LogThreadStore } from '../../src/store/log-sink'
import { migratePostgres } from '../../src/store/postgres/open'
import { createSqliteStore } from '../../src/store/sqlite'
import { SecretBox } from '../../src/crypto/secret-box'
import { openDatabase } from '../../src/store/sqlite/open'
import { logEntry } from '../helpers/log-entry'
import { freshSchema, serversFor } from '../helpers/servers'
import { privateServersAvailable, startPrivatePostgres } from '../helpers/private-servers'

const dir = mkdtempSync(join(tmpdir(), 'gw-log-thread-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const quietErrors = { onError: () => {} }
const BODY_MAX = 1024

/** Hands over entry i with bodies as the serving thread holds them (request text as read, answer text as sent). */
function record(logs: LogPath, i: number): Promise<void> | undefined {
  const request = JSON.stringify({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: `question ${i}` }] })
  const response = JSON.stringify({ id: `c${i}`, choices: [{ message: { content: `answer ${i}` } }] })
  return logs.record(logEntry(i, { createdAt: new Date().toISOString() }), {
    request: { text: request, bytes: Buffer.byteLength(request) },
    response: { text: response },
  })
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(10)
  }
}

/** What a store holds: entries per request id, and the requests its daily roll-up counted. */
interface Holdings {
  ids: Map<string, number>
  rolledUp: number
  body: (id: string) => Promise<unknown>
}

interface StoreUnderTest {
  where: LogThreadStore
  holdings(): Promise<Holdings>
  close(): Promise<void>
}

function sqliteStore(name: string): StoreUnderTest {
  const path = join(dir, `${name}.db`)
  openDatabase(path).close()
  return {
    where: { kind: 'sqlite', path },
    async holdings() {
      const db = new Database(path, { readonly: true })
      try {
        const ids = new Map<string, number>()
        for (const r of db.query<{ request_id: string; n: number }, []>('SELECT request_id, count(*) AS n FROM request_logs GROUP BY request_id').all())
          ids.set(r.request_id, r.n)
        const rolledUp = db.query<{ n: number }, []>("SELECT coalesce(sum(requests), 0) AS n FROM usage_daily WHERE dim = 'model'").get()?.n ?? 0
        const bodies = new Map(
          db.query<{ request_id: string; request_body: string }, []>('SELECT request_id, request_body FROM request_log_bodies').all().map((r) => [r.request_id, r.request_body]),
        )
        return { ids, rolledUp, body: async (id) => JSON.parse(bodies.get(id) ?? 'null') }
      } finally {
        db.close()
      }
    },
    async close() {},
  }
}

async function postgresStore(url: string, spoolDir: string): Promise<StoreUnderTest> {
  const sql = new SQL(url, { max: 2 })
  await migratePostgres(sql)
  return {
    where: { kind: 'postgres', url, spoolDir },
    async holdings() {
      const ids = new Map<string, number>()
      for (const r of await sql<{ request_id: string; n: number }[]>`SELECT request_id, count(*)::int AS n FROM request_logs GROUP BY request_id`)
        ids.set(r.request_id, r.n)
      const [u] = await sql<{ n: number }[]>`SELECT coalesce(sum(requests), 0)::int AS n FROM usage_all WHERE dim = 'model'`
      return {
        ids,
        rolledUp: Number(u?.n ?? 0),
        body: async (id) => {
          const [r] = await sql<{ request_body: string }[]>`SELECT request_body FROM request_logs WHERE request_id = ${id}`
          return r ? JSON.parse(r.request_body) : null
        },
      }
    },
    close: () => sql.close(),
  }
}

/** Every one of n entries held once, counted once in the roll-ups, with its body. */
async function expectExactlyOnce(s: StoreUnderTest, n: number): Promise<void> {
  const h = await s.holdings()
  expect(h.ids.size).toBe(n)
  expect([...h.ids.values()].every((c) => c === 1)).toBe(true)
  expect(h.rolledUp).toBe(n)
  expect(await h.body(logEntry(n - 1).requestId)).toEqual({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: `question ${n - 1}` }] })
}

/** The guarantees, on one store. */
function logPathSuite(name: string, open: (tag: string) => Promise<StoreUnderTest>) {
  test(`${name}: the log thread killed mid-batch, three times: every entry stored exactly once`, async () => {
    const s = await open('crash')
    const logs = LogPath.thread(s.where, { bodyMaxBytes: BODY_MAX, batchSize: 200, intervalMs: 5, ...quietErrors })
    logs.markReady()
    const N = 3000
    for (let i = 0; i < N; i++) {
      await record(logs, i)
      // Killed while batches are being written: some written and not yet acknowledged, some queued.
      if (i % 1000 === 700) {
        await until('a batch written', () => logs.stats.written > 0 || logs.queued < i)
        await until('the thread running', () => logs.started === 1 + Math.floor(i / 1000))
        logs.killThread()
      }
      if (i % 100 === 0) await Bun.sleep(1)
    }
    // Each kill is seen by the close event and the thread started again with what was not settled.
    await until('the thread restarted', () => logs.started === 4)
    await until('every entry settled', async () => {
      await logs.flush()
      return logs.queued === 0
    })
    await logs.close()
    expect(logs.stats.dropped).toBe(0)
    await expectExactlyOnce(s, N)
    await s.close()
  }, 60_000)

  test(`${name}: shutdown with a full queue writes every entry`, async () => {
    const s = await open('shutdown')
    const logs = LogPath.thread(s.where, { bodyMaxBytes: BODY_MAX, maxQueue: 100, intervalMs: 1000, ...quietErrors })
    logs.markReady()
    const N = 1000
    const waits: Promise<void>[] = []
    for (let i = 0; i < N; i++) {
      const w = record(logs, i)
      if (w) waits.push(w)
    }
    // The queue is full: the requests past the bound wait (none is dropped).
    expect(waits.length).toBe(N - 99)
    await logs.close()
    await Promise.all(waits)
    expect(logs.stats.dropped).toBe(0)
    await expectExactlyOnce(s, N)
    await s.close()
  }, 60_000)
}

logPathSuite('SQLite', async (tag) => sqliteStore(`${tag}-${Bun.randomUUIDv7()}`))

describe('PostgreSQL', async () => {
  const run = await serversFor('log thread on PostgreSQL', { postgres: true })
  const schemas: { drop(): Promise<void> }[] = []
  afterAll(async () => {
    for (const s of schemas) await s.drop()
  })
  if (run)
    logPathSuite('PostgreSQL', async (tag) => {
      const schema = await freshSchema()
      schemas.push(schema)
      return postgresStore(schema.url, join(dir, `spool-${tag}-${schema.schema}`))
    })
})

test('SQLite: a locked database holds the serving thread back at the bound; nothing grows past it, nothing is dropped', async () => {
  const s = sqliteStore(`slow-${Bun.randomUUIDv7()}`)
  const logs = LogPath.thread(s.where, { bodyMaxBytes: BODY_MAX, maxQueue: 200, intervalMs: 5, ...quietErrors })
  // Another connection holds the write lock: every batch fails at once and is retried.
  const lock = new Database((s.where as { path: string }).path)
  lock.exec('BEGIN IMMEDIATE')
  const waits: Promise<void>[] = []
  for (let i = 0; i < 1000; i++) {
    const w = record(logs, i)
    if (w) waits.push(w)
    expect(logs.queued).toBeLessThanOrEqual(i + 1)
  }
  await until('a refused batch', () => logs.failing)
  let released = false
  void Promise.all(waits).then(() => {
    released = true
  })
  await Bun.sleep(300)
  // Held: the queue stays where it is (1,000 handed over, every one past the bound waiting).
  expect(released).toBe(false)
  expect(waits.length).toBe(801)
  lock.exec('COMMIT')
  lock.close()
  await until('the waiting requests released', () => released)
  await logs.close()
  expect(logs.stats.dropped).toBe(0)
  await expectExactlyOnce(s, 1000)
})

describe('PostgreSQL outage', async () => {
  const run = privateServersAvailable()
  if (!run) console.log('skipped: PostgreSQL outage (initdb/pg_ctl not installed)')
  test.skipIf(!run)('entries go to the spool while the database is down (readable by id meanwhile) and are written once it is back, each once', async () => {
    const pg = await startPrivatePostgres()
    try {
      const s = await postgresStore(pg.url, join(dir, `spool-outage-${Bun.randomUUIDv7()}`))
      const logs = LogPath.thread(s.where, { bodyMaxBytes: BODY_MAX, intervalMs: 5, ...quietErrors })
      logs.markReady()
      for (let i = 0; i < 200; i++) await record(logs, i)
      await until('the first entries written', () => logs.queued === 0)
      pg.stop()
      for (let i = 200; i < 600; i++) await record(logs, i)
      // Spooled: settled on disk, so nothing waits in memory for the database.
      await until('entries spooled', () => logs.inSpool > 0 && logs.queued === 0)
      // While they wait in the spool they are read from memory by id (the database cannot answer).
      expect(logs.pendingEntry('o1', logEntry(599).requestId)?.requestBody).toEqual({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'question 599' }] })
      // The thread dies while entries wait in the spool: the next one finds them there.
      logs.killThread()
      await until('the thread restarted', () => logs.restarts === 1)
      pg.start()
      await until('the spool drained', async () => {
        await logs.flush()
        return logs.inSpool === 0 && logs.queued === 0
      }, 40_000)
      await logs.close()
      await expectExactlyOnce(s, 600)
      await s.close()
    } finally {
      pg.destroy()
    }
  }, 90_000)
})

test('log threads that die before opening the database (three in a row): the entries are written from the serving thread instead, each once', async () => {
  const s = sqliteStore(`fallback-${Bun.randomUUIDv7()}`)
  const store = createSqliteStore((s.where as { path: string }).path, new SecretBox('test-secret-for-the-log-thread-fallback'))
  const errors: string[] = []
  const log = console.error
  console.error = (...args: unknown[]) => errors.push(args.map(String).join(' '))
  try {
    // A path no thread can open (/proc takes no files): each log thread ends at its start.
    const logs = LogPath.thread({ kind: 'sqlite', path: '/proc/gw-no-such-dir/gw.db' }, { bodyMaxBytes: BODY_MAX, intervalMs: 5 }, { logs: store.logs })
    for (let i = 0; i < 300; i++) await record(logs, i)
    await until('the fallback', () => logs.restarts >= 3 && logs.queued === 0, 30_000)
    await logs.close()
    expect(logs.stats.dropped).toBe(0)
    expect(errors.some((e) => e.includes('log entries are written on the serving thread instead'))).toBe(true)
  } finally {
    console.error = log
    await store.close()
  }
  await expectExactlyOnce(s, 300)
}, 40_000)

test('SQLite: a relayed stream reaches the log thread as the text the client received; the entry holds its text, tool calls and finish reason', async () => {
  const s = sqliteStore(`relayed-${Bun.randomUUIDv7()}`)
  const logs = LogPath.thread(s.where, { bodyMaxBytes: BODY_MAX, intervalMs: 5, ...quietErrors })
  logs.markReady()
  const ev = (name: string, data: object) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`
  const text = [
    ev('message_start', { message: { id: 'm', role: 'assistant', content: [], usage: { input_tokens: 3, output_tokens: 1 } } }),
    ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Héllo, ' } }),
    ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'world' } }),
    ev('content_block_stop', { index: 0 }),
    ev('content_block_start', { index: 1, content_block: { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: {} } }),
    ev('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '{"q":' } }),
    ev('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '"x"}' } }),
    ev('content_block_stop', { index: 1 }),
    ev('message_delta', { delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 9 } }),
    ev('message_stop', {}),
  ].join('')
  const entry = logEntry(0, { createdAt: new Date().toISOString() })
  await logs.record(entry, { response: { events: { reader: 'anthropic', text } } })
  await logs.flush()
  await logs.close()
  const db = new Database((s.where as { path: string }).path, { readonly: true })
  try {
    const row = db.query<{ response_body: string }, [string]>('SELECT response_body FROM request_log_bodies WHERE request_id = ?1').get(entry.requestId)
    expect(JSON.parse(row?.response_body ?? 'null')).toEqual({
      content: 'Héllo, world',
      tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }],
      finish_reason: 'tool_calls',
    })
  } finally {
    db.close()
  }
})
