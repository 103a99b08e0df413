// The logs API: one entry per request (errors too), read-your-writes, metadata filters, pagination, org isolation.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let openai: FakeUpstream
let gw: TestGateway

beforeAll(async () => {
  openai = await startFake('openai')
  gw = await startTestGateway({ openai })
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
})

const hello = [{ role: 'user', content: 'Say hi please' }]
const list = async (query: string, key = gw.key) => {
  const res = await fetch(`${gw.url}/v1/logs?${query}`, { headers: { authorization: `GwKey ${key}` } })
  expect(res.status).toBe(200)
  return (await res.json()) as { data: Record<string, any>[]; nextCursor: string | null }
}

test('an entry is readable the moment the response has ended', async () => {
  const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, user: 'alice', metadata: { env: 'prod' } })
  const id = res.headers.get('x-gw-request-id') as string
  await res.json()
  const log = await gw.log(id)
  expect(log).toMatchObject({
    requestId: id,
    orgId: 'default',
    endpoint: '/v1/chat/completions',
    authMode: 'GwKey',
    requestedModel: 'openai/gpt-4o',
    model: 'openai/gpt-4o',
    provider: 'openai',
    stream: false,
    status: 200,
    errorCode: null,
    user: 'alice',
    endUserId: 'alice',
    metadata: { env: 'prod' },
    fallback: { used: false, reason: null, model: null },
    attempts: [{ model: 'openai/gpt-4o', outcome: 'ok', status: 200 }],
    usage: { promptTokens: 6, completionTokens: 4, totalTokens: 10, estimated: false },
  })
  expect(typeof log.createdAt).toBe('string')
  expect(log.latencyMs).toBeGreaterThanOrEqual(0)
  expect(log.upstreamLatencyMs).toBeGreaterThanOrEqual(0)
  expect(log.requestBody).toMatchObject({ model: 'openai/gpt-4o', metadata: { env: 'prod' } })
  expect((log.responseBody as any).choices[0].message.content).toBe('Hello from fake-openai (gpt-4o).')
})

test('x-gw-end-user-id wins over the body user', async () => {
  const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, user: 'alice' }, { 'x-gw-end-user-id': 'bob' })
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log).toMatchObject({ user: 'alice', endUserId: 'bob' })
})

test('failed requests are logged with their status and code', async () => {
  openai.enqueue({ kind: 'error', status: 503, errorType: 'unavailable' })
  const res = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello })
  expect(res.status).toBe(502)
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log).toMatchObject({ status: 502, errorCode: 'provider_error', attempts: [{ outcome: 'provider_error', status: 503 }] })
  const bad = await gw.chat({ model: 'openai/gpt-4o', messages: hello, temperature: 9 })
  expect((await gw.log(bad.headers.get('x-gw-request-id') as string)).status).toBe(400)
})

describe('GET /v1/logs', () => {
  test('filters by several metadata keys (ANDed), newest first, with a cursor', async () => {
    const ids: string[] = []
    for (let i = 0; i < 5; i++) {
      const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, metadata: { suite: 'page', parity: i % 2 ? 'odd' : 'even', n: i } })
      ids.push(res.headers.get('x-gw-request-id') as string)
      await res.text()
    }
    const even = await list('metadata=suite=page&metadata=parity=even')
    expect(even.data.map((e) => e.requestId)).toEqual([ids[4], ids[2], ids[0]])
    const p1 = await list('metadata=suite=page&limit=2')
    expect(p1.data.map((e) => e.requestId)).toEqual([ids[4], ids[3]])
    expect(p1.nextCursor).toBeTruthy()
    const p2 = await list(`metadata=suite=page&limit=2&cursor=${p1.nextCursor}`)
    expect(p2.data.map((e) => e.requestId)).toEqual([ids[2], ids[1]])
    const p3 = await list(`metadata=suite=page&limit=2&cursor=${p2.nextCursor}`)
    expect(p3.data.map((e) => e.requestId)).toEqual([ids[0]])
    expect(p3.nextCursor).toBeNull()
    expect((await list('metadata=suite=page&metadata=n=3')).data.map((e) => e.requestId)).toEqual([ids[3]])
  })

  test('filters by status, model and user', async () => {
    const errors = await list('status=error')
    expect(errors.data.length).toBeGreaterThan(0)
    expect(errors.data.every((e) => e.status >= 400)).toBe(true)
    const mini = await list('model=openai/gpt-4o-mini')
    expect(mini.data.every((e) => e.model === 'openai/gpt-4o-mini' || e.requestedModel === 'openai/gpt-4o-mini')).toBe(true)
    const bob = await list('user=bob')
    expect(bob.data.length).toBe(1)
  })

  test('rejects bad filters with 400', async () => {
    const res = await fetch(`${gw.url}/v1/logs?metadata=novalue&limit=0`, { headers: { authorization: `GwKey ${gw.key}` } })
    expect(res.status).toBe(400)
    // A damaged cursor is an error, not a silent restart at the first page.
    const cursor = await fetch(`${gw.url}/v1/logs?cursor=garbage`, { headers: { authorization: `GwKey ${gw.key}` } })
    expect(cursor.status).toBe(400)
    expect(((await cursor.json()) as { message: string }).message).toContain('Invalid cursor "garbage"')
  })
})

test('another org cannot read the entry (404)', async () => {
  await gw.admin('POST', '/orgs', { id: 'other', name: 'Other' })
  const { key } = (await (await gw.admin('POST', '/orgs/other/service-keys', {})).json()) as { key: string }
  const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello })
  const id = res.headers.get('x-gw-request-id') as string
  await res.text()
  const other = await fetch(`${gw.url}/v1/logs/${id}`, { headers: { authorization: `GwKey ${key}` } })
  expect(other.status).toBe(404)
  expect((await list('', key)).data).toEqual([])
})

test('log pages and usage reports count against the org’s own read rate: 429 with Retry-After past it, other orgs unaffected', async () => {
  const limited = await startTestGateway({ openai }, { GW_LOG_READS_PER_MINUTE: '3' })
  try {
    await limited.admin('POST', '/orgs', { id: 'reader2', name: 'Reader two' })
    const { key: other } = (await (await limited.admin('POST', '/orgs/reader2/service-keys', {})).json()) as { key: string }
    const read = (path: string, key = limited.key) => fetch(`${limited.url}${path}`, { headers: { authorization: `GwKey ${key}` } })
    // Model requests do not use up the read rate.
    for (let i = 0; i < 4; i++) expect((await limited.chat({ model: 'openai/gpt-4o', messages: hello })).status).toBe(200)
    expect((await read('/v1/logs?model=openai/gpt-4o')).status).toBe(200)
    expect((await read('/v1/usage')).status).toBe(200)
    expect((await read('/v1/logs?status=error')).status).toBe(200)
    for (const path of ['/v1/logs', '/v1/usage']) {
      const res = await read(path)
      expect(res.status).toBe(429)
      const retryAfter = Number(res.headers.get('retry-after'))
      expect(retryAfter).toBeGreaterThanOrEqual(1)
      expect(retryAfter).toBeLessThanOrEqual(60)
      const body = (await res.json()) as Record<string, unknown>
      expect(body).toMatchObject({ code: 'rate_limit_exceeded', requestId: res.headers.get('x-gw-request-id') })
      expect(String(body.message)).toContain('3 per minute')
    }
    // Another org has a window of its own.
    const page = await read('/v1/logs?limit=1', other)
    expect(page.status).toBe(200)
    expect(((await page.json()) as { data: unknown[] }).data).toEqual([])
    expect((await read('/v1/usage', other)).status).toBe(200)
    // Model requests still pass for the org whose reads are spent, and one entry by id (a key lookup) reads.
    const res = await limited.chat({ model: 'openai/gpt-4o', messages: hello })
    expect(res.status).toBe(200)
    expect((await read(`/v1/logs/${res.headers.get('x-gw-request-id')}`)).status).toBe(200)
  } finally {
    await limited.stop()
  }
})
