// Every failure at the HTTP edge has the seed's error shape and a request id.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let openai: FakeUpstream
let gw: TestGateway

beforeAll(async () => {
  openai = await startFake('openai')
  gw = await startTestGateway({ openai }, { GW_MAX_BODY_BYTES: '4096' })
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
})

async function expectError(res: Response, status: number, code: string, message?: RegExp) {
  expect(res.status).toBe(status)
  const requestId = res.headers.get('x-gw-request-id')
  expect(requestId).toBeTruthy()
  const body = (await res.json()) as Record<string, unknown>
  expect(body).toMatchObject({ error: true, code, requestId })
  expect(typeof body.message).toBe('string')
  if (message) expect(body.message as string).toMatch(message)
  return body
}

const post = (body: string, headers: Record<string, string> = {}) =>
  gw.fetch('/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })
const hello = [{ role: 'user', content: 'hi' }]

describe('400 gateway_error', () => {
  test('malformed JSON', async () => {
    await expectError(await post('{"model": "openai/gpt-4o",'), 400, 'gateway_error', /Malformed JSON/)
  })
  test('empty body', async () => {
    await expectError(await post(''), 400, 'gateway_error', /empty/)
  })
  test('a JSON value that is not an object', async () => {
    await expectError(await post('[1,2]'), 400, 'gateway_error', /JSON object/)
  })
  test('missing model', async () => {
    await expectError(await gw.chat({ messages: hello }), 400, 'gateway_error', /"model"/)
  })
  test('model without a provider prefix', async () => {
    await expectError(await gw.chat({ model: 'gpt-4o', messages: hello }), 400, 'gateway_error', /provider\/model-name/)
  })
  test('unknown provider prefix', async () => {
    await expectError(await gw.chat({ model: 'acme/m1', messages: hello }), 400, 'gateway_error', /unknown provider "acme"/)
  })
  test('model with an empty id', async () => {
    await expectError(await gw.chat({ model: 'openai/', messages: hello }), 400, 'gateway_error')
  })
  test('missing messages', async () => {
    await expectError(await gw.chat({ model: 'openai/gpt-4o' }), 400, 'gateway_error', /"messages"/)
  })
  test('empty messages', async () => {
    await expectError(await gw.chat({ model: 'openai/gpt-4o', messages: [] }), 400, 'gateway_error', /messages/)
  })
  test('a message with an unknown role names the field', async () => {
    await expectError(
      await gw.chat({ model: 'openai/gpt-4o', messages: [{ role: 'wizard', content: 'x' }] }),
      400,
      'gateway_error',
      /messages\/0\/role/,
    )
  })
  test('a user message without content', async () => {
    await expectError(await gw.chat({ model: 'openai/gpt-4o', messages: [{ role: 'user' }] }), 400, 'gateway_error', /messages\/0\/content/)
  })
  test.each([
    ['temperature', 2.5],
    ['temperature', -0.1],
    ['top_p', 1.5],
    ['max_tokens', 0],
    ['max_tokens', 1.5],
    ['stream', 'yes'],
  ])('%s = %p is out of limits', async (field, value) => {
    await expectError(await gw.chat({ model: 'openai/gpt-4o', messages: hello, [field]: value }), 400, 'gateway_error', new RegExp(field))
  })
  test.each([
    [{ nested: { a: 1 } }, /nested/],
    [{ list: [1] }, /nested/],
    [{ nothing: null }, /nested/],
    [{ ['k'.repeat(65)]: 'v' }, /1 to 64/],
    [{ long: 'v'.repeat(129) }, /128/],
    [{ long: '😀'.repeat(129) }, /128/],
    [{ ['😀'.repeat(65)]: 'v' }, /1 to 64/],
    [Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i])), /100/],
  ])('invalid metadata %#', async (metadata, why) => {
    await expectError(await gw.chat({ model: 'openai/gpt-4o', messages: hello, metadata }), 400, 'gateway_error', why)
  })
  test("a request refused as invalid is logged with the model and user it named (searches and reports find it)", async () => {
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, user: 'alice', temperature: 'hot' })
    expect(res.status).toBe(400)
    const entry = await gw.log(res.headers.get('x-gw-request-id') as string)
    expect(entry).toMatchObject({ status: 400, requestedModel: 'openai/gpt-4o', provider: 'openai', user: 'alice', endUserId: 'alice', model: null })
    // What is not a short string is left out.
    const odd = await gw.chat({ model: 'x'.repeat(300), messages: hello, user: 7 })
    expect(await gw.log(odd.headers.get('x-gw-request-id') as string)).toMatchObject({ status: 400, requestedModel: null, user: null })
  })
  test('metadata lengths count characters: 128 emoji as a value and 64 as a key are within the limits', async () => {
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, metadata: { mood: '😀'.repeat(128), ['😀'.repeat(64)]: 'x' } })
    expect(res.status).toBe(200)
  })
  test('an unknown fallback trigger', async () => {
    await expectError(
      await gw.chat({ model: 'openai/gpt-4o', messages: hello, fallback_chain: [{ model: 'openai/gpt-4o-mini', triggers: ['bad_luck'] }] }),
      400,
      'gateway_error',
      /bad_luck/,
    )
  })
  test('a malformed fallback entry', async () => {
    await expectError(
      await gw.chat({ model: 'openai/gpt-4o', messages: hello, 'x-gw-fallback-chain': [{ triggers: [] }] }),
      400,
      'gateway_error',
      /model/,
    )
  })
  test('an output_schema with an unknown mode', async () => {
    await expectError(
      await gw.chat({ model: 'openai/gpt-4o', messages: hello, output_schema: { mode: 'yaml' } }),
      400,
      'gateway_error',
      /output_schema\/mode/,
    )
  })
})

describe('401 unauthorized', () => {
  const call = (authorization?: string) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
      body: JSON.stringify({ model: 'openai/gpt-4o', messages: hello }),
    })
  test('no Authorization header', async () => {
    await expectError(await call(), 401, 'unauthorized', /Missing Authorization/)
  })
  test('a malformed header', async () => {
    await expectError(await call('GwKey'), 401, 'unauthorized')
  })
  test('an unknown service key, never echoed back', async () => {
    const fake = `gw_sk_${'a'.repeat(44)}`
    const body = await expectError(await call(`GwKey ${fake}`), 401, 'unauthorized', /Invalid service key/)
    expect(JSON.stringify(body)).not.toContain(fake)
  })
  test('a wrong secret for an existing key id', async () => {
    const tampered = `${gw.key.slice(0, -4)}abcd`
    await expectError(await call(`GwKey ${tampered}`), 401, 'unauthorized')
  })
  test('a Bearer value that is neither a gw key nor a JWT (an OpenAI key pasted by mistake) says what was expected', async () => {
    const body = await expectError(await call('Bearer sk-proj-abcdefghijklmnop'), 401, 'unauthorized')
    expect(body.message).toBe(
      'The Bearer credential is neither a gw service key (gw_sk_…) nor an OIDC token (a JWT). It looks like a provider API key: those are set on the org (admin API or OPENAI_API_KEY…), not sent by clients.',
    )
    expect(JSON.stringify(body)).not.toContain('sk-proj')
    const other = await expectError(await call('Bearer hello'), 401, 'unauthorized')
    expect(other.message).toBe('The Bearer credential is neither a gw service key (gw_sk_…) nor an OIDC token (a JWT).')
  })
  test('auth is checked before the body', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', body: '{"model":1}' })
    await expectError(res, 401, 'unauthorized')
  })
})

describe('other statuses', () => {
  test('403 model_not_allowed when the org has no key for the provider', async () => {
    await expectError(await gw.chat({ model: 'anthropic/claude-haiku-4-5', messages: hello }), 403, 'model_not_allowed', /anthropic/)
  })
  test('404 for an unknown route', async () => {
    await expectError(await gw.fetch('/v1/nope'), 404, 'gateway_error', /\/v1\/nope/)
  })
  test('404 for an API path without /v1 says where the APIs live and which path was likely meant', async () => {
    const res = await gw.fetch('/messages', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    await expectError(res, 404, 'gateway_error', /^unknown route POST \/messages; gw's APIs live under \/v1 — did you mean \/v1\/messages\?$/)
    await expectError(await gw.fetch('/chat/completions', { method: 'POST', body: '{}' }), 404, 'gateway_error', /did you mean \/v1\/chat\/completions\?/)
    await expectError(await gw.fetch('/nothing-here'), 404, 'gateway_error', /^unknown route GET \/nothing-here; gw's APIs live under \/v1$/)
  })
  test('405 with Allow for a method the route does not take', async () => {
    const res = await gw.fetch('/v1/chat/completions')
    expect(res.headers.get('allow')).toBe('POST')
    await expectError(res, 405, 'gateway_error', /GET is not allowed on \/v1\/chat\/completions \(allowed: POST\)/)
    const run = await gw.fetch('/v1/prompts/some-slug/run', { method: 'PUT' })
    expect(run.headers.get('allow')).toBe('POST')
    await expectError(run, 405, 'gateway_error')
    const logs = await gw.fetch('/v1/logs', { method: 'DELETE' })
    expect(logs.headers.get('allow')).toBe('GET')
    await expectError(logs, 405, 'gateway_error')
  })
  test('413 with our body when Content-Length is over GW_MAX_BODY_BYTES', async () => {
    const big = JSON.stringify({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'x'.repeat(5000) }] })
    await expectError(await post(big), 413, 'gateway_error', /4096/)
  })
  test('413 for a chunked body over the limit', async () => {
    const chunks = [new TextEncoder().encode('{"model":"openai/gpt-4o","messages":[{"role":"user","content":"'), new TextEncoder().encode('x'.repeat(6000)), new TextEncoder().encode('"}]}')]
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        const next = chunks.shift()
        if (next) c.enqueue(next)
        else c.close()
      },
    })
    await expectError(await gw.fetch('/v1/chat/completions', { method: 'POST', body }), 413, 'gateway_error')
  })
  test('an upstream 500 is a 502 provider_error with the upstream status and text', async () => {
    openai.enqueue({ kind: 'error', status: 500, errorType: 'server' })
    const body = await expectError(await gw.chat({ model: 'openai/gpt-4o', messages: hello }), 502, 'provider_error', /HTTP 500/)
    expect(body.message).not.toContain(openai.apiKey)
  })
  test('an upstream 429 after the chain is a 502 provider_error', async () => {
    openai.enqueue({ kind: 'error', status: 429, errorType: 'rate_limit', retryAfter: '30' })
    const res = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello })
    expect(res.headers.get('retry-after')).toBe('30')
    await expectError(res, 502, 'provider_error', /HTTP 429/)
  })
  test('GET /health needs no auth', async () => {
    const res = await fetch(`${gw.url}/health`)
    expect(res.status).toBe(200)
    const body = (await res.json()) as Record<string, unknown>
    expect(body.ok).toBe(true)
    expect(body.requestId).toBe(res.headers.get('x-gw-request-id') as string)
  })
})
