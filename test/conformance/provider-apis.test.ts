// The shared provider matrix, continued: for every provider and kind of ./specs.ts, the other APIs clients speak
// (Anthropic's Messages through its SDK, OpenAI's Responses through its SDK), embeddings, a route naming the model,
// a failure falling back to another provider, the answer's cost and a budget, as the client and the log entry see them.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import type { FakeUpstream } from '../fakes/upstream'
import type { TestGateway } from '../helpers/gateway'
import { greetingOf, HELLO, modelOf, type ProviderSpec, SPECS, startMatrix } from './specs'

let fakes: Record<string, FakeUpstream>
let gw: TestGateway
let stop: () => Promise<void>
let anthropic: Anthropic
let openai: OpenAI

beforeAll(async () => {
  ;({ gw, fakes, stop } = await startMatrix())
  anthropic = new Anthropic({ baseURL: gw.url, apiKey: gw.key, maxRetries: 0 })
  openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
})
afterAll(() => stop())

describe.each(SPECS.map((s) => [s.name, s] as const))('%s', (_name, spec: ProviderSpec) => {
  const model = modelOf(spec)
  const greeting = greetingOf(spec)
  const fake = () => fakes[spec.name] as FakeUpstream
  beforeEach(() => {
    for (const f of Object.values(fakes)) f.reset()
  })

  test('the Messages API (Anthropic SDK): an Anthropic-shaped answer with the upstream\'s token counts, and its stream', async () => {
    const msg = await anthropic.messages.create({ model, max_tokens: 100, messages: [{ role: 'user', content: 'Say hi please' }] })
    // Anthropic's own answers (Claude on Vertex AI too) are relayed as they came, its model name with them (PRODUCT §12).
    const named = spec.protocol === 'anthropic' ? (spec.upstreamModel ?? spec.id) : model
    expect(msg).toMatchObject({ type: 'message', role: 'assistant', model: named, stop_reason: 'end_turn', content: [{ type: 'text', text: greeting }] })
    expect(msg.usage).toMatchObject({ input_tokens: 6, output_tokens: 4 })
    expect(fake().requests).toHaveLength(1)
    const stream = anthropic.messages.stream({ model, max_tokens: 100, messages: [{ role: 'user', content: 'Say hi please' }] })
    let text = ''
    stream.on('text', (t) => {
      text += t
    })
    const final = await stream.finalMessage()
    expect(text).toBe(greeting)
    expect(final).toMatchObject({ stop_reason: 'end_turn', usage: { output_tokens: 4 } })
  })

  test('the Responses API (OpenAI SDK): output_text and usage, and its stream', async () => {
    const res = await openai.responses.create({ model, input: 'Say hi please' })
    expect(res.status).toBe('completed')
    expect(res.output_text).toContain(`fake-${spec.protocol}`)
    expect(res.usage?.input_tokens).toBeGreaterThan(0)
    const stream = openai.responses.stream({ model, input: 'Say hi please' })
    let text = ''
    for await (const e of stream) if (e.type === 'response.output_text.delta') text += e.delta
    const final = await stream.finalResponse()
    expect(text).toBe(final.output_text)
    expect(text).toContain(`fake-${spec.protocol}`)
  })

  test('embeddings (OpenAI SDK): one call upstream for all inputs, the vectors in order, usage; a provider without embeddings is a 400', async () => {
    const e = spec.embeddings
    if (!e) {
      const res = await gw.fetch('/v1/embeddings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: `${spec.prefix}/${spec.id}`, input: 'a' }) })
      expect(res.status).toBe(400)
      expect(fake().requests).toHaveLength(0)
      return
    }
    const res = await openai.embeddings.create({ model: `${spec.prefix}/${e.id}`, input: ['first text', 'second one'] })
    expect(res.data.map((d) => d.index)).toEqual([0, 1])
    for (const d of res.data) expect(d.embedding.length).toBeGreaterThan(0)
    expect(res.data[0]?.embedding).not.toEqual(res.data[1]?.embedding)
    expect(res.usage.prompt_tokens).toBeGreaterThan(0)
    expect(fake().requests.map((r) => r.path)).toEqual([e.path])
  })

  test('an upstream 500 falls back to another provider: the fallback reason, both attempts on the log entry', async () => {
    fake().enqueue({ kind: 'error', status: 500 })
    const res = await gw.chat({ model, messages: HELLO, fallback_chain: [{ model: 'openai/gpt-4o-mini' }] })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-gw-fallback-reason')).toBe('provider_error')
    expect(((await res.json()) as { model: string }).model).toBe('openai/gpt-4o-mini')
    const log = await gw.log(res.headers.get('x-gw-request-id') as string)
    expect(log.attempts).toMatchObject([
      { model, outcome: 'provider_error', status: 500 },
      { model: 'openai/gpt-4o-mini', outcome: 'ok' },
    ])
    expect(log).toMatchObject({ fallback: { used: true, reason: 'provider_error', model: 'openai/gpt-4o-mini' } })
  })

  test("a route (PRODUCT §13) naming the model reaches it; the log entry names the route and the target chosen", async () => {
    const route = `r-${spec.name}`
    expect((await gw.admin('PUT', `/orgs/default/routes/${route}`, { targets: [{ model }] })).status).toBe(200)
    const res = await gw.chat({ model: route, messages: HELLO })
    expect(res.status).toBe(200)
    expect(((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBe(greeting)
    expect(fake().requests).toHaveLength(1)
    expect(await gw.log(res.headers.get('x-gw-request-id') as string)).toMatchObject({ route, model, requestedModel: route })
  })

  test('under an org budget (PRODUCT §11): a priced model is admitted and its spend counted; an unpriced one is refused (403) before anything is sent', async () => {
    const { policy } = (await (await gw.admin('GET', '/orgs/default')).json()) as { policy: object }
    const spent = async () => ((await (await gw.admin('GET', '/orgs/default/budgets')).json()) as { data: { spentUsd: number }[] }).data[0]?.spentUsd ?? 0
    expect((await gw.admin('PUT', '/orgs/default/policy', { ...policy, budgets: [{ scope: 'org', usd: 1000, period: 'total' }] })).status).toBe(200)
    try {
      const before = await spent()
      const res = await gw.chat({ model, messages: HELLO })
      if (spec.priced) {
        expect(res.status).toBe(200)
        expect(await spent()).toBeCloseTo(before + Number(res.headers.get('x-gw-cost-usd')), 12)
      } else {
        expect(res.status).toBe(403)
        expect(((await res.json()) as { code: string }).code).toBe('policy_violation')
        expect(fake().requests).toHaveLength(0)
      }
    } finally {
      expect((await gw.admin('PUT', '/orgs/default/policy', policy)).status).toBe(200)
    }
  })

  test('the cost: x-gw-cost-usd, usage.cost_usd and the log entry agree (null, never 0, when the price is unknown)', async () => {
    const res = await gw.chat({ model, messages: HELLO })
    expect(res.status).toBe(200)
    const body = (await res.json()) as { usage: { cost_usd: number | null } }
    const log = await gw.log(res.headers.get('x-gw-request-id') as string)
    if (spec.priced) {
      expect(Number(res.headers.get('x-gw-cost-usd'))).toBeGreaterThan(0)
      expect(body.usage.cost_usd).toBe(Number(res.headers.get('x-gw-cost-usd')))
      expect(log.costUsd).toBe(body.usage.cost_usd)
    } else {
      expect(res.headers.get('x-gw-cost-usd')).toBeNull()
      expect(body.usage.cost_usd).toBeNull()
      expect(log.costUsd).toBeNull()
    }
  })
})
