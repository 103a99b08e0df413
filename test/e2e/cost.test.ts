// Cost for every token kind each provider bills (fresh and cached input, cache writes, reasoning,
// output), streamed or not, as the caller sees it (usage.cost_usd, x-gw-cost-usd) and as the log
// entry records it with the price table's version; unknown prices are null.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import builtin from '../../src/catalog/models.json'
import type { FakeProvider, UsageSpec } from '../fakes/types'
import { type FakeUpstream, startFake } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

const PROVIDERS: FakeProvider[] = ['openai', 'anthropic', 'google', 'mistral']
const fakes = {} as Record<FakeProvider, FakeUpstream>
let gw: TestGateway

beforeAll(async () => {
  for (const p of PROVIDERS) fakes[p] = await startFake(p)
  // A model of the user's own with a separate reasoning price and a long-context tier.
  const dir = mkdtempSync(join(tmpdir(), 'gw-cost-'))
  const catalogFile = join(dir, 'catalog.json')
  writeFileSync(
    catalogFile,
    JSON.stringify({
      priceVersion: 'acme-1',
      providers: {
        openai: {
          models: {
            'acme-r1': { price: { input: 1, output: 4, reasoning: 2, tiers: [{ aboveInputTokens: 5000, input: 3, output: 12, reasoning: 6 }] } },
          },
        },
      },
    }),
  )
  gw = await startTestGateway(fakes, { GW_CATALOG: catalogFile })
})
afterAll(async () => {
  await gw.stop()
  for (const p of PROVIDERS) await fakes[p].stop()
})
beforeEach(() => {
  for (const p of PROVIDERS) fakes[p].reset()
})

const hello = [{ role: 'user', content: 'Say hi please' }]

/** Sends one request; returns its log entry and the cost the caller was shown (header, body or usage chunk). */
async function logged(model: string, provider: FakeProvider, usage: UsageSpec, stream: boolean) {
  fakes[provider].enqueue({ kind: 'reply', usage })
  const res = await gw.chat({ model, messages: hello, stream })
  expect(res.status).toBe(200)
  const text = await res.text()
  const header = res.headers.get('x-gw-cost-usd')
  let shown: unknown
  if (stream) {
    expect(header).toBeNull() // unknown when the headers go out
    const events = text.split('\n\n').filter((b) => b.startsWith('data: {')).map((b) => JSON.parse(b.slice(6)))
    shown = events.findLast((e) => e.usage)?.usage.cost_usd
  } else {
    shown = JSON.parse(text).usage.cost_usd
    expect(header === null ? null : Number(header)).toBe(shown as number | null)
  }
  const log = (await gw.log(res.headers.get('x-gw-request-id') as string)) as Record<string, any>
  expect(shown).toBe(log.costUsd)
  return log
}

// Prices per 1M tokens from the built-in catalog (see src/catalog/models.json).
const cases: { name: string; model: string; provider: FakeProvider; usage: UsageSpec; tokens: Record<string, number>; usd: number }[] = [
  {
    name: 'OpenAI o3: cached input, reasoning billed as output',
    model: 'openai/o3', // 2 in, 0.5 cached, 8 out
    provider: 'openai',
    usage: { prompt: 1000, cached: 400, completion: 50, thinking: 200 },
    tokens: { promptTokens: 1000, cachedTokens: 400, cacheWriteTokens: 0, completionTokens: 250, reasoningTokens: 200 },
    usd: (600 * 2 + 400 * 0.5 + 250 * 8) / 1e6,
  },
  {
    name: 'Anthropic Haiku 4.5: cache reads, cache writes and thinking',
    model: 'anthropic/claude-haiku-4-5', // 1 in, 0.1 read, 1.25 write, 5 out
    provider: 'anthropic',
    usage: { prompt: 1000, cached: 300, cacheWrite: 200, completion: 40, thinking: 60 },
    tokens: { promptTokens: 1000, cachedTokens: 300, cacheWriteTokens: 200, completionTokens: 100, reasoningTokens: 60 },
    usd: (500 * 1 + 300 * 0.1 + 200 * 1.25 + 100 * 5) / 1e6,
  },
  {
    name: 'Gemini 2.5 Flash: cached content and thoughts',
    model: 'google/gemini-2.5-flash', // 0.3 in, 0.03 cached, 2.5 out
    provider: 'google',
    usage: { prompt: 1000, cached: 500, completion: 40, thinking: 60 },
    tokens: { promptTokens: 1000, cachedTokens: 500, cacheWriteTokens: 0, completionTokens: 100, reasoningTokens: 60 },
    usd: (500 * 0.3 + 500 * 0.03 + 100 * 2.5) / 1e6,
  },
  {
    name: 'Mistral Small: no cache price, cached tokens at the input price',
    model: 'mistral/mistral-small-2603', // 0.15 in, 0.6 out
    provider: 'mistral',
    usage: { prompt: 1000, cached: 100, completion: 100 },
    tokens: { promptTokens: 1000, cachedTokens: 100, completionTokens: 100 },
    usd: (1000 * 0.15 + 100 * 0.6) / 1e6,
  },
  {
    name: "a user's model: reasoning at its own price, the long-context tier past 5,000 prompt tokens",
    model: 'openai/acme-r1', // 1 in, 4 out, 2 reasoning; > 5,000 in: 3 / 12 / 6
    provider: 'openai',
    usage: { prompt: 6000, completion: 100, thinking: 300 },
    tokens: { promptTokens: 6000, completionTokens: 400, reasoningTokens: 300 },
    usd: (6000 * 3 + 100 * 12 + 300 * 6) / 1e6,
  },
]

describe.each([false, true])('stream: %p', (stream) => {
  test.each(cases)('$name', async ({ model, provider, usage, tokens, usd }) => {
    const log = await logged(model, provider, usage, stream)
    expect(log.usage).toMatchObject({ ...tokens, estimated: false })
    expect(log.costUsd).toBeCloseTo(usd, 12)
    expect(log.priceVersion).toBe(`${builtin.priceVersion}+acme-1`)
  })

  test('a model without a known price costs null, never 0', async () => {
    const log = await logged('openai/some-future-model', 'openai', { prompt: 10, completion: 5 }, stream)
    expect(log.usage).toMatchObject({ promptTokens: 10, completionTokens: 5 })
    expect(log.costUsd).toBeNull()
  })
})
