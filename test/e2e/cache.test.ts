// The exact response cache end to end (PRODUCT §19): the hit/miss matrix, a stream replayed to the
// OpenAI SDK, what is never kept, limits and budgets on hits, the log and metrics; on a SQLite file, the
// answers the log thread writes (a hit after a restart, the org's size bound); and, on PostgreSQL with
// Redis, a hit on instance B for an answer kept through instance A.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import OpenAI from 'openai'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { ADMIN_TOKEN, readSse, startTestGateway, type TestGateway } from '../helpers/gateway'
import { readExposition } from '../helpers/prometheus'
import { freshSchema, TEST_REDIS_URL, TEST_SECRET, TEST_STORE, TEST_WITH_REDIS } from '../helpers/servers'

let openai: FakeUpstream
let anthropic: FakeUpstream
let gw: TestGateway
let seq = 0

beforeAll(async () => {
  openai = await startFake('openai')
  anthropic = await startFake('anthropic')
  gw = await startTestGateway({ openai, anthropic })
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
  await anthropic.stop()
})

const hello = [{ role: 'user', content: 'Say hi please' }]

async function orgWith(policy: object, on: TestGateway = gw) {
  const id = `cache-${++seq}-${Math.random().toString(36).slice(2, 6)}`
  await on.admin('POST', '/orgs', { id, name: id })
  await on.admin('PUT', `/orgs/${id}/providers/openai`, { apiKey: openai.apiKey, baseUrl: openai.url })
  await on.admin('PUT', `/orgs/${id}/providers/anthropic`, { apiKey: anthropic.apiKey, baseUrl: anthropic.url })
  expect((await on.admin('PUT', `/orgs/${id}/policy`, policy)).status).toBe(200)
  const { key } = (await (await on.admin('POST', `/orgs/${id}/service-keys`, {})).json()) as { key: string }
  const chat = (body: object = {}, headers: Record<string, string> = {}, via: TestGateway = on) =>
    via.chat({ model: 'openai/gpt-4o-mini', messages: hello, ...body }, { authorization: `GwKey ${key}`, ...headers })
  return { id, key, chat, log: (res: Response, via: TestGateway = on) => via.log(res.headers.get('x-gw-request-id') as string, key) }
}

const exact = { cache: { mode: 'exact', ttlSeconds: 60 } }
const sent = () => openai.requests.length

test('hit/miss matrix: same body hits; another parameter, model or org misses; user, metadata and the stream flag are not in the key', async () => {
  const org = await orgWith(exact)
  const other = await orgWith(exact)
  const first = await org.chat({ temperature: 0.2 })
  expect(first.headers.get('x-gw-cache')).toBe('miss')
  const firstBody = (await first.json()) as any
  const n = sent()
  const again = await org.chat({ temperature: 0.2 })
  expect(again.headers.get('x-gw-cache')).toBe('hit')
  expect(again.headers.get('x-gw-cost-usd')).toBe('0')
  expect(again.headers.get('x-gw-model')).toBe('openai/gpt-4o-mini')
  const againBody = (await again.json()) as any
  expect(againBody.choices).toEqual(firstBody.choices)
  expect(againBody.usage).toMatchObject({ prompt_tokens: firstBody.usage.prompt_tokens, completion_tokens: firstBody.usage.completion_tokens, cost_usd: 0 })
  expect(sent()).toBe(n)
  // Not in the key: user, metadata.
  expect((await org.chat({ temperature: 0.2, user: 'bob', metadata: { run: '7' } })).headers.get('x-gw-cache')).toBe('hit')
  expect(sent()).toBe(n)
  // In the key: a sampling parameter, the model, the messages, the org.
  for (const body of [{ temperature: 0.3 }, { temperature: 0.2, model: 'openai/gpt-4o' }, { temperature: 0.2, messages: [{ role: 'user', content: 'Say bye' }] }])
    expect((await org.chat(body)).headers.get('x-gw-cache')).toBe('miss')
  expect((await other.chat({ temperature: 0.2 })).headers.get('x-gw-cache')).toBe('miss')
  expect(sent()).toBe(n + 4)
})

test('the log: a hit has cost 0, the cost it saved, no tokens; gw_cache_requests_total counts hits and misses', async () => {
  const org = await orgWith(exact)
  const miss = await org.chat()
  const hit = await org.chat()
  // A hit replayed as a stream has a time to first token; a JSON one none.
  const streamed = await org.chat({ stream: true })
  await streamed.text()
  expect(await org.log(streamed)).toMatchObject({ cache: 'hit', stream: true, ttftMs: expect.any(Number) })
  const [m, h] = [await org.log(miss), await org.log(hit)]
  expect(h.ttftMs).toBeNull()
  expect(m).toMatchObject({ cache: 'miss', status: 200 })
  expect(h).toMatchObject({ cache: 'hit', status: 200, costUsd: 0, costSavedUsd: m.costUsd, model: 'openai/gpt-4o-mini', provider: 'openai' })
  expect((h.usage as any).totalTokens).toBe(0)
  expect(m.costUsd).toBeGreaterThan(0)
  const metrics = readExposition(await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text())
  expect(metrics.value('gw_cache_requests_total', { result: 'hit' })).toBeGreaterThan(0)
  expect(metrics.value('gw_cache_requests_total', { result: 'miss' })).toBeGreaterThan(0)
})

test('x-gw-cache: off skips it, refresh stores a fresh answer over the kept one; x-gw-cache-ttl; TTL expiry; an org with the cache off says off', async () => {
  const org = await orgWith({ cache: { mode: 'exact', ttlSeconds: 1 } })
  openai.enqueue({ kind: 'reply', text: 'one' })
  expect((await org.chat()).headers.get('x-gw-cache')).toBe('miss')
  const off = await org.chat({}, { 'x-gw-cache': 'off' })
  expect(off.headers.get('x-gw-cache')).toBe('off')
  openai.enqueue({ kind: 'reply', text: 'two' })
  const refreshed = await org.chat({}, { 'x-gw-cache': 'refresh' })
  expect(refreshed.headers.get('x-gw-cache')).toBe('miss')
  expect((await org.log(refreshed)).cache).toBe('refresh')
  const hit = await org.chat()
  expect(hit.headers.get('x-gw-cache')).toBe('hit')
  expect(((await hit.json()) as any).choices[0].message.content).toBe('two')
  await Bun.sleep(1100)
  expect((await org.chat()).headers.get('x-gw-cache')).toBe('miss') // the 1 s TTL ran out
  // A longer TTL for one request.
  expect((await org.chat({ seed: 1 }, { 'x-gw-cache-ttl': '60' })).headers.get('x-gw-cache')).toBe('miss')
  await Bun.sleep(1100)
  expect((await org.chat({ seed: 1 })).headers.get('x-gw-cache')).toBe('hit')
  const bad = await org.chat({}, { 'x-gw-cache-ttl': 'soon' })
  expect(bad.status).toBe(400)
  expect(((await bad.json()) as any).message).toMatch(/x-gw-cache-ttl/)
  const none = await orgWith({})
  expect((await none.chat()).headers.get('x-gw-cache')).toBe('off')
})

test('a kept answer replayed as a stream is a valid stream for the OpenAI SDK, usage and [DONE] included; a streamed answer is kept too', async () => {
  const org = await orgWith(exact)
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: org.key, maxRetries: 0 })
  const first = await org.chat({ seed: 42 })
  const text = ((await first.json()) as any).choices[0].message.content as string
  const n = sent()
  const { data: stream, response } = await client.chat.completions
    .create({ model: 'openai/gpt-4o-mini', messages: hello as never, seed: 42, stream: true, stream_options: { include_usage: true } })
    .withResponse()
  expect(response.headers.get('x-gw-cache')).toBe('hit')
  let got = ''
  let usage: any
  let finish: string | null | undefined
  for await (const chunk of stream) {
    got += chunk.choices[0]?.delta.content ?? ''
    finish = chunk.choices[0]?.finish_reason ?? finish
    if (chunk.usage) usage = chunk.usage
  }
  expect(got).toBe(text)
  expect(finish).toBe('stop')
  expect(usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), cost_usd: 0 })
  expect(sent()).toBe(n)
  // Kept from a stream, answered as JSON.
  const streamed = await org.chat({ seed: 43, stream: true })
  const events = await readSse(streamed)
  expect(events.at(-1)).toBe('[DONE]')
  const streamedText = events.flatMap((e) => (e === '[DONE]' ? [] : ((e.choices as any[])[0]?.delta?.content ?? ''))).join('')
  const json = await org.chat({ seed: 43 })
  expect(json.headers.get('x-gw-cache')).toBe('hit')
  expect(((await json.json()) as any).choices[0].message.content).toBe(streamedText)
})

test('errors, refusals and answers cut short are never kept', async () => {
  const org = await orgWith(exact)
  const cases = [
    { kind: 'error', status: 500, errorType: 'server' },
    { kind: 'reply', finish: 'refusal' },
    { kind: 'reply', finish: 'length' },
    { kind: 'reply', finish: 'content_filter' },
  ] as const
  for (const [i, behaviour] of cases.entries()) {
    openai.enqueue(behaviour)
    await (await org.chat({ seed: 100 + i })).text()
    const n = sent()
    expect((await org.chat({ seed: 100 + i })).headers.get('x-gw-cache')).toBe('miss')
    expect(sent()).toBe(n + 1)
  }
  // A stream cut short.
  openai.enqueue({ kind: 'cut-after', events: 2 })
  await (await org.chat({ seed: 200, stream: true })).text()
  expect((await org.chat({ seed: 200 })).headers.get('x-gw-cache')).toBe('miss')
  // A stream of several choices (its transcript holds the first).
  await (await org.chat({ seed: 201, n: 2, stream: true })).text()
  expect((await org.chat({ seed: 201, n: 2 })).headers.get('x-gw-cache')).toBe('miss')
})

test("an answer a fallback model gave is not kept: the next request for the primary model is the primary's answer, JSON and streamed", async () => {
  const org = await orgWith(exact)
  const chain = { fallback_chain: [{ model: 'anthropic/claude-sonnet-4-5' }] }
  for (const [i, stream] of [false, true].entries()) {
    openai.enqueue({ kind: 'error', status: 500, errorType: 'server' })
    const first = await org.chat({ seed: 300 + i, stream, ...chain })
    expect(first.headers.get('x-gw-model')).toBe('anthropic/claude-sonnet-4-5')
    expect(first.headers.get('x-gw-cache')).toBe('miss')
    await first.text()
    await Bun.sleep(50) // a kept answer is put after the answer has gone out
    const n = sent()
    openai.enqueue({ kind: 'reply', text: 'from the primary' })
    const next = await org.chat({ seed: 300 + i })
    expect(next.headers.get('x-gw-cache')).toBe('miss')
    expect(next.headers.get('x-gw-model')).toBe('openai/gpt-4o-mini')
    expect(((await next.json()) as any).choices[0].message.content).toBe('from the primary')
    expect(sent()).toBe(n + 1)
    // The primary's own answer is kept as before.
    expect((await org.chat({ seed: 300 + i })).headers.get('x-gw-cache')).toBe('hit')
  }
})

test('policy and budgets still apply to hits: a hit counts as a request under the rate limit', async () => {
  const org = await orgWith({ ...exact, requestsPerMinute: 2, budgets: [{ scope: 'org', usd: 10, period: 'day' }] })
  expect((await org.chat()).headers.get('x-gw-cache')).toBe('miss')
  expect((await org.chat()).headers.get('x-gw-cache')).toBe('hit')
  const third = await org.chat()
  expect(third.status).toBe(429)
  expect(((await third.json()) as any).code).toBe('rate_limit_exceeded')
  const budgets = (await (await gw.admin('GET', `/orgs/${org.id}/budgets`)).json()) as any
  expect(budgets.data[0].reservedUsd).toBe(0)
})

test('Messages, Responses and embeddings are answered from the cache too', async () => {
  const org = await orgWith(exact)
  const post = (path: string, body: object) =>
    gw.fetch(path, { method: 'POST', headers: { authorization: `GwKey ${org.key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const messages = { model: 'anthropic/claude-sonnet-4-5', max_tokens: 50, messages: hello }
  const m1 = await post('/v1/messages', messages)
  const m1Body = await m1.json()
  const m2 = await post('/v1/messages', messages)
  expect([m1.headers.get('x-gw-cache'), m2.headers.get('x-gw-cache')]).toEqual(['miss', 'hit'])
  expect(await m2.json()).toEqual(m1Body)
  const m3 = await post('/v1/messages', { ...messages, stream: true })
  expect(m3.headers.get('x-gw-cache')).toBe('hit')
  const events = (await m3.text()).split('\n').filter((l) => l.startsWith('event: ')).map((l) => l.slice(7))
  expect(events[0]).toBe('message_start')
  expect(events.at(-1)).toBe('message_stop')
  const embed = { model: 'openai/text-embedding-3-small', input: ['a', 'b'] }
  const e1 = await post('/v1/embeddings', embed)
  const e1Body = await e1.json()
  const e2 = await post('/v1/embeddings', embed)
  expect([e1.headers.get('x-gw-cache'), e2.headers.get('x-gw-cache')]).toEqual(['miss', 'hit'])
  expect(await e2.json()).toEqual(e1Body)
  expect((await post('/v1/embeddings', { ...embed, input: ['a', 'c'] })).headers.get('x-gw-cache')).toBe('miss')
  const r = { model: 'openai/gpt-4o-mini', input: 'Say hi please' }
  const first = await post('/v1/responses', r)
  expect(first.headers.get('x-gw-cache')).toBe('miss')
  expect((await post('/v1/responses', r)).headers.get('x-gw-cache')).toBe('hit')
  const replayed = await post('/v1/responses', { ...r, stream: true })
  expect(replayed.headers.get('x-gw-cache')).toBe('hit')
  const types = (await replayed.text()).split('\n').filter((l) => l.startsWith('event: ')).map((l) => l.slice(7))
  expect(types[0]).toBe('response.created')
  expect(types.at(-1)).toBe('response.completed')
  // Stateless only: a request that continues a stored conversation is never answered from the cache.
  const previous = ((await first.json()) as { id: string }).id
  const next = { ...r, previous_response_id: previous }
  expect((await post('/v1/responses', next)).headers.get('x-gw-cache')).toBe('off')
  expect((await post('/v1/responses', next)).headers.get('x-gw-cache')).toBe('off')
})

test('prompt runs: the rendered request is the key (other variables miss, the same hit)', async () => {
  const org = await orgWith(exact)
  await gw.admin('POST', `/orgs/${org.id}/prompts`, { slug: 'greet', name: 'greet' })
  const v = await gw.admin('POST', `/orgs/${org.id}/prompts/greet/versions`, {
    model: 'openai/gpt-4o-mini',
    userTemplate: 'Say hello to {{who}}.',
    variables: [{ name: 'who', type: 'string', required: true }],
    publish: true,
  })
  expect(v.status).toBe(201)
  const run = (who: string) =>
    gw.fetch('/v1/prompts/greet/run', { method: 'POST', headers: { authorization: `GwKey ${org.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ variables: { who } }) })
  expect((await run('Ada')).headers.get('x-gw-cache')).toBe('miss')
  expect((await run('Ada')).headers.get('x-gw-cache')).toBe('hit')
  expect((await run('Grace')).headers.get('x-gw-cache')).toBe('miss')
})

test('on a SQLite file: an answer kept is a hit before and after the log thread wrote it and after a restart; the org size bound holds; a stream\'s answer is made from what the client received', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-cache-file-'))
  const env = { GW_DB: join(dir, 'gw.db'), GW_SECRET: TEST_SECRET, GW_CACHE_MAX_ORG_BYTES: '2048' }
  const table = () => {
    const db = new Database(env.GW_DB, { readonly: true })
    try {
      return db.query<{ bytes: number }, []>('SELECT bytes FROM response_cache').all().map((r) => r.bytes)
    } finally {
      db.close()
    }
  }
  let on = await startTestGateway({ openai }, env)
  try {
    const org = await orgWith(exact, on)
    const ask = (seed: number) => org.chat({ seed }, {}, on)
    expect((await ask(1)).headers.get('x-gw-cache')).toBe('miss')
    const n = sent()
    // At once: the answer handed to the log thread is answered from memory until it is written.
    expect((await ask(1)).headers.get('x-gw-cache')).toBe('hit')
    // Written by the log thread with the entries; then read from the table.
    await on.gw.deps.logs.flush()
    expect(table().length).toBe(1)
    expect((await ask(1)).headers.get('x-gw-cache')).toBe('hit')
    await on.stop()
    on = await startTestGateway({ openai }, { ...env, GW_SERVICE_KEY: on.key })
    const again = await ask(1)
    expect(again.headers.get('x-gw-cache')).toBe('hit')
    expect(((await again.json()) as any).choices[0].message.content).toBeString()
    expect(sent()).toBe(n)
    // Answers of ~500 bytes under a 2,048-byte bound: the oldest go as new ones are kept.
    const size = table()[0] as number
    expect(size).toBeGreaterThan(300)
    for (let seed = 2; seed <= 8; seed++) expect((await ask(seed)).headers.get('x-gw-cache')).toBe('miss')
    await on.gw.deps.logs.flush()
    const kept = table()
    expect(kept.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(2048)
    expect(kept.length).toBe(Math.floor(2048 / size))
    expect((await ask(8)).headers.get('x-gw-cache')).toBe('hit')
    const before = sent()
    expect((await ask(1)).headers.get('x-gw-cache')).toBe('miss')
    expect((await ask(2)).headers.get('x-gw-cache')).toBe('miss')
    expect(sent()).toBe(before + 2)
    // A relayed stream's answer is made from what the client received: at once for a repeat, and on the
    // log thread; one cut by the token limit is neither.
    const streamed = await org.chat({ seed: 30, stream: true }, {}, on)
    const text = (await readSse(streamed)).map((d) => (d === '[DONE]' ? '' : ((d as any).choices?.[0]?.delta?.content ?? ''))).join('')
    for (const seed of [31, 32]) {
      openai.enqueue({ kind: 'reply', finish: 'length' })
      await (await org.chat({ seed, stream: true }, {}, on)).text()
    }
    for (const [written, cut] of [[false, 31], [true, 32]] as const) {
      if (written) await on.gw.deps.logs.flush()
      const hit = await ask(30)
      expect(hit.headers.get('x-gw-cache')).toBe('hit')
      expect(((await hit.json()) as any).choices[0].message.content).toBe(text)
      expect((await ask(cut)).headers.get('x-gw-cache')).toBe('miss')
    }
  } finally {
    await on.stop()
    rmSync(dir, { recursive: true, force: true })
  }
})

describe.skipIf(TEST_STORE !== 'postgres' || !TEST_WITH_REDIS)('two instances on PostgreSQL and Redis', () => {
  test('an answer kept through instance A is a hit on instance B', async () => {
    const schema = await freshSchema()
    const env = { GW_DATABASE_URL: schema.url, GW_SECRET: TEST_SECRET, GW_REDIS_URL: TEST_REDIS_URL, GW_REDIS_PREFIX: `gwtest:${schema.schema}:` }
    const a = await startTestGateway({ openai }, env)
    const b = await startTestGateway({ openai }, { ...env, GW_SERVICE_KEY: a.key })
    try {
      const org = await orgWith(exact, a)
      const first = await org.chat({ seed: 7 }, {}, a)
      expect(first.headers.get('x-gw-cache')).toBe('miss')
      const text = ((await first.json()) as any).choices[0].message.content
      // The put runs after the answer: give it a moment.
      await Bun.sleep(100)
      const n = sent()
      const onB = await org.chat({ seed: 7 }, {}, b)
      expect(onB.headers.get('x-gw-cache')).toBe('hit')
      expect(((await onB.json()) as any).choices[0].message.content).toBe(text)
      expect(sent()).toBe(n)
    } finally {
      await b.stop()
      await a.stop()
      await schema.drop()
    }
  })
})

test('Redis unreachable: the cache is a miss and the answer still comes', async () => {
  const down = await startTestGateway({ openai }, { GW_REDIS_URL: 'redis://127.0.0.1:1', GW_REDIS_PREFIX: 'gwtest:cache-down:' })
  try {
    const org = await orgWith(exact, down)
    for (let i = 0; i < 2; i++) {
      const res = await org.chat({ seed: 900 })
      expect(res.status).toBe(200)
      expect(res.headers.get('x-gw-cache')).toBe('miss')
    }
  } finally {
    await down.stop()
  }
}, 20_000)
