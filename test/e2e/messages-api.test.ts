// POST /v1/messages and /v1/messages/count_tokens through the official Anthropic SDK (and raw HTTP where
// bytes matter): Anthropic relayed untouched, OpenAI/Gemini/Mistral translated both ways, errors in
// Anthropic's shape, fallbacks, what reached each fake, and the log entry.

import Anthropic from '@anthropic-ai/sdk'
import { expect, test } from 'bun:test'
import { useAllProviders } from '../helpers/all-providers'
import type { TestGateway } from '../helpers/gateway'

let gw: TestGateway
let client: Anthropic
const { fakes } = useAllProviders((s) => {
  gw = s.gw
  client = new Anthropic({ baseURL: gw.url, apiKey: gw.key, maxRetries: 0 })
})

const user = (text: string) => ({ role: 'user' as const, content: text })

/** POST /v1/messages with the body text exactly as given. */
function post(path: string, text: string, headers: Record<string, string> = {}) {
  return fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'x-api-key': gw.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', ...headers },
    body: text,
  })
}

const weatherTool = {
  name: 'get_weather',
  description: 'Weather in a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
}

test('Anthropic: the body goes upstream byte-equal apart from the model, the answer comes back as sent', async () => {
  const text =
    '{"model":"anthropic/claude-sonnet-4-6","max_tokens":64,"system":[{"type":"text","text":"Be terse.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"Say hi please"}],"metadata":{"user_id":"u-1"}}'
  const res = await post('/v1/messages', text, { 'anthropic-beta': 'prompt-caching-2024-07-31' })
  expect(res.status).toBe(200)
  expect(res.headers.get('x-gw-auth-mode')).toBe('GwKey')
  expect(res.headers.get('x-gw-model')).toBe('anthropic/claude-sonnet-4-6')
  const body = (await res.json()) as Record<string, unknown>
  const rec = fakes.anthropic.requests[0]
  expect(rec?.text).toBe(text.replace('"anthropic/claude-sonnet-4-6"', '"claude-sonnet-4-6"'))
  expect(rec?.headers['anthropic-beta']).toBe('prompt-caching-2024-07-31')
  expect(rec?.headers['anthropic-version']).toBe('2023-06-01')
  expect(rec?.headers['x-api-key']).toBe(fakes.anthropic.apiKey)
  // Anthropic's own answer: its id and model, content blocks, usage with the cache fields.
  expect(String(body.id)).toStartWith('msg_01')
  expect(body.model).toBe('claude-sonnet-4-6')
  expect(body.content).toEqual([{ type: 'text', text: 'Hello from fake-anthropic (claude-sonnet-4-6).' }])
  expect(body.stop_reason).toBe('end_turn')
  // The fakes count 3 + words per message, the system prompt as one message: 5 + 6.
  expect(body.usage).toMatchObject({ input_tokens: 11, output_tokens: 4, cache_read_input_tokens: 0 })
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log).toMatchObject({ endpoint: '/v1/messages', model: 'anthropic/claude-sonnet-4-6', status: 200, metadata: {} })
  expect(log.usage).toMatchObject({ promptTokens: 11, completionTokens: 4 })
})

test('Anthropic stream: the events reach the client byte for byte, usage is read for the log', async () => {
  const events = [
    'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_01X","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_read_input_tokens":100,"cache_creation_input_tokens":0,"output_tokens":1}}}   \n\n',
    'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}\n\n',
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Hmm."}}\n\n',
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2lnbmF0dXJl"}}\n\n',
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    'event: ping\ndata: {"type": "ping"}\n\n',
    'event: content_block_start\ndata: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}\n\n',
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}\n\n',
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" there"}}\n\n',
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":1}\n\n',
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}\n\n',
    'event: message_stop\ndata: {"type":"message_stop"}\n\n',
  ]
  fakes.anthropic.enqueue({ kind: 'raw', status: 200, body: events })
  const res = await post('/v1/messages', JSON.stringify({ model: 'claude-sonnet-4-6', max_tokens: 64, stream: true, messages: [user('Hi')] }))
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toStartWith('text/event-stream')
  expect(await res.text()).toBe(events.join(''))
  expect(fakes.anthropic.requests[0]?.path).toBe('/v1/messages')
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log.usage).toMatchObject({ promptTokens: 112, completionTokens: 9, cachedTokens: 100, estimated: false })
  expect(log.stream).toBe(true)
  expect(log.responseBody).toMatchObject({ content: 'Hi there', finish_reason: 'stop' })
})

test('Anthropic through the SDK: create, stream helpers, a tool round with thinking blocks passed back', async () => {
  const msg = await client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 100, messages: [user('Say hi please')] })
  expect(msg.content[0]).toMatchObject({ type: 'text', text: 'Hello from fake-anthropic (claude-sonnet-4-6).' })

  const stream = client.messages.stream({ model: 'anthropic/claude-sonnet-4-6', max_tokens: 100, messages: [user('Say hi please')] })
  let streamed = ''
  stream.on('text', (t) => {
    streamed += t
  })
  const final = await stream.finalMessage()
  expect(streamed).toBe('Hello from fake-anthropic (claude-sonnet-4-6).')
  expect(final.stop_reason).toBe('end_turn')
  expect(final.usage.output_tokens).toBe(4)

  fakes.anthropic.enqueue({ kind: 'reply', toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }], finish: 'tool_calls' })
  const thinking = { type: 'enabled' as const, budget_tokens: 1024 }
  const first = await client.messages.create({
    model: 'claude-sonnet-4-6',
    max_tokens: 2048,
    thinking,
    tools: [weatherTool],
    messages: [user('Weather in Paris?')],
  })
  expect(first.stop_reason).toBe('tool_use')
  const call = first.content.find((b) => b.type === 'tool_use')
  expect(call).toMatchObject({ name: 'get_weather', input: { city: 'Paris' } })
  expect(first.content[0]?.type).toBe('thinking')
  const second = await client.messages.create({
    model: 'claude-sonnet-4-6',
    max_tokens: 2048,
    thinking,
    tools: [weatherTool],
    messages: [
      user('Weather in Paris?'),
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: (call as { id: string }).id, content: '14 °C' }] },
    ],
  })
  expect(second.stop_reason).toBe('end_turn')
  // The thinking block and its signature went back upstream exactly as Anthropic had given them.
  const sent = fakes.anthropic.requests.at(-1)?.body as { messages: { content: unknown }[] }
  expect(sent.messages[1]?.content).toEqual(JSON.parse(JSON.stringify(first.content)))
})

test('a Claude-Code-shaped request goes through untouched and its cache tokens are priced as reads and writes', async () => {
  fakes.anthropic.enqueue({ kind: 'reply', usage: { prompt: 30_000, cached: 20_000, cacheWrite: 8_000, completion: 50 } })
  const body = {
    model: 'claude-fable-5-2',
    max_tokens: 32000,
    system: [
      { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude.", cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'You are an interactive CLI tool that helps users with software engineering tasks.' },
      { type: 'text', text: 'Working directory: /repo', cache_control: { type: 'ephemeral' } },
    ],
    tools: [
      { name: 'Read', description: 'Reads a file', input_schema: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] } },
      { name: 'Bash', description: 'Runs a command', input_schema: { type: 'object', properties: { command: { type: 'string' } } }, cache_control: { type: 'ephemeral' } },
    ],
    thinking: { type: 'enabled', budget_tokens: 4096 },
    metadata: { user_id: 'user_abc_account__session_123' },
    messages: [
      { role: 'user', content: [{ type: 'text', text: '<system-reminder>context</system-reminder>' }, { type: 'text', text: 'fix the bug', cache_control: { type: 'ephemeral' } }] },
    ],
    stream: true,
  }
  const text = JSON.stringify(body)
  // Claude Code adds ?beta=true to its Messages calls.
  const res = await post('/v1/messages?beta=true', text, {
    'anthropic-version': '2023-06-01',
    'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14',
    authorization: `Bearer ${gw.key}`,
    'x-api-key': '',
  })
  expect(res.status).toBe(200)
  const sse = await res.text()
  expect(sse).toContain('event: message_stop')
  const rec = fakes.anthropic.requests[0]
  expect(rec?.text).toBe(text)
  expect(rec?.headers['anthropic-beta']).toBe('claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14')
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log.usage).toMatchObject({ promptTokens: 30_000, cachedTokens: 20_000 })
  // claude-fable-5-2: input 8, cached read 0.20, cache write 10, output 40 (USD per million tokens);
  // output includes the 6 thinking tokens of the fake's thinking block.
  const expected = (2_000 * 8 + 20_000 * 0.2 + 8_000 * 10 + 56 * 40) / 1e6
  expect(log.costUsd as number).toBeCloseTo(expected, 9)
})

for (const [provider, model] of [
  ['openai', 'openai/gpt-4o-mini'],
  ['google', 'google/gemini-2.5-flash'],
  ['mistral', 'mistral/mistral-small-latest'],
] as const) {
  test(`${provider}: translated both ways, non-stream and stream, through the SDK`, async () => {
    const msg = await client.messages.create({ model, max_tokens: 100, system: 'Be terse.', messages: [user('Say hi please')] })
    const id = model.split('/')[1]
    expect(msg.type).toBe('message')
    expect(msg.role).toBe('assistant')
    expect(msg.model).toBe(model)
    expect(msg.content as unknown[]).toEqual([{ type: 'text', text: `Hello from fake-${provider} (${id}).` }])
    expect(msg.stop_reason).toBe('end_turn')
    expect(msg.usage.output_tokens).toBe(4)
    expect(msg.usage.input_tokens).toBeGreaterThan(0)
    expect(fakes[provider].requests).toHaveLength(1)

    const stream = client.messages.stream({ model, max_tokens: 100, messages: [user('Say hi please')] })
    let streamed = ''
    stream.on('text', (t) => {
      streamed += t
    })
    const final = await stream.finalMessage()
    expect(streamed).toBe(`Hello from fake-${provider} (${id}).`)
    expect(final.content).toHaveLength(1)
    expect(final.content[0]).toMatchObject({ type: 'text', text: `Hello from fake-${provider} (${id}).` })
    expect(final.stop_reason).toBe('end_turn')
    // The final message_delta carries the provider's real counts (the fakes count 3 + words per message).
    expect(final.usage).toMatchObject({ input_tokens: 6, output_tokens: 4 })
  })

  test(`${provider}: a tool round trips as tool_use / tool_result, streamed and not`, async () => {
    fakes[provider].enqueue({ kind: 'reply', toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }], finish: 'tool_calls' })
    const first = await client.messages.create({ model, max_tokens: 200, tools: [weatherTool], messages: [user('Weather in Paris?')] })
    expect(first.stop_reason).toBe('tool_use')
    const call = first.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock
    expect(call).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } })

    fakes[provider].enqueue({ kind: 'reply', toolCalls: [{ name: 'get_weather', arguments: { city: 'Lyon' } }], finish: 'tool_calls' })
    const streamed = await client.messages
      .stream({ model, max_tokens: 200, tools: [weatherTool], messages: [user('Weather in Lyon?')] })
      .finalMessage()
    expect(streamed.stop_reason).toBe('tool_use')
    expect(streamed.content.find((b) => b.type === 'tool_use')).toMatchObject({ name: 'get_weather', input: { city: 'Lyon' } })

    const second = await client.messages.create({
      model,
      max_tokens: 200,
      tools: [weatherTool],
      messages: [
        user('Weather in Paris?'),
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '14 °C' }] },
      ],
    })
    expect(second.stop_reason).toBe('end_turn')
    expect(fakes[provider].requests).toHaveLength(3)
  })

  test(`${provider}: structured output through output_config.format`, async () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }
    const res = await post(
      '/v1/messages',
      JSON.stringify({ model, max_tokens: 100, messages: [user('A city as JSON')], output_config: { format: { type: 'json_schema', schema } } }),
    )
    expect(res.status).toBe(200)
    const body = (await res.json()) as { content: { type: string; text: string }[] }
    expect(JSON.parse(body.content[0]?.text ?? '')).toEqual({ city: 'x' })
  })
}

test('errors come in Anthropic’s shape with gw’s code and request id, and the SDK reads them', async () => {
  fakes.anthropic.enqueue({ kind: 'error', status: 529, errorType: 'overloaded' })
  const err = (await client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 10, messages: [user('Hi')] }).catch((e: unknown) => e)) as InstanceType<
    typeof Anthropic.APIError
  >
  expect(err).toBeInstanceOf(Anthropic.APIError)
  expect(err.status).toBe(502)
  const requestId = err.headers?.get('x-gw-request-id')
  expect(err.error).toMatchObject({ type: 'error', error: { type: 'api_error', code: 'provider_error' }, request_id: requestId })
  expect(err.message).toContain('overloaded')

  const unauth = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': 'gw_sk_nope' }, body: '{}' })
  expect(unauth.status).toBe(401)
  expect(await unauth.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error', code: 'unauthorized' } })

  const bad = await post('/v1/messages', JSON.stringify({ model: 'claude-sonnet-4-6', messages: [user('Hi')] }))
  expect(bad.status).toBe(400)
  const badBody = (await bad.json()) as { error: { type: string; message: string; code: string } }
  expect(badBody.error).toMatchObject({ type: 'invalid_request_error', code: 'gateway_error' })
  expect(badBody.error.message).toContain('max_tokens')
})

test('a fallback chain from a header: Anthropic overloaded → OpenAI, still answered in Anthropic form', async () => {
  fakes.anthropic.enqueue({ kind: 'error', status: 529, errorType: 'overloaded' })
  const res = await post('/v1/messages', JSON.stringify({ model: 'claude-sonnet-4-6', max_tokens: 50, stream: true, messages: [user('Say hi please')] }), {
    'x-gw-fallback-chain': JSON.stringify(['openai/gpt-4o-mini']),
    'x-gw-metadata': JSON.stringify({ team: 'core' }),
  })
  expect(res.status).toBe(200)
  expect(res.headers.get('x-gw-fallback-model')).toBe('openai/gpt-4o-mini')
  expect(res.headers.get('x-gw-fallback-reason')).toBe('provider_error')
  const sse = await res.text()
  const names = [...sse.matchAll(/^event: (\w+)$/gm)].map((m) => m[1])
  expect(names[0]).toBe('message_start')
  expect(names.at(-2)).toBe('message_delta')
  expect(names.at(-1)).toBe('message_stop')
  const sentToOpenAI = fakes.openai.requests[0]?.body as Record<string, unknown>
  expect(sentToOpenAI.model).toBe('gpt-4o-mini')
  expect(sentToOpenAI.messages).toEqual([{ role: 'user', content: 'Say hi please' }])
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log.metadata).toEqual({ team: 'core' })
  expect((log.attempts as unknown[]).length).toBe(2)
})

test('a stream that fails after its first byte ends with an Anthropic error event', async () => {
  fakes.openai.enqueue({ kind: 'error-event-after', events: 3, errorType: 'server' })
  const res = await post('/v1/messages', JSON.stringify({ model: 'openai/gpt-4o', max_tokens: 50, stream: true, messages: [user('Say hi please')] }))
  const sse = await res.text()
  expect(sse).toContain('event: error\ndata: {"type":"error","error":{"type":"api_error"')
  expect(sse).not.toContain('message_stop')
})

test('Anthropic stream failing mid-way: its own error event is relayed as it came, nothing added', async () => {
  fakes.anthropic.enqueue({ kind: 'error-event-after', events: 4, errorType: 'overloaded' })
  const res = await post('/v1/messages', JSON.stringify({ model: 'claude-sonnet-4-6', max_tokens: 50, stream: true, messages: [user('Say hi please')] }))
  const sse = await res.text()
  const events = sse.split('\n\n').filter(Boolean)
  expect(events.at(-1)).toStartWith('event: error\ndata: {"type":"error","error":{"details":null,"type":"overloaded_error"')
  expect(sse.match(/event: error/g)).toHaveLength(1)
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log).toMatchObject({ incomplete: true, errorCode: 'provider_error' })
})

test('count_tokens: Anthropic counts, other providers are estimated and say so', async () => {
  const body = { model: 'claude-sonnet-4-6', system: 'Be terse.', messages: [user('Say hi please')] }
  const counted = await client.messages.countTokens(body)
  expect(counted.input_tokens).toBe(11)
  expect(fakes.anthropic.requests[0]?.path).toBe('/v1/messages/count_tokens')
  expect(fakes.anthropic.requests[0]?.body).toEqual(body)

  const res = await post('/v1/messages/count_tokens', JSON.stringify({ ...body, model: 'openai/gpt-4o' }))
  expect(res.status).toBe(200)
  expect(res.headers.get('x-gw-estimated')).toBe('true')
  const est = (await res.json()) as { input_tokens: number }
  expect(est.input_tokens).toBeGreaterThan(5)
  expect(fakes.openai.requests).toHaveLength(0)
})

test('gw’s own body fields are taken off before the body goes to Anthropic; the rest stays byte for byte', async () => {
  const text = '{"model":"claude-sonnet-4-6","max_tokens":32,"messages":[{"role":"user","content":"Say hi please"}],"fallback_chain":[{"model":"openai/gpt-4o-mini"}],"prompt_id":"nope"}'
  const res = await post('/v1/messages', text)
  expect(res.status).toBe(200)
  expect(fakes.anthropic.requests[0]?.text).toBe('{"model":"claude-sonnet-4-6","max_tokens":32,"messages":[{"role":"user","content":"Say hi please"}]}')
})

test("the SDKs' request ids are gw's: Anthropic's request-id on /v1/messages (answers and errors), x-request-id on the OpenAI-shaped endpoints", async () => {
  const { data, response, request_id } = await client.messages.create({ model: 'claude-haiku-4-5', max_tokens: 20, messages: [user('Say hi please')] }).withResponse()
  expect(data.type).toBe('message')
  expect(request_id).toBe(response.headers.get('x-gw-request-id'))
  const err = (await client.messages.create({ model: 'nope/nothing', max_tokens: 20, messages: [user('x')] }).catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>
  expect(err.status).toBe(400)
  expect(err.requestID).toBe(err.headers?.get('x-gw-request-id') as string)
  const oai = await gw.fetch('/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'openai/gpt-4o', messages: [user('hi')] }) })
  expect(oai.headers.get('x-request-id')).toBe(oai.headers.get('x-gw-request-id'))
  expect(oai.headers.get('request-id')).toBeNull()
})

test('stop sequences past what the model takes (OpenAI 4, Gemini 5) are cut to the first ones, with a warning on the log entry', async () => {
  const stops = ['A1', 'B2', 'C3', 'D4', 'E5', 'F6']
  for (const [model, fake, field, most] of [
    ['openai/gpt-4o-mini', fakes.openai, 'stop', 4],
    ['google/gemini-2.5-flash', fakes.google, 'stopSequences', 5],
  ] as const) {
    const { response } = await client.messages.create({ model, max_tokens: 20, stop_sequences: [...stops], messages: [user('Say hi please')] }).withResponse()
    const sent = fake.requests.at(-1)?.body as Record<string, any>
    expect(field === 'stop' ? sent.stop : sent.generationConfig.stopSequences).toEqual(stops.slice(0, most))
    const entry = await gw.log(response.headers.get('x-gw-request-id') as string)
    expect(entry.warnings).toContainEqual({ type: 'param_clamped', setting: 'stop', detail: expect.stringContaining(`the first ${most} of 6 sequences kept`) })
  }
  // Anthropic itself takes them all.
  await client.messages.create({ model: 'anthropic/claude-haiku-4-5', max_tokens: 20, stop_sequences: [...stops], messages: [user('Say hi please')] })
  expect((fakes.anthropic.requests.at(-1)?.body as Record<string, any>).stop_sequences).toEqual(stops)
})

test("an image in a tool result reaches a model whose tool messages take text only: the text in the tool message, the image in the user message after it", async () => {
  const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='
  await client.messages.create({
    model: 'openai/gpt-4o-mini',
    max_tokens: 20,
    messages: [
      user('Look at the chart'),
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'chart', input: {} }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'here' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }] },
          { type: 'text', text: 'What does it show?' },
        ],
      },
    ],
  })
  const sent = (fakes.openai.requests.at(-1)?.body as { messages: Record<string, any>[] }).messages
  expect(sent.at(-2)).toMatchObject({ role: 'tool', tool_call_id: 'toolu_1', content: 'here' })
  expect(sent.at(-1)).toEqual({
    role: 'user',
    content: [
      { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
      { type: 'text', text: 'What does it show?' },
    ],
  })
})
