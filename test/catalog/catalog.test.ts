// The model catalog: resolution order, reasoning families, unknown models, cost, GW_CATALOG merging.

import { describe, expect, test } from 'bun:test'
import { CATALOG_SECTIONS, costUsd, loadCatalog } from '../../src/catalog/catalog'
import builtin from '../../src/catalog/models.json'

const catalog = loadCatalog()

describe('OpenAI reasoning families', () => {
  test.each(['o1', 'o3', 'o3-mini', 'o4-mini', 'gpt-5', 'gpt-5-mini', 'gpt-5.4-mini', 'gpt-6.1-sol', 'gpt-6-astra', 'o3-2025-04-16'])(
    '%s is a reasoning model without sampling parameters',
    (id) => {
      const m = catalog.resolve('openai', id)
      expect(m.info.reasoning).toBe(true)
      expect(m.info.unsupportedParams).toContain('temperature')
      expect(m.info.unsupportedParams).toContain('top_p')
    },
  )
  test.each(['gpt-5-chat-latest', 'gpt-5.3-chat-latest', 'gpt-4.1', 'gpt-4o', 'gpt-4o-mini'])('%s is not', (id) => {
    const m = catalog.resolve('openai', id)
    expect(m.info.reasoning).toBe(false)
    expect(m.info.unsupportedParams).toEqual([])
  })
  test('gpt-5.1+ and gpt-6 (not astra) take sampling back with reasoning_effort none', () => {
    expect(catalog.resolve('openai', 'gpt-5.4').info.samplingWithReasoningNone).toBe(true)
    expect(catalog.resolve('openai', 'gpt-6-sol').info.samplingWithReasoningNone).toBe(true)
    expect(catalog.resolve('openai', 'gpt-6-astra').info.samplingWithReasoningNone).toBe(false)
    expect(catalog.resolve('openai', 'gpt-5').info.samplingWithReasoningNone).toBe(false)
  })
})

describe('resolution', () => {
  test('defaults < families < the model entry', () => {
    const o3 = catalog.resolve('openai', 'o3')
    expect(o3).toMatchObject({ known: true, info: { contextWindow: 200000, maxOutput: 100000, reasoning: true } })
    const dated = catalog.resolve('openai', 'gpt-4o-2024-08-06')
    expect(dated.known).toBe(true)
    expect(dated.info.price).toEqual(catalog.resolve('openai', 'gpt-4o').info.price)
  })
  test('an unknown model is routable with its provider defaults and an unknown price', () => {
    const m = catalog.resolve('anthropic', 'claude-next-9')
    expect(m.known).toBe(false)
    expect(m.info).toMatchObject({ defaultMaxTokens: 8192, temperatureMax: 1, price: null })
    expect(costUsd(m, { promptTokens: 100, completionTokens: 100 })).toBeNull()
  })
  test('Claude families: 4.5 sampling exclusive; newest models take no sampling and no forced tools', () => {
    expect(catalog.resolve('anthropic', 'claude-sonnet-4-5-20250929').info).toMatchObject({ samplingExclusive: true, unsupportedParams: [] })
    expect(catalog.resolve('anthropic', 'claude-opus-5-5').info).toMatchObject({ forcedToolChoice: false, unsupportedParams: ['temperature', 'top_p', 'top_k'] })
    expect(catalog.resolve('anthropic', 'claude-fable-5-2').info.forcedToolChoice).toBe(false)
    expect(catalog.resolve('anthropic', 'claude-opus-4-6').info.unsupportedParams).toEqual([])
  })
  test('every listed model has limits and a price', () => {
    for (const p of CATALOG_SECTIONS) {
      const models = catalog.list(p)
      expect(models.length).toBeGreaterThan(1)
      for (const m of models) {
        expect(m.info.contextWindow).toBeGreaterThan(0)
        expect(m.info.maxOutput).toBeGreaterThan(0)
        expect(m.info.maxOutput).toBeLessThanOrEqual(m.info.contextWindow)
        expect(m.info.price?.input).toBeGreaterThan(0)
        // Embeddings models produce no output tokens.
        if (m.info.kind === 'chat') expect(m.info.price?.output).toBeGreaterThan(0)
        else expect(m.info.price?.output).toBe(0)
      }
    }
    expect(builtin.checked).toMatch(/^\d{4}-\d{2}-\d{2}$/)
  })
})

test('cost: cached tokens at their own price, cache writes at theirs', () => {
  const gpt4o = catalog.resolve('openai', 'gpt-4o') // 2.5 in, 1.25 cached, 10 out
  expect(costUsd(gpt4o, { promptTokens: 1_000_000, cachedTokens: 400_000, completionTokens: 500_000 })).toBeCloseTo(0.6 * 2.5 + 0.4 * 1.25 + 0.5 * 10, 9)
  const haiku = catalog.resolve('anthropic', 'claude-haiku-4-5') // 1 in, 0.1 read, 1.25 write, 5 out
  expect(costUsd(haiku, { promptTokens: 1000, cachedTokens: 500, cacheWriteTokens: 300, completionTokens: 100 })).toBeCloseTo(
    (200 * 1 + 500 * 0.1 + 300 * 1.25 + 100 * 5) / 1e6,
    12,
  )
})

test('cost: reasoning tokens at the output price unless the model has its own reasoning price', () => {
  const o3 = catalog.resolve('openai', 'o3') // 2 in, 8 out
  expect(costUsd(o3, { promptTokens: 1000, completionTokens: 900, reasoningTokens: 600 })).toBeCloseTo((1000 * 2 + 900 * 8) / 1e6, 12)
  const c = loadCatalog({ providers: { openai: { models: { r: { price: { input: 1, output: 4, reasoning: 2 } } } } } })
  expect(costUsd(c.resolve('openai', 'r'), { promptTokens: 1000, completionTokens: 900, reasoningTokens: 600 })).toBeCloseTo(
    (1000 * 1 + 300 * 4 + 600 * 2) / 1e6,
    12,
  )
  // A provider that reports more reasoning than output is held to its output count.
  expect(costUsd(c.resolve('openai', 'r'), { promptTokens: 0, completionTokens: 10, reasoningTokens: 50 })).toBeCloseTo((10 * 2) / 1e6, 12)
})

test('cost: a long-context tier prices the whole request once the prompt exceeds it', () => {
  const m = catalog.resolve('openai', 'gpt-5.4') // 2.5/15, cached 0.25; >272K: 5/22.5, cached 0.5
  expect(costUsd(m, { promptTokens: 272_000, completionTokens: 1000 })).toBeCloseTo((272_000 * 2.5 + 1000 * 15) / 1e6, 9)
  expect(costUsd(m, { promptTokens: 272_001, cachedTokens: 100_000, completionTokens: 1000 })).toBeCloseTo(
    (172_001 * 5 + 100_000 * 0.5 + 1000 * 22.5) / 1e6,
    9,
  )
  const sonnet = catalog.resolve('anthropic', 'claude-sonnet-4-5') // >200K: 6/22.5
  expect(costUsd(sonnet, { promptTokens: 250_000, completionTokens: 0 })).toBeCloseTo((250_000 * 6) / 1e6, 9)
})

test('every price names its source and the table has a version', () => {
  for (const section of Object.values(builtin.providers) as { models: Record<string, { price?: unknown; source?: string }> }[])
    for (const [id, m] of Object.entries(section.models)) if (m.price) expect({ id, source: m.source }).toMatchObject({ source: expect.any(String) })
  expect(catalog.priceVersion).toBe(builtin.priceVersion)
  expect(loadCatalog({ priceVersion: 'acme-3', providers: {} }).priceVersion).toBe(`${builtin.priceVersion}+acme-3`)
  expect(loadCatalog({ providers: {} }).priceVersion).toBe(`${builtin.priceVersion}+custom`)
})

describe('GW_CATALOG', () => {
  test('adds models, overrides prices and families', () => {
    const c = loadCatalog({
      providers: {
        openai: {
          families: [{ match: 'ft:*', contextWindow: 64000 }],
          models: { 'my-model': { contextWindow: 32000, maxOutput: 4000, price: { input: 1, output: 2 } }, 'gpt-4o': { price: { input: 1, output: 1 } } },
        },
      },
    })
    expect(c.resolve('openai', 'my-model')).toMatchObject({ known: true, info: { contextWindow: 32000, price: { input: 1, output: 2 } } })
    expect(c.resolve('openai', 'gpt-4o').info).toMatchObject({ contextWindow: 128000, price: { input: 1, output: 1 } })
    expect(c.resolve('openai', 'ft:gpt-4o:acme').info.contextWindow).toBe(64000)
    expect(catalog.resolve('openai', 'gpt-4o').info.price?.input).toBe(2.5)
  })
  test.each([
    [{}, /providers/],
    [{ providers: { acme: {} } }, /unknown provider/],
    [{ providers: { openai: { models: { x: { price: { input: 'cheap', output: 1 } } } } } }, /providers\.openai\.models\.x\.price\.input/],
    [{ providers: { openai: { families: [{ contextWindow: 1 }] } } }, /families\[0\]/],
    [{ providers: { anthropic: { models: { y: { structuredOutput: 'magic' } } } } }, /structuredOutput/],
    [{ providers: { openai: { models: { x: { price: { input: 1, output: 1, reasoning: -1 } } } } } }, /price\.reasoning/],
    [{ providers: { openai: { models: { x: { price: { input: 1, output: 1, tiers: [{ aboveInputTokens: 10, input: 2 }] } } } } } }, /tiers\[0\]\.output/],
    [{ providers: { openai: { models: { x: { price: { input: 1, output: 1, tiers: [{ aboveInputTokens: 10, input: 2, output: 2 }, { aboveInputTokens: 5, input: 3, output: 3 }] } } } } } }, /tiers\[1\]\.aboveInputTokens/],
    [{ priceVersion: 3, providers: {} }, /priceVersion/],
  ])('a bad file says what is wrong (%#)', (doc, why) => {
    expect(() => loadCatalog(doc)).toThrow(why)
  })
})
