// Bad input never gets a 500 or a crash: fuzzed bodies and headers, and hand-made nasty requests on real sockets.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import fc from 'fast-check'
import { MAX_JSON_DEPTH } from '../../src/http/request-context'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

const LIMIT = 1024 * 1024
/** The code vocabulary (PRODUCT §5, §19), written out here rather than read from the code under test. */
const CODES = [
  'gateway_error',
  'unauthorized',
  'forbidden',
  'policy_violation',
  'rate_limit_exceeded',
  'model_not_allowed',
  'token_limit_exceeded',
  'budget_exceeded',
  'provider_error',
  'guardrail_blocked',
]
const MODELS = ['openai/gpt-4o', 'anthropic/claude-haiku-4-5', 'google/gemini-2.5-flash', 'mistral/mistral-small-latest']
const HELLO = [{ role: 'user', content: 'hi' }]

let fakes: FakeUpstream[]
let gw: TestGateway
let port: number

beforeAll(async () => {
  const [openai, anthropic, google, mistral] = await Promise.all(
    (['openai', 'anthropic', 'google', 'mistral'] as const).map((p) => startFake(p)),
  )
  fakes = [openai, anthropic, google, mistral] as FakeUpstream[]
  gw = await startTestGateway(
    { openai, anthropic, google, mistral },
    { GW_MAX_BODY_BYTES: String(LIMIT) },
    // Upstream 4xx answers to fuzzed bodies must not open the breaker and change later answers.
    { health: { failureThreshold: 1_000_000 } },
  )
  port = Number(new URL(gw.url).port)
})
afterAll(async () => {
  await gw.stop()
  await Promise.all(fakes.map((f) => f.stop()))
})

const upstreamCalls = () => fakes.reduce((n, f) => n + f.requests.length, 0)

/** The seed's error body, its request id matching the header. */
async function expectSeedError(res: Response, status?: number): Promise<{ code: string; message: string }> {
  const text = await res.text()
  if (status !== undefined) expect({ status: res.status, text }).toEqual({ status, text })
  expect(res.status).toBeGreaterThanOrEqual(400)
  expect(res.headers.get('content-type')).toBe('application/json')
  const requestId = res.headers.get('x-gw-request-id')
  expect(requestId).toBeTruthy()
  const body = JSON.parse(text) as Record<string, unknown>
  expect(Object.keys(body).sort()).toEqual(['code', 'error', 'message', 'requestId'])
  expect(body.error).toBe(true)
  expect(CODES).toContain(body.code as string)
  expect(typeof body.message).toBe('string')
  expect((body.message as string).length).toBeGreaterThan(0)
  // Messages repeat at most 64 characters of any value sent (PRODUCT §4), so they stay short.
  expect((body.message as string).length).toBeLessThan(400)
  expect(body.requestId).toBe(requestId as string)
  return body as { code: string; message: string }
}

/**
 * What any input may get: a gw refusal (4xx, seed shape, nothing sent upstream), a completion, or —
 * only when the input went upstream and the provider refused it — 502/504 provider_error.
 */
async function expectHandled(res: Response, callsBefore: number): Promise<void> {
  const reachedUpstream = upstreamCalls() > callsBefore
  if (res.status === 200) {
    const text = await res.text()
    if (res.headers.get('content-type')?.startsWith('text/event-stream')) expect(text.trimEnd()).toEndWith('data: [DONE]')
    else expect((JSON.parse(text) as { object: string }).object).toBe('chat.completion')
    expect(reachedUpstream).toBe(true)
    return
  }
  const body = await expectSeedError(res)
  if (res.status >= 500) {
    expect([502, 504]).toContain(res.status)
    expect(body.code).toBe('provider_error')
    expect(reachedUpstream).toBe(true)
  } else {
    expect(reachedUpstream).toBe(false)
  }
}

const post = (body: BodyInit | null, headers: Record<string, string> = {}) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `GwKey ${gw.key}`, 'content-type': 'application/json', ...headers },
    body,
  })

/** Sends raw bytes on a fresh TCP connection and returns everything the server sent until it closed. */
function rawRequest(bytes: string | Uint8Array, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes))
    const chunks: Buffer[] = []
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no close within ${timeoutMs} ms; got: ${Buffer.concat(chunks).toString()}`))
    }, timeoutMs)
    socket.on('data', (d: Buffer) => chunks.push(d))
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(Buffer.concat(chunks).toString())
    })
    socket.on('error', () => {})
  })
}

/** Splits a raw HTTP/1.1 answer into status, lower-cased headers and body. */
function parseRaw(raw: string): { status: number; headers: Record<string, string>; body: string } {
  const [head = '', ...rest] = raw.split('\r\n\r\n')
  const [statusLine = '', ...lines] = head.split('\r\n')
  const headers: Record<string, string> = {}
  for (const l of lines) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim()
  return { status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') }
}

const rawPost = (headerLines: string[], body: string) =>
  rawRequest(
    [
      'POST /v1/chat/completions HTTP/1.1',
      'Host: gw.test',
      ...headerLines,
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Connection: close',
      '',
      body,
    ].join('\r\n'),
  )

/** A raw answer in the seed's error shape. */
function expectRawSeedError(raw: string, status: number): void {
  const r = parseRaw(raw)
  expect(r.status).toBe(status)
  const body = JSON.parse(r.body) as Record<string, unknown>
  expect(body).toMatchObject({ error: true, requestId: r.headers['x-gw-request-id'] })
  expect(CODES).toContain(body.code as string)
}

// ---- generators ---------------------------------------------------------------------------------

/** Numbers JSON can spell but JS cannot hold exactly; spliced into the body text as raw tokens. */
const RAW_NUMBERS = ['1e400', '-1e400', '1e-400', '123456789012345678901234567890', '9007199254740993', '-0', '1E308']
const rawNumber = fc.constantFrom(...RAW_NUMBERS).map((n) => `\u0000NUM:${n}\u0000`)
const toBodyText = (value: unknown) => JSON.stringify(value).replace(/"\\u0000NUM:([^"\\]+)\\u0000"/g, '$1')

const nanLike = fc.constantFrom('NaN', 'Infinity', '-Infinity', '1e400', '0x10', '', ' 1', 'null', 'true', '١٢')
const anything = fc.oneof(fc.jsonValue({ maxDepth: 3 }), nanLike, rawNumber, fc.double(), fc.integer(), fc.constant(null))
const word = fc.stringMatching(/^[a-z]{1,8}$/)
const text = fc.array(word, { minLength: 1, maxLength: 6 }).map((w) => w.join(' '))

/** An object with any subset of these fields. */
const partial = <T extends Record<string, fc.Arbitrary<unknown>>>(shape: T) => fc.record(shape, { requiredKeys: [] })

// A valid body: the fuzz starts from one and breaks a few of its fields.
const textParts = fc.array(fc.record({ type: fc.constant('text'), text }), { minLength: 1, maxLength: 2 })
const goodMessage = fc.oneof(
  fc.record({ role: fc.constantFrom('user', 'system'), content: text }),
  fc.record({ role: fc.constant('user'), content: textParts }),
)
const goodSchema = fc.constant({
  type: 'object',
  properties: { a: { type: 'string' } },
  required: ['a'],
  additionalProperties: false,
})
const goodTool = fc.record({
  type: fc.constant('function'),
  function: fc.record({ name: fc.stringMatching(/^[a-z_]{1,20}$/), description: text, parameters: goodSchema }),
})
const goodBody = fc.record(
  {
    model: fc.constantFrom(...MODELS),
    messages: fc.array(goodMessage, { maxLength: 2 }).map((m) => [...m, { role: 'user', content: 'hi' }]),
    temperature: fc.double({ min: 0, max: 1, noNaN: true }),
    top_p: fc.double({ min: 0.01, max: 1, noNaN: true }),
    max_tokens: fc.integer({ min: 1, max: 4000 }),
    stream: fc.boolean(),
    metadata: fc.dictionary(fc.stringMatching(/^[a-z]{1,10}$/), fc.oneof(word, fc.integer(), fc.boolean()), { maxKeys: 3 }),
    tools: fc.array(goodTool, { minLength: 1, maxLength: 2 }),
    output_schema: fc.constant({ mode: 'json_schema', properties: { a: { type: 'string' } }, required: ['a'] }),
    fallback_chain: fc.array(fc.record({ model: fc.constantFrom(...MODELS) }), { maxLength: 2 }),
    user: word,
  },
  { requiredKeys: ['model', 'messages'] },
)

// Wrong values, field by field, down into messages, content parts, tools and schemas.
const wrongNumber = fc.oneof(
  rawNumber,
  nanLike,
  fc.constantFrom(-1, 0, 2.5, 1e308, -1e308, 0.5e-320),
  fc.boolean(),
  fc.constant(null),
)
const oneOrAnything = <T>(...values: T[]) => fc.oneof(fc.constantFrom(...values), anything)
const badUrl = fc.oneof(anything, fc.constantFrom('http://', 'https://[', 'data:;base64,', 'ftp://x'))
const badPart = partial({
  type: oneOrAnything('text', 'image_url', 'input_audio', 'file', 'video'),
  text: anything,
  image_url: fc.oneof(anything, fc.record({ url: badUrl })),
  input_audio: fc.oneof(anything, fc.record({ data: anything, format: anything })),
})
const badToolCall = partial({
  id: anything,
  type: anything,
  function: fc.oneof(anything, fc.record({ name: anything, arguments: anything })),
})
const badMessage = partial({
  role: oneOrAnything('system', 'developer', 'user', 'assistant', 'tool', 'function', 'model'),
  content: fc.oneof(anything, fc.array(fc.oneof(badPart, anything), { maxLength: 3 })),
  tool_calls: fc.oneof(anything, fc.array(badToolCall, { maxLength: 2 })),
  tool_call_id: anything,
  name: anything,
})
const badSchema = fc.oneof(
  anything,
  partial({ type: oneOrAnything('object', 'array', 'nonsense'), properties: anything, required: anything, items: anything }),
)
const badFunction = partial({
  name: fc.oneof(fc.string({ maxLength: 80 }), anything),
  description: anything,
  parameters: badSchema,
})
const badTool = fc.oneof(
  anything,
  partial({ type: oneOrAnything('function', 'web_search'), function: fc.oneof(anything, badFunction) }),
)
/** Schemas whose naive check explodes: self references, doubling alternatives, deep chains, unknown refs. */
const nastySchema = fc.oneof(
  fc.constant({ anyOf: [{ $ref: '#' }, { $ref: '#' }] }),
  fc.constant({ allOf: [{ $ref: '#/$defs/a' }], $defs: { a: { oneOf: [{ $ref: '#' }] } } }),
  fc.integer({ min: 1, max: 40 }).map((n) => {
    let node: Record<string, unknown> = { type: 'string' }
    for (let i = 0; i < n; i++) node = { anyOf: [node, { $ref: '#' }] }
    return node
  }),
  fc.constant({ type: 'object', properties: { a: { anyOf: [{ $ref: '#' }, { $ref: '#' }] } } }),
  fc.constantFrom('http://evil.test/s.json', '#/nowhere', '#/$defs/x/y').map(($ref) => ({ $ref })),
)
const longRun = fc.constantFrom('a', 'ab', '\u00e9', '7', '=').chain((unit) => fc.integer({ min: 1_000, max: 30_000 }).map((n) => unit.repeat(n)))
const specialTokens = fc.constantFrom('<|endoftext|>', '<|im_start|>', '<|im_end|>', '<|fim_prefix|>', '<|endofprompt|>')
const huge = fc.integer({ min: 257, max: 200_000 }).map((n) => 'x'.repeat(n))
const badJsonSchema = fc.oneof(anything, partial({ name: anything, schema: badSchema, strict: anything }))
const WRONG: Record<string, fc.Arbitrary<unknown>> = {
  model: fc.oneof(
    oneOrAnything('gpt-4o', 'acme/x', 'openai/', '/gpt-4o', 'openai/unknown-model', ' openai/gpt-4o'),
    huge.map((x) => `openai/${x}`),
  ),
  messages: fc.oneof(anything, fc.array(fc.oneof(badMessage, goodMessage), { maxLength: 3 })),
  tools: fc.oneof(anything, fc.array(badTool, { maxLength: 2 })),
  tool_choice: fc.oneof(
    oneOrAnything('auto', 'none', 'required'),
    fc.record({ type: fc.constant('function'), function: fc.record({ name: anything }) }),
  ),
  response_format: fc.oneof(
    anything,
    partial({ type: oneOrAnything('text', 'json_object', 'json_schema', 'yaml'), json_schema: badJsonSchema }),
    nastySchema.map((schema) => ({ type: 'json_schema', json_schema: { name: 'x', schema } })),
  ),
  output_schema: fc.oneof(
    anything,
    partial({ mode: oneOrAnything('json_object', 'json_schema', 'xml'), properties: anything, required: anything }),
    nastySchema.map((schema) => ({ mode: 'json_schema', ...schema })),
  ),
  temperature: wrongNumber,
  top_p: wrongNumber,
  max_tokens: wrongNumber,
  max_completion_tokens: wrongNumber,
  n: wrongNumber,
  stream: anything,
  stream_options: anything,
  stop: anything,
  metadata: anything,
  fallback_chain: fc.oneof(anything, fc.array(partial({ model: anything, triggers: anything }), { maxLength: 2 })),
  prompt_id: fc.oneof(anything, huge),
  user: fc.oneof(anything, huge),
}
/** A valid body with 0 to 3 of its fields replaced by wrong ones. */
const chatish = fc
  .tuple(goodBody, fc.array(fc.constantFrom(...Object.keys(WRONG)), { maxLength: 3 }))
  .chain(([body, keys]) =>
    fc
      .tuple(...keys.map((k) => (WRONG[k] as fc.Arbitrary<unknown>).map((v) => [k, v] as const)))
      .map((pairs) => ({ ...body, ...Object.fromEntries(pairs) })),
  )
/** Printable ASCII and Latin-1 (what an HTTP header value may carry), no CR/LF. */
const headerValue = fc.string({
  unit: fc
    .oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0xa0, max: 0xff }))
    .map((c) => String.fromCharCode(c)),
  maxLength: 300,
})

// ---- property-based fuzz ------------------------------------------------------------------------

describe('fuzz', () => {
  test('any JSON value as the body: a 4xx in the seed shape, nothing sent upstream', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), async (value) => {
        const before = upstreamCalls()
        await expectHandled(await post(JSON.stringify(value)), before)
        expect(upstreamCalls()).toBe(before)
      }),
      { numRuns: 150 },
    )
  })

  test('objects mixing valid and invalid chat fields: never a 500, gw refusals never go upstream', async () => {
    await fc.assert(
      fc.asyncProperty(chatish, async (value) => {
        const before = upstreamCalls()
        await expectHandled(await post(toBodyText(value)), before)
      }),
      { numRuns: 250 },
    )
  })

  test('random Authorization values: 401 unauthorized, nothing sent upstream', async () => {
    const scheme = fc.constantFrom('', 'GwKey ', 'Bearer ', 'gwkey ', 'Basic ', 'GwKey gw_sk_', 'Bearer gw_sk_', 'GwKey  ')
    const auth = fc.tuple(scheme, headerValue).map(([s, v]) => s + v).filter((v) => !v.includes(gw.key))
    await fc.assert(
      fc.asyncProperty(auth, async (authorization) => {
        const before = upstreamCalls()
        const res = await post(JSON.stringify({ model: 'openai/gpt-4o', messages: HELLO }), { authorization })
        const body = await expectSeedError(res, 401)
        expect(body.code).toBe('unauthorized')
        expect(upstreamCalls()).toBe(before)
      }),
      { numRuns: 150 },
    )
  })

  test('random Content-Type and end-user headers: a JSON body is answered, a non-JSON body is a 400', async () => {
    await fc.assert(
      fc.asyncProperty(headerValue, headerValue, fc.boolean(), async (contentType, endUser, json) => {
        const before = upstreamCalls()
        const body = json ? JSON.stringify({ model: 'openai/gpt-4o', messages: HELLO }) : 'model=openai/gpt-4o'
        const res = await post(body, { 'content-type': contentType, 'x-gw-end-user-id': endUser })
        if (json && endUser.trim().length > 256) {
          expect((await expectSeedError(res, 400)).message).toMatch(/x-gw-end-user-id/)
        } else if (json) {
          expect(res.status).toBe(200)
          expect(upstreamCalls()).toBe(before + 1)
          await res.arrayBuffer()
        } else {
          await expectSeedError(res, 400)
          expect(upstreamCalls()).toBe(before)
        }
      }),
      { numRuns: 100 },
    )
  })
})

describe('fuzz: work bounds', () => {
  let limited: string
  beforeAll(async () => {
    // An org with every text-scanning policy on, so each fuzzed prompt is counted and scanned.
    const id = 'fuzz-limits'
    await gw.admin('POST', '/orgs', { id, name: id })
    const openai = fakes[0] as FakeUpstream
    await gw.admin('PUT', `/orgs/${id}/providers/openai`, { apiKey: openai.apiKey, baseUrl: openai.url })
    await gw.admin('PUT', `/orgs/${id}/policy`, { maxPromptTokens: 2_000, blockedTerms: ['forbidden-word'] })
    limited = ((await (await gw.admin('POST', `/orgs/${id}/service-keys`, {})).json()) as { key: string }).key
  })

  test('long unbroken runs and special tokens in any text field: answered or refused quickly, never a 500', async () => {
    const nasty = fc.oneof(longRun, specialTokens, fc.tuple(text, specialTokens, longRun).map((p) => p.join(' ')))
    const body = fc.record({
      content: nasty,
      description: fc.oneof(text, nasty),
      args: fc.oneof(text, nasty),
    })
    await fc.assert(
      fc.asyncProperty(body, async ({ content, description, args }) => {
        const before = upstreamCalls()
        const started = performance.now()
        const res = await post(
          JSON.stringify({
            model: 'openai/gpt-4o',
            messages: [
              { role: 'user', content },
              { role: 'assistant', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: args } }] },
              { role: 'tool', tool_call_id: 'c1', content: 'ok' },
            ],
            tools: [{ type: 'function', function: { name: 'f', description, parameters: { type: 'object' } } }],
          }),
          { authorization: `GwKey ${limited}` },
        )
        await expectHandled(res, before)
        expect(performance.now() - started).toBeLessThan(5_000)
      }),
      { numRuns: 60 },
    )
  })
})

// ---- hand-made cases ----------------------------------------------------------------------------

describe('bodies', () => {
  const bytesOf = (...parts: (string | number[])[]) =>
    Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))))

  test.each([
    ['a lone 0xFF', [0xff]],
    ['an overlong slash', [0xc0, 0xaf]],
    ['a UTF-16 surrogate', [0xed, 0xa0, 0x80]],
    ['a truncated sequence', [0xe2, 0x82]],
  ])('invalid UTF-8 (%s) inside a string: 400', async (_name, bad) => {
    const before = upstreamCalls()
    const body = bytesOf('{"model":"openai/gpt-4o","messages":[{"role":"user","content":"a', bad, 'b"}]}')
    const { message } = await expectSeedError(await post(body), 400)
    expect(message).toMatch(/UTF-8/)
    expect(upstreamCalls()).toBe(before)
  })

  test('100,000 unclosed [ : 400 malformed JSON', async () => {
    const { message } = await expectSeedError(await post('['.repeat(100_000)), 400)
    expect(message).toMatch(/Malformed JSON/)
  })

  test('100,000 levels of nested arrays and objects: 400 naming the depth limit', async () => {
    for (const body of ['['.repeat(100_000) + ']'.repeat(100_000), '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000)]) {
      const { message } = await expectSeedError(await post(body), 400)
      expect(message).toContain(`${MAX_JSON_DEPTH} levels`)
    }
  })

  // These once overflowed the stack when the body was re-serialised for the provider (a 500).
  test.each(MODELS)('deep nesting in tools, content parts or extra fields of a valid %s request: 400', async (model) => {
    const deep = '['.repeat(50_000) + ']'.repeat(50_000)
    const head = `{"model":"${model}","messages":[{"role":"user","content"`
    const before = upstreamCalls()
    for (const body of [
      `${head}:"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"a":${deep}}}}]}`,
      `${head}:[{"type":"text","text":"hi","x":${deep}}]}]}`,
      `${head}:"hi"}],"stream":true,"x":${deep}}`,
    ])
      await expectSeedError(await post(body), 400)
    expect(upstreamCalls()).toBe(before)
  })

  // Each of these once reached a provider translator unchecked and crashed it (a 500).
  const tools = [{ type: 'function', function: { name: 'f' } }]
  const call = { id: 'call_1', type: 'function', function: { name: 'f', arguments: {} } }
  test.each([
    ['tools is a number', { tools: 0 }, 'tools'],
    ['a tool is null', { tools: [null] }, 'tools/0'],
    ['a function tool without its function', { tools: [{ type: 'function' }] }, 'tools/0/function'],
    ['tool_choice is null', { tools, tool_choice: null }, 'tool_choice'],
    ['a named tool_choice without its function', { tools, tool_choice: { type: 'function' } }, 'tool_choice/function'],
    ['json_schema format without json_schema', { response_format: { type: 'json_schema' } }, 'response_format/json_schema'],
    [
      'tool-call arguments that are an object',
      { messages: [...HELLO, { role: 'assistant', tool_calls: [call] }, { role: 'tool', tool_call_id: 'call_1', content: 'x' }] },
      'messages/1/tool_calls/0/function/arguments',
    ],
    [
      'an image URL that does not parse',
      { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://[' } }] }] },
      'image_url',
    ],
  ])('%s: 400 naming it, on every provider', async (_name, fields, named) => {
    for (const model of MODELS) {
      // OpenAI and Mistral take image URLs as they are; only the translators read them.
      if (named === 'image_url' && /^(openai|mistral)\//.test(model)) continue
      const before = upstreamCalls()
      const { message } = await expectSeedError(await post(JSON.stringify({ model, messages: HELLO, ...fields })), 400)
      expect(message).toContain(named)
      expect(upstreamCalls()).toBe(before)
    }
  })

  test(`nesting right at the limit (${MAX_JSON_DEPTH} levels) goes through; one more is refused`, async () => {
    const nest = (levels: number) => '['.repeat(levels) + ']'.repeat(levels)
    // The body object is one level, so the extra field may nest MAX_JSON_DEPTH - 1 more.
    const at = (levels: number) => `{"model":"openai/gpt-4o","messages":${JSON.stringify(HELLO)},"x":${nest(levels)}}`
    const openai = fakes[0] as FakeUpstream
    const before = openai.requests.length
    const res = await post(at(MAX_JSON_DEPTH - 1))
    expect(res.status).toBe(200)
    expect(JSON.stringify((openai.requests[before]?.body as { x: unknown }).x)).toBe(nest(MAX_JSON_DEPTH - 1))
    await expectSeedError(await post(at(MAX_JSON_DEPTH)), 400)
    expect(openai.requests.length).toBe(before + 1)
  })

  // Gemini, whose context window holds a 1 MB prompt (gw would refuse it for gpt-4o before sending).
  test('a content string that just fits GW_MAX_BODY_BYTES goes through whole; one byte more is a 413', async () => {
    const google = fakes[2] as FakeUpstream
    const shell = (content: string) =>
      JSON.stringify({ model: 'google/gemini-2.5-flash', messages: [{ role: 'user', content }] })
    const content = 'x'.repeat(LIMIT - shell('').length)
    expect(Buffer.byteLength(shell(content))).toBe(LIMIT)
    const before = google.requests.length
    const ok = await post(shell(content))
    expect(ok.status).toBe(200)
    await ok.arrayBuffer()
    const sent = google.requests[before]?.body as { contents: { parts: { text: string }[] }[] }
    expect(sent.contents[0]?.parts[0]?.text).toBe(content)

    const { message } = await expectSeedError(await post(shell(`${content}x`)), 413)
    expect(message).toContain(String(LIMIT))
    expect(google.requests.length).toBe(before + 1)
  })

  // Bun's own limit once answered these with a bare 413 (declared) or an "unexpected error" (chunked).
  test('a 10 MB string, declared or chunked: 413 in the seed shape, nothing sent upstream', async () => {
    const before = upstreamCalls()
    const big = JSON.stringify({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'y'.repeat(10 * LIMIT) }] })
    await expectSeedError(await post(big), 413)
    const bytes = new TextEncoder().encode(big)
    let at = 0
    const chunked = new ReadableStream<Uint8Array>({
      pull(c) {
        if (at >= bytes.length) return c.close()
        c.enqueue(bytes.subarray(at, (at += 65536)))
      },
    })
    await expectSeedError(await post(chunked), 413)
    expect(upstreamCalls()).toBe(before)
  })

  test.each([
    ['empty', ''],
    ['whitespace', ' \r\n\t '],
    ['null', 'null'],
    ['an array', '[]'],
    ['a string', '"hello"'],
    ['a number', '42'],
    ['true', 'true'],
    ['NaN', 'NaN'],
    ['two JSON objects', '{}{}'],
    ['a NUL byte', '{"model":"openai/gpt-4o"\u0000}'],
  ])('a body that is %s: 400', async (_name, body) => {
    const before = upstreamCalls()
    await expectSeedError(await post(body), 400)
    expect(upstreamCalls()).toBe(before)
  })

  test('a UTF-8 byte order mark before the JSON is skipped (RFC 8259 allows ignoring it)', async () => {
    const res = await post(bytesOf([0xef, 0xbb, 0xbf], JSON.stringify({ model: 'openai/gpt-4o', messages: HELLO })))
    expect(res.status).toBe(200)
    await res.arrayBuffer()
  })
})

describe('model names', () => {
  test('a model name with a control character (CR/LF would split the answer headers and log lines) is a 400 on every endpoint, nothing sent', async () => {
    const before = upstreamCalls()
    for (const [path, body] of [
      ['/v1/chat/completions', { model: 'openai/gpt-4o\r\nx-evil: 1', messages: HELLO }],
      ['/v1/chat/completions', { model: 'openai/gpt-4o', fallback_chain: [{ model: 'openai/x\ny' }], messages: HELLO }],
      ['/v1/responses', { model: 'gpt-4o\r\nx-evil: 1', input: 'hi' }],
      ['/v1/messages', { model: 'claude-haiku-4-5\u0000', max_tokens: 5, messages: HELLO }],
      ['/v1/embeddings', { model: 'openai/text-embedding-3-small\n', input: 'hi' }],
    ] as const) {
      const res = await gw.fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
      expect(res.status).toBe(400)
      expect(await res.text()).toContain('control characters are not allowed in a model name')
    }
    expect(upstreamCalls()).toBe(before)
  })
})

describe('headers', () => {
  test('a 100 KB header: Bun itself answers 431 (before gw sees it) and the gateway answers the next request', async () => {
    const res = await post(JSON.stringify({ model: 'openai/gpt-4o', messages: HELLO }), { 'x-padding': 'a'.repeat(100_000) })
    expect(res.status).toBe(431)
    expect((await fetch(`${gw.url}/health`)).status).toBe(200)
  })

  test('a 100 KB Authorization value: 431 from Bun, then business as usual', async () => {
    const res = await post('{}', { authorization: `GwKey ${'k'.repeat(100_000)}` })
    expect(res.status).toBe(431)
    expect((await post(JSON.stringify({ model: 'openai/gpt-4o', messages: HELLO }))).status).toBe(200)
  })

  test('an 8 KB Authorization value (under Bun’s limit) reaches gw: 401 in the seed shape', async () => {
    const body = await expectSeedError(await post('{}', { authorization: `GwKey ${'k'.repeat(8000)}` }), 401)
    expect(body.message).not.toContain('k'.repeat(100))
  })

  test('Authorization sent twice (even the same valid key): 401, nothing sent upstream', async () => {
    const before = upstreamCalls()
    const raw = await rawPost(
      [`Authorization: GwKey ${gw.key}`, `Authorization: GwKey ${gw.key}`, 'Content-Type: application/json'],
      JSON.stringify({ model: 'openai/gpt-4o', messages: HELLO }),
    )
    expectRawSeedError(raw, 401)
    expect(raw).not.toContain(gw.key)
    expect(upstreamCalls()).toBe(before)
  })

  test('Authorization twice with different schemes: 401', async () => {
    const raw = await rawPost([`Authorization: GwKey ${gw.key}`, 'Authorization: Bearer something-else'], '{}')
    expectRawSeedError(raw, 401)
  })

  test('Content-Type sent twice: the JSON body is still read (Content-Type is not used to pick a parser)', async () => {
    const raw = await rawPost(
      [`Authorization: GwKey ${gw.key}`, 'Content-Type: application/json', 'Content-Type: text/plain'],
      JSON.stringify({ model: 'openai/gpt-4o', messages: HELLO }),
    )
    const r = parseRaw(raw)
    expect(r.status).toBe(200)
    expect(r.headers['x-gw-model']).toBe('openai/gpt-4o')
  })

  test('two different Content-Length headers: Bun refuses the request (400) and closes; gw stays up', async () => {
    const raw = await rawRequest(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: gw.test\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n{}`,
    )
    expect(parseRaw(raw).status).toBe(400)
    expect((await fetch(`${gw.url}/health`)).status).toBe(200)
  })

  test('a request line that is not HTTP: Bun answers 400; gw stays up', async () => {
    expect(parseRaw(await rawRequest('HELLO THERE\r\n\r\n')).status).toBe(400)
    expect((await fetch(`${gw.url}/health`)).status).toBe(200)
  })
})

describe('content types', () => {
  const valid = JSON.stringify({ model: 'openai/gpt-4o', messages: HELLO })

  test('form-urlencoded: 400 saying a JSON body is expected', async () => {
    const before = upstreamCalls()
    const { message } = await expectSeedError(
      await post('model=openai%2Fgpt-4o&messages=hi', { 'content-type': 'application/x-www-form-urlencoded' }),
      400,
    )
    expect(message).toContain('sent as "application/x-www-form-urlencoded"; expected Content-Type: application/json')
    expect(upstreamCalls()).toBe(before)
  })

  test('multipart form data: 400', async () => {
    const form = new FormData()
    form.set('model', 'openai/gpt-4o')
    form.set('file', new Blob(['\u0000\u0001binary']), 'a.bin')
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `GwKey ${gw.key}` },
      body: form,
    })
    const { message } = await expectSeedError(res, 400)
    expect(message).toContain('sent as "multipart/form-data')
  })

  test('a long content type is echoed to 64 characters at most', async () => {
    const type = `text/${'z'.repeat(195)}`
    const { message } = await expectSeedError(await post('xx', { 'content-type': type }), 400)
    expect(message).toContain(`sent as "text/${'z'.repeat(59)}…"`)
    expect(message).not.toContain('z'.repeat(60))
  })

  test('text/plain with prose: 400', async () => {
    await expectSeedError(await post('please say hi', { 'content-type': 'text/plain' }), 400)
  })

  test('text/plain or no Content-Type at all, with a JSON body: answered (a missing header is not an error)', async () => {
    expect((await post(valid, { 'content-type': 'text/plain;charset=UTF-8' })).status).toBe(200)
    const raw = await rawPost([`Authorization: GwKey ${gw.key}`], valid)
    expect(parseRaw(raw).status).toBe(200)
  })

  test('no Content-Type and no body: 400', async () => {
    const raw = await rawPost([`Authorization: GwKey ${gw.key}`], '')
    expectRawSeedError(raw, 400)
  })
})

describe('methods and routes', () => {
  test.each(['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])('%s on the chat route: 405 with Allow, in the seed shape', async (method) => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method,
      headers: { authorization: `GwKey ${gw.key}` },
      ...(method === 'GET' || method === 'OPTIONS' ? {} : { body: '{}' }),
    })
    expect(res.headers.get('allow')).toBe('POST')
    const { message } = await expectSeedError(res, 405)
    expect(message).toContain(`${method} is not allowed on /v1/chat/completions`)
  })

  test('HEAD on the chat route: 405 with Allow and the request id (HEAD answers carry no body)', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'HEAD' })
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe('POST')
    expect(res.headers.get('x-gw-request-id')).toBeTruthy()
  })

  test('POST on /health: 405 with Allow: GET; an unknown path stays 404', async () => {
    const res = await fetch(`${gw.url}/health`, { method: 'POST', body: '{}' })
    expect(res.headers.get('allow')).toBe('GET')
    await expectSeedError(res, 405)
    await expectSeedError(await fetch(`${gw.url}/v1/chat/completion`, { method: 'POST', body: '{}' }), 404)
  })
})

describe('slow clients', () => {
  test('a body dripped one byte every 5 ms does not hold up anyone else', async () => {
    const body = JSON.stringify({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'drip' }] })
    const head = [
      'POST /v1/chat/completions HTTP/1.1',
      'Host: gw.test',
      `Authorization: GwKey ${gw.key}`,
      'Content-Type: application/json',
      `Content-Length: ${body.length}`,
      'Connection: close',
      '\r\n',
    ].join('\r\n')
    let dripDone = 0
    const drip = new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1', async () => {
        socket.write(head)
        for (const ch of body) {
          socket.write(ch)
          await Bun.sleep(5)
        }
        dripDone = performance.now()
      })
      const chunks: Buffer[] = []
      socket.on('data', (d: Buffer) => chunks.push(d))
      socket.on('close', () => resolve(Buffer.concat(chunks).toString()))
    })
    await Bun.sleep(50)
    // Meanwhile, 20 ordinary requests come and go.
    const t0 = performance.now()
    const valid = JSON.stringify({ model: 'openai/gpt-4o', messages: HELLO })
    const others = await Promise.all(Array.from({ length: 20 }, () => post(valid)))
    const othersDone = performance.now()
    expect(others.map((r) => r.status)).toEqual(Array(20).fill(200))
    expect(othersDone - t0).toBeLessThan(200)
    expect(dripDone).toBe(0)
    const raw = parseRaw(await drip)
    expect(raw.status).toBe(200)
    expect(raw.body).toContain('fake-openai (gpt-4o)')
  })
})

test('after all of it the gateway still answers /health and a normal request', async () => {
  expect((await fetch(`${gw.url}/health`)).status).toBe(200)
  const res = await gw.chat({ model: 'anthropic/claude-haiku-4-5', messages: HELLO })
  expect(res.status).toBe(200)
  expect(((await res.json()) as any).choices[0].message.content).toContain('fake-anthropic')
})
