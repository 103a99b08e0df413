// One settlement per authenticated request (PRODUCT §16): whatever way a request ends — an answer (JSON or
// stream), a refusal, an upstream failure, a bad body, the client leaving mid-stream, gw shutting down —
// it gets exactly one log entry and exactly one count in gw_requests_total, and a refused credential gets
// the count but no entry.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { LogEntry } from '../../src/domain/log-entry'
import { type FakeUpstream, startFake } from '../fakes/upstream'
import { ADMIN_TOKEN, readSse, startTestGateway, type TestGateway } from '../helpers/gateway'
import { readExposition } from '../helpers/prometheus'

const hello = [{ role: 'user', content: 'Say hi please' }]

let openai: FakeUpstream
let anthropic: FakeUpstream

beforeAll(async () => {
  openai = await startFake('openai')
  anthropic = await startFake('anthropic')
})
afterAll(async () => {
  await openai.stop()
  await anthropic.stop()
})

/** What the gateway wrote and observed per request id, watched on its own log writer and observer. */
function watch(gw: TestGateway) {
  const written = new Map<string, number>()
  const observed = new Map<string, number>()
  const { logs, observer } = gw.gw.deps
  const record = logs.record.bind(logs)
  logs.record = (entry: LogEntry, bodies) => {
    written.set(entry.requestId, (written.get(entry.requestId) ?? 0) + 1)
    return record(entry, bodies)
  }
  const finished = observer.requestFinished.bind(observer)
  observer.requestFinished = (r) => {
    observed.set(r.entry.requestId, (observed.get(r.entry.requestId) ?? 0) + 1)
    finished(r)
  }
  return { written, observed }
}

async function requestsTotal(gw: TestGateway): Promise<number> {
  const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  return (readExposition(await res.text()).families.get('gw_requests_total')?.metrics ?? []).reduce((n, s) => n + Number(s.value), 0)
}

describe('every way a request can end', () => {
  let gw: TestGateway
  let seen: ReturnType<typeof watch>

  beforeAll(async () => {
    gw = await startTestGateway({ openai, anthropic }, { GW_LOG_READS_PER_MINUTE: '0' })
    seen = watch(gw)
  })
  afterAll(() => gw.stop())

  /** Runs one request (which reads or drops its answer as it must) and checks what it left. */
  async function endsOnce(send: () => Promise<Response>, expected: { status: number; logged?: boolean }) {
    const before = await requestsTotal(gw)
    const res = await send()
    const id = res.headers.get('x-gw-request-id') as string
    expect(id).toBeTruthy()
    expect(res.status).toBe(expected.status)
    await res.arrayBuffer().catch(() => undefined)
    // The entry of a stream follows its last bytes: wait until it is observed.
    for (let i = 0; i < 200 && !seen.observed.get(id); i++) await Bun.sleep(10)
    expect(seen.observed.get(id)).toBe(1)
    expect(seen.written.get(id) ?? 0).toBe(expected.logged === false ? 0 : 1)
    // The scrape itself is not an API request: the counter moved by exactly this request.
    expect((await requestsTotal(gw)) - before).toBe(1)
    if (expected.logged !== false) expect(await gw.log(id)).toMatchObject({ requestId: id, status: expected.status })
    return id
  }

  test('an answer, JSON and streamed', async () => {
    await endsOnce(() => gw.chat({ model: 'openai/gpt-4o-mini', messages: hello }), { status: 200 })
    await endsOnce(() => gw.chat({ model: 'openai/gpt-4o-mini', messages: hello, stream: true }), { status: 200 })
    await endsOnce(
      () => gw.fetch('/v1/messages', { method: 'POST', body: JSON.stringify({ model: 'anthropic/claude-haiku-4-5', max_tokens: 50, messages: hello }) }),
      { status: 200 },
    )
  })

  test('a bad body, a refusal by policy, an upstream failure', async () => {
    await endsOnce(() => gw.chat({ model: 'openai/gpt-4o-mini', messages: 'not a list' }), { status: 400 })
    await endsOnce(() => gw.chat({ model: 'nope/model', messages: hello }), { status: 400 })
    await gw.admin('PUT', '/orgs/default/policy', { maxTokens: 10 })
    await endsOnce(() => gw.chat({ model: 'openai/gpt-4o-mini', messages: hello, max_tokens: 100 }), { status: 400 })
    await gw.admin('PUT', '/orgs/default/policy', {})
    openai.enqueue({ kind: 'error', status: 500 })
    await endsOnce(() => gw.chat({ model: 'openai/gpt-4o-e500', messages: hello }), { status: 502 })
  })

  test('a count answered by gw itself (count_tokens for a model that is not Anthropic’s)', async () => {
    await endsOnce(
      () => gw.fetch('/v1/messages/count_tokens', { method: 'POST', body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: hello }) }),
      { status: 200 },
    )
  })

  test('the client leaving mid-stream', async () => {
    openai.enqueue({ kind: 'reply', chunks: 20, chunkDelayMs: 50 })
    const id = await endsOnce(async () => {
      const abort = new AbortController()
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.key}` },
        body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: hello, stream: true }),
        signal: abort.signal,
      })
      const reader = res.body?.getReader()
      await reader?.read()
      abort.abort()
      return new Response(null, { status: res.status, headers: res.headers })
    }, { status: 200 })
    expect(await gw.log(id)).toMatchObject({ incomplete: true })
  })

  test('a refused credential is counted but never logged', async () => {
    await endsOnce(
      () => fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer gw_sk_wrong' }, body: '{}' }),
      { status: 401, logged: false },
    )
  })
})

test('gw shutting down mid-stream: the stream ends with its error event, one log entry, one observation', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-settle-'))
  const gw = await startTestGateway({ openai }, { GW_DB: join(dir, 'gw.db'), GW_DRAIN_MS: '100' })
  const seen = watch(gw)
  try {
    openai.enqueue({ kind: 'reply', chunks: 50, chunkDelayMs: 100 })
    const res = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello, stream: true })
    const id = res.headers.get('x-gw-request-id') as string
    const reading = readSse(res)
    await Bun.sleep(150)
    await gw.stop()
    const events = await reading
    expect(events.at(-1)).toBe('[DONE]')
    expect(events.at(-2)).toMatchObject({ error: true, code: 'provider_error' })
    expect(seen.observed.get(id)).toBe(1)
    expect(seen.written.get(id)).toBe(1)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
