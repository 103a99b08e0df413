// POST /v1/embeddings through the official OpenAI SDK: OpenAI relayed, Mistral and Google (one
// batchEmbedContents call) translated, base64 and float, dimensions, errors, fallbacks, the log entry.

import { expect, test } from 'bun:test'
import OpenAI from 'openai'
import { FAKE_DIMENSIONS, fakeVector } from '../fakes/embeddings'
import type { FakeProvider } from '../fakes/upstream'
import { useAllProviders } from '../helpers/all-providers'
import type { TestGateway } from '../helpers/gateway'

let gw: TestGateway
let client: OpenAI
const { fakes } = useAllProviders((s) => {
  gw = s.gw
  client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
})

const inputs = ['The quick brown fox', 'jumps over the lazy dog']

function post(body: unknown, headers: Record<string, string> = {}) {
  return gw.fetch('/v1/embeddings', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
}

for (const model of ['openai/text-embedding-3-small', 'mistral/mistral-embed', 'google/gemini-embedding-001']) {
  const provider = model.split('/')[0] as FakeProvider
  test(`${provider}: the SDK's default (base64) and float answers carry the upstream's vectors`, async () => {
    const res = await client.embeddings.create({ model, input: inputs, user: 'end-user-1' })
    expect(res.object).toBe('list')
    expect(res.data.map((d) => d.index)).toEqual([0, 1])
    for (const [i, d] of res.data.entries()) expect(d.embedding).toEqual(fakeVector(inputs[i] as string))
    expect(fakes[provider].requests).toHaveLength(1)

    const raw = await post({ model, input: inputs[0], encoding_format: 'float' })
    expect(raw.status).toBe(200)
    expect(raw.headers.get('x-gw-model')).toBe(model)
    const body = (await raw.json()) as { data: { embedding: number[] }[]; usage: { prompt_tokens: number } }
    expect(body.data[0]?.embedding).toEqual(fakeVector(inputs[0] as string))
    expect(body.usage.prompt_tokens).toBeGreaterThan(0)
    const log = await gw.log(raw.headers.get('x-gw-request-id') as string)
    expect(log).toMatchObject({ endpoint: '/v1/embeddings', model, status: 200, stream: false })
    // Google's batchEmbedContents reports no usage: gw estimates it and says so.
    expect(log.usage).toMatchObject({ estimated: provider === 'google', completionTokens: 0 })
    // Priced at the catalog's input price (text-embedding-3-small 0.02, mistral-embed 0.10, gemini-embedding-001 0.15 per 1M).
    const price = { openai: 0.02, mistral: 0.1, google: 0.15 }[provider as 'openai'] as number
    const tokens = (log.usage as { promptTokens: number }).promptTokens
    expect(log.costUsd as number).toBeCloseTo((tokens * price) / 1e6, 12)
    expect(Number(raw.headers.get('x-gw-cost-usd'))).toBeCloseTo((tokens * price) / 1e6, 12)
  })
}

test('what reached each upstream: OpenAI the body as sent, Mistral only its own fields, Google one batch call', async () => {
  await post({ model: 'openai/text-embedding-3-small', input: inputs, dimensions: 4, encoding_format: 'base64', user: 'u1' })
  expect(fakes.openai.requests[0]?.body).toEqual({ model: 'text-embedding-3-small', input: inputs, dimensions: 4, encoding_format: 'base64', user: 'u1' })

  const m = await post({ model: 'mistral/mistral-embed', input: inputs, dimensions: 4, user: 'u1' })
  expect(m.status).toBe(200)
  expect(fakes.mistral.requests[0]?.body).toEqual({ model: 'mistral-embed', input: inputs, output_dimension: 4 })
  expect(((await m.json()) as { data: { embedding: number[] }[] }).data[0]?.embedding).toHaveLength(4)

  const g = await post({ model: 'gemini/gemini-embedding-001', input: inputs, dimensions: 4 })
  expect(g.status).toBe(200)
  expect(fakes.google.requests).toHaveLength(1)
  expect(fakes.google.requests[0]?.path).toBe('/v1beta/models/gemini-embedding-001:batchEmbedContents')
  expect(fakes.google.requests[0]?.headers['x-goog-api-key']).toBe(fakes.google.apiKey)
  expect(fakes.google.requests[0]?.body).toEqual({
    requests: inputs.map((text) => ({ model: 'models/gemini-embedding-001', content: { parts: [{ text }] }, outputDimensionality: 4 })),
  })
})

test('base64 from a translated provider decodes to the same float32 vector', async () => {
  const res = await post({ model: 'google/gemini-embedding-001', input: 'hello', encoding_format: 'base64' })
  const body = (await res.json()) as { data: { embedding: string }[] }
  const bytes = Buffer.from(body.data[0]?.embedding as string, 'base64')
  const floats = Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4))
  expect(floats).toEqual(fakeVector('hello'))
  expect(floats).toHaveLength(FAKE_DIMENSIONS)
})

test('Anthropic has no embeddings: 400; bad bodies are 400s naming the field', async () => {
  const res = await post({ model: 'anthropic/claude-sonnet-4-6', input: 'hi' })
  expect(res.status).toBe(400)
  expect(await res.json()).toMatchObject({ error: true, code: 'gateway_error' })
  expect(fakes.anthropic.requests).toHaveLength(0)

  for (const body of [{ model: 'openai/text-embedding-3-small' }, { model: 'openai/x', input: [] }, { model: 'openai/x', input: 'a', encoding_format: 'hex' }, { input: 'a' }, { model: 'google/gemini-embedding-001', input: 'a', dimensions: 1e9 }]) {
    const r = await post(body)
    expect(r.status).toBe(400)
  }
  const empty = await post({ model: 'openai/x', input: [] })
  expect(((await empty.json()) as { message: string }).message).toBe('Invalid field "input": expected a string or a non-empty array')
  const tokens = await post({ model: 'mistral/mistral-embed', input: [[1, 2, 3]] })
  expect(tokens.status).toBe(400)
  expect(((await tokens.json()) as { message: string }).message).toContain('Token arrays')
  const openaiErrors = await post({ model: 'anthropic/x', input: 'a' }, { 'x-gw-error-format': 'openai' })
  expect(await openaiErrors.json()).toMatchObject({ error: { type: 'gateway_error', code: 'gateway_error' } })
})

test('a fallback chain and metadata from headers; the log entry records both attempts', async () => {
  fakes.openai.enqueue({ kind: 'error', status: 500, errorType: 'server' })
  const res = await post(
    { model: 'openai/text-embedding-3-small', input: inputs },
    { 'x-gw-fallback-chain': '[{"model":"mistral/mistral-embed"}]', 'x-gw-metadata': '{"pipeline":"rag"}' },
  )
  expect(res.status).toBe(200)
  expect(res.headers.get('x-gw-fallback-model')).toBe('mistral/mistral-embed')
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log.metadata).toEqual({ pipeline: 'rag' })
  expect((log.attempts as { outcome: string }[]).map((a) => a.outcome)).toEqual(['provider_error', 'ok'])

  fakes.openai.enqueue({ kind: 'error', status: 429, errorType: 'rate_limit' })
  const failed = await client.embeddings.create({ model: 'openai/text-embedding-3-small', input: 'x' }).catch((e: unknown) => e)
  expect((failed as InstanceType<typeof OpenAI.APIError>).status).toBe(502)
})

test('/v1/models says which endpoints each model serves; models.retrieve answers like OpenAI', async () => {
  const list = await client.models.list()
  const byId = new Map(list.data.map((m) => [m.id, m as unknown as { endpoints: string[] }]))
  expect(byId.get('openai/text-embedding-3-small')?.endpoints).toEqual(['/v1/embeddings'])
  expect(byId.get('anthropic/claude-sonnet-4-6')?.endpoints).toEqual(['/v1/chat/completions', '/v1/messages', '/v1/responses'])
  const one = await client.models.retrieve('openai/gpt-4o')
  expect(one).toMatchObject({ id: 'openai/gpt-4o', object: 'model', owned_by: 'openai' })
  const two = await gw.fetch('/v1/models/google/gemini-embedding-001')
  expect(await two.json()).toMatchObject({ id: 'google/gemini-embedding-001', endpoints: ['/v1/embeddings'] })
  const missing = await client.models.retrieve('openai/unknown-model-x').catch((e: unknown) => e)
  expect((missing as InstanceType<typeof OpenAI.APIError>).status).toBe(404)
  expect((await gw.fetch('/v1/models/nope')).status).toBe(400)
})
