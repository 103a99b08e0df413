// `reasoning_effort` (chat completions) and `reasoning.effort` (Responses API) reach Anthropic as
// output_config.effort and Gemini as a thinking level or budget by model generation (docs/providers.md).

import { afterAll, beforeAll, beforeEach, expect, test } from 'bun:test'
import { type FakeUpstream, startFake } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let anthropic: FakeUpstream
let google: FakeUpstream
let gw: TestGateway

beforeAll(async () => {
  anthropic = await startFake('anthropic')
  google = await startFake('google')
  gw = await startTestGateway({ anthropic, google })
})
afterAll(async () => {
  await gw.stop()
  await anthropic.stop()
  await google.stop()
})
beforeEach(() => {
  anthropic.reset()
  google.reset()
})

const hello = [{ role: 'user', content: 'Say hi please' }]
const sent = (f: FakeUpstream) => f.requests[0]?.body as Record<string, any>

test.each([
  ['high', 'high'],
  ['minimal', 'low'],
  ['xhigh', 'xhigh'],
])('Anthropic: reasoning_effort %s → output_config.effort %s', async (effort, expected) => {
  const res = await gw.chat({ model: 'anthropic/claude-sonnet-4-5', messages: hello, reasoning_effort: effort })
  expect(res.status).toBe(200)
  expect(sent(anthropic).output_config).toEqual({ effort: expected })
  expect(sent(anthropic).reasoning_effort).toBeUndefined()
})

test('Anthropic: effort sits beside a native JSON schema; none sends nothing', async () => {
  const schema = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false }
  const res = await gw.chat({
    model: 'anthropic/claude-sonnet-4-5',
    messages: hello,
    reasoning_effort: 'medium',
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema } },
  })
  expect(res.status).toBe(200)
  expect(sent(anthropic).output_config).toMatchObject({ effort: 'medium', format: { type: 'json_schema' } })
  anthropic.reset()
  await (await gw.chat({ model: 'anthropic/claude-sonnet-4-5', messages: hello, reasoning_effort: 'none' })).text()
  expect(sent(anthropic).output_config).toBeUndefined()
})

test.each([
  ['google/gemini-2.5-flash', 'low', { thinkingBudget: 1024 }],
  ['google/gemini-2.5-flash', 'none', { thinkingBudget: 0 }],
  ['google/gemini-2.5-pro', 'none', { thinkingBudget: 128 }],
  ['google/gemini-3.8-flash', 'minimal', { thinkingLevel: 'LOW' }],
  ['google/gemini-4-argon', 'high', { thinkingLevel: 'HIGH' }],
])('Gemini: %s with reasoning_effort %s → %o', async (model, effort, expected) => {
  const res = await gw.chat({ model, messages: hello, reasoning_effort: effort })
  expect(res.status).toBe(200)
  expect(sent(google).generationConfig.thinkingConfig).toEqual(expected)
})

test('the Responses API: reasoning.effort reaches Anthropic translated', async () => {
  const res = await gw.fetch('/v1/responses', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'anthropic/claude-sonnet-4-5', input: 'hi', reasoning: { effort: 'high' } }),
  })
  expect(res.status).toBe(200)
  expect(sent(anthropic).output_config).toEqual({ effort: 'high' })
})
