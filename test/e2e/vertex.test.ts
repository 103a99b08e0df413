// Google Vertex AI as a provider kind (PRODUCT §17): Gemini and Anthropic on Vertex behind a service-account
// key, the access token fetched once per expiry, a foreign key as a key failure, fallback, and the key kept secret.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { exportPKCS8, generateKeyPair } from 'jose'
import { type FakeGoogleOAuth, startFakeGoogleOAuth } from '../fakes/google-oauth'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { type FakeVertex, startFakeVertex } from '../fakes/vertex'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

const EMAIL = 'gw-test@example-project.iam.gserviceaccount.com'
const PROJECT = 'example-project'
const LOCATION = 'us-central1'
const hello = [{ role: 'user', content: 'Say hi please' }]

let oauth: FakeGoogleOAuth
let vertex: FakeVertex
let openai: FakeUpstream
let gw: TestGateway
let pem = ''
let foreignPem = ''

const serviceAccountKey = (privateKey: string) => oauth.serviceAccountKey(privateKey, PROJECT)
const provider = (privateKey: string) => ({ kind: 'vertex', project: PROJECT, location: LOCATION, serviceAccountKey: serviceAccountKey(privateKey), baseUrl: vertex.url })

/** The lines of a PEM key's body: none of them may appear anywhere. */
const keyLines = (p: string) => p.split('\n').filter((l) => l && !l.startsWith('-----'))
function expectNoKey(text: string) {
  for (const k of [pem, foreignPem]) for (const line of keyLines(k)) expect(text).not.toContain(line)
  expect(text).not.toContain('PRIVATE KEY')
}

beforeAll(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true })
  pem = await exportPKCS8(pair.privateKey)
  foreignPem = await exportPKCS8((await generateKeyPair('RS256', { extractable: true })).privateKey)
  oauth = startFakeGoogleOAuth({ clientEmail: EMAIL, publicKey: pair.publicKey, keyId: 'a1b2c3d4e5f6', expiresIn: 3600 })
  vertex = startFakeVertex({ project: PROJECT, location: LOCATION, tokens: () => oauth.issued })
  openai = await startFake('openai')
  gw = await startTestGateway({ openai })
  // PRODUCT §17's record under the name vertex: its kind implied.
  const { kind: _kind, ...record } = provider(pem)
  expect((await gw.admin('PUT', '/orgs/default/providers/vertex', record)).status).toBe(200)
  expect((await gw.admin('PUT', '/orgs/default/providers/vertex-foreign', provider(foreignPem))).status).toBe(200)
})
afterAll(async () => {
  await gw.stop()
  await Promise.all([oauth.stop(), vertex.stop(), openai.stop()])
})

const lastRequest = () => vertex.requests.at(-1)

test('the admin API answers a Vertex provider with its project and location, never its service-account key', async () => {
  const put = await gw.admin('PUT', '/orgs/default/providers/vertex', provider(pem))
  expect(put.status).toBe(200)
  const shown = (await put.json()) as Record<string, unknown>
  expect(shown).toMatchObject({ provider: 'vertex', kind: 'vertex', project: PROJECT, location: LOCATION, apiKey: '****' })
  const listing = await (await gw.admin('GET', '/orgs/default')).text()
  expect(listing).toContain('"vertex-foreign"')
  expectNoKey(JSON.stringify(shown) + listing)
  // A key that is not one is refused without repeating it.
  const bad = await gw.admin('PUT', '/orgs/default/providers/vertex-bad', { ...provider(pem), serviceAccountKey: { ...serviceAccountKey(pem), private_key: 'not a key' } })
  expect(bad.status).toBe(400)
  const text = await bad.text()
  expect(text).toContain('private_key')
  expect(text).not.toContain('not a key')
  // PRODUCT §17 names the key `serviceAccount`: taken too; without either, a 400 naming the field.
  const { serviceAccountKey: key, ...rest } = provider(pem)
  const named = await gw.admin('PUT', '/orgs/default/providers/vertex-named', { ...rest, serviceAccount: key })
  expect(named.status).toBe(200)
  expectNoKey(await named.text())
  const none = await gw.admin('PUT', '/orgs/default/providers/vertex-none', rest)
  expect(none.status).toBe(400)
  expect(await none.text()).toContain('serviceAccountKey')
})

test("/v1/models lists Gemini's and Claude's catalog models under the Vertex provider's name, Claude as Vertex versions it", async () => {
  const grants = oauth.grants.length
  const res = await gw.fetch('/v1/models')
  expect(res.status).toBe(200)
  const ids = ((await res.json()) as { data: { id: string; owned_by: string }[] }).data.filter((m) => m.owned_by === 'vertex').map((m) => m.id)
  expect(ids).toEqual(expect.arrayContaining(['vertex/gemini-2.5-flash', 'vertex/claude-sonnet-4-5@20250929', 'vertex/claude-sonnet-4@20250514']))
  expect(ids).toContain('vertex/gemini-embedding-001')
  expect((await gw.fetch(`/v1/models/${encodeURIComponent('vertex/claude-sonnet-4@20250514')}`)).status).toBe(200)
  // Listing asks Google nothing.
  expect(oauth.grants.length).toBe(grants)
})

test('the access token is fetched once for many requests, concurrent or not', async () => {
  const models = ['vertex/gemini-2.5-flash', 'vertex/claude-sonnet-4@20250514']
  const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => gw.chat({ model: models[i % 2], messages: hello, max_tokens: 50 })))
  for (const r of answers) expect(r.status).toBe(200)
  expect((await gw.chat({ model: 'vertex/gemini-2.5-flash', messages: hello })).status).toBe(200)
  // One grant for the good key over every request of this file so far (the foreign key has not been used yet).
  expect(oauth.grants.filter((g) => g.status === 200)).toHaveLength(1)
  expect(oauth.issued).toHaveLength(1)
})

test("embeddings: Vertex AI's :predict with instances and outputDimensionality, the same token; vectors, base64 and Vertex's token count in OpenAI terms", async () => {
  const embed = (body: unknown) => gw.fetch('/v1/embeddings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const res = await embed({ model: 'vertex/text-embedding-005', input: ['one two', 'three'], dimensions: 256 })
  expect(res.status).toBe(200)
  const body = (await res.json()) as Record<string, any>
  expect(body).toMatchObject({ object: 'list', model: 'text-embedding-005', usage: { prompt_tokens: 3, total_tokens: 3 } })
  expect(body.data.map((d: { embedding: number[] }) => d.embedding.length)).toEqual([256, 256])
  const sent = lastRequest()
  expect(sent?.path).toBe(`/v1/projects/${PROJECT}/locations/${LOCATION}/publishers/google/models/text-embedding-005:predict`)
  expect(sent?.headers.authorization).toBe(`Bearer ${oauth.issued.at(-1)}`)
  expect(sent?.body).toEqual({ instances: [{ content: 'one two' }, { content: 'three' }], parameters: { outputDimensionality: 256 } })
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log).toMatchObject({ provider: 'vertex', usage: { promptTokens: 3, estimated: false } })

  const gemini = await embed({ model: 'vertex/gemini-embedding-001', input: 'hello there', encoding_format: 'base64' })
  expect(gemini.status).toBe(200)
  const one = (await gemini.json()) as Record<string, any>
  expect(Buffer.from(one.data[0].embedding, 'base64')).toHaveLength(3072 * 4)
  // Priced as the catalog's gemini-embedding-001 ($0.15 per million tokens).
  expect(Number(gemini.headers.get('x-gw-cost-usd'))).toBeCloseTo((2 * 0.15) / 1e6, 15)
  const before = vertex.requests.length
  const two = await embed({ model: 'vertex/gemini-embedding-001', input: ['a', 'b'] })
  expect(two.status).toBe(400)
  expect(((await two.json()) as Record<string, string>).message).toContain('one text per call')
  // Claude has no embeddings, on Vertex AI neither: the caller's 400, nothing sent.
  const claude = await embed({ model: 'vertex/claude-sonnet-4@20250514', input: 'a' })
  expect(claude.status).toBe(400)
  expect(((await claude.json()) as Record<string, string>).message).toContain('does not serve /v1/embeddings')
  expect(vertex.requests.length).toBe(before)
})

test('429 RESOURCE_EXHAUSTED is a rate limit, the key\'s failure', async () => {
  vertex.failNext(429)
  const res = await gw.chat({ model: 'vertex/gemini-2.5-flash', messages: hello })
  expect(res.status).toBe(502)
  expect(await res.text()).toContain('RESOURCE_EXHAUSTED')
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect((log.attempts as Record<string, unknown>[])[0]).toMatchObject({ outcome: 'rate_limit', class: 'key', status: 429 })
})

test('a token Vertex refuses (401) is a key failure and is not reused: once the key is back, a new token is fetched', async () => {
  vertex.revokeAll()
  const res = await gw.chat({ model: 'vertex/gemini-2.5-pro', messages: hello })
  expect(res.status).toBe(502)
  expect(await res.text()).toContain('UNAUTHENTICATED')
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect((log.attempts as Record<string, unknown>[])[0]).toMatchObject({ class: 'key', status: 401 })
  // The record set again (a benched key comes back when it changes): the same service account, a new token.
  // PRODUCT §17's record under the name vertex: its kind implied.
  const { kind: _kind, ...record } = provider(pem)
  expect((await gw.admin('PUT', '/orgs/default/providers/vertex', record)).status).toBe(200)
  const again = await gw.chat({ model: 'vertex/gemini-2.5-pro', messages: hello })
  expect(again.status).toBe(200)
  expect(oauth.issued).toHaveLength(2)
  expect(lastRequest()?.headers.authorization).toBe(`Bearer ${oauth.issued[1]}`)
})

test('a foreign key (grant signed by another key) fails as a key failure without leaking the key, and falls back to openai', async () => {
  const res = await gw.chat({ model: 'vertex-foreign/gemini-2.5-flash', messages: hello })
  expect(res.status).toBe(502)
  const error = await res.text()
  expect(error).toContain('invalid_grant')
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect((log.attempts as Record<string, unknown>[])[0]).toMatchObject({ outcome: 'provider_error', class: 'key' })
  expectNoKey(error + JSON.stringify(log))
  // Nothing reached Vertex with it.
  expect(vertex.requests.filter((r) => r.path.includes('gemini') && !oauth.issued.some((t) => r.headers.authorization === `Bearer ${t}`))).toHaveLength(0)

  const openaiBefore = openai.requests.length
  const fell = await gw.chat({ model: 'vertex-foreign/gemini-2.5-flash', messages: hello, fallback_chain: [{ model: 'openai/gpt-4o-mini' }] })
  expect(fell.status).toBe(200)
  expect(fell.headers.get('x-gw-fallback-reason')).toBe('provider_error')
  expect(((await fell.json()) as any).model).toBe('openai/gpt-4o-mini')
  expect(openai.requests.length).toBe(openaiBefore + 1)
  const logs = await (await gw.fetch('/v1/logs?limit=100')).text()
  expectNoKey(logs)
})

test('a token endpoint that cannot be reached is a provider_error of the provider, never the key\'s, and names no key', async () => {
  const down = { ...provider(pem), serviceAccountKey: { ...serviceAccountKey(pem), token_uri: 'http://127.0.0.1:1/token' } }
  expect((await gw.admin('PUT', '/orgs/default/providers/vertex-down', down)).status).toBe(200)
  const res = await gw.chat({ model: 'vertex-down/gemini-2.5-flash', messages: hello })
  expect(res.status).toBe(502)
  const error = await res.text()
  expect(error).toContain('could not be reached')
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect((log.attempts as Record<string, unknown>[])[0]).toMatchObject({ outcome: 'provider_error', class: 'provider' })
  expectNoKey(error + JSON.stringify(log))
})

test('promptCaching auto (PRODUCT §19): Anthropic on Vertex gets the same breakpoints as Anthropic direct', async () => {
  const before = ((await (await gw.admin('GET', '/orgs/default')).json()) as { policy: object }).policy
  expect((await gw.admin('PUT', '/orgs/default/policy', { ...before, promptCaching: 'auto' })).status).toBe(200)
  try {
    const system = 'You are a careful support agent. '.repeat(160)
    const res = await gw.chat({
      model: 'vertex/claude-sonnet-4@20250514',
      max_tokens: 50,
      messages: [{ role: 'system', content: system }, { role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello!' }, { role: 'user', content: 'Help me.' }],
    })
    expect(res.status).toBe(200)
    const sent = lastRequest()?.body as Record<string, any>
    expect(sent.system).toEqual([{ type: 'text', text: system, cache_control: { type: 'ephemeral' } }])
    expect(sent.messages[1].content).toEqual([{ type: 'text', text: 'Hello!', cache_control: { type: 'ephemeral' } }])
  } finally {
    await gw.admin('PUT', '/orgs/default/policy', before)
  }
})

test("/v1/messages to Claude on Vertex passes the client's anthropic-beta on (Vertex reads beta features from it)", async () => {
  const res = await gw.fetch('/v1/messages', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-beta': 'context-1m-2025-08-07' },
    body: JSON.stringify({ model: 'vertex/claude-sonnet-4@20250514', max_tokens: 20, messages: [{ role: 'user', content: 'Say hi please' }] }),
  })
  expect(res.status).toBe(200)
  expect(lastRequest()?.headers['anthropic-beta']).toBe('context-1m-2025-08-07')
  // Without one, none is sent.
  await gw.fetch('/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'vertex/claude-sonnet-4@20250514', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }) })
  expect(lastRequest()?.headers['anthropic-beta']).toBeUndefined()
})
