// Budgets that hold under pressure (PRODUCT §11, docs/spend.md): a reservation covers every answer
// of `n` and input the provider holds itself, a reservation whose request or process died lapses
// after its lease, and while Redis is away budgets are counted per instance (GW_REDIS_REQUIRED=false) or
// budgeted requests refused (true).

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { budgetOrg, budgetSuite } from '../helpers/budget-org'
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway'
import { type PrivateRedis, startPrivateRedis } from '../helpers/private-servers'
import { spawnGw } from '../helpers/process'
import { serversFor, TEST_REDIS_URL } from '../helpers/servers'

const suite = budgetSuite()

// gpt-4o: $2.50 / 1M input, $10 / 1M output, a 128,000-token context window.
const ask = (extra: object = {}) => ({ model: 'openai/gpt-4o', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], ...extra })

/** An OpenAI chat answer with `choices` answers of `perChoice` tokens each, its usage counting all of them. */
function manyChoices(choices: number, perChoice: number, prompt: number): string {
  const text = Array.from({ length: perChoice }, (_, i) => `w${i}`).join(' ')
  return JSON.stringify({
    id: 'chatcmpl-many',
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: 'gpt-4o-2024-08-06',
    choices: Array.from({ length: choices }, (_, index) => ({
      index,
      message: { role: 'assistant', content: text, refusal: null },
      logprobs: null,
      finish_reason: 'length',
    })),
    usage: { prompt_tokens: prompt, completion_tokens: choices * perChoice, total_tokens: prompt + choices * perChoice },
  })
}

test('n: 128 reserves all 128 answers: 40 concurrent requests under $0.01 spend at most $0.01', async () => {
  const budget = 0.01
  const org = await budgetOrg(suite.gw.url, suite.openai, { budgets: [{ scope: 'org', usd: budget, period: 'day' }] })
  // Each answer: 128 × 5 output tokens and 10 prompt tokens, $0.006425: one fits, two do not.
  const cost = (10 * 2.5 + 128 * 5 * 10) / 1e6
  suite.openai.setDefault({ kind: 'raw', status: 200, body: manyChoices(128, 5, 10), delayMs: 100 })
  const results = await Promise.all(Array.from({ length: 40 }, () => org.chat(ask({ n: 128, max_tokens: 5 }))))
  const ok = results.filter((r) => r.status === 200)
  expect(ok.length).toBeGreaterThanOrEqual(1)
  expect(results.filter((r) => r.status !== 200).every((r) => r.status === 429 && r.body.code === 'budget_exceeded')).toBe(true)
  expect((ok[0]?.body.choices as unknown[]).length).toBe(128)
  expect((suite.openai.requests[0]?.body as { n: number }).n).toBe(128)
  const spent = await org.spent()
  expect(spent).toBeCloseTo(ok.length * cost, 12)
  expect(spent).toBeLessThanOrEqual(budget)
  const refused = results.find((r) => r.status === 429)
  // 128 answers of 5 tokens at $10 / 1M are in what the request may cost.
  expect(refused?.body.message).toMatch(/this request may cost up to \$0\.006[5-9]/)
  expect((await org.budgets())[0]).toMatchObject({ reservedUsd: 0, spentUsd: expect.closeTo(spent, 9) })
})

describe('input the provider holds itself is reserved at the model context window', () => {
  // 128,000 prompt tokens at $2.50 / 1M, plus 16 output tokens: $0.32.
  const WINDOW_COST = /may cost up to \$0\.32\b/

  test('refused under a small budget: previous_response_id, a file by id, a stored prompt, a conversation', async () => {
    const org = await budgetOrg(suite.gw.url, suite.openai, { budgets: [{ scope: 'org', usd: 0.05, period: 'day' }] })
    const responses = (extra: object) => org.post('/v1/responses', { model: 'openai/gpt-4o', input: 'go on', max_output_tokens: 16, ...extra })
    for (const r of [
      await responses({ previous_response_id: 'resp_0123456789abcdef' }),
      await responses({ prompt: { id: 'pmpt_0123456789', version: '2' } }),
      await responses({ conversation: 'conv_0123456789' }),
      await responses({ input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-0123456789' }] }] }),
      await org.chat(ask({ max_tokens: 16, messages: [{ role: 'user', content: [{ type: 'text', text: 'summarise' }, { type: 'file', file: { file_id: 'file-0123456789' } }] }] })),
    ]) {
      expect(r.status).toBe(429)
      // /v1/responses answers in OpenAI's error shape, chat completions in gw's.
      const error = r.body.error === true ? r.body : r.body.error
      expect(error).toMatchObject({ code: 'budget_exceeded', message: expect.stringMatching(WINDOW_COST) })
      expect(r.body.requestId).toBe(r.res.headers.get('x-gw-request-id'))
    }
    expect(suite.openai.requests).toHaveLength(0)
    // The same request carrying all of its input fits.
    expect((await responses({})).status).toBe(200)
  })

  test('under a large budget it is reserved at the window while it runs and settled to the real cost', async () => {
    const org = await budgetOrg(suite.gw.url, suite.openai, { budgets: [{ scope: 'org', usd: 1, period: 'day' }] })
    const first = await org.post('/v1/responses', { model: 'openai/gpt-4o', input: 'hello there', max_output_tokens: 16 })
    expect(first.status).toBe(200)
    const next = { model: 'openai/gpt-4o', input: 'and again', previous_response_id: first.body.id, max_output_tokens: 16 }
    // While a continuation runs (the provider holds it up), the whole window is held.
    suite.openai.enqueue({ kind: 'stall-headers' })
    const client = new AbortController()
    const stalled = fetch(`${suite.gw.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `GwKey ${org.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(next),
      signal: client.signal,
    }).catch(() => undefined)
    while (suite.openai.requests.length < 2) await Bun.sleep(10)
    expect((await org.budgets())[0]?.reservedUsd).toBeGreaterThanOrEqual(0.32)
    client.abort()
    await stalled
    // One that completes is settled to its real cost, as the provider's usage says.
    const second = await org.post('/v1/responses', next)
    expect(second.status).toBe(200)
    expect((suite.openai.requests[2]?.body as { previous_response_id: string }).previous_response_id).toBe(first.body.id)
    let status = (await org.budgets())[0]
    for (let i = 0; i < 50 && status?.reservedUsd !== 0; i++) status = (await Bun.sleep(20), (await org.budgets())[0])
    const spent = await org.spent()
    expect(spent).toBeGreaterThan(0)
    expect(spent).toBeLessThan(0.001)
    expect(status).toMatchObject({ reservedUsd: 0, spentUsd: expect.closeTo(spent, 9) })
  })
})

test('a stream that runs longer than its lease keeps its reservation until it ends', async () => {
  // Lease: the org's 1 s upstream timeout + 5 s; the stream runs about 7.5 s, a word every 150 ms.
  const org = await budgetOrg(suite.gw.url, suite.openai, { upstreamTimeoutMs: 1000, budgets: [{ scope: 'org', usd: 0.002, period: 'day' }] })
  const words = 50
  suite.openai.enqueue({ kind: 'reply', text: Array.from({ length: words }, (_, i) => `w${i}`).join(' '), chunks: words, chunkDelayMs: 150 })
  const started = performance.now()
  const res = await fetch(`${suite.gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `GwKey ${org.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(ask({ stream: true })),
  })
  expect(res.status).toBe(200)
  const body = res.text()
  await Bun.sleep(6_500 - (performance.now() - started))
  // Past its first lease the stream is still open: its hold is still there, and a second request does not fit.
  expect((await org.budgets())[0]?.reservedUsd).toBeGreaterThan(0.001)
  expect((await org.chat(ask())).status).toBe(429)
  expect(await body).toContain('[DONE]')
  expect(performance.now() - started).toBeGreaterThan(6_500)
}, 20_000)

describe('a reservation whose process died lapses after its lease', () => {
  let redisUp = false
  beforeAll(async () => {
    redisUp = await serversFor('budget lease across a crashed gw (shared Redis)', { redis: true })
  })

  test('gw killed mid-request with a Redis ledger: the next instance refuses at first, then the hold lapses and the request fits', async () => {
    if (!redisUp) return
    const env = {
      GW_DB: join(suite.dir, 'crash.db'),
      GW_ADMIN_TOKEN: ADMIN_TOKEN,
      GW_REDIS_URL: TEST_REDIS_URL,
      GW_REDIS_PREFIX: `gwtest:lease:${Bun.randomUUIDv7()}:`,
      // Lease: 3 s + the 5 s margin.
      GW_UPSTREAM_TIMEOUT_MS: '3000',
      GW_PROMPTS_DIR: '/nonexistent-gw-test-prompts',
    }
    const a = await spawnGw(env)
    let b: Awaited<ReturnType<typeof spawnGw>> | undefined
    try {
      // Room for one reservation at a time (each about $0.0014).
      const org = await budgetOrg(a.url, suite.openai, { budgets: [{ scope: 'org', usd: 0.002, period: 'day' }] })
      suite.openai.enqueue({ kind: 'stall-headers' })
      const doomed = org.chat(ask()).catch(() => undefined)
      const deadline = performance.now() + 5000
      while (!suite.openai.requests.length && performance.now() < deadline) await Bun.sleep(10)
      expect(suite.openai.requests).toHaveLength(1)
      const reservedAt = performance.now()
      a.proc.kill('SIGKILL')
      await a.proc.exited
      await doomed

      b = await spawnGw(env)
      const next = b.url
      const held = await org.chat(ask(), {}, next)
      expect(held.status).toBe(429)
      expect(held.body.message).toMatch(/reserved \$0\.001/)
      let fitAt = 0
      while (performance.now() - reservedAt < 14_000) {
        const r = await org.chat(ask(), {}, next)
        if (r.status === 200) {
          fitAt = performance.now() - reservedAt
          break
        }
        expect(r.status).toBe(429)
        await Bun.sleep(250)
      }
      expect(fitAt).toBeGreaterThan(7_500)
      expect(fitAt).toBeLessThan(11_000)
    } finally {
      for (const p of [a, b]) if (p && p.proc.exitCode === null) p.proc.kill('SIGTERM')
      await Promise.all([a.proc.exited, b?.proc.exited])
    }
  }, 30_000)
})

describe('Redis configured but unreachable', () => {
  const can = Bun.which('redis-server') !== null
  if (!can) console.log('skipped: budgets with Redis down (redis-server not installed)')
  let redis: PrivateRedis
  let a: TestGateway
  let b: TestGateway
  let strict: TestGateway
  beforeAll(async () => {
    if (!can) return
    redis = await startPrivateRedis()
    const env = { GW_DB: join(suite.dir, 'shared.db'), GW_REDIS_URL: redis.url, GW_REDIS_PREFIX: 'gwtest:down:', GW_SERVICE_KEY: `gw_sk_${'d'.repeat(44)}` }
    a = await startTestGateway({ openai: suite.openai }, env)
    b = await startTestGateway({ openai: suite.openai }, env)
    strict = await startTestGateway({ openai: suite.openai }, { ...env, GW_REDIS_REQUIRED: 'true' })
  })
  afterAll(async () => {
    if (!can) return
    await Promise.all([a.stop(), b.stop(), strict.stop()])
    await redis.destroy()
  })

  /** Until the instance's log entries are written (their spend is then in the roll-ups every instance loads from). */
  async function written(via: TestGateway): Promise<void> {
    const health = async () => (await (await fetch(`${via.url}/health`)).json()) as { checks: { logWriter: { queued: number } } }
    while ((await health()).checks.logWriter.queued > 0) await Bun.sleep(20)
  }

  test.skipIf(!can)(
    'GW_REDIS_REQUIRED=false: each instance counts budgets on its own, from the roll-ups, as rate limits; with true, budgeted requests get 503; once Redis is back the spend is shared again',
    async () => {
      const org = await budgetOrg(a.url, suite.openai, { budgets: [{ scope: 'org', usd: 0.003, period: 'day' }] }, 'bud-down')
      const free = await budgetOrg(a.url, suite.openai, { requestsPerMinute: 100 }, 'bud-free')
      // Each answer costs $0.00125 and reserves about $0.0014: two fit under $0.003 on counters of their own, a third does not.
      suite.openai.setDefault({ kind: 'reply', usage: { prompt: 100, completion: 100 } })
      await redis.kill()

      // Required: refused before the provider, with the error's request id.
      const refused = await org.chat(ask(), {}, strict.url)
      expect(refused.status).toBe(503)
      expect(refused.res.headers.get('retry-after')).toBe('1')
      expect(refused.body).toMatchObject({ error: true, code: 'gateway_error', message: expect.stringContaining('Redis'), requestId: refused.res.headers.get('x-gw-request-id') })
      expect(suite.openai.requests).toHaveLength(0)

      // Not required: A spends on its own counters; B loads what the roll-ups hold once A's entry is written.
      expect((await org.chat(ask(), {}, a.url)).status).toBe(200)
      await written(a)
      expect((await org.chat(ask(), {}, b.url)).status).toBe(200)
      // A does not see B's spend meanwhile: its second request still fits on its own counters (the budget is overspent, as documented).
      expect((await org.chat(ask(), {}, a.url)).status).toBe(200)
      for (const via of [a, b]) {
        const over = await org.chat(ask(), {}, via.url)
        expect(over.status).toBe(429)
        expect(over.body).toMatchObject({ code: 'budget_exceeded' })
      }
      expect(suite.openai.requests).toHaveLength(3)
      // Rate limits fall back to each instance's own counters too; the health check says degraded.
      expect((await free.chat(ask(), {}, b.url)).status).toBe(200)
      expect(((await (await fetch(`${b.url}/health`)).json()) as { status: string }).status).toBe('degraded')

      await redis.start()
      await Promise.all([written(a), written(b)])
      // Shared again: the three answers' spend, from the roll-ups, refuses the next request on every instance.
      const deadline = performance.now() + 10_000
      for (const via of [a, b, strict]) {
        let status = 0
        while (performance.now() < deadline && (status = (await org.chat(ask(), {}, via.url)).status) === 503) await Bun.sleep(100)
        expect(status).toBe(429)
      }
      // The three budgeted answers and the rate-limited org's one; nothing since.
      expect(suite.openai.requests).toHaveLength(4)
    },
    30_000,
  )
})
