// Usage reports over HTTP (GET /v1/usage, GET /admin/orgs/:org/usage) summed from real requests,
// reports that outlive pruned entries, the background retention on a controllable clock, and the
// stored-body cap.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { FakeProvider } from '../fakes/types'
import { type FakeUpstream, startFake } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

const DAY = 86_400_000
const fakes = {} as Record<FakeProvider, FakeUpstream>
let gw: TestGateway
let clock = Date.now()

beforeAll(async () => {
  fakes.openai = await startFake('openai')
  fakes.anthropic = await startFake('anthropic')
  gw = await startTestGateway(fakes, { GW_LOG_RETENTION_DAYS: '1', GW_LOG_BODY_MAX_BYTES: '400' }, { retention: { now: () => clock, intervalMs: 25 } })
})
afterAll(async () => {
  await gw.stop()
  for (const f of Object.values(fakes)) await f.stop()
})

const hello = [{ role: 'user', content: 'Say hi please' }]
const ids: string[] = []

async function send(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await gw.chat({ messages: hello, ...body }, headers)
  await res.text()
  ids.push(res.headers.get('x-gw-request-id') as string)
  return res
}

async function usage(query: string, path = '/v1/usage') {
  const res = path === '/v1/usage' ? await gw.fetch(`/v1/usage?${query}`) : await gw.admin('GET', `${path}?${query}`)
  expect(res.status).toBe(200)
  expect(res.headers.get('x-gw-request-id')).toBeTruthy()
  return ((await res.json()) as { data: Record<string, any>[] }).data
}

describe('reports', () => {
  beforeAll(async () => {
    fakes.openai.enqueue({ kind: 'reply', usage: { prompt: 100, completion: 10, cached: 40, thinking: 5 } })
    await send({ model: 'openai/gpt-4o', metadata: { feature: 'chat' } })
    fakes.openai.enqueue({ kind: 'reply', usage: { prompt: 60, completion: 6 } })
    await send({ model: 'openai/gpt-4o', metadata: { feature: 'search' }, stream: true }, { 'x-gw-end-user-id': 'u-1' })
    fakes.anthropic.enqueue({ kind: 'reply', usage: { prompt: 300, completion: 20, cached: 100, cacheWrite: 50 } })
    await send({ model: 'anthropic/claude-haiku-4-5', metadata: { feature: 'chat' } })
    fakes.openai.enqueue({ kind: 'error', status: 500 })
    await send({ model: 'openai/gpt-4o', metadata: { feature: 'chat' } })
    fakes.openai.enqueue({ kind: 'reply', usage: { prompt: 7, completion: 3 } })
    await send({ model: 'openai/not-in-the-catalog' })
  })

  test('every group sums to what the log entries hold', async () => {
    const entries = await Promise.all(ids.map((id) => gw.log(id) as Promise<Record<string, any>>))
    const sum = (es: Record<string, any>[]) => ({
      requests: es.length,
      errors: es.filter((e) => e.status >= 400).length,
      tokens: {
        input: es.reduce((n, e) => n + e.usage.promptTokens - e.usage.cachedTokens - e.usage.cacheWriteTokens, 0),
        cachedInput: es.reduce((n, e) => n + e.usage.cachedTokens, 0),
        cacheWrite: es.reduce((n, e) => n + e.usage.cacheWriteTokens, 0),
        output: es.reduce((n, e) => n + e.usage.completionTokens - e.usage.reasoningTokens, 0),
        reasoning: es.reduce((n, e) => n + e.usage.reasoningTokens, 0),
      },
    })
    const cost = (es: Record<string, any>[]) => es.reduce((n, e) => n + (e.costUsd ?? 0), 0)

    const [day, ...rest] = await usage('groupBy=day')
    expect(rest).toEqual([])
    expect(day).toMatchObject({ key: new Date().toISOString().slice(0, 10), ...sum(entries) })
    expect(day?.costUsd).toBeCloseTo(cost(entries), 12)
    expect(day?.tokens).toEqual({ input: 60 + 60 + 150 + 7, cachedInput: 140, cacheWrite: 50, output: 10 + 6 + 20 + 3, reasoning: 5 })

    const byModel = await usage('groupBy=model')
    for (const model of ['openai/gpt-4o', 'anthropic/claude-haiku-4-5', 'openai/not-in-the-catalog']) {
      const es = entries.filter((e) => (e.model ?? e.requestedModel) === model)
      expect(byModel.find((r) => r.key === model)).toMatchObject(sum(es))
    }
    expect(byModel.find((r) => r.key === 'openai/not-in-the-catalog')?.costUsd).toBeNull()

    // Groups come most expensive first.
    expect((await usage('groupBy=provider')).map((r) => [r.key, r.requests, r.errors])).toEqual([
      ['openai', 4, 1],
      ['anthropic', 1, 0],
    ])
    expect((await usage('groupBy=endUser')).map((r) => [r.key, r.requests])).toEqual(
      expect.arrayContaining([
        [null, 4],
        ['u-1', 1],
      ]),
    )
    const feature = await usage('groupBy=metadata.feature')
    expect(feature.find((r) => r.key === 'chat')).toMatchObject(sum(entries.filter((e) => e.metadata.feature === 'chat')))
    // Requests without the key form the group whose key is null.
    expect(feature.find((r) => r.key === null)).toMatchObject(sum(entries.filter((e) => e.metadata.feature === undefined)))
    expect(feature.reduce((n, r) => n + r.requests, 0)).toBe(entries.length)
    expect(await usage('groupBy=metadata.absent')).toEqual([expect.objectContaining({ key: null, ...sum(entries) })])
    const keys = await usage('groupBy=key')
    expect(keys).toEqual([expect.objectContaining({ key: entries[0]?.subject, requests: 5 })])

    // The admin API answers the same report for the org.
    expect(await usage('groupBy=model', '/orgs/default/usage')).toEqual(byModel)
  })

  test('a range outside the traffic is empty; bad queries are clear 400s; other orgs and tokens are refused', async () => {
    expect(await usage('since=2020-01-01&until=2020-01-31')).toEqual([])
    for (const query of ['groupBy=color', 'since=yesterday', 'since=2026-02-01&until=2026-01-01']) {
      const res = await gw.fetch(`/v1/usage?${query}`)
      expect(res.status).toBe(400)
      expect(await res.json()).toMatchObject({ error: true, code: 'gateway_error', requestId: res.headers.get('x-gw-request-id') })
    }
    expect((await gw.admin('GET', '/orgs/nope/usage')).status).toBe(404)
    expect((await fetch(`${gw.url}/v1/usage`)).status).toBe(401)
  })
})

test('a request refused before any provider answered counts under the provider it named, in every grouping', async () => {
  // An org without an OpenAI key: the request is refused (403 model_not_allowed) before reaching a provider.
  await gw.admin('POST', '/orgs', { id: 'no-keys', name: 'No keys' })
  const { key } = (await (await gw.admin('POST', '/orgs/no-keys/service-keys', { name: 't' })).json()) as { key: string }
  const refused = await gw.fetch('/v1/chat/completions', {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'gemini/gemini-2.5-flash', messages: hello }),
  })
  expect(refused.status).toBe(403)
  const id = refused.headers.get('x-gw-request-id') as string
  const entry = (await (await gw.admin('GET', `/orgs/no-keys/logs/${id}`)).json()) as Record<string, any>
  expect(entry).toMatchObject({ provider: 'google', requestedModel: 'gemini/gemini-2.5-flash', status: 403 })
  const report = async (groupBy: string) => {
    for (let i = 0; i < 100 && (await usage('groupBy=day', '/orgs/no-keys/usage')).length === 0; i++) await Bun.sleep(20)
    return usage(`groupBy=${groupBy}`, '/orgs/no-keys/usage')
  }
  expect((await report('provider')).map((r) => [r.key, r.requests, r.errors])).toEqual([['google', 1, 1]])
  expect((await report('model')).map((r) => [r.key, r.requests, r.errors])).toEqual([['gemini/gemini-2.5-flash', 1, 1]])
})

test('a metadata report: an empty value is its own group, apart from the requests without the key; that group is unpriced when its requests are', async () => {
  await gw.admin('POST', '/orgs', { id: 'tags', name: 'Tags' })
  await gw.admin('PUT', '/orgs/tags/providers/openai', { apiKey: fakes.openai.apiKey, baseUrl: fakes.openai.url })
  const { key } = (await (await gw.admin('POST', '/orgs/tags/service-keys', { name: 't' })).json()) as { key: string }
  const as = { authorization: `GwKey ${key}` }
  await send({ model: 'openai/gpt-4o', metadata: { grp: 'x' } }, as)
  await send({ model: 'openai/gpt-4o', metadata: { grp: '' } }, as)
  await send({ model: 'openai/my-unpriced-model' }, as)
  let rows: Record<string, any>[] = []
  for (let i = 0; i < 100 && rows.reduce((n, r) => n + r.requests, 0) < 3; i++) {
    await Bun.sleep(20)
    rows = await usage('groupBy=metadata.grp', '/orgs/tags/usage')
  }
  const byKey = new Map(rows.map((r) => [r.key, r]))
  expect(rows).toHaveLength(3)
  expect(byKey.get('x')).toMatchObject({ requests: 1 })
  expect(byKey.get('x')?.costUsd).toBeGreaterThan(0)
  expect(byKey.get('')).toMatchObject({ requests: 1 })
  expect(byKey.get('')?.costUsd).toBeGreaterThan(0)
  // Without the key: the unpriced request alone, whose cost is unknown (null, never 0).
  expect(byKey.get(null)).toMatchObject({ requests: 1, costUsd: null })
})

describe('retention and body caps', () => {
  test('a stored body over GW_LOG_BODY_MAX_BYTES is a truncated preview with its size', async () => {
    const long = 'é'.repeat(600)
    const res = await send({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: long }] })
    const log = (await gw.log(res.headers.get('x-gw-request-id') as string)) as Record<string, any>
    const sent = JSON.stringify({ messages: [{ role: 'user', content: long }], model: 'openai/gpt-4o' })
    const { truncated, bytes, preview } = log.requestBody as { truncated: boolean; bytes: number; preview: string }
    expect(truncated).toBe(true)
    expect(bytes).toBe(Buffer.byteLength(sent))
    expect(Buffer.byteLength(preview)).toBeLessThanOrEqual(400)
    expect(Buffer.byteLength(preview)).toBeGreaterThan(390)
    expect(preview.startsWith('{"messages":[{"role":"user","content":"éé')).toBe(true)
  })

  test('entries older than GW_LOG_RETENTION_DAYS are pruned in the background; reports keep them', async () => {
    const before = await usage('groupBy=day')
    expect((await gw.fetch('/v1/logs?limit=500').then((r) => r.json())).data.length).toBeGreaterThan(0)
    clock += 1.5 * DAY // one and a half days later, every entry is past a one-day retention
    const deadline = Date.now() + 5000
    let left = -1
    while (Date.now() < deadline) {
      left = ((await gw.fetch('/v1/logs?limit=500').then((r) => r.json())) as { data: unknown[] }).data.length
      if (left === 0) break
      await Bun.sleep(25)
    }
    expect(left).toBe(0)
    expect((await gw.fetch(`/v1/logs/${ids[0]}`)).status).toBe(404)
    expect(await usage('groupBy=day')).toEqual(before)
  })
})
