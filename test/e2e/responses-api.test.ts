// POST /v1/responses through the official OpenAI SDK (responses.create, responses.stream): OpenAI relayed
// untouched, Anthropic/Gemini/Mistral translated, tool rounds, structured output, previous_response_id
// from the log, errors in OpenAI's shape, fallbacks, what reached each fake, the log entry.

import { expect, test } from 'bun:test'
import OpenAI from 'openai'
import { useAllProviders } from '../helpers/all-providers'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let gw: TestGateway
let client: OpenAI
const { fakes } = useAllProviders((s) => {
  gw = s.gw
  client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
})

function post(text: string, headers: Record<string, string> = {}) {
  return gw.fetch('/v1/responses', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: text })
}

const weatherTool = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: true,
}

test('OpenAI: the body goes to /responses byte-equal apart from the model; the answer and stored state are OpenAI’s', async () => {
  const text = '{"model":"openai/gpt-4o-mini","input":"Say hi please","instructions":"Be terse.","metadata":{"k":"v"},"store":true}'
  const res = await post(text)
  expect(res.status).toBe(200)
  const body = (await res.json()) as { id: string; output: { content: { text: string }[] }[]; model: string }
  expect(fakes.openai.requests[0]?.path).toBe('/v1/responses')
  expect(fakes.openai.requests[0]?.text).toBe(text.replace('"openai/gpt-4o-mini"', '"gpt-4o-mini"'))
  expect(body.id).toStartWith('resp_')
  expect(body.model).toBe('gpt-4o-mini-2025-08-07')
  expect(body.output[0]?.content[0]?.text).toBe('Hello from fake-openai (gpt-4o-mini).')

  // OpenAI keeps the conversation: previous_response_id goes through as sent.
  const next = await client.responses.create({ model: 'openai/gpt-4o-mini', input: 'And again', previous_response_id: body.id })
  expect(next.output_text).toBe('Hello from fake-openai (gpt-4o-mini).')
  expect((fakes.openai.requests[1]?.body as Record<string, unknown>).previous_response_id).toBe(body.id)
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log).toMatchObject({ endpoint: '/v1/responses', model: 'openai/gpt-4o-mini', status: 200 })
  expect(log.usage).toMatchObject({ promptTokens: 11, completionTokens: 4, estimated: false })
})

test('OpenAI stream: events reach the client byte for byte; usage read from response.completed', async () => {
  const events = [
    'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}}\n\n',
    'event: response.output_item.added\ndata: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}\n\n',
    'event: response.content_part.added\ndata: {"type":"response.content_part.added","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}}\n\n',
    'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","obfuscation":"ab"}\n\n',
    'event: response.output_text.done\ndata: {"type":"response.output_text.done","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"text":"Hi"}\n\n',
    'event: response.completed\ndata: {"type":"response.completed","sequence_number":5,"response":{"id":"resp_1","object":"response","status":"completed","output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"Hi"}]}],"usage":{"input_tokens":21,"input_tokens_details":{"cached_tokens":5},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":23}}}\n\n',
  ]
  fakes.openai.enqueue({ kind: 'raw', status: 200, body: events })
  const res = await post(JSON.stringify({ model: 'openai/gpt-4o', input: 'Hi', stream: true }))
  expect(await res.text()).toBe(events.join(''))
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log.usage).toMatchObject({ promptTokens: 21, completionTokens: 2, cachedTokens: 5, estimated: false })
  expect(log.responseBody).toMatchObject({ content: 'Hi', finish_reason: 'stop' })

  const stream = client.responses.stream({ model: 'openai/gpt-4o-mini', input: 'Say hi please' })
  let streamed = ''
  stream.on('response.output_text.delta', (e) => {
    streamed += e.delta
  })
  const final = await stream.finalResponse()
  expect(streamed).toBe('Hello from fake-openai (gpt-4o-mini).')
  expect(final.output_text).toBe(streamed)
})

for (const [provider, model] of [
  ['anthropic', 'anthropic/claude-sonnet-4-6'],
  ['google', 'google/gemini-2.5-flash'],
  ['mistral', 'mistral/mistral-small-latest'],
] as const) {
  const id = model.split('/')[1]
  test(`${provider}: translated both ways, non-stream and stream, through the SDK`, async () => {
    const res = await client.responses.create({ model, instructions: 'Be terse.', input: 'Say hi please', max_output_tokens: 100 })
    expect(res.object).toBe('response')
    expect(res.status).toBe('completed')
    expect(res.id).toStartWith('resp_gw')
    expect(res.model).toBe(model)
    expect(res.output_text).toBe(`Hello from fake-${provider} (${id}).`)
    expect(res.usage).toMatchObject({ input_tokens: 11, output_tokens: 4, total_tokens: 15 })
    expect(fakes[provider].requests).toHaveLength(1)

    const stream = client.responses.stream({ model, input: 'Say hi please' })
    const types: string[] = []
    let streamed = ''
    stream.on('event', (e) => {
      types.push(e.type)
    })
    stream.on('response.output_text.delta', (e) => {
      streamed += e.delta
    })
    const final = await stream.finalResponse()
    expect(streamed).toBe(`Hello from fake-${provider} (${id}).`)
    expect(final.output_text).toBe(streamed)
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added'])
    expect(types.slice(-4)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed'])
    // response.completed carries the provider's real counts.
    expect(final.usage).toMatchObject({ input_tokens: 6, output_tokens: 4 })
  })

  test(`${provider}: a function-tool round and structured output`, async () => {
    fakes[provider].enqueue({ kind: 'reply', toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }], finish: 'tool_calls' })
    const first = await client.responses.create({ model, input: 'Weather in Paris?', tools: [weatherTool] })
    const call = first.output.find((o) => o.type === 'function_call')
    expect(call).toMatchObject({ type: 'function_call', name: 'get_weather', arguments: '{"city":"Paris"}' })

    fakes[provider].enqueue({ kind: 'reply', toolCalls: [{ name: 'get_weather', arguments: { city: 'Lyon' } }], finish: 'tool_calls' })
    const streamed = await client.responses.stream({ model, input: 'Weather in Lyon?', tools: [weatherTool] }).finalResponse()
    expect(streamed.output.find((o) => o.type === 'function_call')).toMatchObject({ name: 'get_weather', arguments: '{"city":"Lyon"}' })

    const second = await client.responses.create({
      model,
      tools: [weatherTool],
      input: [
        { role: 'user', content: 'Weather in Paris?' },
        call as OpenAI.Responses.ResponseFunctionToolCall,
        { type: 'function_call_output', call_id: (call as { call_id: string }).call_id, output: '14 °C' },
      ],
    })
    expect(second.output_text).toBe(`Hello from fake-${provider} (${id}).`)
    expect(fakes[provider].requests).toHaveLength(3)

    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }
    const structured = await client.responses.create({
      model,
      input: 'A city as JSON',
      text: { format: { type: 'json_schema', name: 'city', schema, strict: true } },
    })
    expect(JSON.parse(structured.output_text)).toEqual({ city: 'x' })
  })

  test(`${provider}: previous_response_id is answered from gw's log`, async () => {
    const first = await client.responses.create({ model, input: 'My name is Ada.' })
    // The second is streamed: its log entry holds the streamed transcript, which the third continues from.
    const second = await client.responses.stream({ model, input: 'What is my name?', previous_response_id: first.id }).finalResponse()
    expect(second.previous_response_id).toBe(first.id)
    const third = await client.responses.create({ model, input: 'Again?', previous_response_id: second.id })
    expect(third.output_text).toBe(`Hello from fake-${provider} (${id}).`)
    // The third request carried the whole conversation: both earlier inputs and answers, then the new input.
    const sent = JSON.stringify(fakes[provider].requests[2]?.body)
    for (const piece of ['My name is Ada.', 'What is my name?', 'Again?', `Hello from fake-${provider}`]) expect(sent).toContain(piece)
  })
}

test('an OpenAI conversation gw relayed continues on another provider from the log (JSON and streamed answers, right after them), and back on OpenAI as OpenAI keeps it', async () => {
  const res = await post(JSON.stringify({ model: 'openai/gpt-4o-mini', input: 'My name is Ada.' }))
  const first = (await res.json()) as { id: string }
  expect(first.id).toStartWith('resp_')
  expect(first.id).not.toStartWith('resp_gw')
  // The entry names OpenAI's id of the answer it relayed.
  expect(await gw.log(res.headers.get('x-gw-request-id') as string)).toMatchObject({ responseId: first.id })
  // Streamed, OpenAI continuing its own: relayed as sent.
  const second = await client.responses.stream({ model: 'openai/gpt-4o-mini', input: 'What is my name?', previous_response_id: first.id }).finalResponse()
  expect((fakes.openai.requests.at(-1)?.body as Record<string, unknown>).previous_response_id).toBe(first.id)
  // At once (the entries may not be written yet), on Anthropic: the whole conversation rebuilt from the log.
  const third = await client.responses.create({ model: 'anthropic/claude-sonnet-4-6', input: 'Again?', previous_response_id: second.id })
  expect(third.output_text).toBe('Hello from fake-anthropic (claude-sonnet-4-6).')
  const sent = JSON.stringify(fakes.anthropic.requests.at(-1)?.body)
  for (const piece of ['My name is Ada.', 'What is my name?', 'Again?', 'Hello from fake-openai']) expect(sent).toContain(piece)
  // And from the database, after the entries are written.
  await Bun.sleep(200)
  const fourth = await client.responses.create({ model: 'mistral/mistral-small-latest', input: 'Once more?', previous_response_id: second.id })
  expect(fourth.output_text).toBe('Hello from fake-mistral (mistral-small-latest).')
  expect(JSON.stringify(fakes.mistral.requests.at(-1)?.body)).toContain('My name is Ada.')
})

test('previous_response_id that cannot be continued is a 400 naming the field; OpenAI ids gw never relayed stay OpenAI’s', async () => {
  const err = await client.responses.create({ model: 'anthropic/claude-sonnet-4-6', input: 'x', previous_response_id: 'resp_abc' }).catch((e: unknown) => e)
  expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(400)
  expect((err as Error).message).toContain('previous_response_id')
  const missing = await post(JSON.stringify({ model: 'google/gemini-2.5-flash', input: 'x', previous_response_id: `resp_gw${'0'.repeat(32)}` }))
  expect(missing.status).toBe(400)
  expect(await missing.json()).toMatchObject({ error: { type: 'gateway_error', code: 'gateway_error' } })
  expect(fakes.anthropic.requests).toHaveLength(0)
})

test('errors come in OpenAI’s shape with gw’s code; the SDK shows the message', async () => {
  fakes.openai.enqueue({ kind: 'error', status: 500, errorType: 'server' })
  const err = (await client.responses.create({ model: 'openai/gpt-4o', input: 'x' }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>
  expect(err.status).toBe(502)
  expect(err.error).toMatchObject({ type: 'provider_error', code: 'provider_error' })
  expect(err.message).toContain('openai/gpt-4o')
  const unauth = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { authorization: 'Bearer gw_sk_nope' }, body: '{' })
  expect(unauth.status).toBe(401)
  expect(await unauth.json()).toMatchObject({ error: { type: 'unauthorized', code: 'unauthorized' } })
  const bad = await post(JSON.stringify({ model: 'openai/gpt-4o', input: 'x', temperature: 7 }))
  expect(bad.status).toBe(400)
  expect(((await bad.json()) as { error: { message: string } }).error.message).toContain('temperature')
})

test('a fallback chain from a header: OpenAI down → Anthropic, answered in Responses form, streamed', async () => {
  fakes.openai.enqueue({ kind: 'error', status: 503, errorType: 'unavailable' })
  const res = await post(JSON.stringify({ model: 'gpt-4o', input: 'Say hi please', stream: true }), {
    'x-gw-fallback-chain': '["anthropic/claude-sonnet-4-6"]',
  })
  expect(res.status).toBe(200)
  expect(res.headers.get('x-gw-fallback-model')).toBe('anthropic/claude-sonnet-4-6')
  const sse = await res.text()
  expect(sse).toContain('event: response.completed')
  expect(sse).toContain('"delta":" fake-anthropic"')
  const sent = fakes.anthropic.requests[0]?.body as Record<string, unknown>
  expect(sent.messages).toEqual([{ role: 'user', content: 'Say hi please' }])
})

test('a translated stream that fails after its first byte ends with an error event the SDK raises', async () => {
  fakes.mistral.enqueue({ kind: 'error-event-after', events: 2, errorType: 'server' })
  const stream = client.responses.stream({ model: 'mistral/mistral-small-latest', input: 'Say hi please' })
  await expect(stream.finalResponse()).rejects.toThrow()
})

test('with GW_LOG_BODIES=false a translated previous_response_id is a 400 naming the field', async () => {
  const quiet = await startTestGateway(fakes, { GW_LOG_BODIES: 'false' })
  try {
    const c = new OpenAI({ baseURL: `${quiet.url}/v1`, apiKey: quiet.key, maxRetries: 0 })
    const first = await c.responses.create({ model: 'google/gemini-2.5-flash', input: 'Hi' })
    const err = (await c.responses.create({ model: 'google/gemini-2.5-flash', input: 'Again', previous_response_id: first.id }).catch((e: unknown) => e)) as InstanceType<
      typeof OpenAI.APIError
    >
    expect(err.status).toBe(400)
    expect(err.message).toContain('previous_response_id')
    expect(err.message).toContain('GW_LOG_BODIES')
  } finally {
    await quiet.stop()
  }
})

test('OpenAI stream failing mid-way: its own error event is relayed as it came, nothing added; the log says incomplete', async () => {
  const events = [
    'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_2","status":"in_progress","output":[]}}\n\n',
    'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_2","output_index":0,"content_index":0,"delta":"Hi"}\n\n',
    'event: error\ndata: {"type":"error","sequence_number":2,"error":{"type":"server_error","code":"server_error","message":"boom","param":null}}\n\n',
  ]
  fakes.openai.enqueue({ kind: 'raw', status: 200, body: events })
  const res = await post(JSON.stringify({ model: 'openai/gpt-4o', input: 'Hi', stream: true }))
  expect(await res.text()).toBe(events.join(''))
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log).toMatchObject({ incomplete: true, errorCode: 'provider_error' })
})

test('an image in a function output reaches a translated model: the text in the tool result, the image after it in the same user turn', async () => {
  const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='
  await client.responses.create({
    model: 'anthropic/claude-sonnet-4-6',
    input: [
      { role: 'user', content: 'Look at the chart' },
      { type: 'function_call', call_id: 'call_1', name: 'chart', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_1', output: [{ type: 'input_text', text: 'see image' }, { type: 'input_image', image_url: `data:image/png;base64,${PNG}`, detail: 'auto' }] },
    ],
  })
  const last = (fakes.anthropic.requests.at(-1)?.body as { messages: { role: string; content: Record<string, any>[] }[] }).messages.at(-1)
  expect(last?.role).toBe('user')
  expect(last?.content[0]).toMatchObject({ type: 'tool_result', content: 'see image' })
  expect(last?.content[1]).toMatchObject({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } })
})
