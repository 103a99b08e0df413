// Chat completions through gw to a fake Anthropic: parameters, catalog flags, content blocks, tool
// turns, cache usage, refusals and the three structured-output strategies.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { type FakeUpstream, startFake } from '../fakes/upstream'
import { readSse, startTestGateway, type TestGateway } from '../helpers/gateway'
import { assertChatChunk, assertChatCompletion } from '../helpers/openai-schema'

let anthropic: FakeUpstream
let gw: TestGateway

beforeAll(async () => {
  anthropic = await startFake('anthropic')
  gw = await startTestGateway({ anthropic })
})
afterAll(async () => {
  await gw.stop()
  await anthropic.stop()
})
beforeEach(() => anthropic.reset())

const hello = [{ role: 'user', content: 'Say hi please' }]
const sent = () => anthropic.requests[0]?.body as Record<string, any>
const logOf = (res: Response) => gw.log(res.headers.get('x-gw-request-id') as string)
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='

async function chat(body: Record<string, unknown>) {
  const res = await gw.chat(body)
  const json = (await res.json()) as Record<string, any>
  if (res.status === 200) assertChatCompletion(json)
  return { res, json }
}

describe('request', () => {
  test('pins the API version, sends the key as x-api-key, and only what Anthropic takes', async () => {
    const { res } = await chat({
      model: 'anthropic/claude-haiku-4-5',
      messages: hello,
      temperature: 1.5,
      top_p: 0.9,
      stop: 'END',
      user: 'end-user-9',
      seed: 3,
      n: 1,
      presence_penalty: 0.5,
      logprobs: true,
      metadata: { team: 'a' },
    })
    expect(res.status).toBe(200)
    const headers = anthropic.requests[0]?.headers ?? {}
    expect(headers['anthropic-version']).toBe('2023-06-01')
    expect(headers['x-api-key']).toBe(anthropic.apiKey)
    expect(headers.authorization).toBeUndefined()
    expect(sent()).toEqual({
      model: 'claude-haiku-4-5',
      max_tokens: 8192,
      messages: hello,
      temperature: 1,
      stop_sequences: ['END'],
    })
    const log = await logOf(res)
    expect(log.user).toBe('end-user-9')
    // Claude 4.5 models refuse temperature together with top_p: the catalog says so, top_p goes.
    expect(log.warnings).toEqual([
      { type: 'param_clamped', setting: 'temperature', detail: expect.stringContaining('temperature 1.5 clamped to 1') },
      { type: 'param_removed', setting: 'top_p', detail: expect.stringContaining('top_p removed') },
    ])
  })

  test('max_tokens: the client’s, max_completion_tokens, or the catalog default, within the model’s limit', async () => {
    await chat({ model: 'anthropic/claude-haiku-4-5', messages: hello, max_completion_tokens: 300 })
    await chat({ model: 'anthropic/claude-haiku-4-5', messages: hello, max_tokens: 999999 })
    expect(anthropic.requests.map((r) => (r.body as Record<string, unknown>).max_tokens)).toEqual([300, 64000])
  })

  test('models that refuse temperature with top_p keep temperature only', async () => {
    const { res } = await chat({ model: 'anthropic/claude-sonnet-4-5', messages: hello, temperature: 0.2, top_p: 0.5 })
    expect(sent().temperature).toBe(0.2)
    expect(sent().top_p).toBeUndefined()
    expect((await logOf(res)).warnings).toEqual([{ type: 'param_removed', setting: 'top_p', detail: expect.stringContaining('top_p removed') }])
  })

  test('models with fixed sampling get no sampling parameters', async () => {
    await chat({ model: 'anthropic/claude-sonnet-5-5', messages: hello, temperature: 0.2, top_p: 0.5 })
    expect(Object.keys(sent())).toEqual(['model', 'max_tokens', 'messages'])
  })

  test('forced tool choice is relaxed on models that refuse it', async () => {
    const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } }]
    const { res } = await chat({ model: 'anthropic/claude-sonnet-5-5', messages: hello, tools, tool_choice: 'required' })
    expect(res.status).toBe(200)
    expect(sent().tool_choice).toEqual({ type: 'auto' })
    expect((await logOf(res)).warnings).toEqual([
      { type: 'param_relaxed', setting: 'tool_choice', detail: expect.stringContaining('tool_choice "required" relaxed to "auto"') },
    ])
  })

  test('images: data URLs become base64 sources, links url sources', async () => {
    const content = [
      { type: 'text', text: 'What is in these?' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
      { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg', detail: 'low' } },
    ]
    const { res } = await chat({ model: 'anthropic/claude-haiku-4-5', messages: [{ role: 'user', content }] })
    expect(res.status).toBe(200)
    expect(sent().messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in these?' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
        ],
      },
    ])
  })

  test('a content part Anthropic cannot take is a clear 400', async () => {
    const content = [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }]
    const { res, json } = await chat({ model: 'anthropic/claude-haiku-4-5', messages: [{ role: 'user', content }] })
    expect(res.status).toBe(400)
    expect(json).toMatchObject({ error: true, code: 'gateway_error', message: expect.stringContaining('input_audio') })
    expect(anthropic.requests).toHaveLength(0)
  })

  test('tool results are grouped into the next user turn, first; ids Anthropic refuses are mapped the same way', async () => {
    const calls = [
      { id: 'call.1:weather', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
      { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
    ]
    const { res } = await chat({
      model: 'anthropic/claude-haiku-4-5',
      messages: [
        { role: 'user', content: 'Weather in Paris and Rome?' },
        { role: 'assistant', content: 'Let me check.', tool_calls: calls },
        { role: 'tool', tool_call_id: 'call.1:weather', content: [{ type: 'text', text: '14C' }] },
        { role: 'tool', tool_call_id: 'call_2', content: '18C' },
        { role: 'user', content: 'And tomorrow?' },
      ],
    })
    expect(res.status).toBe(200)
    const [, assistant, results] = sent().messages
    const mapped = assistant.content[1].id
    expect(mapped).toMatch(/^[a-zA-Z0-9_-]+$/)
    expect(assistant).toEqual({
      role: 'assistant',
      content: [
        { type: 'text', text: 'Let me check.' },
        { type: 'tool_use', id: mapped, name: 'get_weather', input: { city: 'Paris' } },
        { type: 'tool_use', id: 'call_2', name: 'get_weather', input: { city: 'Rome' } },
      ],
    })
    expect(results).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: mapped, content: '14C' },
        { type: 'tool_result', tool_use_id: 'call_2', content: '18C' },
        { type: 'text', text: 'And tomorrow?' },
      ],
    })
  })
})

describe('answers', () => {
  test('cache reads and writes count as prompt tokens, reads reported as cached and priced as such', async () => {
    anthropic.enqueue({ kind: 'reply', usage: { prompt: 100, completion: 10, cached: 60 } })
    const { res, json } = await chat({ model: 'anthropic/claude-haiku-4-5', messages: hello })
    expect(json.usage).toEqual({
      prompt_tokens: 100,
      completion_tokens: 10,
      total_tokens: 110,
      prompt_tokens_details: { cached_tokens: 60 },
      cost_usd: expect.closeTo((40 * 1 + 60 * 0.1 + 10 * 5) / 1e6, 12),
    })
    expect(Number(res.headers.get('x-gw-cost-usd'))).toBeCloseTo((40 * 1 + 60 * 0.1 + 10 * 5) / 1e6, 12)
    const log = await logOf(res)
    expect(log.usage).toMatchObject({ promptTokens: 100, cachedTokens: 60, completionTokens: 10 })
    // claude-haiku-4-5: $1 / 1M input, $0.10 / 1M cached input, $5 / 1M output.
    expect(log.costUsd).toBeCloseTo((40 * 1 + 60 * 0.1 + 10 * 5) / 1e6, 12)
  })

  test('a stream reports message_start and message_delta usage together in its last chunk', async () => {
    anthropic.enqueue({ kind: 'reply', usage: { prompt: 50, completion: 7, cached: 20 } })
    const res = await gw.chat({ model: 'anthropic/claude-haiku-4-5', messages: hello, stream: true })
    const events = (await readSse(res)).slice(0, -1) as Record<string, any>[]
    for (const e of events) assertChatChunk(e)
    expect(events.at(-1)?.usage).toEqual({
      prompt_tokens: 50,
      completion_tokens: 7,
      total_tokens: 57,
      prompt_tokens_details: { cached_tokens: 20 },
      cost_usd: expect.closeTo((30 * 1 + 20 * 0.1 + 7 * 5) / 1e6, 12),
    })
    // A stream's cost is known only at its end: in the usage chunk, not in a header.
    expect(res.headers.get('x-gw-cost-usd')).toBeNull()
  })

  test('stop_reason refusal: content_filter, Claude’s explanation as the refusal, a refusal on the log', async () => {
    anthropic.enqueue({ kind: 'reply', finish: 'refusal' })
    const { res, json } = await chat({ model: 'anthropic/claude-haiku-4-5', messages: hello })
    expect(json.choices[0]).toMatchObject({
      finish_reason: 'content_filter',
      message: { content: null, refusal: expect.stringContaining('Usage Policy') },
    })
    const log = await logOf(res)
    expect(log.refusal).toBe(true)
    expect(log.attempts).toEqual([expect.objectContaining({ outcome: 'refusal_detected', status: 200 })])
  })

  test('a refusal after streamed text still ends with content_filter and is logged as a refusal', async () => {
    const ev = (name: string, data: Record<string, unknown>) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`
    anthropic.enqueue({
      kind: 'raw',
      status: 200,
      body: [
        ev('message_start', { message: { id: 'msg_3', model: 'claude-haiku-4-5', role: 'assistant', content: [], usage: { input_tokens: 5 } } }),
        ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
        ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Sure, here' } }),
        ev('content_block_stop', { index: 0 }),
        ev('message_delta', { delta: { stop_reason: 'refusal', stop_details: { type: 'refusal', explanation: 'Blocked.' } }, usage: { output_tokens: 3 } }),
        ev('message_stop', {}),
      ].join(''),
    })
    const res = await gw.chat({ model: 'anthropic/claude-haiku-4-5', messages: hello, stream: true })
    const chunks = (await readSse(res)).slice(0, -1) as Record<string, any>[]
    const finish = chunks.find((c) => c.choices[0]?.finish_reason)
    expect(finish?.choices[0]).toMatchObject({ finish_reason: 'content_filter', delta: { refusal: 'Blocked.' } })
    const log = await logOf(res)
    expect(log.refusal).toBe(true)
    expect(log.attempts).toEqual([expect.objectContaining({ outcome: 'refusal_detected' })])
  })

  test('thinking blocks are left out of the answer, streamed or not', async () => {
    const ev = (name: string, data: Record<string, unknown>) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`
    const usage = { input_tokens: 5, output_tokens: 9 }
    anthropic.enqueue({
      kind: 'raw',
      status: 200,
      body: [
        ev('message_start', { message: { id: 'msg_1', model: 'claude-haiku-4-5', role: 'assistant', content: [], usage } }),
        ev('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
        ev('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'Hmm.' } }),
        ev('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'c2ln' } }),
        ev('content_block_stop', { index: 0 }),
        ev('content_block_start', { index: 1, content_block: { type: 'text', text: '' } }),
        ev('content_block_delta', { index: 1, delta: { type: 'text_delta', text: 'Hi!' } }),
        ev('content_block_stop', { index: 1 }),
        ev('some_future_event', { anything: true }),
        ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 9 } }),
        ev('message_stop', {}),
      ].join(''),
    })
    const res = await gw.chat({ model: 'anthropic/claude-haiku-4-5', messages: hello, stream: true })
    const events = (await readSse(res)).slice(0, -1) as Record<string, any>[]
    expect(events.map((e) => e.choices[0]?.delta.content ?? '').join('')).toBe('Hi!')
    expect(events.at(-1)?.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 9 })

    const content = [
      { type: 'thinking', thinking: 'Hmm.', signature: 'c2ln' },
      { type: 'text', text: 'Hi!' },
    ]
    anthropic.enqueue({
      kind: 'raw',
      status: 200,
      body: JSON.stringify({ id: 'msg_2', type: 'message', role: 'assistant', model: 'claude-haiku-4-5', content, stop_reason: 'end_turn', usage }),
    })
    const { json } = await chat({ model: 'anthropic/claude-haiku-4-5', messages: hello })
    expect(json.choices[0].message.content).toBe('Hi!')
  })
})

describe('structured output', () => {
  const schema = { mode: 'json_schema', type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }

  test('tool strategy: a forced json_response tool whose input is the content, finish stop', async () => {
    const { res, json } = await chat({ model: 'anthropic/claude-3-5-haiku-latest', messages: hello, output_schema: schema })
    expect(sent().tools).toEqual([
      {
        name: 'json_response',
        description: expect.any(String),
        input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ])
    expect(sent().tool_choice).toEqual({ type: 'tool', name: 'json_response' })
    expect(sent().output_config).toBeUndefined()
    expect(json.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: '{"city":"x"}' } })
    expect(json.choices[0].message.tool_calls).toBeUndefined()
    expect((await logOf(res)).structuredOutput).toEqual({ parsed: true, matchesSchema: true })
  })

  test('tool strategy, streamed: the tool’s argument deltas are content deltas', async () => {
    const res = await gw.chat({ model: 'anthropic/claude-3-5-haiku-latest', messages: hello, output_schema: schema, stream: true })
    const chunks = (await readSse(res)).slice(0, -1) as Record<string, any>[]
    expect(chunks.filter((c) => c.choices[0]?.delta.content).length).toBeGreaterThan(1)
    expect(chunks.some((c) => c.choices[0]?.delta.tool_calls)).toBe(false)
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('{"city":"x"}')
    expect(chunks.flatMap((c) => c.choices.map((ch: any) => ch.finish_reason)).filter(Boolean)).toEqual(['stop'])
  })

  test('tool strategy with the client’s own tools: the model stays free to call them', async () => {
    const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } }]
    await chat({ model: 'anthropic/claude-3-5-haiku-latest', messages: hello, tools, output_schema: schema })
    expect(sent().tools.map((t: any) => t.name)).toEqual(['lookup', 'json_response'])
    expect(sent().tool_choice).toBeUndefined()
    expect(sent().system).toContain('json_response')
  })

  test('native strategy: objects closed, constraints Anthropic refuses moved into descriptions', async () => {
    const output_schema = {
      mode: 'json_schema',
      type: 'object',
      properties: {
        name: { type: 'string', maxLength: 20 },
        tags: { type: 'array', items: { type: 'object', properties: { v: { type: 'integer', minimum: 0 } } } },
      },
      required: ['name'],
    }
    await chat({ model: 'anthropic/claude-haiku-4-5', messages: hello, output_schema })
    expect(sent().output_config).toEqual({
      format: {
        type: 'json_schema',
        schema: {
          type: 'object',
          properties: {
            name: { type: 'string', description: '(maxLength: 20)' },
            tags: {
              type: 'array',
              items: { type: 'object', properties: { v: { type: 'integer', description: '(minimum: 0)' } }, additionalProperties: false },
            },
          },
          required: ['name'],
          additionalProperties: false,
        },
      },
    })
  })

  test('json_object on a model that refuses forced tools: an instruction, and the log says whether it parsed', async () => {
    const { res } = await chat({ model: 'anthropic/claude-sonnet-5-5', messages: hello, output_schema: { mode: 'json_object' } })
    expect(sent().system).toContain('JSON')
    expect(sent().tools).toBeUndefined()
    expect(sent().output_config).toBeUndefined()
    // The fake does not follow instructions: its plain-text answer is logged as not parsed.
    expect((await logOf(res)).structuredOutput).toEqual({ parsed: false, matchesSchema: null })
  })
})
