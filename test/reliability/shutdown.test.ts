// SIGTERM under load: in-flight requests finish, open streams end with the error event, new requests
// are refused, every log entry is on disk before exit, and the exit code is 0.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { spawnGw } from '../helpers/process'

let dir: string
let openai: FakeUpstream

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gw-term-'))
  openai = await startFake('openai')
})
afterAll(async () => {
  await openai.stop()
  rmSync(dir, { recursive: true, force: true })
})

test('SIGTERM drains in-flight work, writes every log entry and exits 0', async () => {
  const db = join(dir, 'gw.db')
  const gw = await spawnGw({
    GW_DB: db,
    GW_OPENAI_BASE_URL: openai.url,
    OPENAI_API_KEY: openai.apiKey,
    GW_SERVICE_KEY: 'gw_sk_shutdowntest0000000000000000000000000000000000',
    GW_DRAIN_MS: '1000',
  })
  const key = 'gw_sk_shutdowntest0000000000000000000000000000000000'
  const post = (body: Record<string, unknown>) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `GwKey ${key}` },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], ...body }),
    })

  // 20 slow non-streamed answers (600 ms), 5 streams that would take 30 s, 10 quick ones.
  openai.setDefault({ kind: 'reply', delayMs: 600 })
  const slow = Array.from({ length: 20 }, () => post({ model: 'openai/gpt-4o' }))
  // Every slow request is at the fake before its default changes (a loaded machine may take a while).
  while (openai.requests.length < 20) await Bun.sleep(10)
  openai.setDefault({ kind: 'reply', text: 'a b c d e f g h i j', chunkDelayMs: 3000 })
  const streams = await Promise.all(Array.from({ length: 5 }, () => post({ model: 'openai/gpt-4o', stream: true })))
  openai.setDefault({ kind: 'reply' })
  const quick = await Promise.all(Array.from({ length: 10 }, () => post({ model: 'openai/gpt-4o-mini' })))
  expect(quick.every((r) => r.status === 200)).toBe(true)

  gw.proc.kill('SIGTERM')
  await Bun.sleep(100)
  // No new requests once stopping.
  expect(await fetch(`${gw.url}/health`).then((r) => r.status).catch(() => 'refused')).toBe('refused')

  const slowAnswers = await Promise.all(slow)
  expect(slowAnswers.map((r) => r.status)).toEqual(Array(20).fill(200))
  for (const r of slowAnswers) expect(((await r.json()) as any).choices[0].message.content).toContain('fake-openai')

  // The streams could not finish within the drain time (cut to 1 s below): each ends with the error event.
  const streamTexts = await Promise.all(streams.map((r) => r.text()))
  for (const t of streamTexts) {
    expect(t).toContain('"error":true')
    expect(t).toContain('shutting down')
    expect(t.trimEnd().endsWith('data: [DONE]')).toBe(true)
  }

  expect(await gw.proc.exited).toBe(0)
  const rows = new Database(db, { readonly: true }).query('SELECT request_id, status, entry FROM request_logs').all() as {
    entry: string
  }[]
  expect(rows).toHaveLength(35)
  const incomplete = rows.filter((r) => (JSON.parse(r.entry) as { incomplete: boolean }).incomplete)
  expect(incomplete).toHaveLength(5)
  // The log entry blames the shutdown, not the provider.
  for (const r of incomplete) expect((JSON.parse(r.entry) as { errorMessage: string }).errorMessage).toBe('gw is shutting down: the answer was cut short')
}, 30_000)

test('SIGTERM while requests still wait for their answer: once the drain time is up each gets a 503 saying so, and a log entry with its attempt', async () => {
  const db = join(dir, 'gw-waiting.db')
  const key = 'gw_sk_shutdownwait0000000000000000000000000000000000'
  const gw = await spawnGw({ GW_DB: db, GW_OPENAI_BASE_URL: openai.url, OPENAI_API_KEY: openai.apiKey, GW_SERVICE_KEY: key, GW_DRAIN_MS: '500' })
  const post = (body: Record<string, unknown>) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `GwKey ${key}` },
      body: JSON.stringify({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }], ...body }),
    })
  openai.reset()
  openai.setDefault({ kind: 'stall-headers' })
  try {
    const waiting = [post({}), post({ stream: true })]
    while (openai.requests.length < 2) await Bun.sleep(10)
    gw.proc.kill('SIGTERM')
    const answers = await Promise.all(waiting)
    for (const res of answers) {
      expect(res.status).toBe(503)
      expect(res.headers.get('retry-after')).toBe('1')
      const body = (await res.json()) as Record<string, unknown>
      expect(body).toMatchObject({ error: true, code: 'gateway_error', requestId: res.headers.get('x-gw-request-id') })
      expect(body.message).toContain('shutting down')
    }
    expect(await gw.proc.exited).toBe(0)
  } finally {
    openai.setDefault({ kind: 'reply' })
  }
  const rows = new Database(db, { readonly: true }).query('SELECT entry FROM request_logs').all() as { entry: string }[]
  const entries = rows.map((r) => JSON.parse(r.entry) as { status: number; model: string; attempts: { model: string; outcome: string }[] })
  expect(entries.map((e) => e.status)).toEqual([503, 503])
  for (const e of entries) expect(e.attempts.map((a) => [a.model, a.outcome])).toEqual([['openai/gpt-4o', 'cancelled']])
}, 30_000)
