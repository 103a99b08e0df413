// Tests for the fake upstream servers: each fake is exercised directly over HTTP for replies, native streams, auth, validation, errors and broken connections.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { startFake, type FakeProvider, type FakeUpstream } from './upstream.ts'

type Obj = Record<string, unknown>

interface SseEvent {
  event: string | undefined
  data: string
}

/** Split raw SSE text into events (LF or CRLF framing). */
function parseSse(raw: string): SseEvent[] {
  return raw
    .split(/\r?\n\r?\n/)
    .filter((block) => block.trim().length > 0)
    .map((block) => {
      let event: string | undefined
      const data: string[] = []
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith('event:')) event = line.slice(6).trim()
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''))
      }
      return { event, data: data.join('\n') }
    })
}

const json = (s: string): Obj => JSON.parse(s) as Obj
const get = (v: unknown, ...path: (string | number)[]): unknown => {
  let cur = v
  for (const k of path) cur = cur === null || cur === undefined ? undefined : (cur as Record<string | number, unknown>)[k]
  return cur
}

interface Case {
  provider: FakeProvider
  model: string
  /** Send a request the way the gateway would; `body` replaces the default valid body. */
  send(f: FakeUpstream, o?: { stream?: boolean; key?: string; body?: Obj; signal?: AbortSignal; extraHeaders?: Record<string, string> }): Promise<Response>
  /** Text of a non-streaming reply. */
  text(body: Obj): string
  /** Concatenated text of a stream. */
  streamText(events: SseEvent[]): string
  /** Expected prompt tokens for the default body ("Say hi please": 3 words + 3). */
  promptTokens: number
  invalid: { body: Obj; status: number; check(body: Obj): void }
  authStatus: number
  checkAuth(body: Obj): void
}

const USER_TEXT = 'Say hi please'

const chatText = (events: SseEvent[]): string =>
  events
    .filter((e) => e.data !== '[DONE]')
    .map((e) => get(json(e.data), 'choices', 0, 'delta', 'content'))
    .filter((c): c is string => typeof c === 'string')
    .join('')

const cases: Case[] = [
  {
    provider: 'openai',
    model: 'gpt-4o',
    send: (f, o = {}) =>
      fetch(`${f.url}/chat/completions`, {
        method: 'POST',
        signal: o.signal,
        headers: { authorization: `Bearer ${o.key ?? f.apiKey}`, 'content-type': 'application/json', ...o.extraHeaders },
        body: JSON.stringify(
          o.body ?? {
            model: 'gpt-4o',
            messages: [{ role: 'user', content: USER_TEXT }],
            ...(o.stream ? { stream: true, stream_options: { include_usage: true } } : {}),
          },
        ),
      }),
    text: (b) => get(b, 'choices', 0, 'message', 'content') as string,
    streamText: chatText,
    promptTokens: 6,
    invalid: {
      body: { model: 'o3', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] },
      status: 400,
      check: (b) =>
        expect(b).toEqual({
          error: {
            message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            type: 'invalid_request_error',
            param: 'max_tokens',
            code: 'unsupported_parameter',
          },
        }),
    },
    authStatus: 401,
    checkAuth: (b) => {
      expect(get(b, 'error', 'code')).toBe('invalid_api_key')
      expect(get(b, 'error', 'type')).toBe('invalid_request_error')
    },
  },
  {
    provider: 'anthropic',
    model: 'claude-sonnet-4-5',
    send: (f, o = {}) =>
      fetch(`${f.url}/messages`, {
        method: 'POST',
        signal: o.signal,
        headers: { 'x-api-key': o.key ?? f.apiKey, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', ...o.extraHeaders },
        body: JSON.stringify(
          o.body ?? { model: 'claude-sonnet-4-5', max_tokens: 1024, messages: [{ role: 'user', content: USER_TEXT }], ...(o.stream ? { stream: true } : {}) },
        ),
      }),
    text: (b) => get(b, 'content', 0, 'text') as string,
    streamText: (events) =>
      events
        .map((e) => get(json(e.data), 'delta', 'text'))
        .filter((c): c is string => typeof c === 'string')
        .join(''),
    promptTokens: 6,
    invalid: {
      body: { model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'hi' }] },
      status: 400,
      check: (b) => {
        expect(b.type).toBe('error')
        expect(get(b, 'error', 'type')).toBe('invalid_request_error')
        expect(get(b, 'error', 'message')).toBe('max_tokens: Field required')
      },
    },
    authStatus: 401,
    checkAuth: (b) => {
      expect(b.type).toBe('error')
      expect(get(b, 'error', 'type')).toBe('authentication_error')
    },
  },
  {
    provider: 'google',
    model: 'gemini-2.5-flash',
    send: (f, o = {}) =>
      fetch(`${f.url}/models/gemini-2.5-flash:${o.stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`, {
        method: 'POST',
        signal: o.signal,
        headers: { 'x-goog-api-key': o.key ?? f.apiKey, 'content-type': 'application/json', ...o.extraHeaders },
        body: JSON.stringify(o.body ?? { contents: [{ role: 'user', parts: [{ text: USER_TEXT }] }] }),
      }),
    text: (b) => get(b, 'candidates', 0, 'content', 'parts', 0, 'text') as string,
    streamText: (events) =>
      events
        .map((e) => get(json(e.data), 'candidates', 0, 'content', 'parts', 0, 'text'))
        .filter((c): c is string => typeof c === 'string')
        .join(''),
    promptTokens: 6,
    invalid: {
      body: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig: { max_tokens: 5 } },
      status: 400,
      check: (b) => {
        expect(get(b, 'error', 'code')).toBe(400)
        expect(get(b, 'error', 'status')).toBe('INVALID_ARGUMENT')
        expect(get(b, 'error', 'message')).toBe(
          `Invalid JSON payload received. Unknown name "max_tokens" at 'generation_config': Cannot find field.`,
        )
      },
    },
    authStatus: 400,
    checkAuth: (b) => {
      expect(get(b, 'error', 'status')).toBe('INVALID_ARGUMENT')
      expect(get(b, 'error', 'details', 0, 'reason')).toBe('API_KEY_INVALID')
    },
  },
  {
    provider: 'mistral',
    model: 'mistral-small-latest',
    send: (f, o = {}) =>
      fetch(`${f.url}/chat/completions`, {
        method: 'POST',
        signal: o.signal,
        headers: { authorization: `Bearer ${o.key ?? f.apiKey}`, 'content-type': 'application/json', ...o.extraHeaders },
        body: JSON.stringify(
          o.body ?? { model: 'mistral-small-latest', messages: [{ role: 'user', content: USER_TEXT }], ...(o.stream ? { stream: true } : {}) },
        ),
      }),
    text: (b) => get(b, 'choices', 0, 'message', 'content') as string,
    streamText: chatText,
    promptTokens: 6,
    invalid: {
      body: { model: 'mistral-small-latest', messages: [{ role: 'user', content: 'hi' }], user: 'u-1' },
      status: 422,
      check: (b) =>
        expect(b).toEqual({
          object: 'error',
          message: { detail: [{ type: 'extra_forbidden', loc: ['body', 'user'], msg: 'Extra inputs are not permitted', input: 'u-1' }] },
          type: 'invalid_request_error',
          param: null,
          code: null,
        }),
    },
    authStatus: 401,
    checkAuth: (b) => expect(b.message).toBe('Unauthorized'),
  },
]

describe.each(cases)('fake $provider', (c) => {
  let f: FakeUpstream
  beforeAll(async () => {
    f = await startFake(c.provider)
  })
  afterAll(async () => {
    await f.stop()
  })
  beforeEach(() => f.reset())

  const defaultText = `Hello from fake-${c.provider} (${c.model}).`

  test('normal JSON reply with request-derived text and usage', async () => {
    const res = await c.send(f)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toStartWith('application/json')
    const body = json(await res.text())
    expect(c.text(body)).toBe(defaultText)
    const usage: Record<FakeProvider, [unknown, unknown]> = {
      openai: [get(body, 'usage', 'prompt_tokens'), get(body, 'usage', 'completion_tokens')],
      mistral: [get(body, 'usage', 'prompt_tokens'), get(body, 'usage', 'completion_tokens')],
      anthropic: [get(body, 'usage', 'input_tokens'), get(body, 'usage', 'output_tokens')],
      google: [get(body, 'usageMetadata', 'promptTokenCount'), get(body, 'usageMetadata', 'candidatesTokenCount')],
    }
    expect(usage[c.provider]).toEqual([c.promptTokens, 4])
    expect(f.requests).toHaveLength(1)
    expect(f.requests[0]?.method).toBe('POST')
    expect(f.requests[0]?.aborted).toBe(false)
    expect(typeof f.requests[0]?.body).toBe('object')
    if (c.provider === 'openai') expect(res.headers.get('x-request-id')).toStartWith('req_')
    if (c.provider === 'anthropic') expect(res.headers.get('request-id')).toStartWith('req_')
  })

  test('stream follows the native event order, framing and usage placement', async () => {
    const res = await c.send(f, { stream: true })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toStartWith('text/event-stream')
    const raw = await res.text()
    const events = parseSse(raw)
    expect(c.streamText(events)).toBe(defaultText)
    switch (c.provider) {
      case 'openai': {
        expect(events.at(-1)?.data).toBe('[DONE]')
        const chunks = events.slice(0, -1).map((e) => json(e.data))
        expect(get(chunks[0], 'choices', 0, 'delta')).toEqual({ role: 'assistant', content: '', refusal: null })
        const finishIdx = chunks.findIndex((ch) => get(ch, 'choices', 0, 'finish_reason') === 'stop')
        expect(get(chunks[finishIdx], 'choices', 0, 'delta')).toEqual({})
        // include_usage: every chunk has usage null except one last choices: [] chunk.
        expect(finishIdx).toBe(chunks.length - 2)
        for (const ch of chunks.slice(0, -1)) expect(ch.usage).toBeNull()
        const last = chunks.at(-1)
        expect(get(last, 'choices')).toEqual([])
        expect(get(last, 'usage', 'prompt_tokens')).toBe(6)
        expect(get(last, 'usage', 'completion_tokens')).toBe(4)
        expect(get(last, 'usage', 'total_tokens')).toBe(10)
        expect(new Set(chunks.map((ch) => ch.id)).size).toBe(1)
        expect(chunks.every((ch) => ch.object === 'chat.completion.chunk')).toBe(true)
        break
      }
      case 'anthropic': {
        expect(raw).not.toContain('[DONE]')
        expect(events.map((e) => e.event)).toEqual([
          'message_start',
          'content_block_start',
          'ping',
          'content_block_delta',
          'content_block_delta',
          'content_block_delta',
          'content_block_delta',
          'content_block_stop',
          'message_delta',
          'message_stop',
        ])
        for (const e of events) expect(get(json(e.data), 'type')).toBe(e.event)
        const start = json(events[0]?.data ?? '{}')
        expect(get(start, 'message', 'usage', 'input_tokens')).toBe(6)
        expect(get(start, 'message', 'usage', 'output_tokens')).toBe(1)
        const delta = json(events[8]?.data ?? '{}')
        expect(get(delta, 'delta', 'stop_reason')).toBe('end_turn')
        expect(get(delta, 'usage', 'output_tokens')).toBe(4)
        break
      }
      case 'google': {
        expect(raw).not.toContain('[DONE]')
        expect(raw.endsWith('\r\n\r\n')).toBe(true)
        expect(raw.split('\r\n\r\n').filter(Boolean)).toHaveLength(events.length)
        const chunks = events.map((e) => json(e.data))
        for (const ch of chunks) expect(get(ch, 'usageMetadata', 'promptTokenCount')).toBe(6)
        expect(chunks.slice(0, -1).every((ch) => get(ch, 'candidates', 0, 'finishReason') === undefined)).toBe(true)
        const last = chunks.at(-1)
        expect(get(last, 'candidates', 0, 'finishReason')).toBe('STOP')
        expect(get(last, 'usageMetadata', 'candidatesTokenCount')).toBe(4)
        expect(get(last, 'usageMetadata', 'totalTokenCount')).toBe(10)
        break
      }
      case 'mistral': {
        expect(events.at(-1)?.data).toBe('[DONE]')
        const chunks = events.slice(0, -1).map((e) => json(e.data))
        expect(get(chunks[0], 'choices', 0, 'delta')).toEqual({ role: 'assistant', content: '' })
        const last = chunks.at(-1)
        expect(get(last, 'choices', 0, 'finish_reason')).toBe('stop')
        expect(get(last, 'choices', 0, 'delta', 'content')).toBe(' (mistral-small-latest).')
        expect(get(last, 'usage')).toEqual({ prompt_tokens: 6, total_tokens: 10, completion_tokens: 4, prompt_tokens_details: { cached_tokens: 0 } })
        for (const ch of chunks.slice(0, -1)) expect(ch.usage).toBeUndefined()
        expect(chunks.some((ch) => Array.isArray(ch.choices) && ch.choices.length === 0)).toBe(false)
        break
      }
    }
  })

  test('wrong API key gets the native auth error', async () => {
    const res = await c.send(f, { key: 'wrong-key' })
    expect(res.status).toBe(c.authStatus)
    c.checkAuth(json(await res.text()))
  })

  test('invalid request gets the native validation error', async () => {
    const res = await c.send(f, { body: c.invalid.body })
    expect(res.status).toBe(c.invalid.status)
    c.invalid.check(json(await res.text()))
  })

  test('queued rate-limit error with retry-after, then the default reply again', async () => {
    f.enqueue({ kind: 'error', status: 429, errorType: 'rate_limit', retryAfter: '7' })
    const res = await c.send(f)
    expect(res.status).toBe(429)
    const body = json(await res.text())
    switch (c.provider) {
      case 'openai':
        expect(res.headers.get('retry-after')).toBe('7')
        expect(get(body, 'error', 'code')).toBe('rate_limit_exceeded')
        break
      case 'anthropic':
        expect(res.headers.get('retry-after')).toBe('7')
        expect(get(body, 'error', 'type')).toBe('rate_limit_error')
        expect(typeof body.request_id).toBe('string')
        break
      case 'google': {
        expect(res.headers.get('retry-after')).toBeNull()
        expect(get(body, 'error', 'status')).toBe('RESOURCE_EXHAUSTED')
        const details = get(body, 'error', 'details') as Obj[]
        expect(details.map((d) => d['@type'])).toContain('type.googleapis.com/google.rpc.QuotaFailure')
        expect(details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.RetryInfo')?.retryDelay).toBe('7s')
        break
      }
      case 'mistral':
        expect(res.headers.get('retry-after')).toBe('7')
        expect(body.object).toBe('error')
        expect(body.type).toBe('rate_limited')
        break
    }
    const again = await c.send(f)
    expect(again.status).toBe(200)
    await again.text()
  })

  test('stall-headers keeps the request open until the client aborts', async () => {
    f.enqueue({ kind: 'stall-headers' })
    const ac = new AbortController()
    const pending = c.send(f, { stream: true, signal: ac.signal }).then(
      () => 'answered',
      () => 'aborted',
    )
    const started = Date.now()
    while (f.requests.length === 0 && Date.now() - started < 2000) await Bun.sleep(5)
    await Bun.sleep(50)
    expect(f.requests[0]?.aborted).toBe(false)
    ac.abort()
    expect(await pending).toBe('aborted')
    expect(await f.waitForAbort(0, 2000)).toBe(true)
  })

  test('stall-after sends N events, then silence until the client aborts', async () => {
    f.enqueue({ kind: 'stall-after', events: 2 })
    const ac = new AbortController()
    const res = await c.send(f, { stream: true, signal: ac.signal })
    expect(res.status).toBe(200)
    const reader = res.body?.getReader()
    if (!reader) throw new Error('no body')
    let got = ''
    const decoder = new TextDecoder()
    while (parseSse(got).length < 2) {
      const { value, done } = await reader.read()
      if (done) throw new Error('stream ended early')
      got += decoder.decode(value)
    }
    expect(parseSse(got)).toHaveLength(2)
    ac.abort()
    await reader.read().catch(() => undefined)
    expect(await f.waitForAbort(0, 2000)).toBe(true)
  })

  test('cut-after closes the stream after N events without the end marker', async () => {
    f.enqueue({ kind: 'cut-after', events: 2 })
    const res = await c.send(f, { stream: true })
    expect(res.status).toBe(200)
    const raw = await res.text()
    const events = parseSse(raw)
    expect(events).toHaveLength(2)
    expect(raw).not.toContain('[DONE]')
    expect(raw).not.toContain('message_stop')
    expect(raw).not.toContain('finishReason')
    expect(f.requests[0]?.aborted).toBe(false)
  })

  test('error-event-after sends N events then the native mid-stream error', async () => {
    f.enqueue({ kind: 'error-event-after', events: 2, errorType: 'overloaded' })
    const res = await c.send(f, { stream: true })
    expect(res.status).toBe(200)
    const events = parseSse(await res.text())
    expect(events).toHaveLength(3)
    const last = events[2]
    if (!last) throw new Error('missing error event')
    const err = json(last.data)
    switch (c.provider) {
      case 'anthropic':
        expect(last.event).toBe('error')
        expect(err.type).toBe('error')
        expect(get(err, 'error', 'type')).toBe('overloaded_error')
        break
      case 'google':
        expect(get(err, 'error', 'code')).toBe(503)
        expect(get(err, 'error', 'status')).toBe('UNAVAILABLE')
        break
      default:
        expect(last.event).toBeUndefined()
        expect(typeof get(err, 'error', 'message')).toBe('string')
    }
  })

  test('malformed-after injects one broken data line and then finishes normally', async () => {
    f.enqueue({ kind: 'malformed-after', events: 1 })
    const res = await c.send(f, { stream: true })
    const events = parseSse(await res.text())
    expect(events[1]?.data).toBe('{not json')
    expect(c.streamText([...events.slice(0, 1), ...events.slice(2)])).toBe(defaultText)
  })

  test('reset drops the connection before any byte', async () => {
    f.enqueue({ kind: 'reset' })
    expect(await c.send(f).then(() => 'answered', () => 'failed')).toBe('failed')
  })

  test('raw writes exact bytes', async () => {
    f.enqueue({ kind: 'raw', status: 502, headers: { 'content-type': 'text/html' }, body: ['<html>', 'Bad gateway</html>'] })
    const res = await c.send(f)
    expect(res.status).toBe(502)
    expect(res.headers.get('content-type')).toBe('text/html')
    expect(await res.text()).toBe('<html>Bad gateway</html>')
  })

  test('tool calls come back natively', async () => {
    f.enqueue({ kind: 'reply', toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] })
    const res = await c.send(f)
    const body = json(await res.text())
    switch (c.provider) {
      case 'openai':
        expect(get(body, 'choices', 0, 'finish_reason')).toBe('tool_calls')
        expect(get(body, 'choices', 0, 'message', 'content')).toBeNull()
        expect(get(body, 'choices', 0, 'message', 'tool_calls', 0, 'id')).toMatch(/^call_/)
        expect(get(body, 'choices', 0, 'message', 'tool_calls', 0, 'function', 'arguments')).toBe('{"city":"Paris"}')
        break
      case 'mistral':
        expect(get(body, 'choices', 0, 'finish_reason')).toBe('tool_calls')
        expect(get(body, 'choices', 0, 'message', 'tool_calls', 0, 'id')).toMatch(/^[a-zA-Z0-9]{9}$/)
        break
      case 'anthropic':
        expect(body.stop_reason).toBe('tool_use')
        expect(get(body, 'content', 0)).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } })
        break
      case 'google':
        expect(get(body, 'candidates', 0, 'finishReason')).toBe('STOP')
        expect(get(body, 'candidates', 0, 'content', 'parts', 0, 'functionCall')).toEqual({ name: 'get_weather', args: { city: 'Paris' } })
        expect(typeof get(body, 'candidates', 0, 'content', 'parts', 0, 'thoughtSignature')).toBe('string')
        break
    }
  })

  test('unknown path gets the native 404', async () => {
    const res = await fetch(`${f.url}/nope`, { method: 'POST', body: '{}' })
    expect(res.status).toBe(404)
    await res.text()
  })
})

describe('provider-specific details', () => {
  const fakes: Partial<Record<FakeProvider, FakeUpstream>> = {}
  beforeAll(async () => {
    for (const p of ['openai', 'anthropic', 'google', 'mistral'] as const) fakes[p] = await startFake(p)
  })
  afterAll(async () => {
    for (const f of Object.values(fakes)) await f.stop()
  })
  const fake = (p: FakeProvider): FakeUpstream => {
    const f = fakes[p]
    if (!f) throw new Error('fake not started')
    f.reset()
    return f
  }
  const post = (url: string, headers: Record<string, string>, body: unknown): Promise<Response> =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })

  test('openai: temperature on reasoning models, stream_options without stream, tool-call pairing', async () => {
    const f = fake('openai')
    const h = { authorization: `Bearer ${f.apiKey}` }
    const msgs = [{ role: 'user', content: 'hi' }]
    let r = await post(`${f.url}/chat/completions`, h, { model: 'gpt-5-mini', temperature: 0.7, messages: msgs })
    expect(r.status).toBe(400)
    expect(get(json(await r.text()), 'error', 'code')).toBe('unsupported_value')
    r = await post(`${f.url}/chat/completions`, h, { model: 'gpt-5-chat-latest', temperature: 0.7, max_tokens: 50, messages: msgs })
    expect(r.status).toBe(200)
    await r.text()
    r = await post(`${f.url}/chat/completions`, h, { model: 'gpt-4o', stream_options: { include_usage: true }, messages: msgs })
    expect(r.status).toBe(400)
    await r.text()
    r = await post(`${f.url}/chat/completions`, h, { model: 'gpt-4o', temperature: 2.5, messages: msgs })
    expect(get(json(await r.text()), 'error', 'code')).toBe('decimal_above_max_value')
    r = await post(`${f.url}/chat/completions`, h, {
      model: 'gpt-4o',
      messages: [...msgs, { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] }],
    })
    expect(r.status).toBe(400)
    expect(get(json(await r.text()), 'error', 'message')).toContain('did not have response messages: call_1')
  })

  test('openai: refusal and json_schema output', async () => {
    const f = fake('openai')
    const h = { authorization: `Bearer ${f.apiKey}` }
    f.enqueue({ kind: 'reply', finish: 'refusal' })
    let b = json(await (await post(`${f.url}/chat/completions`, h, { model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] })).text())
    expect(get(b, 'choices', 0, 'message', 'content')).toBeNull()
    expect(typeof get(b, 'choices', 0, 'message', 'refusal')).toBe('string')
    expect(get(b, 'choices', 0, 'finish_reason')).toBe('stop')
    const schema = { type: 'object', properties: { a: { type: 'string' }, n: { type: 'integer' }, z: { type: 'boolean' } }, required: ['a', 'n'] }
    b = json(
      await (
        await post(`${f.url}/chat/completions`, h, {
          model: 'gpt-4o',
          messages: [{ role: 'user', content: 'x' }],
          response_format: { type: 'json_schema', json_schema: { name: 'out', schema, strict: true } },
        })
      ).text(),
    )
    expect(JSON.parse(get(b, 'choices', 0, 'message', 'content') as string)).toEqual({ a: 'x', n: 1 })
  })

  test('anthropic: version header, system role, unknown field, tool_result pairing, forced tool', async () => {
    const f = fake('anthropic')
    const h = { 'x-api-key': f.apiKey, 'anthropic-version': '2023-06-01' }
    const base = { model: 'claude-haiku-4-5', max_tokens: 100 }
    let r = await post(`${f.url}/messages`, { 'x-api-key': f.apiKey }, { ...base, messages: [{ role: 'user', content: 'hi' }] })
    expect(r.status).toBe(400)
    expect(get(json(await r.text()), 'error', 'type')).toBe('invalid_request_error')
    r = await post(`${f.url}/messages`, h, { ...base, messages: [{ role: 'system', content: 'x' }, { role: 'user', content: 'hi' }] })
    expect(r.status).toBe(400)
    await r.text()
    r = await post(`${f.url}/messages`, h, { ...base, user: 'u', messages: [{ role: 'user', content: 'hi' }] })
    expect(get(json(await r.text()), 'error', 'message')).toBe('user: Extra inputs are not permitted')
    r = await post(`${f.url}/messages`, h, { ...base, temperature: 1.5, messages: [{ role: 'user', content: 'hi' }] })
    expect(r.status).toBe(400)
    await r.text()
    r = await post(`${f.url}/messages`, h, {
      ...base,
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: {} }] },
        { role: 'user', content: 'go on' },
      ],
    })
    expect(get(json(await r.text()), 'error', 'message')).toContain('`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1')
    // Consecutive user turns are merged by the API, so results split over two turns still pair up.
    r = await post(`${f.url}/messages`, h, {
      ...base,
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: {} }, { type: 'tool_use', id: 'toolu_2', name: 'f', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'a' }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_2', content: 'b' }] },
      ],
      output_config: { format: { type: 'json_schema', schema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] } } },
    })
    expect(r.status).toBe(200)
    expect(JSON.parse(get(json(await r.text()), 'content', 0, 'text') as string)).toEqual({ ok: true })
    r = await post(`${f.url}/messages`, h, {
      ...base,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ name: 'json_response', input_schema: { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] } }],
      tool_choice: { type: 'tool', name: 'json_response' },
    })
    const b = json(await r.text())
    expect(b.stop_reason).toBe('tool_use')
    expect(get(b, 'content', 0, 'input')).toEqual({ a: 1 })
  })

  test('anthropic: tool_use stream splits input_json_delta into several fragments', async () => {
    const f = fake('anthropic')
    f.enqueue({ kind: 'reply', text: 'Let me check.', toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] })
    const r = await post(`${f.url}/messages`, { 'x-api-key': f.apiKey, 'anthropic-version': '2023-06-01' }, {
      model: 'claude-haiku-4-5',
      max_tokens: 100,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    })
    const events = parseSse(await r.text())
    const frags = events
      .map((e) => json(e.data))
      .filter((d) => get(d, 'delta', 'type') === 'input_json_delta')
      .map((d) => get(d, 'delta', 'partial_json') as string)
    expect(frags.filter((s) => s.length > 0).length).toBeGreaterThanOrEqual(2)
    expect(JSON.parse(frags.join(''))).toEqual({ city: 'Paris' })
    const md = events.find((e) => e.event === 'message_delta')
    expect(get(json(md?.data ?? '{}'), 'delta', 'stop_reason')).toBe('tool_use')
  })

  test('google: ?key= works, roles, responseJsonSchema needs the JSON mime type, JSON array stream, prompt block', async () => {
    const f = fake('google')
    const contents = [{ role: 'user', parts: [{ text: 'hi' }] }]
    let r = await post(`${f.url}/models/gemini-2.5-flash:generateContent?key=${f.apiKey}`, {}, { contents })
    expect(r.status).toBe(200)
    await r.text()
    expect(f.requests[0]?.path).toContain('key=')
    const h = { 'x-goog-api-key': f.apiKey }
    r = await post(`${f.url}/models/gemini-2.5-flash:generateContent`, h, { contents: [{ role: 'assistant', parts: [{ text: 'hi' }] }] })
    expect(get(json(await r.text()), 'error', 'message')).toBe('Please use a valid role: user, model.')
    r = await post(`${f.url}/models/gemini-2.5-flash:generateContent`, h, { contents, generationConfig: { responseJsonSchema: { type: 'object' } } })
    expect(r.status).toBe(400)
    await r.text()
    r = await post(`${f.url}/models/gemini-2.5-flash:generateContent`, h, {
      contents,
      generationConfig: { responseMimeType: 'application/json', responseJsonSchema: { type: 'object', properties: { k: { type: 'string' } }, required: ['k'] } },
    })
    expect(JSON.parse(get(json(await r.text()), 'candidates', 0, 'content', 'parts', 0, 'text') as string)).toEqual({ k: 'x' })
    r = await post(`${f.url}/models/gemini-2.5-flash:streamGenerateContent`, h, { contents })
    const arr = JSON.parse(await r.text()) as Obj[]
    expect(Array.isArray(arr)).toBe(true)
    expect(get(arr.at(-1), 'candidates', 0, 'finishReason')).toBe('STOP')
    f.enqueue({ kind: 'reply', finish: 'content_filter' })
    const blocked = json(await (await post(`${f.url}/models/gemini-2.5-flash:generateContent`, h, { contents })).text())
    expect(get(blocked, 'promptFeedback', 'blockReason')).toBe('SAFETY')
    expect(blocked.candidates).toBeUndefined()
  })

  test('google: gemini-3 function calls must carry the thought signature back', async () => {
    const f = fake('google')
    const h = { 'x-goog-api-key': f.apiKey }
    const history = (sig?: string): Obj => ({
      contents: [
        { role: 'user', parts: [{ text: 'weather?' }] },
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } }, ...(sig ? { thoughtSignature: sig } : {}) }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { temp: 14 } } }] },
      ],
    })
    let r = await post(`${f.url}/models/gemini-3-flash:generateContent`, h, history())
    expect(r.status).toBe(400)
    expect(get(json(await r.text()), 'error', 'message')).toContain('missing a thought_signature')
    r = await post(`${f.url}/models/gemini-3-flash:generateContent`, h, history('c2lnbmF0dXJl'))
    expect(r.status).toBe(200)
    await r.text()
  })

  test('mistral: tool-call id format, system after user, usage on the tool-call chunk', async () => {
    const f = fake('mistral')
    const h = { authorization: `Bearer ${f.apiKey}` }
    let r = await post(`${f.url}/chat/completions`, h, {
      model: 'mistral-small-latest',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: '', tool_calls: [{ id: 'call_abc123', type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'call_abc123', content: 'ok' },
      ],
    })
    expect(r.status).toBe(400)
    const b = json(await r.text())
    expect(b.type).toBe('invalid_function_call')
    expect(b.code).toBe('3280')
    r = await post(`${f.url}/chat/completions`, h, {
      model: 'mistral-small-latest',
      messages: [{ role: 'user', content: 'hi' }, { role: 'system', content: 'be nice' }, { role: 'user', content: 'hi' }],
    })
    expect(r.status).toBe(400)
    await r.text()
    f.enqueue({ kind: 'reply', toolCalls: [{ name: 'f', arguments: { a: 1 } }] })
    r = await post(`${f.url}/chat/completions`, h, { model: 'mistral-small-latest', stream: true, messages: [{ role: 'user', content: 'hi' }] })
    const events = parseSse(await r.text())
    const last = json(events.at(-2)?.data ?? '{}')
    expect(get(last, 'choices', 0, 'finish_reason')).toBe('tool_calls')
    expect(get(last, 'choices', 0, 'delta', 'tool_calls', 0, 'function', 'name')).toBe('f')
    expect(typeof get(last, 'usage', 'prompt_tokens')).toBe('number')
  })

  test('usage overrides are reported natively (cached, thinking)', async () => {
    const usage = { prompt: 100, completion: 20, cached: 40, thinking: 7 }
    const o = fake('openai')
    o.enqueue({ kind: 'reply', usage })
    let b = json(await (await post(`${o.url}/chat/completions`, { authorization: `Bearer ${o.apiKey}` }, { model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] })).text())
    expect(get(b, 'usage')).toMatchObject({ prompt_tokens: 100, completion_tokens: 27, total_tokens: 127, prompt_tokens_details: { cached_tokens: 40 }, completion_tokens_details: { reasoning_tokens: 7 } })
    const a = fake('anthropic')
    a.enqueue({ kind: 'reply', usage })
    b = json(await (await post(`${a.url}/messages`, { 'x-api-key': a.apiKey, 'anthropic-version': '2023-06-01' }, { model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })).text())
    expect(get(b, 'usage')).toMatchObject({ input_tokens: 60, cache_read_input_tokens: 40, output_tokens: 27 })
    const g = fake('google')
    g.enqueue({ kind: 'reply', usage })
    b = json(await (await post(`${g.url}/models/gemini-2.5-flash:generateContent`, { 'x-goog-api-key': g.apiKey }, { contents: [{ parts: [{ text: 'x' }] }] })).text())
    expect(get(b, 'usageMetadata')).toMatchObject({ promptTokenCount: 100, candidatesTokenCount: 20, thoughtsTokenCount: 7, cachedContentTokenCount: 40, totalTokenCount: 127 })
  })
})
