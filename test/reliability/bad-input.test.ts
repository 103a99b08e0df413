// Bad input never produces a 500 or a crash: property-based fuzz of bodies and headers, and hostile raw-socket requests.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let openai: FakeUpstream
let gw: TestGateway
const MAX_BODY = 1024 * 1024

beforeAll(async () => {
  openai = await startFake('openai')
  gw = await startTestGateway({ openai }, { GW_MAX_BODY_BYTES: String(MAX_BODY) })
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
})

/** Every answer to bad input: a 4xx (or a provider_error 5xx) in the seed's shape, with the request id. */
async function expectSeedError(res: Response) {
  const text = await res.text()
  expect(res.status).not.toBe(500)
  expect(res.headers.get('x-gw-request-id')).toBeTruthy()
  if (res.status === 200) return
  const body = JSON.parse(text) as Record<string, unknown>
  expect(body).toMatchObject({ error: true, requestId: res.headers.get('x-gw-request-id') })
  expect(typeof body.code).toBe('string')
  expect(typeof body.message).toBe('string')
  if (res.status >= 500) expect(body.code).toBe('provider_error')
}

const post = (body: BodyInit, headers: Record<string, string> = {}) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `GwKey ${gw.key}`, 'content-type': 'application/json', ...headers },
    body,
  })

/** Sends raw bytes over TCP and returns what came back (the connection is closed by the request). */
async function raw(request: string | Uint8Array, opts: { dripMs?: number } = {}): Promise<string> {
  const { port } = new URL(gw.url)
  let out = ''
  let done: () => void = () => {}
  const closed = new Promise<void>((r) => (done = r))
  const socket = await Bun.connect({
    hostname: '127.0.0.1',
    port: Number(port),
    socket: {
      data: (_s, d) => {
        out += new TextDecoder().decode(d)
      },
      close: () => done(),
      error: () => done(),
    },
  })
  const bytes = typeof request === 'string' ? new TextEncoder().encode(request) : request
  if (opts.dripMs) {
    for (const b of bytes) {
      socket.write(new Uint8Array([b]))
      await Bun.sleep(opts.dripMs)
    }
  } else socket.write(bytes)
  await Promise.race([closed, Bun.sleep(5000)])
  socket.end()
  return out
}

const statusOf = (response: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1])

describe('property-based fuzz', () => {
  const roles = fc.oneof(fc.constantFrom('system', 'user', 'assistant', 'tool', 'developer', 'function'), fc.string())
  const content = fc.oneof(
    fc.string(),
    fc.constant(null),
    fc.array(fc.oneof(fc.record({ type: fc.constantFrom('text', 'image_url', 'input_audio', 'file'), text: fc.jsonValue(), image_url: fc.jsonValue() }, { requiredKeys: ['type'] }), fc.jsonValue()), { maxLength: 3 }),
    fc.jsonValue(),
  )
  const message = fc.record({ role: roles, content, tool_calls: fc.jsonValue(), tool_call_id: fc.oneof(fc.string(), fc.jsonValue()), name: fc.jsonValue() }, { requiredKeys: ['role'] })
  const chatish = fc.record(
    {
      model: fc.oneof(fc.constantFrom('openai/gpt-4o-mini', 'openai/o3', 'mistral/mistral-small-latest', 'nope/x', '/', 'openai/'), fc.string(), fc.jsonValue()),
      messages: fc.oneof(fc.array(message, { maxLength: 4 }), fc.jsonValue()),
      temperature: fc.oneof(fc.double(), fc.string(), fc.jsonValue()),
      top_p: fc.oneof(fc.double(), fc.jsonValue()),
      max_tokens: fc.oneof(fc.integer(), fc.double(), fc.string()),
      stream: fc.oneof(fc.boolean(), fc.jsonValue()),
      metadata: fc.oneof(fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 5 }), fc.jsonValue()),
      tools: fc.jsonValue(),
      tool_choice: fc.jsonValue(),
      response_format: fc.oneof(fc.record({ type: fc.constantFrom('json_object', 'json_schema', 'text', 'xml'), json_schema: fc.jsonValue() }), fc.jsonValue()),
      output_schema: fc.jsonValue(),
      fallback_chain: fc.oneof(fc.array(fc.record({ model: fc.string(), triggers: fc.jsonValue() }), { maxLength: 3 }), fc.jsonValue()),
      prompt_id: fc.jsonValue(),
      user: fc.jsonValue(),
      stop: fc.jsonValue(),
      n: fc.jsonValue(),
    },
    { requiredKeys: [] },
  )

  test('chat bodies: arbitrary JSON and mangled chat requests never get a 500', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.jsonValue(), chatish), async (body) => {
        await expectSeedError(await post(JSON.stringify(body)))
      }),
      { numRuns: 250 },
    )
  }, 60_000)

  test('headers: arbitrary Authorization, Content-Type and x-gw-* values never get a 500', async () => {
    const header = fc.string({ maxLength: 200 }).filter((s) => /^[\x20-\x7e]*$/.test(s))
    const good = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
    await fc.assert(
      fc.asyncProperty(
        fc.record({ authorization: fc.oneof(header, header.map((s) => `GwKey ${s}`), header.map((s) => `GwSigned ${s}`), header.map((s) => `Bearer ${s}`)), 'content-type': header, 'x-gw-end-user-id': header }, { requiredKeys: [] }),
        async (headers) => {
          await expectSeedError(await post(good, headers))
        },
      ),
      { numRuns: 150 },
    )
  }, 60_000)

  test('prompt runs: arbitrary bodies never get a 500', async () => {
    await gw.admin('POST', '/orgs/default/prompts', { slug: 'fuzz' })
    await gw.admin('POST', '/orgs/default/prompts/fuzz/versions', {
      userTemplate: '{{a}} {{b}}',
      model: 'openai/gpt-4o-mini',
      variables: [{ name: 'a', type: 'number', required: true }, { name: 'b', type: 'json' }],
      publish: true,
    })
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.jsonValue(), fc.record({ variables: fc.oneof(fc.dictionary(fc.string(), fc.jsonValue()), fc.jsonValue()), overrides: fc.jsonValue(), stream: fc.jsonValue(), temperature: fc.jsonValue() }, { requiredKeys: [] })),
        fc.constantFrom('', '?version=current', '?version=0', '?version=99999999999', '?version=%00'),
        async (body, query) => {
          const res = await gw.fetch(`/v1/prompts/fuzz/run${query}`, { method: 'POST', body: JSON.stringify(body) })
          await expectSeedError(res)
        },
      ),
      { numRuns: 150 },
    )
  }, 60_000)
})

describe('hostile bodies', () => {
  test('invalid UTF-8 is a 400', async () => {
    const bytes = new Uint8Array([...new TextEncoder().encode('{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"'), 0xff, 0xfe, 0xc3, ...new TextEncoder().encode('"}]}')])
    const res = await post(bytes)
    expect(res.status).toBe(400)
    expect(((await res.json()) as { message: string }).message).toContain('UTF-8')
  })

  test('deeply nested JSON is a 400 or handled, never a 500', async () => {
    const sent = openai.requests.length
    const deep = `${'['.repeat(200_000)}${']'.repeat(200_000)}`
    await expectSeedError(await post(deep))
    const nestedField = `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"extra":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`
    await expectSeedError(await post(nestedField))
    const nestedContent = `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":${'['.repeat(5000)}${']'.repeat(5000)}}]}`
    const res = await post(nestedContent)
    expect(res.status).toBe(400)
    await expectSeedError(res)
    expect(openai.requests.length).toBeLessThanOrEqual(sent + 1)
  })

  test('a huge string under the limit is answered (here: over the context window, so 502 context_limit); over the limit is our 413', async () => {
    const big = 'x '.repeat(MAX_BODY / 2 - 200)
    const sent = openai.requests.length
    const ok = await post(JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: big }] }))
    expect(ok.status).toBe(502)
    expect(((await ok.clone().json()) as { message: string }).message).toContain('context_limit')
    await expectSeedError(ok)
    expect(openai.requests.length).toBe(sent)
    const over = await post(JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: `${big}${big}` }] }))
    expect(over.status).toBe(413)
    expect((await over.json()) as object).toMatchObject({ error: true, code: 'gateway_error' })
    // Without a Content-Length (chunked), the limit still holds.
    const chunked = new ReadableStream({
      start(c) {
        for (let i = 0; i < 3; i++) c.enqueue(new TextEncoder().encode('y'.repeat(MAX_BODY / 2)))
        c.close()
      },
    })
    const res = await post(chunked as unknown as BodyInit)
    expect(res.status).toBe(413)
  })

  test('wrong content types get the seed shape and say what was expected', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const res = await post('model=openai/gpt-4o-mini&messages=hi', { 'content-type': type })
      expect(res.status).toBe(400)
      expect(((await res.json()) as { message: string }).message).toContain('Content-Type: application/json')
    }
    // JSON sent with a sloppy content type (curl -d) is still accepted.
    const curlish = await post(JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }), {
      'content-type': 'application/x-www-form-urlencoded',
    })
    expect(curlish.status).toBe(200)
    for (const body of ['', 'null', '[]', '"text"', '42']) {
      const res = await post(body)
      expect(res.status).toBe(400)
      await expectSeedError(res)
    }
  })

  test('wrong methods and unknown paths are 404 in the seed shape', async () => {
    for (const [method, path] of [['GET', '/v1/chat/completions'], ['PUT', '/v1/prompts/x/run'], ['POST', '/v1/nothing'], ['DELETE', '/health']]) {
      const res = await fetch(`${gw.url}${path}`, { method, headers: { authorization: `GwKey ${gw.key}` } })
      expect(res.status).toBe(404)
      await expectSeedError(res)
    }
  })
})

describe('hostile connections (raw sockets)', () => {
  const body = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
  const request = (headers: string[], b = body) =>
    `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${headers.join('\r\n')}\r\nContent-Length: ${Buffer.byteLength(b)}\r\n\r\n${b}`

  test('duplicate Authorization headers are a 401, duplicate Content-Type still works', async () => {
    const dupAuth = await raw(request([`Authorization: GwKey ${gw.key}`, `Authorization: GwKey ${gw.key}`, 'Content-Type: application/json']))
    expect(statusOf(dupAuth)).toBe(401)
    expect(dupAuth).toContain('"code":"unauthorized"')
    const dupType = await raw(request([`Authorization: GwKey ${gw.key}`, 'Content-Type: application/json', 'Content-Type: application/json']))
    expect(statusOf(dupType)).toBe(200)
  })

  test('an overlong header is refused and the gateway keeps serving', async () => {
    const res = await raw(request([`Authorization: GwKey ${gw.key}`, `X-Junk: ${'a'.repeat(100_000)}`]))
    const status = statusOf(res)
    expect(Number.isNaN(status) || (status >= 400 && status < 500)).toBe(true)
    expect((await fetch(`${gw.url}/health`)).status).toBe(200)
  })

  test('conflicting Content-Length headers are refused', async () => {
    const res = await raw(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: GwKey ${gw.key}\r\nContent-Length: 5\r\nContent-Length: 500\r\n\r\n${body}`)
    const status = statusOf(res)
    expect(Number.isNaN(status) || (status >= 400 && status < 500)).toBe(true)
  })

  test('a slow-drip body does not hold up other requests, and is then served', async () => {
    const slow = raw(request([`Authorization: GwKey ${gw.key}`, 'Content-Type: application/json']), { dripMs: 3 })
    await Bun.sleep(50)
    const started = performance.now()
    const other = await post(body)
    expect(other.status).toBe(200)
    expect(performance.now() - started).toBeLessThan(1000)
    expect(statusOf(await slow)).toBe(200)
  })

  test('after all of this the gateway still answers', async () => {
    expect((await fetch(`${gw.url}/health`)).status).toBe(200)
    const res = await post(body)
    expect(res.status).toBe(200)
  })
})
