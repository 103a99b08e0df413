// Whose failure it is decides what is remembered (PRODUCT §4a): the provider refusing a caller's own
// invalid request never opens a breaker for the others, is not retried (`x-should-retry: false`),
// and reads as the client API's own invalid-request error on /v1/messages and /v1/responses.

import { afterAll, beforeAll, beforeEach, expect, test } from 'bun:test'
import { type FakeUpstream, startFake } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let openai: FakeUpstream
let anthropic: FakeUpstream
let gw: TestGateway

beforeAll(async () => {
  openai = await startFake('openai')
  anthropic = await startFake('anthropic')
  // The breaker as shipped: 5 consecutive failures open it for 30 s.
  gw = await startTestGateway({ openai, anthropic })
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
  await anthropic.stop()
})
beforeEach(() => {
  openai.reset()
  anthropic.reset()
})

const hello = [{ role: 'user', content: 'Say hi please' }]
const CLAUDE = 'anthropic/claude-haiku-4-5'

function messages(body: unknown, key = gw.key) {
  return fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
}

function responses(body: unknown) {
  return gw.fetch('/v1/responses', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
}

/** Another caller of the same org: its own service key. */
async function otherCaller(): Promise<string> {
  const res = await gw.admin('POST', '/orgs/default/service-keys', {})
  expect(res.status).toBe(201)
  return ((await res.json()) as { key: string }).key
}

test("one caller's invalid requests never make the model unavailable to the others", async () => {
  const other = await otherCaller()
  // An empty text block to Anthropic (Messages API) and a tool message answering no call to OpenAI, five times each.
  for (let i = 0; i < 5; i++) {
    const empty = await messages({ model: CLAUDE, max_tokens: 50, messages: [{ role: 'user', content: [{ type: 'text', text: '' }] }] })
    expect(empty.ok).toBe(false)
    const orphan = await gw.chat({ model: 'openai/gpt-4o-mini', messages: [...hello, { role: 'tool', tool_call_id: 'call_1', content: '42' }] })
    expect(orphan.ok).toBe(false)
  }
  expect(anthropic.requests).toHaveLength(5)
  expect(openai.requests).toHaveLength(5)

  // Another caller's valid requests are answered, not 502 "circuit open".
  const claude = await messages({ model: CLAUDE, max_tokens: 50, messages: hello }, other)
  expect(claude.status).toBe(200)
  const gpt = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello }, { authorization: `GwKey ${other}` })
  expect(gpt.status).toBe(200)
  expect(anthropic.requests).toHaveLength(6)
  expect(openai.requests).toHaveLength(6)
})

test('a request failure is answered with x-should-retry: false and logged with class request; a provider failure is retryable', async () => {
  const refused = await gw.chat({ model: 'openai/gpt-4o', messages: [...hello, { role: 'tool', tool_call_id: 'call_9', content: '42' }] })
  expect(refused.status).toBe(502)
  expect(refused.headers.get('x-should-retry')).toBe('false')
  const body = (await refused.json()) as Record<string, unknown>
  expect(body).toMatchObject({ error: true, code: 'provider_error' })
  expect(body.message).toContain("messages with role 'tool' must be a response to a preceeding message with 'tool_calls'")
  const log = await gw.log(refused.headers.get('x-gw-request-id') as string)
  expect(log.attempts).toEqual([expect.objectContaining({ model: 'openai/gpt-4o', outcome: 'provider_error', status: 400, class: 'request' })])

  openai.enqueue({ kind: 'error', status: 500, errorType: 'server' })
  const failed = await gw.chat({ model: 'openai/gpt-4o', messages: hello })
  expect(failed.status).toBe(502)
  expect(failed.headers.get('x-should-retry')).toBeNull()
  const failedLog = await gw.log(failed.headers.get('x-gw-request-id') as string)
  expect(failedLog.attempts).toEqual([expect.objectContaining({ outcome: 'provider_error', status: 500, class: 'provider' })])
})

test("/v1/messages: a request failure is 400 invalid_request_error with Anthropic's message inside", async () => {
  const res = await messages({ model: CLAUDE, max_tokens: 50, messages: [{ role: 'user', content: [{ type: 'text', text: '' }] }] })
  expect(res.status).toBe(400)
  expect(res.headers.get('x-should-retry')).toBe('false')
  const body = (await res.json()) as { type: string; error: { type: string; message: string; code: string }; request_id: string }
  expect(body.type).toBe('error')
  expect(body.error.type).toBe('invalid_request_error')
  expect(body.error.message).toContain('text content blocks must be non-empty')
  expect(body.request_id).toBe(res.headers.get('x-gw-request-id') as string)
  const log = await gw.log(body.request_id)
  expect(log).toMatchObject({ endpoint: '/v1/messages', status: 400 })

  // A provider failure stays a server error there.
  anthropic.enqueue({ kind: 'error', status: 529, errorType: 'overloaded' })
  const overloaded = await messages({ model: CLAUDE, max_tokens: 50, messages: hello })
  expect(overloaded.status).toBe(502)
  expect(overloaded.headers.get('x-should-retry')).toBeNull()
  expect(((await overloaded.json()) as { error: { type: string } }).error.type).toBe('api_error')
})

test("/v1/responses: a request failure is 400 invalid_request_error with OpenAI's message inside", async () => {
  const res = await responses({ model: 'openai/gpt-4o-mini', input: [{ type: 'function_call_output', call_id: 'call_nope', output: '42' }] })
  expect(res.status).toBe(400)
  expect(res.headers.get('x-should-retry')).toBe('false')
  const body = (await res.json()) as { error: { type: string; message: string; code: string } }
  expect(body.error.type).toBe('invalid_request_error')
  expect(body.error.message).toContain('No tool call found for function call output with call_id call_nope')

  openai.enqueue({ kind: 'error', status: 503, errorType: 'unavailable' })
  const down = await responses({ model: 'openai/gpt-4o-mini', input: 'Say hi please' })
  expect(down.status).toBe(502)
  expect(down.headers.get('x-should-retry')).toBeNull()
  expect(((await down.json()) as { error: { type: string } }).error.type).toBe('provider_error')
})
