// Azure OpenAI (PRODUCT §17, docs/providers.md "Azure OpenAI"): a provider record of kind `azure`, its two URL
// forms and `api-key` header against a fake Azure, content-filter refusals, fallback, rate limits, the other APIs,
// and the key kept secret.

import { afterAll, beforeAll, beforeEach, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AZURE_CONTENT_FILTER_400 } from '../fakes/azure'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { readSse, startTestGateway, type TestGateway } from '../helpers/gateway'
import { assertChatChunk, assertChatCompletion } from '../helpers/openai-schema'

let azure: FakeUpstream
let openai: FakeUpstream
let gw: TestGateway

const SECRET = 'azure-key-SECRET-0123456789abcdef'
const API_VERSION = '2024-10-21'
const hello = [{ role: 'user', content: 'Say hi please' }]

beforeAll(async () => {
  azure = await startFake('azure', { apiKey: SECRET })
  openai = await startFake('openai')
  gw = await startTestGateway({ openai })
  // The v1 API (the resource's endpoint given with /openai/v1, as the portal shows it; PRODUCT §17's record, its kind
  // implied by the name), and the deployment API.
  const v1 = await gw.admin('PUT', '/orgs/default/providers/azure', { baseUrl: `${azure.url}/openai/v1`, apiKey: SECRET, deployments: { 'gpt-4o': 'prod-4o' } })
  expect(v1.status).toBe(200)
  const dep = await gw.admin('PUT', '/orgs/default/providers/azure-dep', {
    kind: 'azure',
    baseUrl: azure.url,
    apiKey: SECRET,
    apiVersion: API_VERSION,
    deployments: { 'gpt-4o-mini': 'mini-eu', 'text-embedding-3-small': 'emb' },
  })
  expect(dep.status).toBe(200)
})
afterAll(async () => {
  await gw.stop()
  await Promise.all([azure.stop(), openai.stop()])
})
beforeEach(() => {
  azure.reset()
  openai.reset()
})

const post = (path: string, body: object) => gw.fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
const requestId = (res: Response) => res.headers.get('x-gw-request-id') as string

test('the fake is Azure: no api-key (or a Bearer one) is a 401 with Azure\'s body, the deployment API without api-version a 404', async () => {
  const body = JSON.stringify({ model: 'prod-4o', messages: hello })
  const bearer = await fetch(`${azure.url}/openai/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' }, body })
  expect(bearer.status).toBe(401)
  expect(((await bearer.json()) as any).error).toMatchObject({ code: '401', message: expect.stringContaining('Access denied due to invalid subscription key') })
  const noVersion = await fetch(`${azure.url}/openai/deployments/prod-4o/chat/completions`, { method: 'POST', headers: { 'api-key': SECRET, 'content-type': 'application/json' }, body })
  expect(noVersion.status).toBe(404)
})

test('the v1 API: chat JSON and stream at {baseUrl}/openai/v1/chat/completions, the key in api-key (never authorization), the deployment as model, priced as OpenAI\'s gpt-4o', async () => {
  const res = await gw.chat({ model: 'azure/gpt-4o', messages: hello })
  expect(res.status).toBe(200)
  const body = (await res.json()) as Record<string, any>
  assertChatCompletion(body)
  expect(body.model).toBe('azure/gpt-4o')
  expect(Number(res.headers.get('x-gw-cost-usd'))).toBeGreaterThan(0)
  const sent = azure.requests[0]
  expect(sent?.path).toBe('/openai/v1/chat/completions')
  expect(sent?.headers['api-key']).toBe(SECRET)
  expect(sent?.headers.authorization).toBeUndefined()
  expect(sent?.body).toMatchObject({ model: 'prod-4o', messages: hello })
  const log = await gw.log(requestId(res))
  expect(log.provider).toBe('azure')
  expect(log.costUsd).toBeGreaterThan(0)

  const streamed = await gw.chat({ model: 'azure/gpt-4o', messages: hello, stream: true })
  expect(streamed.status).toBe(200)
  const events = await readSse(streamed)
  expect(events.at(-1)).toBe('[DONE]')
  for (const c of events.slice(0, -1) as Record<string, any>[]) assertChatChunk(c)
  expect((events.slice(0, -1) as Record<string, any>[]).map((c) => c.choices[0]?.delta?.content ?? '').join('')).not.toBe('')
  expect(azure.requests[1]?.headers.authorization).toBeUndefined()
  expect((await gw.log(requestId(streamed))).usage).toMatchObject({ estimated: false })
})

test("Azure's content filter is a refusal: its 400 is logged as refusal_detected (not retried elsewhere), and a chain entry naming refusal_detected answers instead", async () => {
  azure.enqueue({ kind: 'error', status: 400, body: AZURE_CONTENT_FILTER_400 })
  const refused = await gw.chat({ model: 'azure/gpt-4o', messages: hello, fallback_chain: [{ model: 'openai/gpt-4o-mini' }] })
  expect(refused.status).toBe(502)
  expect(refused.headers.get('x-should-retry')).toBe('false')
  const log = await gw.log(requestId(refused))
  expect(log.attempts).toEqual([expect.objectContaining({ outcome: 'refusal_detected', status: 400 }), expect.objectContaining({ model: 'openai/gpt-4o-mini', outcome: 'skipped' })])
  expect(openai.requests).toHaveLength(0)

  azure.enqueue({ kind: 'error', status: 400, body: AZURE_CONTENT_FILTER_400 })
  const rescued = await gw.chat({ model: 'azure/gpt-4o', messages: hello, fallback_chain: [{ model: 'openai/gpt-4o-mini', triggers: ['refusal_detected'] }] })
  expect(rescued.status).toBe(200)
  expect(rescued.headers.get('x-gw-fallback-reason')).toBe('refusal_detected')
  expect(((await rescued.json()) as any).model).toBe('openai/gpt-4o-mini')

  // A completion the filter cut (finish_reason "content_filter") is a refusal too.
  azure.enqueue({ kind: 'reply', finish: 'content_filter', text: '' })
  const cut = await gw.chat({ model: 'azure/gpt-4o', messages: hello })
  expect(cut.status).toBe(200)
  expect(((await cut.json()) as any).choices[0].finish_reason).toBe('content_filter')
  expect((await gw.log(requestId(cut))).attempts).toEqual([expect.objectContaining({ outcome: 'refusal_detected', status: 200 })])
})

test('a streamed answer the content filter cut is logged as refusal_detected', async () => {
  azure.enqueue({ kind: 'reply', finish: 'content_filter', text: '' })
  const res = await gw.chat({ model: 'azure-dep/gpt-4o-mini', messages: hello, stream: true })
  expect(res.status).toBe(200)
  const events = (await readSse(res)).slice(0, -1) as Record<string, any>[]
  expect(events.some((c) => c.choices[0]?.finish_reason === 'content_filter')).toBe(true)
  expect((await gw.log(requestId(res))).attempts).toEqual([expect.objectContaining({ outcome: 'refusal_detected' })])
})

test("/v1/models lists an Azure record's deployments (Azure itself is not asked)", async () => {
  const res = await gw.fetch('/v1/models')
  expect(res.status).toBe(200)
  const ids = ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id)
  expect(ids).toEqual(expect.arrayContaining(['azure/gpt-4o', 'azure-dep/gpt-4o-mini', 'azure-dep/text-embedding-3-small']))
  expect((await gw.fetch(`/v1/models/${encodeURIComponent('azure-dep/gpt-4o-mini')}`)).status).toBe(200)
  expect(azure.requests).toHaveLength(0)
})

test('a config file (GW_CONFIG) sets an Azure record like the admin API', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-azure-config-'))
  const path = join(dir, 'gw.yaml')
  writeFileSync(path, `providers:\n  azure:\n    - name: default\n      kind: azure\n      baseUrl: ${azure.url}\n      apiKey: ${SECRET}\n      apiVersion: ${API_VERSION}\n`)
  const other = await startTestGateway({}, { GW_CONFIG: path })
  try {
    const res = await other.chat({ model: 'azure/gpt-4o', messages: hello })
    expect(res.status).toBe(200)
    expect(azure.requests[0]?.path).toBe(`/openai/deployments/gpt-4o/chat/completions?api-version=${API_VERSION}`)
  } finally {
    await other.stop()
    rmSync(dir, { recursive: true, force: true })
  }
})

test('/v1/messages is translated to chat; /v1/responses is passed through to both URL forms (the deployment as model); embeddings through both', async () => {
  const messages = await post('/v1/messages', { model: 'azure/gpt-4o', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] })
  expect(messages.status).toBe(200)
  expect(((await messages.json()) as any)).toMatchObject({ type: 'message', model: 'azure/gpt-4o' })
  const responses = await post('/v1/responses', { model: 'azure/gpt-4o', input: 'hi', store: false })
  expect(responses.status).toBe(200)
  const r = (await responses.json()) as any
  expect(r).toMatchObject({ object: 'response' })
  expect(r.output.length).toBeGreaterThan(0)
  expect(azure.requests.at(-1)?.body).toEqual({ model: 'prod-4o', input: 'hi', store: false })
  const depResponses = await post('/v1/responses', { model: 'azure-dep/gpt-4o-mini', input: 'hi' })
  expect(depResponses.status).toBe(200)
  expect(azure.requests.at(-1)?.body).toMatchObject({ model: 'mini-eu', input: 'hi' })
  const v1 = await post('/v1/embeddings', { model: 'azure/text-embedding-3-small', input: 'hi' })
  expect(v1.status).toBe(200)
  const dep = await post('/v1/embeddings', { model: 'azure-dep/text-embedding-3-small', input: ['a', 'b'] })
  expect(dep.status).toBe(200)
  expect(((await dep.json()) as any).data).toHaveLength(2)
  expect(azure.requests.map((x) => x.path)).toEqual([
    '/openai/v1/chat/completions',
    '/openai/v1/responses',
    `/openai/responses?api-version=${API_VERSION}`,
    '/openai/v1/embeddings',
    `/openai/deployments/emb/embeddings?api-version=${API_VERSION}`,
  ])
  for (const x of azure.requests) expect(x.headers.authorization).toBeUndefined()
})

test("the key never appears in an admin answer, an error or a log entry; the record's deployments and api-version are shown", async () => {
  const listing = await (await gw.admin('GET', '/orgs/default')).text()
  expect(listing).toContain('azure-dep')
  expect(listing).toContain('mini-eu')
  expect(listing).not.toContain(SECRET)
  expect(listing).not.toContain(SECRET.slice(0, 16))
  const put = await gw.admin('PUT', '/orgs/default/providers/azure-dep', { kind: 'azure', baseUrl: azure.url, apiKey: SECRET, apiVersion: API_VERSION, deployments: { 'gpt-4o-mini': 'mini-eu', 'text-embedding-3-small': 'emb' } })
  const shown = (await put.json()) as Record<string, any>
  expect(shown).toMatchObject({ provider: 'azure-dep', kind: 'azure', apiVersion: API_VERSION, deployments: { 'gpt-4o-mini': 'mini-eu' } })
  expect(JSON.stringify(shown)).not.toContain(SECRET)
  azure.enqueue({ kind: 'error', status: 401, errorType: 'auth' })
  const failed = await gw.chat({ model: 'azure-dep/gpt-4o-mini', messages: hello })
  expect(failed.status).toBe(502)
  const log = JSON.stringify(await gw.log(requestId(failed)))
  for (const text of [await failed.text(), log]) expect(text).not.toContain(SECRET)
  expect(azure.requests.at(-1)?.headers['api-key']).toBe(SECRET)
})

test('a 429 from Azure is a rate limit: its Retry-After is passed on', async () => {
  azure.enqueue({ kind: 'error', status: 429, retryAfter: '7' })
  const res = await gw.chat({ model: 'azure/gpt-4.1', messages: hello })
  expect(res.status).toBe(502)
  expect(res.headers.get('retry-after')).toBe('7')
  expect((await gw.log(requestId(res))).attempts).toEqual([expect.objectContaining({ outcome: 'rate_limit', status: 429 })])
})

test('a record is checked: kind azure needs baseUrl and apiKey, and not a native name', async () => {
  const put = (name: string, body: object) => gw.admin('PUT', `/orgs/default/providers/${name}`, { kind: 'azure', ...body })
  expect((await put('azure-x', { apiKey: SECRET })).status).toBe(400)
  expect((await put('azure-x', { baseUrl: azure.url })).status).toBe(400)
  expect((await put('openai', { baseUrl: azure.url, apiKey: SECRET })).status).toBe(400)
  // The native names take their own kind only: not an OpenAI-compatible provider, nor another kind.
  for (const [name, kind] of [['azure', 'openai-compatible'], ['bedrock', 'openai-compatible'], ['vertex', 'openai-compatible'], ['azure', 'bedrock']]) {
    const res = await gw.admin('PUT', `/orgs/default/providers/${name}`, { kind, baseUrl: azure.url, apiKey: SECRET, region: 'us-east-1' })
    expect(res.status).toBe(400)
    expect(((await res.json()) as any).message).toContain(name)
  }
  // Under the name azure, a record without kind is Azure's: what it lacks is Azure's to ask for.
  const missing = await gw.admin('PUT', '/orgs/default/providers/azure', { baseUrl: azure.url })
  expect(missing.status).toBe(400)
  expect(((await missing.json()) as any).message).toMatch(/apiKey/)
  // Nothing refused was stored.
  expect(((await (await gw.admin('GET', '/orgs/default')).json()) as any).providers.filter((p: any) => ['bedrock', 'vertex'].includes(p.provider))).toEqual([])
})
