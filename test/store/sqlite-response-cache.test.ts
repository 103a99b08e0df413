// The SQLite response cache's puts go to the log thread with their requests' log entries: a put is answered
// from memory at once, written in its entry's transaction, read from the table once written and after the
// store is opened again; a relayed stream's answer is made there from the stream's text; the log thread
// killed mid-batch writes each put once and the org's size bound holds; a put made straight on the store
// is written at once.

import { afterAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SecretBox } from '../../src/crypto/secret-box'
import { LogPath } from '../../src/store/log-path'
import { createSqliteStore } from '../../src/store/sqlite'
import type { CachePut, Store, StreamPut } from '../../src/store/types'
import { logEntry } from '../helpers/log-entry'

const NOW = 1_800_000_000_000
const dir = mkdtempSync(join(tmpdir(), 'gw-cache-store-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const box = new SecretBox('a-secret-of-at-least-32-characters-000')

/** The rows another connection sees: what is written (key, value's first characters), and the log entries. */
function table(path: string): { cache: string[]; bytes: number; logs: number } {
  const db = new Database(path, { readonly: true })
  try {
    const rows = db.query<{ key: string; value: string; bytes: number }, []>('SELECT key, value, bytes FROM response_cache ORDER BY key').all()
    return {
      cache: rows.map((r) => `${r.key}=${r.value.slice(0, 8)}`),
      bytes: rows.reduce((a, r) => a + r.bytes, 0),
      logs: db.query<{ n: number }, []>('SELECT count(*) AS n FROM request_logs').get()?.n ?? 0,
    }
  } finally {
    db.close()
  }
}

/** A store on a file and a log thread writing its cache's puts, as gw runs them. */
function open(path: string): { store: Store; logs: LogPath } {
  const store = createSqliteStore(path, box)
  const logs = LogPath.thread({ kind: 'sqlite', path }, { bodyMaxBytes: 1024, intervalMs: 5, onError: () => {}, ...(store.cache.keptByLog ? { cache: store.cache.keptByLog } : {}) })
  logs.markReady()
  return { store, logs }
}

async function close(s: { store: Store; logs: LogPath }): Promise<void> {
  await s.logs.close()
  await s.store.close()
}

const put = (key: string, value: string, now = NOW, maxOrgBytes = 1e6): CachePut => ({ orgId: 'o1', key, value, expiresAt: NOW + 60_000, now, maxOrgBytes })
/** Request i's entry, handed over with a put. */
const hand = (logs: LogPath, i: number, p: CachePut) => logs.record(logEntry(i), { kept: p })

test('a put handed over with its entry is answered at once, written by the log thread with the entry, then read from the table, and after the store is opened again', async () => {
  const path = join(dir, 'handed.db')
  let s = open(path)
  expect(s.logs.keepsAnswers).toBe(true)
  hand(s.logs, 1, put('a', 'first'))
  hand(s.logs, 2, put('b', 'second'))
  expect(await s.store.cache.get('o1', 'a', NOW)).toBe('first')
  expect(await s.store.cache.get('o1', 'a', NOW + 60_000)).toBeUndefined() // expired, written or not
  await s.logs.flush()
  expect(table(path)).toEqual({ cache: ['a=first', 'b=second'], bytes: 11, logs: 2 })
  expect(await s.store.cache.get('o1', 'b', NOW)).toBe('second')
  // A later put of a key replaces it.
  hand(s.logs, 3, put('a', 'again'))
  await s.logs.flush()
  expect(await s.store.cache.get('o1', 'a', NOW)).toBe('again')
  await close(s)
  s = open(path)
  try {
    expect(await s.store.cache.get('o1', 'a', NOW)).toBe('again')
    expect(await s.store.cache.get('o1', 'nope', NOW)).toBeUndefined()
  } finally {
    await close(s)
  }
})

test('a relayed stream\'s answer is made by the log thread from the text the client received, carried with the put or as the entry\'s response body', async () => {
  const path = join(dir, 'stream.db')
  const s = open(path)
  try {
    const chunk = (delta: object, finish: string | null) =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
    const text = `${chunk({ role: 'assistant', content: 'Hel' }, null)}${chunk({ content: 'lo' }, 'stop')}data: [DONE]\n\n`
    const streamed = (key: string, finish = 'stop'): StreamPut => ({
      orgId: 'o1',
      key,
      expiresAt: NOW + 60_000,
      now: NOW,
      maxOrgBytes: 1e6,
      stream: { events: { reader: 'openai-chat', text: text.replace('"stop"', JSON.stringify(finish)) }, model: 'openai/gpt-4o-mini', usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 }, costUsd: null, maxEntryBytes: 1e6 },
    })
    const alone = streamed('alone')
    const logged = streamed('logged')
    hand(s.logs, 1, alone)
    s.logs.record(logEntry(2), { response: { events: logged.stream.events }, kept: logged })
    hand(s.logs, 3, streamed('cut', 'length'))
    await s.logs.flush()
    expect(table(path).cache).toEqual(['alone={"v":1,"', 'logged={"v":1,"'])
    for (const key of ['alone', 'logged']) {
      const kept = JSON.parse((await s.store.cache.get('o1', key, NOW)) as string)
      expect(kept).toMatchObject({ model: 'openai/gpt-4o-mini', usage: { total_tokens: 5 }, costUsd: null })
      expect(kept.completion.choices[0]).toMatchObject({ message: { content: 'Hello' }, finish_reason: 'stop' })
    }
    expect(await s.store.cache.get('o1', 'cut', NOW)).toBeUndefined()
  } finally {
    await close(s)
  }
})

test('the log thread killed mid-batch, twice: every put written once with its entry, and the org size bound holds', async () => {
  const path = join(dir, 'crash.db')
  const s = open(path)
  try {
    const N = 2000
    // 100-byte answers under a 10,000-byte bound: the newest 100 stay.
    for (let i = 0; i < N; i++) {
      await hand(s.logs, i, put(`k${String(i).padStart(5, '0')}`, `v${String(i).padStart(5, '0')}`.padEnd(100, '.'), NOW + i, 10_000))
      if (i === 700 || i === 1400) s.logs.killThread()
      if (i % 100 === 0) await Bun.sleep(1)
    }
    const deadline = Date.now() + 20_000
    while (s.logs.queued > 0 && Date.now() < deadline) await s.logs.flush()
    expect(s.logs.started).toBe(3)
    const t = table(path)
    expect(t.logs).toBe(N)
    expect(t.bytes).toBe(10_000)
    expect(t.cache.length).toBe(100)
    expect(t.cache[0]).toBe(`k0${N - 100}=v0${N - 100}..`)
    // The serving side answers for what is on disk, and not for what was dropped.
    expect(await s.store.cache.get('o1', `k0${N - 1}`, NOW + N)).toStartWith(`v0${N - 1}`)
    expect(await s.store.cache.get('o1', 'k00000', NOW + N)).toBeUndefined()
  } finally {
    await close(s)
  }
}, 60_000)

test('a put made on the store itself (no log path) is written at once, past the bound the oldest go', async () => {
  const path = join(dir, 'direct.db')
  const store = createSqliteStore(path, box)
  try {
    await store.cache.put('o1', 'a', 'x'.repeat(400), NOW + 60_000, NOW, 1_000)
    await store.cache.put('o1', 'b', 'y'.repeat(400), NOW + 60_000, NOW + 1, 1_000)
    expect(table(path).cache).toEqual(['a=xxxxxxxx', 'b=yyyyyyyy'])
    await store.cache.put('o1', 'c', 'z'.repeat(400), NOW + 60_000, NOW + 2, 1_000)
    expect(await store.cache.get('o1', 'a', NOW + 3)).toBeUndefined()
    expect(table(path).cache).toEqual(['b=yyyyyyyy', 'c=zzzzzzzz'])
    // Kept in the same millisecond: the first kept goes first, whatever its key (answers come faster than 1 ms apart).
    for (const key of ['z9', 'a1', 'm5']) await store.cache.put('o1', key, key.repeat(200), NOW + 60_000, NOW + 5, 1_000)
    expect(table(path).cache.map((r) => r.split('=')[0])).toEqual(['a1', 'm5'])
  } finally {
    await store.close()
  }
})
