// Chat completions through gw to a fake OpenAI: request shaping, response shape, streaming, headers.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { readSse, startTestGateway, type TestGateway } from '../helpers/gateway'
import { assertChatChunk, assertChatCompletion } from '../helpers/openai-schema'

let openai: FakeUpstream
let gw: TestGateway

beforeAll(async () => {
  openai = await startFake('openai')
  gw = await startTestGateway({ openai })
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
})
beforeEach(() => openai.reset())

const hello = [{ role: 'user', content: 'Say hi please' }]

describe('non-streaming', () => {
  test('answers in OpenAI format with the x-gw headers', async () => {
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('application/json')
    const requestId = res.headers.get('x-gw-request-id')
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/)
    expect(res.headers.get('x-gw-model')).toBe('openai/gpt-4o')
    expect(res.headers.get('x-gw-auth-mode')).toBe('GwKey')
    expect(res.headers.get('x-gw-fallback')).toBeNull()
    const body = (await res.json()) as Record<string, any>
    assertChatCompletion(body)
    expect(body.object).toBe('chat.completion')
    expect(body.model).toBe('openai/gpt-4o')
    expect(body.choices[0].message).toMatchObject({ role: 'assistant', content: 'Hello from fake-openai (gpt-4o).', refusal: null })
    expect(body.choices[0].finish_reason).toBe('stop')
    // The fake counts 3 + words per message: "Say hi please" → 6; the reply has 4 words.
    expect(body.usage).toMatchObject({ prompt_tokens: 6, completion_tokens: 4, total_tokens: 10 })
  })

  test('forwards what OpenAI takes, keeps metadata and gateway fields to itself', async () => {
    const res = await gw.chat({
      model: 'openai/gpt-4o',
      messages: hello,
      temperature: 0.3,
      max_tokens: 50,
      user: 'end-user-7',
      seed: 42,
      logit_bias: { '50256': -100 },
      metadata: { team: 'search', run: 3 },
      prompt_id: 'greeting',
      fallback_chain: [{ model: 'openai/gpt-4o-mini' }],
    })
    expect(res.status).toBe(200)
    const sent = openai.requests[0]
    expect(sent?.path).toBe('/v1/chat/completions')
    expect(sent?.headers.authorization).toBe(`Bearer ${openai.apiKey}`)
    expect(sent?.body).toEqual({
      model: 'gpt-4o',
      messages: hello,
      temperature: 0.3,
      max_tokens: 50,
      user: 'end-user-7',
      seed: 42,
      logit_bias: { '50256': -100 },
    })
  })

  test('reasoning models get max_completion_tokens and lose sampling parameters', async () => {
    const res = await gw.chat({ model: 'openai/o3-mini', messages: hello, max_tokens: 500, temperature: 0.7, top_p: 0.5 })
    expect(res.status).toBe(200)
    const sent = openai.requests[0]?.body as Record<string, unknown>
    expect(sent.max_completion_tokens).toBe(500)
    expect(sent.max_tokens).toBeUndefined()
    expect(sent.temperature).toBeUndefined()
    expect(sent.top_p).toBeUndefined()
    const log = await gw.log(res.headers.get('x-gw-request-id') as string)
    expect(log.warnings).toEqual(
      expect.arrayContaining([{ type: 'param_removed', setting: 'temperature', detail: expect.stringContaining('temperature removed') }]),
    )
  })

  test('gpt-5-chat-latest is not a reasoning model', async () => {
    await gw.chat({ model: 'openai/gpt-5-chat-latest', messages: hello, max_tokens: 20, temperature: 0.4 })
    expect(openai.requests[0]?.body).toMatchObject({ max_tokens: 20, temperature: 0.4 })
  })

  test('Bearer gw_sk_… works for the official SDKs and is reported as GwKey', async () => {
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello }, { authorization: `Bearer ${gw.key}` })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-gw-auth-mode')).toBe('GwKey')
  })
})

describe('streaming', () => {
  test('streams OpenAI chunks, usage last, then [DONE]', async () => {
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, stream: true })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/event-stream')
    expect(res.headers.get('x-gw-model')).toBe('openai/gpt-4o')
    expect(res.headers.get('x-gw-request-id')).toBeTruthy()
    const events = await readSse(res)
    expect(events[events.length - 1]).toBe('[DONE]')
    const chunks = events.slice(0, -1) as Record<string, any>[]
    for (const c of chunks) assertChatChunk(c)
    expect(chunks[0]?.choices[0].delta.role).toBe('assistant')
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')
    expect(text).toBe('Hello from fake-openai (gpt-4o).')
    const finishes = chunks.flatMap((c) => c.choices.map((ch: any) => ch.finish_reason)).filter(Boolean)
    expect(finishes).toEqual(['stop'])
    // PRODUCT §4: the client did not ask for include_usage, so usage rides on the finish chunk and
    // `chunk.choices[0]` is safe in every chunk.
    for (const c of chunks) expect(c.choices[0]).toBeDefined()
    const last = chunks[chunks.length - 1] as Record<string, any>
    expect(last.choices[0].finish_reason).toBe('stop')
    expect(last.usage).toMatchObject({ prompt_tokens: 6, completion_tokens: 4, total_tokens: 10 })
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1)
    // gw asks OpenAI for usage even though the client did not.
    expect((openai.requests[0]?.body as any).stream_options).toEqual({ include_usage: true })
  })

  test('chunks passed on as bytes: split across reads, one longer than 64 KiB, CRLF framing from the middle on — the client gets every chunk, renamed, and the log the whole text', async () => {
    const chunk = (content: string, extra: Record<string, unknown> = {}) =>
      JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 7, model: 'gpt-4o-2024-08-06', system_fingerprint: 'fp_x', choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: null }], ...extra })
    const long = 'y'.repeat(100 * 1024)
    const lf = (json: string) => `data: ${json}\n\n`
    const crlf = (json: string) => `data: ${json}\r\n\r\n`
    const head = lf(chunk('', { choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] })) + lf(chunk('one ')) + lf(chunk('two '))
    const big = lf(chunk(long))
    const tail =
      crlf(chunk(' three')) +
      crlf(JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 7, model: 'gpt-4o-2024-08-06', choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }] })) +
      crlf(JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 7, model: 'gpt-4o-2024-08-06', choices: [], usage: { prompt_tokens: 6, completion_tokens: 4, total_tokens: 10 } })) +
      'data: [DONE]\r\n\r\n'
    // Reads that cut events (and the long one) anywhere.
    const body = head + big + tail
    const pieces: string[] = []
    for (let at = 0; at < body.length; at += 7_001) pieces.push(body.slice(at, at + 7_001))
    openai.enqueue({ kind: 'raw', status: 200, body: pieces })
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, stream: true })
    expect(res.status).toBe(200)
    const events = await readSse(res)
    expect(events[events.length - 1]).toBe('[DONE]')
    const chunks = events.slice(0, -1) as Record<string, any>[]
    for (const c of chunks) assertChatChunk(c)
    expect(chunks.map((c) => c.model)).toEqual(chunks.map(() => 'openai/gpt-4o'))
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')
    expect(text).toBe(`one two ${long} three`)
    // The chunks passed on as they came keep OpenAI's own fields; from the long one on, the decoder reads them.
    expect(chunks.filter((c) => c.system_fingerprint === 'fp_x').map((c) => c.choices[0].delta.content)).toEqual(['one ', 'two '])
    expect(chunks[chunks.length - 1]?.choices[0].finish_reason).toBe('stop')
    expect(chunks[chunks.length - 1]?.usage).toMatchObject({ prompt_tokens: 6, completion_tokens: 4, total_tokens: 10 })
    const log = await gw.log(res.headers.get('x-gw-request-id') as string)
    expect(log.responseBody).toMatchObject({ content: `one two ${long} three`, finish_reason: 'stop' })
    expect(log.usage).toMatchObject({ promptTokens: 6, completionTokens: 4, estimated: false })
  })

  test('with stream_options.include_usage: OpenAI’s shape, a last chunk with choices [] and the usage', async () => {
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, stream: true, stream_options: { include_usage: true } })
    const chunks = (await readSse(res)).slice(0, -1) as Record<string, any>[]
    for (const c of chunks) assertChatChunk(c)
    const last = chunks.at(-1) as Record<string, any>
    expect(last.choices).toEqual([])
    expect(last.usage).toMatchObject({ prompt_tokens: 6, completion_tokens: 4, total_tokens: 10 })
    expect(chunks.at(-2)?.choices[0].finish_reason).toBe('stop')
    // Text chunks are passed on as OpenAI sent them (model renamed): `usage: null`, as OpenAI itself does.
    expect(chunks.slice(0, -1).every((c) => c.usage == null)).toBe(true)
  })

  test('the log entry of a stream has usage, cost and time to first token', async () => {
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, stream: true, metadata: { feature: 'chat' } })
    await res.text()
    const log = await gw.log(res.headers.get('x-gw-request-id') as string)
    expect(log).toMatchObject({
      stream: true,
      status: 200,
      model: 'openai/gpt-4o',
      provider: 'openai',
      incomplete: false,
      metadata: { feature: 'chat' },
      usage: { promptTokens: 6, completionTokens: 4, totalTokens: 10, estimated: false },
    })
    expect(log.ttftMs).toBeGreaterThanOrEqual(0)
    // gpt-4o: $2.50 / 1M input, $10 / 1M output.
    expect(log.costUsd).toBeCloseTo((6 * 2.5 + 4 * 10) / 1e6, 12)
  })

  test('a client that goes away cancels the upstream request', async () => {
    openai.enqueue({ kind: 'reply', chunks: 20, chunkDelayMs: 100, text: 'one two three four five six seven eight nine ten' })
    const ac = new AbortController()
    const res = await gw.fetch('/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ model: 'openai/gpt-4o', messages: hello, stream: true }),
      signal: ac.signal,
    })
    const reader = res.body!.getReader()
    await reader.read()
    ac.abort()
    expect(await openai.waitForAbort(0, 3000)).toBe(true)
  })

  test('[DONE] before any choice finished is a stream cut short: after content the error event, before any a fallback (never a clean finish)', async () => {
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-cut', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
    openai.enqueue({ kind: 'raw', status: 200, body: [chunk({ role: 'assistant', content: '' }), chunk({ content: 'Hello' }), 'data: [DONE]\n\n'].join('') })
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, stream: true })
    expect(res.status).toBe(200)
    const text = await res.text()
    expect(text).toContain('Hello')
    expect(text).not.toContain('"finish_reason":"stop"')
    expect(text).toContain('"error":true')
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true)
    expect(await gw.log(res.headers.get('x-gw-request-id') as string)).toMatchObject({ status: 200, incomplete: true, errorCode: 'provider_error' })
    // No content yet: the chain is tried.
    openai.enqueue({ kind: 'raw', status: 200, body: [chunk({ role: 'assistant', content: '' }), 'data: [DONE]\n\n'].join('') })
    const fell = await gw.chat({ model: 'openai/gpt-4o', messages: hello, stream: true, fallback_chain: [{ model: 'openai/gpt-4o-mini' }] })
    expect(fell.headers.get('x-gw-fallback-model')).toBe('openai/gpt-4o-mini')
    expect(await fell.text()).toContain('"finish_reason":"stop"')
  })

  test('a client that leaves before the answer has begun: the upstream is cancelled, and the log entry (499) names the model and its attempt', async () => {
    openai.enqueue({ kind: 'reply', delayMs: 2000 })
    const ac = new AbortController()
    const pending = gw
      .fetch('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model: 'openai/gpt-4o', messages: hello, metadata: { case: 'left-early' } }), signal: ac.signal })
      .catch(() => undefined)
    while (openai.requests.length === 0) await Bun.sleep(10)
    ac.abort()
    await pending
    expect(await openai.waitForAbort(0, 3000)).toBe(true)
    let entry: Record<string, any> | undefined
    for (let i = 0; i < 100 && !entry; i++) {
      await Bun.sleep(20)
      const page = (await (await gw.fetch('/v1/logs?limit=5')).json()) as { data: Record<string, any>[] }
      entry = page.data.find((e) => e.metadata?.case === 'left-early')
    }
    expect(entry).toMatchObject({ status: 499, model: 'openai/gpt-4o' })
    expect(entry?.attempts).toHaveLength(1)
    // The attempt never answered: cancelled, not ok (nor a failure of the upstream's).
    expect(entry?.attempts[0]).toMatchObject({ model: 'openai/gpt-4o', outcome: 'cancelled', status: null })
  })

  test('a client that leaves while gw holds the finishing chunk back (for the usage) gets a log entry with the whole answer', async () => {
    // The fake's events: the role chunk, four text chunks, the finish chunk, the usage chunk; it stops after the finish.
    openai.enqueue({ kind: 'stall-after', events: 6 })
    const ac = new AbortController()
    const res = await gw.fetch('/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ model: 'openai/gpt-4o', messages: hello, stream: true }),
      signal: ac.signal,
    })
    const requestId = res.headers.get('x-gw-request-id') as string
    const reader = res.body!.getReader()
    let text = ''
    const utf8 = new TextDecoder()
    while ((text.match(/data: /g) ?? []).length < 5) {
      const { value, done } = await reader.read()
      if (done) break
      text += utf8.decode(value)
    }
    // The finish chunk has reached gw, which holds it back until the usage comes.
    await Bun.sleep(200)
    expect(text).not.toContain('"finish_reason":"stop"')
    ac.abort()
    let log: Record<string, any> | undefined
    for (let i = 0; i < 100 && !log; i++) {
      await Bun.sleep(20)
      log = await gw.log(requestId).catch(() => undefined)
    }
    // The answer had begun (200 sent): the entry says the client left.
    expect(log).toMatchObject({ status: 200, incomplete: true, errorMessage: 'the client disconnected before the end of the stream' })
    // Before: the text the client had received, without the held chunk's finish.
    expect(log?.responseBody).toEqual({ content: 'Hello from fake-openai (gpt-4o).', finish_reason: 'stop' })
  })
})

describe('structured output and tool-call ids', () => {
  test('json_schema goes strict only when that cannot change which answers are valid', async () => {
    const optional = { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, required: ['a'] }
    await gw.chat({ model: 'openai/gpt-4o', messages: hello, output_schema: { mode: 'json_schema', ...optional } })
    const own = { name: 'mine', schema: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, strict: false }
    await gw.chat({ model: 'openai/gpt-4o', messages: hello, response_format: { type: 'json_schema', json_schema: own } })
    expect(openai.requests.map((r) => (r.body as Record<string, unknown>).response_format)).toEqual([
      { type: 'json_schema', json_schema: { name: 'output', schema: optional } },
      { type: 'json_schema', json_schema: own },
    ])
  })

  test('JSON mode adds no hint when the messages already ask for JSON', async () => {
    const messages = [{ role: 'user', content: 'Reply in json please' }]
    const res = await gw.chat({ model: 'openai/gpt-4o', messages, output_schema: { mode: 'json_object' } })
    expect(res.status).toBe(200)
    expect((openai.requests[0]?.body as Record<string, unknown>).messages).toEqual(messages)
  })

  test('tool-call ids longer than OpenAI takes are shortened the same way on the call and its result', async () => {
    const longId = `call_Ab3dE6gH_ts_${'x'.repeat(120)}`
    const res = await gw.chat({
      model: 'openai/gpt-4o',
      messages: [
        ...hello,
        { role: 'assistant', content: null, tool_calls: [{ id: longId, type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: longId, content: 'done' },
      ],
    })
    expect(res.status).toBe(200)
    const [, assistant, tool] = (openai.requests[0]?.body as any).messages
    expect(assistant.tool_calls[0].id.length).toBeLessThanOrEqual(40)
    expect(tool.tool_call_id).toBe(assistant.tool_calls[0].id)
  })
})

test('a stream without usage whose last text comes on its finishing chunk: the estimate, the JSON check and the log count that text', async () => {
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-2024-08-06', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`
  openai.enqueue({
    kind: 'raw',
    status: 200,
    body: [chunk({ role: 'assistant', content: '' }, null), chunk({ content: '{"answer": ' }, null), chunk({ content: '"forty two"}' }, 'stop'), 'data: [DONE]\n\n'],
  })
  const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, stream: true, response_format: { type: 'json_object' } })
  const chunks = (await readSse(res)).slice(0, -1) as Record<string, any>[]
  // The passed-on chunk keeps the upstream's own fields, its model renamed; the finishing one carries the usage (PRODUCT §4).
  expect(chunks[1]).toMatchObject({ id: 'chatcmpl-x', model: 'openai/gpt-4o', choices: [{ delta: { content: '{"answer": ' } }] })
  const last = chunks.at(-1) as Record<string, any>
  expect(last.choices[0]).toMatchObject({ delta: { content: '"forty two"}' }, finish_reason: 'stop' })
  const log = (await gw.log(res.headers.get('x-gw-request-id') as string)) as Record<string, any>
  expect(log.structuredOutput).toEqual({ parsed: true, matchesSchema: null })
  expect(log.responseBody).toEqual({ content: '{"answer": "forty two"}', finish_reason: 'stop' })
  expect(log.usage).toMatchObject({ estimated: true })
  expect(last.usage.completion_tokens).toBe(log.usage.completionTokens)
  expect(log.usage.completionTokens).toBeGreaterThan(3)
})
