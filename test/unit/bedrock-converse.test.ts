// The Bedrock Converse adapter (src/providers/bedrock/) against the fake Bedrock over a real socket: signed requests, JSON, streams, errors.

import { afterAll, describe, expect, test } from 'bun:test'
import { failureClass, type StreamPart } from '../../src/providers/adapter'
import { parseBedrockError, parseConverse } from '../../src/providers/bedrock/converse'
import { ConverseStream, EventStreamEvents } from '../../src/providers/bedrock/converse-stream'
import { type BedrockAuth, bedrockRequest } from '../../src/providers/bedrock/request'
import type { ChatRequest } from '../../src/providers/openai-types'
import { startFakeBedrock } from '../fakes/bedrock'

const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'
const fake = startFakeBedrock({ region: 'us-east-1', keys: { AKIDEXAMPLE: { secretAccessKey: SECRET } }, apiKeys: ['bedrock-api-key-1'] })
afterAll(() => fake.stop())

const MODEL = 'anthropic.claude-3-5-sonnet-20240620-v1:0'
const good: BedrockAuth = { kind: 'sigv4', credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: SECRET } }

async function call(req: ChatRequest, stream = false, auth: BedrockAuth = good): Promise<Response> {
  const r = bedrockRequest(req, { region: 'us-east-1', baseUrl: fake.url, stream, auth }, Date.now())
  return fetch(r.url, { method: 'POST', headers: r.headers, body: r.body })
}

async function streamParts(res: Response): Promise<StreamPart[]> {
  const decoder = new EventStreamEvents()
  const tr = new ConverseStream()
  const parts: StreamPart[] = []
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) for (const f of decoder.push(chunk)) parts.push(...tr.push(f))
  for (const f of decoder.end()) parts.push(...tr.push(f))
  return [...parts, ...tr.end()]
}

const base: ChatRequest = {
  model: MODEL,
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Hi' },
  ],
  temperature: 0.3,
  top_p: 0.9,
  max_tokens: 50,
} as ChatRequest

describe('bedrock converse', () => {
  test('a signed Converse call: system, inferenceConfig, the model id in the path; the answer and usage in OpenAI terms', async () => {
    fake.plan({ kind: 'text', text: 'Hello there' })
    const res = await call(base)
    expect(res.status).toBe(200)
    const seen = fake.seen.at(-1)
    expect(seen?.modelId).toBe(MODEL)
    expect(seen?.signer).toBe('AKIDEXAMPLE')
    expect(seen?.body).toEqual({
      messages: [{ role: 'user', content: [{ text: 'Hi' }] }],
      system: [{ text: 'Be brief.' }],
      inferenceConfig: { maxTokens: 50, temperature: 0.3, topP: 0.9 },
    })
    const out = parseConverse(await res.json())
    expect(out.choices[0]?.message.content).toBe('Hello there')
    expect(out.choices[0]?.finish_reason).toBe('stop')
    expect(out.usage).toEqual({ prompt_tokens: 19, completion_tokens: 7, total_tokens: 26, prompt_tokens_details: { cached_tokens: 5, cache_write_tokens: 3 } })
  })

  test('tools: toolConfig sent, a toolUse answer becomes tool_calls, tool results go back as a user turn', async () => {
    fake.plan({ kind: 'tool', name: 'weather', input: { city: 'Paris' } })
    const req = {
      ...base,
      tools: [{ type: 'function', function: { name: 'weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
      tool_choice: 'required',
    } as ChatRequest
    const out = parseConverse(await (await call(req)).json())
    expect(fake.seen.at(-1)?.body.toolConfig).toEqual({
      tools: [{ toolSpec: { name: 'weather', description: 'Weather', inputSchema: { json: { type: 'object', properties: { city: { type: 'string' } } } } } }],
      toolChoice: { any: {} },
    })
    expect(out.choices[0]?.finish_reason).toBe('tool_calls')
    expect(out.choices[0]?.message.tool_calls).toEqual([{ id: 'tooluse_fake1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }])
    const next = {
      ...req,
      messages: [
        ...req.messages,
        { role: 'assistant', content: null, tool_calls: out.choices[0]?.message.tool_calls },
        { role: 'tool', tool_call_id: 'tooluse_fake1', content: 'Sunny' },
        { role: 'user', content: 'And tomorrow?' },
      ],
    } as ChatRequest
    const res = await call(next)
    expect(res.status).toBe(200)
    expect(fake.seen.at(-1)?.body.messages).toEqual([
      { role: 'user', content: [{ text: 'Hi' }] },
      { role: 'assistant', content: [{ toolUse: { toolUseId: 'tooluse_fake1', name: 'weather', input: { city: 'Paris' } } }] },
      { role: 'user', content: [{ toolResult: { toolUseId: 'tooluse_fake1', content: [{ text: 'Sunny' }] } }, { text: 'And tomorrow?' }] },
    ])
  })

  test("structured output beside the client's own tools: the JSON tool unforced, the system asks for it; its call is the answer, a client tool's call stays a call", async () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }
    const weather = { type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: {} } } }
    const req = { ...base, tools: [weather], response_format: { type: 'json_schema', json_schema: { name: 'out', schema } } } as ChatRequest
    fake.plan({ kind: 'tool', name: 'json_response', input: { city: 'Oslo' } }, { kind: 'tool', name: 'weather', input: {} })
    const answer = parseConverse(await (await call(req)).json(), true)
    const sent = fake.seen.at(-1)?.body as Record<string, any>
    expect(sent.toolConfig).toEqual({
      tools: [{ toolSpec: { name: 'weather', inputSchema: { json: { type: 'object', properties: {} } } } }, { toolSpec: { name: 'json_response', description: expect.any(String), inputSchema: { json: schema } } }],
      toolChoice: { auto: {} },
    })
    expect(sent.system).toContainEqual({ text: expect.stringContaining('json_response') })
    expect(answer.choices[0]).toMatchObject({ message: { content: '{"city":"Oslo"}' }, finish_reason: 'stop' })
    expect(answer.choices[0]?.message.tool_calls).toBeUndefined()
    const called = parseConverse(await (await call(req)).json(), true)
    expect(called.choices[0]?.finish_reason).toBe('tool_calls')
    expect(called.choices[0]?.message.tool_calls?.[0]?.function.name).toBe('weather')
  })

  test('an image as a data: URL becomes an image block', async () => {
    const req = { ...base, messages: [{ role: 'user', content: [{ type: 'text', text: 'What is it?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] }] } as ChatRequest
    expect((await call(req)).status).toBe(200)
    expect(fake.seen.at(-1)?.body.messages).toEqual([{ role: 'user', content: [{ text: 'What is it?' }, { image: { format: 'png', source: { bytes: 'iVBORw0KGgo=' } } }] }])
  })

  test('ConverseStream: text deltas, the finish reason, usage, then the end', async () => {
    fake.plan({ kind: 'text', text: 'one two three', stopReason: 'max_tokens' })
    const res = await call(base, true)
    expect(res.headers.get('content-type')).toBe('application/vnd.amazon.eventstream')
    expect(fake.seen.at(-1)?.stream).toBe(true)
    const parts = await streamParts(res)
    const text = parts.flatMap((p) => (p.type === 'choices' ? [p.choices[0]?.delta.content ?? ''] : [])).join('')
    expect(text).toBe('one two three')
    expect(parts.flatMap((p) => (p.type === 'choices' && p.choices[0]?.finish_reason ? [p.choices[0].finish_reason] : []))).toEqual(['length'])
    expect(parts.find((p) => p.type === 'usage')).toEqual({ type: 'usage', usage: { prompt_tokens: 19, completion_tokens: 7, total_tokens: 26, prompt_tokens_details: { cached_tokens: 5, cache_write_tokens: 3 } } })
    expect(parts.at(-1)).toEqual({ type: 'end' })
  })

  test('ConverseStream: a tool call streamed as tool-call deltas', async () => {
    fake.plan({ kind: 'tool', name: 'weather', input: { city: 'Oslo' } })
    const parts = await streamParts(await call(base, true))
    const calls = parts.flatMap((p) => (p.type === 'choices' ? (p.choices[0]?.delta.tool_calls ?? []) : []))
    expect(calls[0]).toEqual({ index: 0, id: 'tooluse_fake1', type: 'function', function: { name: 'weather', arguments: '' } })
    expect(calls.map((c) => c.function?.arguments ?? '').join('')).toBe('{"city":"Oslo"}')
    expect(parts.at(-1)).toEqual({ type: 'end' })
  })

  test('a throttlingException frame in the stream is a rate limit', async () => {
    fake.plan({ kind: 'stream-exception', type: 'throttlingException', message: 'Too many requests, please wait before trying again.' })
    const parts = await streamParts(await call(base, true))
    const f = parts.find((p) => p.type === 'failure')
    expect(f?.type === 'failure' && f.failure.kind).toBe('rate_limit')
    expect(parts.some((p) => p.type === 'end')).toBe(false)
  })

  test('errors as failure kinds: throttling, validation, context length, not ready, 5xx', async () => {
    const cases = [
      [429, 'ThrottlingException', 'Too many requests, please wait before trying again.', 'rate_limit', 'key'],
      [400, 'ValidationException', 'The provided request is not valid', 'provider_error', 'request'],
      [400, 'ValidationException', 'Input is too long for requested model.', 'context_limit', 'request'],
      [429, 'ModelNotReadyException', 'Model is not ready', 'provider_error', 'provider'],
      [503, 'ServiceUnavailableException', 'Service unavailable', 'provider_error', 'provider'],
      [500, 'InternalServerException', 'Internal error', 'provider_error', 'provider'],
    ] as const
    for (const [status, type, message, kind, cls] of cases) {
      fake.plan({ kind: 'error', status, type, message })
      const res = await call(base)
      expect(res.status).toBe(status)
      const f = parseBedrockError(res.status, await res.text(), res.headers)
      expect([type, f.kind, failureClass(f)]).toEqual([type, kind, cls])
      expect(f.message).toContain(message)
    }
  })

  test('a wrong secret: 403 InvalidSignatureException from the fake, a key failure, the secret nowhere in it', async () => {
    const wrong: BedrockAuth = { kind: 'sigv4', credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'not-the-secret-0123456789' } }
    const res = await call(base, false, wrong)
    expect(res.status).toBe(403)
    expect(res.headers.get('x-amzn-errortype')).toBe('InvalidSignatureException')
    const f = parseBedrockError(res.status, await res.text(), res.headers)
    expect(failureClass(f)).toBe('key')
    expect(JSON.stringify(f)).not.toContain('not-the-secret')
  })

  test('a Bedrock API key is sent as Bearer; an unknown one is a key failure', async () => {
    expect((await call(base, false, { kind: 'apiKey', apiKey: 'bedrock-api-key-1' })).status).toBe(200)
    expect(fake.seen.at(-1)?.signer).toBe('bearer')
    const res = await call(base, false, { kind: 'apiKey', apiKey: 'nope' })
    expect(res.status).toBe(403)
    expect(failureClass(parseBedrockError(res.status, await res.text(), res.headers))).toBe('key')
  })
})
