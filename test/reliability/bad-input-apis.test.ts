// Bad input on /v1/messages, /v1/messages/count_tokens, /v1/responses and /v1/embeddings never gets a
// 500: fuzzed bodies (any JSON, and valid bodies with fields swapped for wrong ones) and gateway headers
// are answered, refused in the endpoint's error shape with a request id, or — only when the upstream
// was reached and refused them — a 502.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { type FakeUpstream, startFake } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let fakes: FakeUpstream[]
let gw: TestGateway

beforeAll(async () => {
  fakes = await Promise.all((['openai', 'anthropic', 'google', 'mistral'] as const).map((p) => startFake(p)))
  const [openai, anthropic, google, mistral] = fakes
  // Upstream 4xx answers to fuzzed bodies must not open the breaker and change later answers.
  gw = await startTestGateway({ openai, anthropic, google, mistral }, {}, { health: { failureThreshold: 1_000_000 } })
})
afterAll(async () => {
  await gw.stop()
  await Promise.all(fakes.map((f) => f.stop()))
})

const upstreamCalls = () => fakes.reduce((n, f) => n + f.requests.length, 0)

type Shape = 'anthropic' | 'openai' | 'seed'
const SHAPES: Record<string, Shape> = {
  '/v1/messages': 'anthropic',
  '/v1/messages/count_tokens': 'anthropic',
  '/v1/responses': 'openai',
  '/v1/embeddings': 'seed',
}

/** The error body in the endpoint's shape, carrying gw's code and the request id of the header. */
function expectErrorShape(shape: Shape, body: Record<string, unknown>, requestId: string): string {
  if (shape === 'anthropic') {
    expect(body).toMatchObject({ type: 'error', request_id: requestId })
    const e = body.error as Record<string, unknown>
    expect(typeof e.type).toBe('string')
    expect(typeof e.message).toBe('string')
    return e.code as string
  }
  if (shape === 'openai') {
    expect(body.requestId).toBe(requestId)
    const e = body.error as Record<string, unknown>
    // The type is gw's code, or OpenAI's invalid_request_error for a request the provider refused (PRODUCT §4a).
    expect([e.code, 'invalid_request_error']).toContain(e.type)
    expect(typeof e.message).toBe('string')
    return e.code as string
  }
  expect(body).toMatchObject({ error: true, requestId })
  return body.code as string
}

async function expectHandled(path: string, res: Response, before: number): Promise<void> {
  const text = await res.text()
  const reached = upstreamCalls() > before
  expect(res.headers.get('x-gw-request-id')).toBeTruthy()
  if (res.status === 200) {
    expect(reached || path === '/v1/messages/count_tokens').toBe(true)
    return
  }
  expect({ status: res.status, text }).not.toMatchObject({ status: 500 })
  const code = expectErrorShape(SHAPES[path] as Shape, JSON.parse(text), res.headers.get('x-gw-request-id') as string)
  if (res.status >= 500) {
    expect({ status: res.status, code, reached }).toMatchObject({ code: 'provider_error', reached: true })
  } else if (reached) {
    // The provider refused the request itself (PRODUCT §4a, a request failure): a 400 of the API's own, not to be retried.
    expect({ status: res.status, code, retry: res.headers.get('x-should-retry') }).toMatchObject({ status: 400, code: 'provider_error', retry: 'false' })
  } else {
    expect({ status: res.status, text, reached }).toMatchObject({ reached: false })
  }
}

const post = (path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'x-api-key': gw.key, 'content-type': 'application/json', ...headers }, body })

// ---- generators ---------------------------------------------------------------------------------

const anything = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constantFrom('', 'NaN', null, -1, 0, 1e308, true, [], {}))
const word = fc.stringMatching(/^[a-z]{1,8}$/)
const text = fc.array(word, { minLength: 1, maxLength: 5 }).map((w) => w.join(' '))
const oneOrAnything = <T>(...values: T[]) => fc.oneof(fc.constantFrom(...values), anything)
const partial = <T extends Record<string, fc.Arbitrary<unknown>>>(shape: T) => fc.record(shape, { requiredKeys: [] })
const schema = fc.constant({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] })

/** A valid body with 0 to 3 of its fields replaced by wrong ones. */
function mutated(good: fc.Arbitrary<Record<string, unknown>>, wrong: Record<string, fc.Arbitrary<unknown>>) {
  return fc
    .tuple(good, fc.array(fc.constantFrom(...Object.keys(wrong)), { maxLength: 3 }))
    .chain(([body, keys]) =>
      fc.tuple(...keys.map((k) => (wrong[k] as fc.Arbitrary<unknown>).map((v) => [k, v] as const))).map((pairs) => ({ ...body, ...Object.fromEntries(pairs) })),
    )
}

const MESSAGE_MODELS = ['claude-haiku-4-5', 'anthropic/claude-sonnet-4-6', 'openai/gpt-4o', 'google/gemini-2.5-flash', 'mistral/mistral-small-latest']
const block = fc.oneof(
  fc.record({ type: fc.constant('text'), text }),
  partial({ type: oneOrAnything('text', 'image', 'document', 'tool_result', 'tool_use', 'thinking', 'nonsense'), text: anything, source: anything, content: anything, tool_use_id: anything, input: anything, id: anything, name: anything }),
)
const messagesBody = fc.record({
  model: fc.constantFrom(...MESSAGE_MODELS),
  max_tokens: fc.integer({ min: 1, max: 2000 }),
  messages: fc.array(fc.record({ role: fc.constant('user'), content: text }), { minLength: 1, maxLength: 2 }),
  stream: fc.boolean(),
})
const messagesWrong: Record<string, fc.Arbitrary<unknown>> = {
  model: oneOrAnything('acme/x', 'openai/', '', 'anthropic/claude-does-not-exist'),
  max_tokens: anything,
  messages: fc.oneof(anything, fc.array(partial({ role: oneOrAnything('user', 'assistant', 'system'), content: fc.oneof(anything, fc.array(block, { maxLength: 3 })) }), { maxLength: 3 })),
  system: fc.oneof(anything, fc.array(block, { maxLength: 2 })),
  tools: fc.oneof(anything, fc.array(partial({ name: oneOrAnything('get_weather'), input_schema: fc.oneof(schema, anything), type: anything }), { maxLength: 2 })),
  tool_choice: fc.oneof(anything, partial({ type: oneOrAnything('auto', 'any', 'tool', 'none'), name: anything })),
  temperature: anything,
  stop_sequences: anything,
  thinking: anything,
  output_config: fc.oneof(anything, fc.record({ format: partial({ type: oneOrAnything('json_schema'), schema: fc.oneof(schema, anything) }) })),
  metadata: anything,
  fallback_chain: fc.oneof(anything, fc.array(partial({ model: anything, triggers: anything }), { maxLength: 2 })),
}

const RESPONSE_MODELS = ['gpt-4o', 'openai/gpt-4o-mini', 'anthropic/claude-haiku-4-5', 'google/gemini-2.5-flash', 'mistral/mistral-small-latest']
const item = fc.oneof(
  fc.record({ role: fc.constant('user'), content: text }),
  partial({ type: oneOrAnything('message', 'function_call', 'function_call_output', 'reasoning'), role: anything, content: anything, call_id: anything, name: anything, arguments: anything, output: anything }),
)
const responsesBody = fc.record({ model: fc.constantFrom(...RESPONSE_MODELS), input: text, stream: fc.boolean() })
const responsesWrong: Record<string, fc.Arbitrary<unknown>> = {
  model: oneOrAnything('acme/x', '', 'openai/'),
  input: fc.oneof(anything, fc.array(item, { maxLength: 3 })),
  instructions: anything,
  tools: fc.oneof(anything, fc.array(partial({ type: oneOrAnything('function', 'web_search'), name: anything, parameters: fc.oneof(schema, anything) }), { maxLength: 2 })),
  tool_choice: anything,
  text: fc.oneof(anything, fc.record({ format: partial({ type: oneOrAnything('json_schema', 'json_object', 'text'), name: anything, schema: fc.oneof(schema, anything) }) })),
  reasoning: anything,
  max_output_tokens: anything,
  temperature: anything,
  previous_response_id: oneOrAnything('resp_abc', `resp_gw${'f'.repeat(32)}`),
  metadata: anything,
}

const EMBEDDING_MODELS = ['openai/text-embedding-3-small', 'mistral/mistral-embed', 'google/gemini-embedding-001', 'anthropic/x']
const embeddingsBody = fc.record({ model: fc.constantFrom(...EMBEDDING_MODELS), input: fc.oneof(text, fc.array(text, { minLength: 1, maxLength: 3 })) })
const embeddingsWrong: Record<string, fc.Arbitrary<unknown>> = {
  model: oneOrAnything('acme/x', ''),
  input: fc.oneof(anything, fc.array(fc.oneof(anything, fc.array(fc.integer(), { maxLength: 3 })), { maxLength: 3 })),
  encoding_format: oneOrAnything('float', 'base64', 'hex'),
  dimensions: anything,
  user: anything,
  metadata: anything,
}

const CASES = [
  ['/v1/messages', mutated(messagesBody, messagesWrong)],
  ['/v1/messages/count_tokens', mutated(messagesBody, messagesWrong)],
  ['/v1/responses', mutated(responsesBody, responsesWrong)],
  ['/v1/embeddings', mutated(embeddingsBody, embeddingsWrong)],
] as const

describe('fuzz', () => {
  for (const [path, bodies] of CASES) {
    test(`${path}: any JSON value as the body is refused in the endpoint's shape, nothing sent upstream`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.jsonValue({ maxDepth: 4 }), async (value) => {
          const before = upstreamCalls()
          await expectHandled(path, await post(path, JSON.stringify(value)), before)
        }),
        { numRuns: 60 },
      )
    })

    test(`${path}: valid bodies with wrong fields never get a 500`, async () => {
      await fc.assert(
        fc.asyncProperty(bodies, async (value) => {
          const before = upstreamCalls()
          await expectHandled(path, await post(path, JSON.stringify(value)), before)
        }),
        { numRuns: 150 },
      )
    })

    test(`${path}: gateway headers with any value are answered or refused, never a 500`, async () => {
      const headerValue = fc.oneof(fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)), fc.stringMatching(/^[ -~]{0,40}$/))
      await fc.assert(
        fc.asyncProperty(headerValue, headerValue, headerValue, async (chain, metadata, promptId) => {
          const before = upstreamCalls()
          const body = path === '/v1/embeddings' ? { model: 'openai/text-embedding-3-small', input: 'hi' } : path === '/v1/responses' ? { model: 'openai/gpt-4o', input: 'hi' } : { model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }
          const res = await post(path, JSON.stringify(body), { 'x-gw-fallback-chain': chain, 'x-gw-metadata': metadata, 'x-gw-prompt-id': promptId })
          await expectHandled(path, res, before)
        }),
        { numRuns: 60 },
      )
    })
  }
})
