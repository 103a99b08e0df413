// Chat completions through gw to a fake Mistral: strict field allow-list, usage split out of the last chunk.

import { afterAll, beforeAll, beforeEach, expect, test } from 'bun:test'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { readSse, startTestGateway, type TestGateway } from '../helpers/gateway'
import { assertChatChunk, assertChatCompletion } from '../helpers/openai-schema'

let mistral: FakeUpstream
let gw: TestGateway

beforeAll(async () => {
  mistral = await startFake('mistral')
  gw = await startTestGateway({ mistral })
})
afterAll(async () => {
  await gw.stop()
  await mistral.stop()
})
beforeEach(() => mistral.reset())

const hello = [{ role: 'user', content: 'Say hi please' }]

test('sends only fields Mistral accepts: no user, no stream_options, no metadata', async () => {
  const res = await gw.chat({
    model: 'mistral/mistral-small-latest',
    messages: [{ role: 'developer', content: 'Be brief' }, ...hello],
    user: 'u-1',
    seed: 7,
    max_completion_tokens: 40,
    logprobs: true,
    metadata: { a: 'b' },
    temperature: 1.5,
  })
  expect(res.status).toBe(200)
  assertChatCompletion(await res.json())
  const sent = mistral.requests[0]
  expect(sent?.headers.authorization).toBe(`Bearer ${mistral.apiKey}`)
  expect(sent?.body).toEqual({
    model: 'mistral-small-latest',
    messages: [{ role: 'system', content: 'Be brief' }, ...hello],
    random_seed: 7,
    max_tokens: 40,
    temperature: 1,
  })
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log.user).toBe('u-1')
  expect(log.endUserId).toBe('u-1')
  expect(log.warnings).toEqual([{ type: 'param_clamped', setting: 'temperature', detail: expect.stringContaining('temperature 1.5 clamped to 1') }])
})

test('streams with usage on the finish chunk (Mistral puts it on its last content chunk), or in its own chunk with include_usage', async () => {
  const res = await gw.chat({ model: 'mistral/mistral-small-latest', messages: hello, stream: true })
  expect(res.status).toBe(200)
  const events = await readSse(res)
  expect(events.at(-1)).toBe('[DONE]')
  const chunks = events.slice(0, -1) as Record<string, any>[]
  for (const c of chunks) assertChatChunk(c)
  const sent = mistral.requests[0]?.body as Record<string, unknown>
  expect(sent.stream).toBe(true)
  expect(sent.stream_options).toBeUndefined()
  // PRODUCT §4: without include_usage, choices are never empty and usage rides on the finish chunk.
  for (const c of chunks) expect(c.choices[0]).toBeDefined()
  const finishChunk = chunks.at(-1) as Record<string, any>
  expect(finishChunk.choices[0].finish_reason).toBe('stop')
  expect(finishChunk.usage).toMatchObject({ prompt_tokens: 6, completion_tokens: 4, total_tokens: 10 })
  expect(chunks.slice(0, -1).every((c) => c.usage === undefined)).toBe(true)
  expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Hello from fake-mistral (mistral-small-latest).')

  const withUsage = await gw.chat({ model: 'mistral/mistral-small-latest', messages: hello, stream: true, stream_options: { include_usage: true } })
  const split = ((await readSse(withUsage)).slice(0, -1)) as Record<string, any>[]
  for (const c of split) assertChatChunk(c)
  expect((mistral.requests[1]?.body as Record<string, unknown>).stream_options).toBeUndefined()
  expect(split.at(-1)?.choices).toEqual([])
  expect(split.at(-1)?.usage).toMatchObject({ total_tokens: 10 })
  expect(split.at(-2)?.choices[0].finish_reason).toBe('stop')
  expect(split.at(-2)?.usage).toBeUndefined()
})

test('a Mistral 422 becomes a 502 provider_error naming provider, status and text', async () => {
  mistral.enqueue({ kind: 'error', status: 422, errorType: 'bad_request' })
  const res = await gw.chat({ model: 'mistral/mistral-small-latest', messages: hello })
  expect(res.status).toBe(502)
  const body = (await res.json()) as Record<string, string>
  expect(body).toMatchObject({ error: true, code: 'provider_error' })
  expect(body.message).toContain('mistral/mistral-small-latest')
  expect(body.message).toContain('HTTP 422')
  expect(body.requestId).toBe(res.headers.get('x-gw-request-id') as string)
})

test('tool-call ids become 9 alphanumerics, the same on the call and its result; no content beside tool calls', async () => {
  const id = 'call_7Yq2x9ZpLmN4'
  const res = await gw.chat({
    model: 'mistral/mistral-small-latest',
    messages: [
      ...hello,
      { role: 'assistant', content: 'Checking.', tool_calls: [{ id, type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: id, content: 'done' },
    ],
  })
  expect(res.status).toBe(200)
  const [, assistant, tool] = (mistral.requests[0]?.body as any).messages
  expect(assistant.tool_calls[0].id).toMatch(/^[a-zA-Z0-9]{9}$/)
  expect(assistant.content).toBe('')
  expect(tool.tool_call_id).toBe(assistant.tool_calls[0].id)
})
