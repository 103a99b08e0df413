// GET /metrics end to end: a known mix of requests gives exact counters and histogram counts, labels
// stay bounded, and the GW_METRICS guard answers 200/401/404.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { costUsd, loadCatalog } from '../../src/catalog/catalog'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { ADMIN_TOKEN, readSse, startTestGateway, type TestGateway } from '../helpers/gateway'
import { readExposition } from '../helpers/prometheus'

const CHAT = '/v1/chat/completions'
const hello = [{ role: 'user', content: 'Say hi please' }]

async function scrape(gw: TestGateway) {
  const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
  return readExposition(await res.text())
}

describe('a known mix of requests', () => {
  let openai: FakeUpstream
  let mistral: FakeUpstream
  let gw: TestGateway

  beforeAll(async () => {
    openai = await startFake('openai')
    mistral = await startFake('mistral')
    openai.setDefault({ kind: 'reply', usage: { prompt: 10, completion: 5, cached: 4, thinking: 2 } })
    mistral.setDefault({ kind: 'reply', usage: { prompt: 8, completion: 3 } })
    gw = await startTestGateway({ openai, mistral })

    const ok = async (res: Response) => {
      expect(res.status).toBe(200)
      await res.text()
    }
    for (let i = 0; i < 3; i++) await ok(await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello }))
    for (let i = 0; i < 2; i++) {
      const res = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello, stream: true })
      expect((await readSse(res)).at(-1)).toBe('[DONE]')
    }
    // An upstream failure with a fallback that answers, and one without.
    openai.enqueue({ kind: 'error', status: 500, errorType: 'server' })
    await ok(await gw.chat({ model: 'openai/gpt-4o', messages: hello, fallback_chain: [{ model: 'mistral/mistral-small-latest' }] }))
    openai.enqueue({ kind: 'error', status: 500, errorType: 'server' })
    expect((await gw.chat({ model: 'openai/gpt-4o', messages: hello })).status).toBe(502)
    // A model the catalog does not know, and a caller without a valid key.
    await ok(await gw.chat({ model: 'openai/not-in-the-catalog', messages: hello }))
    expect((await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello }, { authorization: 'GwKey nope' })).status).toBe(401)
    // Another org: a policy refusal, then its rate limit of one request a minute.
    await gw.admin('POST', '/orgs', { id: 'limited', name: 'limited' })
    await gw.admin('PUT', '/orgs/limited/providers/openai', { apiKey: openai.apiKey, baseUrl: openai.url })
    await gw.admin('PUT', '/orgs/limited/policy', { blockedTerms: ['forbidden'], requestsPerMinute: 1 })
    const { key } = (await (await gw.admin('POST', '/orgs/limited/service-keys', {})).json()) as { key: string }
    const asLimited = { authorization: `GwKey ${key}` }
    expect((await gw.chat({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'a forbidden word' }] }, asLimited)).status).toBe(403)
    await ok(await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello }, asLimited))
    expect((await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello }, asLimited)).status).toBe(429)
    // The other API routes count too (with the route as endpoint); /health and /metrics do not.
    expect((await gw.fetch('/v1/models')).status).toBe(200)
    const logged = (await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello })).headers.get('x-gw-request-id')
    expect((await gw.fetch(`/v1/logs/${logged}`)).status).toBe(200)
    expect((await gw.fetch('/v1/logs/no-such-entry')).status).toBe(404)
    await (await fetch(`${gw.url}/health`)).text()
  })
  afterAll(async () => {
    await gw.stop()
    await openai.stop()
    await mistral.stop()
  })

  test('gw_requests_total: one per API request, by endpoint, provider, model, status and code', async () => {
    const m = await scrape(gw)
    const series = (provider: string, model: string, status: string, code = '') => m.value('gw_requests_total', { endpoint: CHAT, provider, model, status, code })
    expect(series('openai', 'openai/gpt-4o-mini', '200')).toBe(7)
    expect(series('mistral', 'mistral/mistral-small-latest', '200')).toBe(1)
    expect(series('openai', 'openai/gpt-4o', '502', 'provider_error')).toBe(1)
    expect(series('openai', 'other', '200')).toBe(1)
    expect(series('', '', '401', 'unauthorized')).toBe(1)
    expect(series('openai', 'openai/gpt-4o-mini', '403', 'policy_violation')).toBe(1)
    expect(series('openai', 'openai/gpt-4o-mini', '429', 'rate_limit_exceeded')).toBe(1)
    expect(m.value('gw_requests_total', { endpoint: '/v1/models', provider: '', model: '', status: '200', code: '' })).toBe(1)
    expect(m.value('gw_requests_total', { endpoint: '/v1/logs/:requestId', status: '200', code: '' })).toBe(1)
    expect(m.value('gw_requests_total', { endpoint: '/v1/logs/:requestId', status: '404', code: 'gateway_error' })).toBe(1)
    const total = m.families.get('gw_requests_total')?.metrics.reduce((n, s) => n + Number(s.value), 0)
    expect(total).toBe(16)
    expect(m.series('gw_requests_total')).toBe(10)
  })

  test('histograms: duration for every request, TTFT for streams only, cumulative buckets', async () => {
    const m = await scrape(gw)
    const d = m.histogram('gw_request_duration_seconds', { endpoint: CHAT, provider: 'openai', model: 'openai/gpt-4o-mini' })
    expect(d?.count).toBe(9)
    expect(d?.buckets.get('+Inf')).toBe(9)
    expect(d?.buckets.get('600')).toBe(9)
    const les = [...(d?.buckets.values() ?? [])]
    expect(les.every((v, i) => i === 0 || v >= (les[i - 1] as number))).toBe(true)
    expect(d?.sum).toBeGreaterThan(0)
    const counts = m.families.get('gw_request_duration_seconds')?.metrics.reduce((n, s) => n + Number(s.value), 0)
    expect(counts).toBe(16)
    const ttft = m.histogram('gw_time_to_first_token_seconds', { endpoint: CHAT, provider: 'openai', model: 'openai/gpt-4o-mini' })
    expect(ttft?.count).toBe(2)
    expect(m.series('gw_time_to_first_token_seconds')).toBe(1)
  })

  test('attempts, fallbacks and the rate limiter', async () => {
    const m = await scrape(gw)
    const attempts = (provider: string, model: string, outcome: string) => m.value('gw_upstream_attempts_total', { provider, model, outcome })
    expect(attempts('openai', 'openai/gpt-4o-mini', 'ok')).toBe(7)
    expect(attempts('openai', 'openai/gpt-4o', 'provider_error')).toBe(2)
    expect(attempts('mistral', 'mistral/mistral-small-latest', 'ok')).toBe(1)
    expect(attempts('openai', 'other', 'ok')).toBe(1)
    expect(m.series('gw_upstream_attempts_total')).toBe(4)
    expect(m.value('gw_fallbacks_total', { reason: 'provider_error' })).toBe(1)
    expect(m.series('gw_fallbacks_total')).toBe(1)
    expect(m.value('gw_rate_limited_total', { scope: 'org' })).toBe(1)
  })

  test('tokens by disjoint kind, and cost at catalog prices', async () => {
    const m = await scrape(gw)
    const tokens = (model: string, kind: string) => m.value('gw_tokens_total', { model, kind })
    // 7 answers of gpt-4o-mini, each 10 prompt (4 cached) and 5 + 2 reasoning completion tokens.
    expect(tokens('openai/gpt-4o-mini', 'input')).toBe(7 * 6)
    expect(tokens('openai/gpt-4o-mini', 'cached_input')).toBe(7 * 4)
    expect(tokens('openai/gpt-4o-mini', 'output')).toBe(7 * 5)
    expect(tokens('openai/gpt-4o-mini', 'reasoning')).toBe(7 * 2)
    expect(tokens('mistral/mistral-small-latest', 'input')).toBe(8)
    expect(tokens('mistral/mistral-small-latest', 'output')).toBe(3)
    const catalog = loadCatalog()
    const mini = costUsd(catalog.resolve('openai', 'gpt-4o-mini'), { promptTokens: 10, completionTokens: 7, cachedTokens: 4, reasoningTokens: 2 }) as number
    expect(m.value('gw_cost_usd_total', { provider: 'openai', model: 'openai/gpt-4o-mini' })).toBeCloseTo(7 * mini, 12)
  })

  test('log writer, breaker and process metrics are exposed', async () => {
    await gw.gw.deps.logs.flush()
    const m = await scrape(gw)
    // Twelve authenticated chat requests were logged; the 401 and the other routes were not.
    expect(m.value('gw_log_entries_written_total')).toBe(12)
    expect(m.value('gw_log_queue_depth')).toBe(0)
    // Every request of the mix (refusals, failures, streams, other routes) has finished.
    expect(m.value('gw_requests_in_flight')).toBe(0)
    expect(m.value('gw_log_entries_spooled_total')).toBe(0)
    expect(m.value('gw_log_entries_dropped_total')).toBe(0)
    expect(m.families.get('gw_circuit_open')?.type).toBe('GAUGE')
    expect(m.value('process_cpu_seconds_total')).toBeGreaterThan(0)
    expect(m.value('process_resident_memory_bytes')).toBeGreaterThan(10_000_000)
    expect(m.value('process_open_fds')).toBeGreaterThan(3)
    expect(Math.abs(m.value('process_start_time_seconds') - Date.now() / 1000)).toBeLessThan(3600)
    expect(m.value('gw_event_loop_lag_seconds')).toBeGreaterThanOrEqual(0)
  })
})

test('an open circuit breaker shows as gw_circuit_open', async () => {
  const openai = await startFake('openai')
  const gw = await startTestGateway({ openai }, {}, { health: { failureThreshold: 2 } })
  try {
    openai.setDefault({ kind: 'error', status: 500, errorType: 'server' })
    for (let i = 0; i < 3; i++) await (await gw.chat({ model: 'openai/gpt-4o', messages: hello })).text()
    const m = await scrape(gw)
    expect(m.value('gw_circuit_open', { provider: 'openai', model: 'openai/gpt-4o' })).toBe(1)
    expect(m.value('gw_upstream_attempts_total', { model: 'openai/gpt-4o', outcome: 'provider_error' })).toBe(3)
  } finally {
    await gw.stop()
    await openai.stop()
  }
})

test('10,000 distinct unknown model names make one model="other" series, not 10,000', async () => {
  const openai = await startFake('openai')
  const gw = await startTestGateway({ openai })
  try {
    let next = 0
    const worker = async () => {
      while (next < 10_000) {
        const i = next++
        const res = await gw.chat({ model: `openai/made-up-${i}`, messages: hello })
        expect(res.status).toBe(200)
        await res.arrayBuffer()
      }
    }
    await Promise.all(Array.from({ length: 32 }, worker))
    const m = await scrape(gw)
    expect(m.value('gw_requests_total', { model: 'other', status: '200' })).toBe(10_000)
    expect(m.series('gw_requests_total')).toBe(1)
    expect(m.series('gw_request_duration_seconds')).toBe(1)
    expect(m.series('gw_upstream_attempts_total')).toBe(1)
    expect(m.series('gw_tokens_total')).toBeLessThanOrEqual(5)
  } finally {
    await gw.stop()
    await openai.stop()
  }
}, 120_000)

describe('GW_METRICS guard', () => {
  const get = (gw: TestGateway, auth?: string) => fetch(`${gw.url}/metrics`, auth ? { headers: { authorization: auth } } : {})
  const withGateway = async (env: Record<string, string>, check: (gw: TestGateway) => Promise<void>) => {
    const gw = await startTestGateway({}, env)
    try {
      await check(gw)
    } finally {
      await gw.stop()
    }
  }

  test('default (admin): 401 without or with a wrong token, 200 with the admin token', () =>
    withGateway({}, async (gw) => {
      const anon = await get(gw)
      expect(anon.status).toBe(401)
      expect(await anon.json()).toMatchObject({ error: true, code: 'unauthorized' })
      expect((await get(gw, 'Bearer wrong-token-0123456789')).status).toBe(401)
      expect((await get(gw, `GwKey ${gw.key}`)).status).toBe(401)
      expect((await get(gw, `Bearer ${ADMIN_TOKEN}`)).status).toBe(200)
    }))

  test('default (admin) without GW_ADMIN_TOKEN: 404, like the admin API', () =>
    withGateway({ GW_ADMIN_TOKEN: '' }, async (gw) => {
      expect((await get(gw)).status).toBe(404)
      expect((await get(gw, `Bearer ${ADMIN_TOKEN}`)).status).toBe(404)
    }))

  test('public: 200 for anyone', () =>
    withGateway({ GW_METRICS: 'public' }, async (gw) => {
      const res = await get(gw)
      expect(res.status).toBe(200)
      expect(await res.text()).toContain('# TYPE gw_requests_total counter')
    }))

  test('off: 404, even with the admin token', () =>
    withGateway({ GW_METRICS: 'off' }, async (gw) => {
      const res = await get(gw, `Bearer ${ADMIN_TOKEN}`)
      expect(res.status).toBe(404)
      expect(await res.json()).toMatchObject({ error: true, code: 'gateway_error' })
    }))

  test('GW_METRICS_ORG_LABEL=true adds org to the request, token and cost counters only', async () => {
    const openai = await startFake('openai')
    try {
      await withGateway({ GW_METRICS: 'public', GW_METRICS_ORG_LABEL: 'true', OPENAI_API_KEY: openai.apiKey, GW_OPENAI_BASE_URL: openai.url }, async (gw) => {
        await (await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello })).text()
        const m = readExposition(await (await get(gw)).text())
        expect(m.value('gw_requests_total', { org: 'default', status: '200' })).toBe(1)
        expect(m.value('gw_tokens_total', { org: 'default', kind: 'output' })).toBeGreaterThan(0)
        expect(m.families.get('gw_request_duration_seconds')?.metrics[0]?.labels?.org).toBeUndefined()
        expect(m.families.get('gw_upstream_attempts_total')?.metrics[0]?.labels?.org).toBeUndefined()
      })
    } finally {
      await openai.stop()
    }
  })

  test('an invalid GW_METRICS is a start-up error', async () => {
    await expect(startTestGateway({}, { GW_METRICS: 'sometimes' })).rejects.toThrow(/GW_METRICS must be one of admin, public, off/)
  })
})

test('the Grafana dashboard (deploy/grafana) queries only metrics gw exposes', async () => {
  const dashboard = (await Bun.file(new URL('../../deploy/grafana/gw-dashboard.json', import.meta.url)).json()) as {
    panels: { targets?: { expr: string }[] }[]
  }
  const exprs = dashboard.panels.flatMap((p) => p.targets ?? []).map((t) => t.expr)
  expect(exprs.length).toBeGreaterThan(20)
  const used = new Set(exprs.flatMap((e) => [...e.matchAll(/\b((?:gw|process)_[a-z_]+)/g)].map((m) => (m[1] as string).replace(/_(bucket|sum|count)$/, ''))))
  const gw = await startTestGateway({}, { GW_METRICS: 'public' })
  try {
    const m = readExposition(await (await fetch(`${gw.url}/metrics`)).text())
    for (const name of used) expect([name, m.families.has(name)]).toEqual([name, true])
  } finally {
    await gw.stop()
  }
})

test('gw_event_loop_lag_seconds shows a blocked event loop', async () => {
  const gw = await startTestGateway({}, { GW_METRICS: 'public' })
  try {
    await Bun.sleep(150)
    const until = performance.now() + 300
    while (performance.now() < until) {} // the gateway runs in this process: block its loop for 300 ms
    await Bun.sleep(150)
    const m = readExposition(await (await fetch(`${gw.url}/metrics`)).text())
    expect(m.value('gw_event_loop_lag_seconds')).toBeGreaterThanOrEqual(0.2)
  } finally {
    await gw.stop()
  }
})

test('gw_requests_in_flight counts a stream until its end, and one whose client left', async () => {
  const openai = await startFake('openai')
  const gw = await startTestGateway({ openai }, { GW_METRICS: 'public' })
  const inFlight = async () => readExposition(await (await fetch(`${gw.url}/metrics`)).text()).value('gw_requests_in_flight')
  try {
    openai.enqueue({ kind: 'reply', text: 'a b c d e', chunks: 5, chunkDelayMs: 100 })
    openai.enqueue({ kind: 'reply', text: 'a b c d e', chunks: 5, chunkDelayMs: 100 })
    const finished = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello, stream: true })
    const ac = new AbortController()
    const abandoned = await gw.fetch('/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: hello, stream: true }),
      signal: ac.signal,
    })
    await (abandoned.body as ReadableStream<Uint8Array>).getReader().read()
    expect(await inFlight()).toBe(2)
    ac.abort()
    await finished.text()
    for (let i = 0; i < 100 && (await inFlight()) !== 0; i++) await Bun.sleep(20)
    expect(await inFlight()).toBe(0)
  } finally {
    await gw.stop()
    await openai.stop()
  }
})

test("an Azure OpenAI record's models are labelled other (org-chosen names stay out of the labels), priced from the catalog", async () => {
  const azure = await startFake('azure')
  const gw = await startTestGateway({})
  try {
    expect((await gw.admin('PUT', '/orgs/default/providers/my-azure', { kind: 'azure', baseUrl: azure.url, apiKey: azure.apiKey })).status).toBe(200)
    const res = await gw.chat({ model: 'my-azure/gpt-4o', messages: hello })
    expect(res.status).toBe(200)
    expect(Number(res.headers.get('x-gw-cost-usd'))).toBeGreaterThan(0)
    const m = await scrape(gw)
    expect(m.value('gw_requests_total', { endpoint: CHAT, provider: '', model: 'other', status: '200', code: '' })).toBe(1)
    // Its tokens and its cost count too, under the same labels.
    expect(m.value('gw_tokens_total', { provider: '', model: 'other', kind: 'output' })).toBeGreaterThan(0)
    expect(m.value('gw_cost_usd_total', { provider: '', model: 'other' })).toBeCloseTo(Number(res.headers.get('x-gw-cost-usd')), 12)
    const text = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text()
    expect(text).not.toContain('my-azure')
  } finally {
    await gw.stop()
    await azure.stop()
  }
})
