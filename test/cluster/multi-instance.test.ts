// Three gw processes on one PostgreSQL database and one Redis are one gateway (PRODUCT §10): shared records, logs, exact limits and budgets, revocation everywhere within 1 s.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { estimatePromptTokens } from '../../src/tokens'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { ADMIN_TOKEN } from '../helpers/gateway'
import { type GwProcess, spawnGw } from '../helpers/process'
import { freshSchema, serversFor, TEST_REDIS_URL, TEST_SECRET } from '../helpers/servers'

const up = await serversFor('multi-instance tests (three gw on one PostgreSQL and one Redis)', { postgres: true, redis: true })
const KEY = `gw_sk_${'m'.repeat(44)}`
const hello = [{ role: 'user' as const, content: 'Say hi please' }]

describe.skipIf(!up)('three instances', () => {
  let schema: Awaited<ReturnType<typeof freshSchema>>
  let openai: FakeUpstream
  let gws: GwProcess[] = []
  let env: Record<string, string> = {}

  const call = (gw: GwProcess, path: string, init: RequestInit & { key?: string } = {}) =>
    fetch(`${gw.url}${path}`, {
      ...init,
      headers: { 'content-type': 'application/json', authorization: `GwKey ${init.key ?? KEY}`, ...(init.headers as Record<string, string>) },
    })
  const chat = (gw: GwProcess, key = KEY, body: Record<string, unknown> = {}) =>
    call(gw, '/v1/chat/completions', { method: 'POST', key, body: JSON.stringify({ model: 'openai/gpt-4o', messages: hello, ...body }) })
  const admin = (gw: GwProcess, method: string, path: string, body?: unknown) =>
    fetch(`${gw.url}/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
  /** A fresh org with the fake as its OpenAI and a key of its own. */
  const newOrg = async (id: string, policy: Record<string, unknown> = {}) => {
    const [a] = gws as [GwProcess]
    expect((await admin(a, 'POST', '/orgs', { id, name: id })).status).toBe(201)
    expect((await admin(a, 'PUT', `/orgs/${id}/providers/openai`, { apiKey: openai.apiKey, baseUrl: openai.url })).status).toBe(200)
    if (Object.keys(policy).length) expect((await admin(a, 'PUT', `/orgs/${id}/policy`, policy)).status).toBe(200)
    const res = await admin(a, 'POST', `/orgs/${id}/service-keys`, { name: 'k' })
    expect(res.status).toBe(201)
    return (await res.json()) as { id: string; key: string }
  }

  beforeAll(async () => {
    schema = await freshSchema()
    openai = await startFake('openai')
    env = {
      GW_DATABASE_URL: schema.url,
      GW_REDIS_URL: TEST_REDIS_URL,
      GW_REDIS_PREFIX: `gwtest:${schema.schema}:`,
      GW_SECRET: TEST_SECRET,
      GW_SERVICE_KEY: KEY,
      GW_ADMIN_TOKEN: ADMIN_TOKEN,
      GW_PROMPTS_DIR: '/nonexistent-gw-test-prompts',
      GW_OPENAI_BASE_URL: openai.url,
      OPENAI_API_KEY: openai.apiKey,
    }
    // Started together on an empty database: migrations and first-start set-up race, and all must come up.
    gws = await Promise.all([spawnGw(env), spawnGw(env), spawnGw(env)])
  }, 30_000)
  afterAll(async () => {
    for (const gw of gws) gw.proc.kill('SIGTERM')
    await Promise.all(gws.map((gw) => gw.proc.exited))
    await openai.stop()
    await schema.drop()
  })

  test('three instances started together on an empty database all come up, ready and sharing Redis', async () => {
    for (const gw of gws) {
      const ready = await fetch(`${gw.url}/health/ready`)
      expect(ready.status).toBe(200)
      const health = (await (await fetch(`${gw.url}/health`)).json()) as Record<string, any>
      expect(health).toMatchObject({ ok: true, status: 'ok', checks: { store: { status: 'ok' }, redis: { status: 'ok' } } })
      expect((await chat(gw)).status).toBe(200)
    }
  })

  test('an org, key, policy and prompt made through one instance work on the others', async () => {
    const [a, b, c] = gws as [GwProcess, GwProcess, GwProcess]
    const k = await newOrg('shared-org', { allowedModels: ['openai/gpt-4o'] })
    for (const gw of [b, c]) expect((await chat(gw, k.key)).status).toBe(200)
    // The policy set on A is used by the next request on B and C.
    expect((await chat(b, k.key, { model: 'openai/gpt-4o-mini' })).status).toBe(403)
    expect((await admin(a, 'POST', '/orgs/shared-org/prompts', { slug: 'greet' })).status).toBe(201)
    const v = await admin(a, 'POST', '/orgs/shared-org/prompts/greet/versions', {
      model: 'openai/gpt-4o',
      userTemplate: 'Hello {{name}}',
      variables: [{ name: 'name', type: 'string', required: true }],
      publish: true,
    })
    expect(v.status).toBe(201)
    const run = await call(c, '/v1/prompts/greet/run', { method: 'POST', key: k.key, body: JSON.stringify({ variables: { name: 'Ada' } }) })
    expect(run.status).toBe(200)
    expect(JSON.stringify(openai.requests.at(-1)?.body)).toContain('Hello Ada')
  })

  test('a key revoked on one instance is refused by the others within 1 s', async () => {
    const [a, b, c] = gws as [GwProcess, GwProcess, GwProcess]
    const k = await newOrg('revoke-org')
    // B and C have just verified the key: it sits in their caches.
    for (const gw of [b, c]) expect((await chat(gw, k.key)).status).toBe(200)
    expect((await admin(a, 'DELETE', `/orgs/revoke-org/service-keys/${k.id}`)).status).toBe(204)
    const revokedAt = performance.now()
    const refusedAfter = await Promise.all(
      [b, c].map(async (gw) => {
        while (performance.now() - revokedAt < 1000) {
          if ((await chat(gw, k.key)).status === 401) return performance.now() - revokedAt
          await Bun.sleep(20)
        }
        return Infinity
      }),
    )
    expect(refusedAfter.every((ms) => ms < 1000)).toBe(true)
  })

  test('requestsPerMinute 10 with 60 concurrent requests over three instances: exactly 10 answered, exactly 10 reached the upstream', async () => {
    const k = await newOrg('rpm-org', { requestsPerMinute: 10 })
    const before = openai.requests.length
    const statuses = await Promise.all(Array.from({ length: 60 }, (_, i) => chat(gws[i % 3] as GwProcess, k.key).then((r) => r.status)))
    expect(statuses.filter((s) => s === 200)).toHaveLength(10)
    expect(statuses.filter((s) => s === 429)).toHaveLength(50)
    expect(openai.requests.length - before).toBe(10)
  })

  test('tokensPerMinute across three instances: exactly as many requests as the limit holds', async () => {
    const cost = estimatePromptTokens(hello)
    const k = await newOrg('tpm-org', { tokensPerMinute: cost * 7 })
    const before = openai.requests.length
    // Each answer uses more than its estimate, so an answer that ends meanwhile never takes the window below the limit again.
    openai.setDefault({ kind: 'reply', usage: { prompt: cost, completion: 5 } })
    try {
      const statuses = await Promise.all(Array.from({ length: 45 }, (_, i) => chat(gws[i % 3] as GwProcess, k.key).then((r) => r.status)))
      expect(statuses.filter((s) => s === 200)).toHaveLength(7)
      expect(statuses.filter((s) => s === 429)).toHaveLength(38)
      expect(openai.requests.length - before).toBe(7)
    } finally {
      openai.setDefault({ kind: 'reply' })
    }
  })

  for (const stream of [false, true])
    test(`tokensPerMinute, one client alternating between instances and reading each whole ${stream ? 'streamed' : 'JSON'} answer before the next request: exactly as many answers as the limit holds (PRODUCT §10)`, async () => {
      // Admission charges the prompt estimate; each answer reports 100 + 100 tokens, which replace it
      // when the request ends. A token limit admits while the window is below it: a limit of 3 answers'
      // tokens holds exactly 3 requests; a 4th is admitted only on an instance that has not yet counted
      // the 3rd answer's tokens (it would see 400 and an estimate).
      const used = 200
      const holds = 3
      const k = await newOrg(`tpm-seq-${stream ? 'stream' : 'json'}`, { tokensPerMinute: holds * used })
      openai.setDefault({ kind: 'reply', usage: { prompt: 100, completion: 100 } })
      try {
        const seen: { status: number; code?: string; total?: number }[] = []
        for (let i = 0; i < holds + 3; i++) {
          const res = await chat(gws[i % 3] as GwProcess, k.key, stream ? { stream: true, stream_options: { include_usage: true } } : {})
          const text = await res.text()
          if (res.status !== 200) seen.push({ status: res.status, code: (JSON.parse(text) as { code: string }).code })
          else if (!stream) seen.push({ status: 200, total: (JSON.parse(text) as { usage: { total_tokens: number } }).usage.total_tokens })
          else {
            expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true)
            const events = text.split('\n').filter((l) => l.startsWith('data: {'))
            seen.push({ status: 200, total: (JSON.parse((events.at(-1) as string).slice(6)) as { usage: { total_tokens: number } }).usage.total_tokens })
          }
        }
        expect(seen).toEqual([
          ...Array.from({ length: holds }, () => ({ status: 200, total: used })),
          ...Array.from({ length: 3 }, () => ({ status: 429, code: 'rate_limit_exceeded' })),
        ])
      } finally {
        openai.setDefault({ kind: 'reply' })
      }
    })

  test('a budget under 40 concurrent requests spread over three instances is never overspent (PRODUCT §11)', async () => {
    // gpt-4o: each answer costs 100 × $2.50 + 100 × $10 per 1M = $0.00125; a reservation (body bytes + max_tokens 100) about $0.0014.
    const budget = 0.006
    const k = await newOrg('budget-org', { budgets: [{ scope: 'org', usd: budget, period: 'day' }] })
    openai.setDefault({ kind: 'reply', usage: { prompt: 100, completion: 100 }, delayMs: 50 })
    try {
      const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => chat(gws[i % 3] as GwProcess, k.key, { max_tokens: 100 })))
      const statuses = answers.map((r) => r.status)
      const ok = statuses.filter((s) => s === 200).length
      expect(ok).toBeGreaterThanOrEqual(3)
      expect(ok).toBeLessThanOrEqual(Math.floor(budget / 0.00125))
      const refused = answers.find((r) => r.status === 429) as Response
      expect(((await refused.json()) as { code: string }).code).toBe('budget_exceeded')
      // Every instance's entries, read through one: the sum of their costs stays under the budget.
      const [a] = gws as [GwProcess]
      let spent = 0
      for (const deadline = Date.now() + 5000; Date.now() < deadline; await Bun.sleep(50)) {
        const page = (await (await call(a, '/v1/logs?limit=500&status=200', { key: k.key })).json()) as { data: { costUsd: number }[] }
        spent = page.data.reduce((n, e) => n + e.costUsd, 0)
        if (page.data.length === ok) break
      }
      expect(spent).toBeCloseTo(ok * 0.00125, 9)
      expect(spent).toBeLessThanOrEqual(budget)
    } finally {
      openai.setDefault({ kind: 'reply' })
    }
  })

  test('a key cooling down after a 429 or benched after a 401 on one instance sits out on the others too (PRODUCT §4a)', async () => {
    const [a, b, c] = gws as [GwProcess, GwProcess, GwProcess]
    const k = await newOrg('health-org')
    // Run alone right after start, a notice can be sent before the others' Redis subscriptions are
    // made (they are set up after the instance reports ready): give them a moment.
    await Bun.sleep(500)
    for (const [model, failure] of [
      ['openai/gpt-4.1', { kind: 'error', status: 429, errorType: 'rate_limit', retryAfter: '30' }],
      ['openai/gpt-4o-mini', { kind: 'error', status: 401, errorType: 'auth' }],
    ] as const) {
      openai.enqueue(failure)
      expect((await chat(a, k.key, { model })).status).toBe(502)
      const before = openai.requests.length
      // Within 1 s the other instances answer at once, without calling the upstream.
      const sitOut = await Promise.all(
        [b, c].map(async (gw) => {
          for (const started = performance.now(); performance.now() - started < 1000; await Bun.sleep(20)) {
            const res = await chat(gw, k.key, { model })
            if (res.status !== 200) return ((await res.json()) as { message: string }).message
          }
          return 'answered'
        }),
      )
      for (const message of sitOut) expect(message).toMatch(/sits out after an upstream 401|cooling down after an upstream 429/)
      // At most the requests sent before the notice arrived reached the upstream; the last ones did not.
      expect(openai.requests.length - before).toBeLessThan(10)
    }
    // An instance started afterwards holds both at once, from what Redis kept: nothing reaches the upstream.
    const late = await spawnGw(env)
    try {
      const before = openai.requests.length
      for (const model of ['openai/gpt-4.1', 'openai/gpt-4o-mini']) {
        const res = await chat(late, k.key, { model })
        expect(res.status).toBe(502)
        expect(((await res.json()) as { message: string }).message).toMatch(/sits out after an upstream 401|cooling down after an upstream 429/)
      }
      expect(openai.requests.length).toBe(before)
    } finally {
      late.proc.kill('SIGTERM')
      await late.proc.exited
    }
  })

  test('a log entry written by one instance is readable through another at once', async () => {
    const [a, b, c] = gws as [GwProcess, GwProcess, GwProcess]
    const res = await chat(a, KEY, { metadata: { run: 'cross' } })
    expect(res.status).toBe(200)
    const id = res.headers.get('x-gw-request-id') as string
    await res.text()
    for (const gw of [b, c]) {
      const log = await call(gw, `/v1/logs/${id}`)
      expect(log.status).toBe(200)
      expect((await log.json()) as object).toMatchObject({ requestId: id, status: 200, metadata: { run: 'cross' } })
    }
  })
})
