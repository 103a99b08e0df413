// Chat completions through gw to a fake Gemini: key handling, generationConfig, thought signatures,
// prompt blocks, thinking tokens, SSE framing and content parts.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { type FakeUpstream, startFake } from '../fakes/upstream'
import { readSse, startTestGateway, type TestGateway } from '../helpers/gateway'
import { assertChatChunk, assertChatCompletion } from '../helpers/openai-schema'
import { signatureIn, TOOLS } from '../conformance/specs'

let google: FakeUpstream
let gw: TestGateway

beforeAll(async () => {
  google = await startFake('google')
  gw = await startTestGateway({ google })
})
afterAll(async () => {
  await gw.stop()
  await google.stop()
})
beforeEach(() => google.reset())

const hello = [{ role: 'user', content: 'Say hi please' }]
const sent = (i = 0) => google.requests[i]?.body as Record<string, any>
const logOf = (res: Response) => gw.log(res.headers.get('x-gw-request-id') as string)

async function chat(body: Record<string, unknown>) {
  const res = await gw.chat(body)
  const json = (await res.json()) as Record<string, any>
  if (res.status === 200) assertChatCompletion(json)
  return { res, json }
}

async function chunksOf(res: Response) {
  const events = await readSse(res)
  expect(events.at(-1)).toBe('[DONE]')
  const chunks = events.slice(0, -1) as Record<string, any>[]
  for (const c of chunks) assertChatChunk(c)
  return chunks
}

describe('request', () => {
  test('the key goes in x-goog-api-key, never in the URL; gemini/ is an alias', async () => {
    const { res } = await chat({ model: 'gemini/gemini-2.5-flash', messages: hello })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-gw-model')).toBe('google/gemini-2.5-flash')
    const req = google.requests[0]
    expect(req?.path).toBe('/v1beta/models/gemini-2.5-flash:generateContent')
    expect(req?.headers['x-goog-api-key']).toBe(google.apiKey)
    expect(req?.path).not.toContain(google.apiKey)
  })

  test('parameters go into generationConfig; nothing Gemini does not know is sent', async () => {
    const { res } = await chat({
      model: 'google/gemini-2.5-flash',
      messages: hello,
      max_tokens: 100,
      temperature: 1.7,
      top_p: 0.8,
      stop: ['END', 'STOP'],
      seed: 11,
      user: 'end-user-1',
      n: 1,
      presence_penalty: 0.2,
      logprobs: true,
      parallel_tool_calls: true,
      stream_options: { include_usage: true },
      metadata: { k: 'v' },
    })
    expect(res.status).toBe(200)
    expect(sent()).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'Say hi please' }] }],
      generationConfig: { maxOutputTokens: 100, temperature: 1.7, topP: 0.8, stopSequences: ['END', 'STOP'], seed: 11 },
    })
  })

  test('images: data URLs become inlineData, links fileData with a media type from the extension', async () => {
    const content = [
      { type: 'text', text: 'Compare' },
      { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/4AAQ' } },
      { type: 'image_url', image_url: { url: 'https://example.com/a/photo.webp?size=2' } },
    ]
    await chat({ model: 'google/gemini-2.5-flash', messages: [{ role: 'user', content }] })
    expect(sent().contents).toEqual([
      {
        role: 'user',
        parts: [
          { text: 'Compare' },
          { inlineData: { mimeType: 'image/jpeg', data: '/9j/4AAQ' } },
          { fileData: { mimeType: 'image/webp', fileUri: 'https://example.com/a/photo.webp?size=2' } },
        ],
      },
    ])
  })

  test('a JSON schema goes to responseJsonSchema as JSON Schema (additionalProperties kept)', async () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false }
    const { json } = await chat({
      model: 'google/gemini-2.5-flash',
      messages: hello,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema, strict: true } },
    })
    expect(sent().generationConfig).toEqual({ responseMimeType: 'application/json', responseJsonSchema: schema })
    expect(JSON.parse(json.choices[0].message.content)).toEqual({ a: 'x' })
  })
})

describe('tool calls and thought signatures', () => {
  const calls = [
    { name: 'get_weather', arguments: { city: 'Paris' } },
    { name: 'get_weather', arguments: { city: 'Rome' } },
  ]

  test('parallel calls: the signature rides on the first call’s id and goes back on that part only', async () => {
    google.enqueue({ kind: 'reply', toolCalls: calls })
    const first = await chat({ model: 'google/gemini-3-pro-preview', messages: hello, tools: TOOLS })
    expect(first.json.choices[0].finish_reason).toBe('tool_calls')
    const [a, b] = first.json.choices[0].message.tool_calls
    expect(a.id).toMatch(/^call_[A-Za-z0-9]{8}_ts_[A-Za-z0-9_-]+$/)
    expect(b.id).toMatch(/^call_[A-Za-z0-9]{8}$/)

    const { res } = await chat({
      model: 'google/gemini-3-pro-preview',
      messages: [
        ...hello,
        first.json.choices[0].message,
        { role: 'tool', tool_call_id: a.id, content: '14C' },
        { role: 'tool', tool_call_id: b.id, content: '{"temp_c":18}' },
      ],
      tools: TOOLS,
    })
    expect(res.status).toBe(200)
    expect(sent(1).contents.slice(1)).toEqual([
      {
        role: 'model',
        parts: [
          { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: signatureIn(a.id) },
          { functionCall: { name: 'get_weather', args: { city: 'Rome' } } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'get_weather', response: { output: '14C' } } },
          { functionResponse: { name: 'get_weather', response: { temp_c: 18 } } },
        ],
      },
    ])
  })

  test('streamed calls carry the signature in their id too', async () => {
    google.enqueue({ kind: 'reply', toolCalls: calls })
    const res = await gw.chat({ model: 'google/gemini-3-pro-preview', messages: hello, tools: TOOLS, stream: true })
    const deltas = (await chunksOf(res)).flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])
    expect(deltas.map((d: any) => d.index)).toEqual([0, 1])
    expect(deltas[0].id).toContain('_ts_')
    expect(deltas.map((d: any) => JSON.parse(d.function.arguments))).toEqual([{ city: 'Paris' }, { city: 'Rome' }])
  })

  test('calls Gemini did not make get Google’s stand-in signature on Gemini 3, nothing on 2.x', async () => {
    const history = [
      ...hello,
      { role: 'assistant', content: null, tool_calls: [{ id: 'toolu_01abc', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', tool_call_id: 'toolu_01abc', content: 'cold' },
    ]
    const g3 = await chat({ model: 'google/gemini-3-pro-preview', messages: history, tools: TOOLS })
    const g2 = await chat({ model: 'google/gemini-2.5-flash', messages: history, tools: TOOLS })
    expect(g3.res.status).toBe(200)
    expect(g2.res.status).toBe(200)
    expect(sent(0).contents[1].parts[0].thoughtSignature).toBe('skip_thought_signature_validator')
    expect(sent(1).contents[1].parts[0].thoughtSignature).toBeUndefined()
  })
})

describe('answers', () => {
  test('thinking tokens count as completion tokens and are reported as reasoning', async () => {
    google.enqueue({ kind: 'reply', usage: { prompt: 10, completion: 5, thinking: 20, cached: 4 } })
    const { res, json } = await chat({ model: 'google/gemini-2.5-flash', messages: hello })
    expect(json.usage).toEqual({
      prompt_tokens: 10,
      completion_tokens: 25,
      total_tokens: 35,
      prompt_tokens_details: { cached_tokens: 4 },
      completion_tokens_details: { reasoning_tokens: 20 },
      // gemini-2.5-flash: $0.30 / 1M input, $0.03 cached, $2.50 output (thinking billed as output).
      cost_usd: expect.closeTo((6 * 0.3 + 4 * 0.03 + 25 * 2.5) / 1e6, 12),
    })
    expect((await logOf(res)).usage).toMatchObject({ promptTokens: 10, completionTokens: 25, cachedTokens: 4 })
  })

  test('a stream takes the last usageMetadata, not a sum of them', async () => {
    google.enqueue({ kind: 'reply', usage: { prompt: 10, completion: 5, thinking: 20 } })
    const res = await gw.chat({ model: 'google/gemini-2.5-flash', messages: hello, stream: true })
    const chunks = await chunksOf(res)
    expect(chunks.at(-1)?.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 25, total_tokens: 35 })
  })

  test('a blocked prompt: content_filter, an explanation as refusal, a refusal on the log', async () => {
    google.enqueue({ kind: 'reply', finish: 'content_filter' }, { kind: 'reply', finish: 'content_filter' })
    const { res, json } = await chat({ model: 'google/gemini-2.5-flash', messages: hello })
    expect(json.choices[0]).toMatchObject({
      finish_reason: 'content_filter',
      message: { content: null, refusal: expect.stringContaining('blockReason: SAFETY') },
    })
    expect((await logOf(res)).refusal).toBe(true)

    const streamed = await gw.chat({ model: 'google/gemini-2.5-flash', messages: hello, stream: true })
    const chunks = await chunksOf(streamed)
    expect(chunks.flatMap((c) => c.choices.map((ch: any) => ch.finish_reason)).filter(Boolean)).toEqual(['content_filter'])
    expect((await logOf(streamed)).refusal).toBe(true)
  })

  test('SSE events separated by LF work as well as CRLF, and the gateway still ends with [DONE]', async () => {
    const chunk = (text: string, finish?: string) =>
      `data: ${JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text }] }, ...(finish ? { finishReason: finish } : {}) }], modelVersion: 'gemini-2.5-flash' })}\n\n`
    google.enqueue({ kind: 'raw', status: 200, body: [chunk('Hello'), chunk(' there', 'STOP')] })
    const res = await gw.chat({ model: 'google/gemini-2.5-flash', messages: hello, stream: true })
    const chunks = await chunksOf(res)
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Hello there')
    // No usageMetadata upstream: the usage chunk is there, estimated.
    expect(chunks.at(-1)?.usage).toMatchObject({ total_tokens: expect.any(Number) })
    expect((await logOf(res)).usage).toMatchObject({ estimated: true })
  })

  test('a 429 waits for RetryInfo.retryDelay before this model is tried again', async () => {
    google.enqueue({ kind: 'error', status: 429, retryAfter: '30' })
    const first = await gw.chat({ model: 'google/gemini-2.0-flash', messages: hello })
    expect(first.status).toBe(502)
    expect(first.headers.get('retry-after')).toBe('30')
    const second = await gw.chat({ model: 'google/gemini-2.0-flash', messages: hello })
    expect(second.status).toBe(502)
    expect(google.requests).toHaveLength(1)
  })
})
