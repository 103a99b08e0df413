// The official OpenAI SDK against gw: errors, a failure mid-stream, and the model list
// (answers of every provider are in test/conformance/openai-sdk.test.ts).

import { afterAll, beforeAll, expect, test } from 'bun:test'
import OpenAI from 'openai'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let openai: FakeUpstream
let mistral: FakeUpstream
let gw: TestGateway
let client: OpenAI

beforeAll(async () => {
  openai = await startFake('openai')
  mistral = await startFake('mistral')
  gw = await startTestGateway({ openai, mistral })
  client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
  await mistral.stop()
})

const messages = [{ role: 'user' as const, content: 'Say hi please' }]

test('SDK errors carry our status and body, in OpenAI’s shape without set-up (x-stainless-lang)', async () => {
  openai.enqueue({ kind: 'error', status: 500, errorType: 'server' })
  const err = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages }).catch((e: unknown) => e)
  expect(err).toBeInstanceOf(OpenAI.APIError)
  const apiErr = err as InstanceType<typeof OpenAI.APIError>
  expect(apiErr.status).toBe(502)
  expect(apiErr.message).toStartWith('502 Upstream openai/gpt-4o-mini → HTTP 500')
  expect(apiErr.code).toBe('provider_error')
  expect(apiErr.headers?.get('x-gw-request-id')).toBeTruthy()
})

test('a wrong gw key reads right in the SDK by default; x-gw-error-format: gw or GW_ERROR_FORMAT=gw keep the seed’s shape', async () => {
  const nope = 'gw_sk_nope0000000000000000000000000000000000000000'
  const wrongKey = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: nope, maxRetries: 0 })
  const err = (await wrongKey.chat.completions.create({ model: 'openai/gpt-4o', messages }).catch((e: unknown) => e)) as InstanceType<
    typeof OpenAI.APIError
  >
  expect(err.status).toBe(401)
  expect(err.message).toBe('401 Invalid service key')
  expect(err.type).toBe('unauthorized')

  const seedAsked = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: nope, maxRetries: 0, defaultHeaders: { 'x-gw-error-format': 'gw' } })
  expect(((await seedAsked.models.list().catch((e: unknown) => e)) as Error).message).toBe('401 true')

  const seedSet = await startTestGateway({ openai }, { GW_ERROR_FORMAT: 'gw' })
  try {
    const sdk = new OpenAI({ baseURL: `${seedSet.url}/v1`, apiKey: nope, maxRetries: 0 })
    expect(((await sdk.models.list().catch((e: unknown) => e)) as Error).message).toBe('401 true')
  } finally {
    await seedSet.stop()
  }
})

test('a request the provider refuses is not retried by the SDK (x-should-retry: false)', async () => {
  const retrying = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 2 })
  const before = openai.requests.length
  const orphan = [...messages, { role: 'tool' as const, tool_call_id: 'call_1', content: '42' }]
  const err = (await retrying.chat.completions.create({ model: 'openai/gpt-4o', messages: orphan }).catch((e: unknown) => e)) as InstanceType<
    typeof OpenAI.APIError
  >
  expect(err.status).toBe(502)
  expect(err.message).toContain("messages with role 'tool' must be a response")
  expect(openai.requests.length - before).toBe(1)
})

test('a mid-stream failure surfaces as an SDK error, not a clean end', async () => {
  openai.enqueue({ kind: 'error-event-after', events: 3, errorType: 'server' })
  const stream = await client.chat.completions.create({ model: 'openai/gpt-4o', messages, stream: true })
  let text = ''
  const run = async () => {
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
  }
  await expect(run()).rejects.toThrow()
  expect(text.length).toBeGreaterThan(0)
})

test('models.list() lists the catalog models of usable providers', async () => {
  const list = await client.models.list()
  const ids = list.data.map((m) => m.id)
  expect(ids).toContain('openai/gpt-4o')
  expect(ids).toContain('mistral/mistral-small-latest')
  expect(ids.some((id) => id.startsWith('anthropic/'))).toBe(false)
})

test('x-gw-error-format: openai, or GW_ERROR_FORMAT=openai: the SDK shows gw’s message, not "401 true"', async () => {
  const asked = new OpenAI({
    baseURL: `${gw.url}/v1`,
    apiKey: 'gw_sk_nope0000000000000000000000000000000000000000',
    maxRetries: 0,
    defaultHeaders: { 'x-gw-error-format': 'openai' },
  })
  const err = (await asked.chat.completions.create({ model: 'openai/gpt-4o', messages }).catch((e: unknown) => e)) as InstanceType<
    typeof OpenAI.APIError
  >
  expect(err.status).toBe(401)
  expect(err.message).toBe('401 Invalid service key')
  expect(err.code).toBe('unauthorized')
  expect(err.type).toBe('unauthorized')

  const other = await startTestGateway({ openai }, { GW_ERROR_FORMAT: 'openai' })
  try {
    const sdk = new OpenAI({ baseURL: `${other.url}/v1`, apiKey: other.key, maxRetries: 0 })
    openai.enqueue({ kind: 'error', status: 500, errorType: 'server' })
    const failed = (await sdk.chat.completions.create({ model: 'openai/gpt-4o', messages }).catch((e: unknown) => e)) as InstanceType<
      typeof OpenAI.APIError
    >
    expect(failed.status).toBe(502)
    expect(failed.message).toStartWith('502 Upstream openai/gpt-4o → HTTP 500')
    expect(failed.code).toBe('provider_error')
    // The body: OpenAI's shape plus gw's request id.
    const res = await fetch(`${other.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: 'GwKey nope' }, body: '{}' })
    const body = (await res.json()) as Record<string, unknown>
    expect(body).toEqual({
      error: { message: 'Invalid service key', type: 'unauthorized', code: 'unauthorized', param: null },
      requestId: res.headers.get('x-gw-request-id'),
    })
    // A mid-stream failure is an SDK error carrying gw's message.
    openai.enqueue({ kind: 'error-event-after', events: 3, errorType: 'server' })
    const stream = await sdk.chat.completions.create({ model: 'openai/gpt-4o', messages, stream: true })
    const run = async () => {
      for await (const _ of stream);
    }
    await expect(run()).rejects.toThrow(/The upstream stream failed after the answer had started/)
    // A request can still ask for the seed's shape.
    const seed = await fetch(`${other.url}/v1/models`, { headers: { authorization: 'GwKey nope', 'x-gw-error-format': 'gw' } })
    expect(await seed.json()).toMatchObject({ error: true, code: 'unauthorized' })
  } finally {
    await other.stop()
  }
})
