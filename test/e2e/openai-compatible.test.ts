// OpenAI-compatible providers as data (PRODUCT §17): presets, providers set through the admin API with
// quirks, usage counted by gw where the upstream reports none, fallback, discovery, and the key kept secret.

import { afterAll, beforeAll, beforeEach, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { OLLAMA_MODELS } from '../fakes/ollama'
import { openRouterCost } from '../fakes/openrouter'
import { ADMIN_TOKEN, readSse, startTestGateway, type TestGateway } from '../helpers/gateway'
import { readExposition } from '../helpers/prometheus'
import { assertChatChunk, assertChatCompletion } from '../helpers/openai-schema'

let ollama: FakeUpstream
let compat: FakeUpstream
let openai: FakeUpstream
let openrouter: FakeUpstream
let gw: TestGateway

const SECRET = 'sk-compat-SECRET-0123456789abcdef'
const hello = [{ role: 'user', content: 'Say hi please' }]

beforeAll(async () => {
  ollama = await startFake('ollama')
  // An OpenAI-compatible vendor that wants a key (the OpenAI fake checks it) and is set through the admin API.
  compat = await startFake('openai', { apiKey: SECRET })
  openai = await startFake('openai')
  openrouter = await startFake('openrouter', { apiKey: 'sk-or-v1-SECRET' })
  gw = await startTestGateway({ openai }, { GW_OLLAMA_BASE_URL: ollama.url, GW_OPENROUTER_BASE_URL: openrouter.url, OPENROUTER_API_KEY: 'sk-or-v1-SECRET', GW_GROQ_BASE_URL: compat.url, GROQ_API_KEY: SECRET })
})
afterAll(async () => {
  await gw.stop()
  await Promise.all([ollama.stop(), compat.stop(), openai.stop(), openrouter.stop()])
})
beforeEach(() => {
  ollama.reset()
  compat.reset()
  openai.reset()
  openrouter.reset()
})

const chatRequests = (f: FakeUpstream) => f.requests.filter((r) => r.path.endsWith('/chat/completions'))

test('the ollama preset, set by GW_OLLAMA_BASE_URL alone: the model reaches it unchanged, no key is sent, the answer costs 0', async () => {
  const res = await gw.chat({ model: 'ollama/llama3.2', messages: hello })
  expect(res.status).toBe(200)
  const body = (await res.json()) as Record<string, any>
  assertChatCompletion(body)
  expect(body.model).toBe('ollama/llama3.2')
  const sent = chatRequests(ollama)[0]
  expect(sent?.body).toMatchObject({ model: 'llama3.2', messages: hello })
  expect(sent?.headers.authorization).toBeUndefined()
  expect(res.headers.get('x-gw-cost-usd')).toBe('0')
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log.costUsd).toBe(0)
  expect(log.provider).toBe('ollama')
})

test('the metrics count an OpenAI-compatible provider under provider="" and model="other" (its name stays out of the labels): requests, attempts and tokens alike', async () => {
  for (let i = 0; i < 2; i++) expect((await gw.chat({ model: 'ollama/llama3.2', messages: hello })).status).toBe(200)
  const m = readExposition(await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text())
  const chat = { endpoint: '/v1/chat/completions', provider: '', model: 'other' }
  const requests = m.value('gw_requests_total', { ...chat, status: '200' })
  expect(requests).toBeGreaterThanOrEqual(2)
  expect(m.value('gw_upstream_attempts_total', { provider: '', model: 'other', outcome: 'ok' })).toBe(requests)
  expect(m.value('gw_tokens_total', { provider: '', model: 'other', kind: 'output' })).toBeGreaterThan(0)
  expect(await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text()).not.toContain('ollama')
})

test("OpenRouter's own usage.cost is the request's cost: x-gw-cost-usd, usage.cost_usd and the log entry, streamed or not", async () => {
  // The model is in no catalog: without OpenRouter's charge its cost would be unknown (null).
  const model = 'openrouter/some-lab/some-model'
  const res = await gw.chat({ model, messages: hello })
  expect(res.status).toBe(200)
  const body = (await res.json()) as Record<string, any>
  assertChatCompletion(body)
  const cost = openRouterCost(body.usage.prompt_tokens, body.usage.completion_tokens)
  expect(cost).toBeGreaterThan(0)
  expect(openrouter.requests[0]?.path).toBe('/api/v1/chat/completions')
  expect(openrouter.requests[0]?.headers.authorization).toBe('Bearer sk-or-v1-SECRET')
  expect(Number(res.headers.get('x-gw-cost-usd'))).toBe(cost)
  expect(body.usage.cost_usd).toBe(cost)
  const log = await gw.log(res.headers.get('x-gw-request-id') as string)
  expect(log).toMatchObject({ provider: 'openrouter', costUsd: cost })

  const streamed = await gw.chat({ model, messages: hello, stream: true })
  expect(streamed.status).toBe(200)
  const events = (await readSse(streamed)) as (Record<string, any> | string)[]
  const usageChunk = events.find((e): e is Record<string, any> => typeof e === 'object' && !!e.usage)
  expect(usageChunk?.usage.cost_usd).toBe(openRouterCost(usageChunk?.usage.prompt_tokens, usageChunk?.usage.completion_tokens))
  expect(events.at(-1)).toBe('[DONE]')
  const streamLog = await gw.log(streamed.headers.get('x-gw-request-id') as string)
  expect(streamLog).toMatchObject({ stream: true, costUsd: usageChunk?.usage.cost_usd })
})

test("a remote preset the catalog prices (groq) costs its catalog price; a model the catalog does not list stays unknown", async () => {
  const res = await gw.chat({ model: 'groq/llama-3.3-70b-versatile', messages: hello })
  expect(res.status).toBe(200)
  const body = (await res.json()) as Record<string, any>
  expect(chatRequests(compat)[0]?.body).toMatchObject({ model: 'llama-3.3-70b-versatile' })
  // $0.59 input, $0.79 output per million tokens (src/catalog/models.json, groq).
  const cost = (body.usage.prompt_tokens * 0.59 + body.usage.completion_tokens * 0.79) / 1e6
  expect(Number(res.headers.get('x-gw-cost-usd'))).toBeCloseTo(cost, 12)
  expect((await gw.log(res.headers.get('x-gw-request-id') as string)).costUsd).toBeCloseTo(cost, 12)
  const unknown = await gw.chat({ model: 'groq/some-new-model', messages: hello })
  expect(unknown.status).toBe(200)
  expect(unknown.headers.get('x-gw-cost-usd')).toBeNull()
  expect((await gw.log(unknown.headers.get('x-gw-request-id') as string)).costUsd).toBeNull()
})

/** A new org with a service key, its own providers and policy. */
async function newOrg(id: string, providers: Record<string, object>, policy: object = {}): Promise<(body: unknown) => Promise<Response>> {
  expect((await gw.admin('POST', '/orgs', { id, name: id })).status).toBe(201)
  for (const [name, body] of Object.entries(providers)) expect((await gw.admin('PUT', `/orgs/${id}/providers/${name}`, body)).status).toBe(200)
  expect((await gw.admin('PUT', `/orgs/${id}/policy`, policy)).status).toBe(200)
  const { key } = (await (await gw.admin('POST', `/orgs/${id}/service-keys`, {})).json()) as { key: string }
  return (body) => fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `GwKey ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
}

test('under an org budget a local preset (cost 0) is admitted; an unpriced OpenAI-compatible provider is refused unless allowUnpricedModels', async () => {
  const budget = { budgets: [{ scope: 'org', usd: 1, period: 'day' }] }
  const local = { kind: 'openai-compatible', baseUrl: ollama.url }
  const chat = await newOrg('budgeted', { ollama: local, 'my-llm': local }, budget)
  const ok = await chat({ model: 'ollama/llama3.2', messages: hello })
  expect(ok.status).toBe(200)
  expect(ok.headers.get('x-gw-cost-usd')).toBe('0')
  const unpriced = await chat({ model: 'my-llm/llama3.2', messages: hello })
  expect(unpriced.status).toBe(403)
  expect(((await unpriced.json()) as any).message).toContain('has no known price')
  // A price on the record makes it admitted and costed.
  expect((await gw.admin('PUT', '/orgs/budgeted/providers/my-llm', { ...local, price: { input: 1, output: 2 } })).status).toBe(200)
  const priced = await chat({ model: 'my-llm/llama3.2', messages: hello })
  expect(priced.status).toBe(200)
  expect(Number(priced.headers.get('x-gw-cost-usd'))).toBeGreaterThan(0)
})

test('a provider set through the admin API with quirks: the request adapted, chat JSON and streams answered, stream usage counted by gw and logged as estimated', async () => {
  const put = await gw.admin('PUT', '/orgs/default/providers/acme-ai', {
    kind: 'openai-compatible',
    baseUrl: compat.url,
    apiKey: SECRET,
    headers: { 'x-tenant': 'blue' },
    quirks: { streamUsage: false, maxTokensField: 'max_completion_tokens', systemRole: 'user' },
  })
  expect(put.status).toBe(200)
  const shown = (await put.json()) as Record<string, any>
  expect(shown).toMatchObject({ provider: 'acme-ai', kind: 'openai-compatible', baseUrl: compat.url, headers: ['x-tenant'] })
  expect(shown.quirks).toEqual({ streamUsage: false, tools: true, jsonSchema: 'json_schema', maxTokensField: 'max_completion_tokens', systemRole: 'user' })

  const messages = [{ role: 'system', content: 'Be brief' }, ...hello]
  const res = await gw.chat({ model: 'acme-ai/some-model', messages, max_tokens: 50 })
  expect(res.status).toBe(200)
  assertChatCompletion(await res.json())
  const sent = chatRequests(compat)[0]
  expect(sent?.headers.authorization).toBe(`Bearer ${SECRET}`)
  expect(sent?.headers['x-tenant']).toBe('blue')
  expect(sent?.body).toEqual({ model: 'some-model', messages: [{ role: 'user', content: 'Be brief\n\nSay hi please' }], max_completion_tokens: 50 })
  expect((await gw.log(res.headers.get('x-gw-request-id') as string)).usage).toMatchObject({ estimated: false })

  const streamed = await gw.chat({ model: 'acme-ai/some-model', messages: hello, stream: true })
  expect(streamed.status).toBe(200)
  const events = await readSse(streamed)
  expect(events.at(-1)).toBe('[DONE]')
  for (const c of events.slice(0, -1) as Record<string, any>[]) assertChatChunk(c)
  expect((chatRequests(compat)[1]?.body as Record<string, unknown>).stream_options).toBeUndefined()
  const usage = (events.slice(0, -1) as Record<string, any>[]).find((c) => c.usage)?.usage
  expect(usage?.completion_tokens).toBeGreaterThan(0)
  const log = await gw.log(streamed.headers.get('x-gw-request-id') as string)
  expect(log.usage).toMatchObject({ estimated: true })
  expect(log.provider).toBe('acme-ai')
})

test('what the provider lacks is refused with 400 before anything is sent (quirks tools: false, jsonSchema: none)', async () => {
  expect((await gw.admin('PUT', '/orgs/default/providers/plain/keys/default', { kind: 'openai-compatible', baseUrl: ollama.url, quirks: { tools: false, jsonSchema: 'none' } })).status).toBe(200)
  const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }]
  const res = await gw.chat({ model: 'plain/llama3.2', messages: hello, tools })
  expect(res.status).toBe(400)
  expect(((await res.json()) as any).message).toContain('plain does not take tools')
  const schema = await gw.chat({ model: 'plain/llama3.2', messages: hello, response_format: { type: 'json_object' } })
  expect(schema.status).toBe(400)
  expect(chatRequests(ollama)).toHaveLength(0)
  expect((await gw.admin('DELETE', '/orgs/default/providers/plain/keys/default')).status).toBe(204)
})

test('an OpenAI-compatible provider falls back to openai, and an unknown prefix is still a 400', async () => {
  ollama.enqueue({ kind: 'error', status: 503, errorType: 'server' })
  const res = await gw.chat({ model: 'ollama/llama3.2', messages: hello, fallback_chain: [{ model: 'openai/gpt-4o-mini' }] })
  expect(res.status).toBe(200)
  expect(res.headers.get('x-gw-fallback-reason')).toBe('provider_error')
  expect(((await res.json()) as any).model).toBe('openai/gpt-4o-mini')
  expect(chatRequests(openai)).toHaveLength(1)
  const unknown = await gw.chat({ model: 'nobody/m1', messages: hello })
  expect(unknown.status).toBe(400)
  expect(((await unknown.json()) as any).message).toContain('unknown provider "nobody"')
})

test("/v1/models lists each OpenAI-compatible provider's own models, asked in the background of /v1/models, never on a chat request's path", async () => {
  const res = await gw.fetch('/v1/models')
  expect(res.status).toBe(200)
  const ids = ((await res.json()) as { data: { id: string; owned_by: string }[] }).data.map((m) => m.id)
  for (const m of OLLAMA_MODELS) expect(ids).toContain(`ollama/${m}`)
  expect(ids).toContain('openai/gpt-4o-mini')
  // A preset the catalog prices lists the catalog's models too (once each, beside what its upstream lists).
  expect(ids).toEqual(expect.arrayContaining(['groq/llama-3.3-70b-versatile', 'groq/openai/gpt-oss-120b']))
  expect(new Set(ids).size).toBe(ids.length)
  const asked = () => ollama.requests.filter((r) => r.method === 'GET' && r.path === '/v1/models').length
  expect(asked()).toBe(1)
  // Asked at most once a minute: a second listing, and chat requests, do not ask again.
  expect((await gw.fetch('/v1/models')).status).toBe(200)
  expect((await gw.chat({ model: 'ollama/llama3.2', messages: hello })).status).toBe(200)
  expect(asked()).toBe(1)
  expect((await gw.fetch(`/v1/models/${encodeURIComponent('ollama/qwen2.5:7b')}`)).status).toBe(200)
})

test("the provider's key never appears in an admin answer, an error or a log entry", async () => {
  expect((await gw.admin('PUT', '/orgs/default/providers/acme-ai', { kind: 'openai-compatible', baseUrl: compat.url, apiKey: SECRET, headers: { 'x-secret': SECRET } })).status).toBe(200)
  const listing = await (await gw.admin('GET', '/orgs/default')).text()
  expect(listing).toContain('acme-ai')
  expect(listing).not.toContain(SECRET)
  expect(listing).not.toContain(SECRET.slice(0, 16))
  compat.enqueue({ kind: 'error', status: 401, errorType: 'auth' })
  const failed = await gw.chat({ model: 'acme-ai/some-model', messages: hello })
  expect(failed.status).toBe(502)
  const error = await failed.text()
  const log = JSON.stringify(await gw.log(failed.headers.get('x-gw-request-id') as string))
  for (const text of [error, log]) expect(text).not.toContain(SECRET)
  expect(chatRequests(compat).at(-1)?.headers.authorization).toBe(`Bearer ${SECRET}`)
})

test('a config file (GW_CONFIG) sets an OpenAI-compatible provider like any other: kind, baseUrl, quirks', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-compat-config-'))
  const path = join(dir, 'gw.yaml')
  writeFileSync(path, `providers:\n  vllm:\n    - name: default\n      kind: openai-compatible\n      baseUrl: ${ollama.url}\n      quirks: {systemRole: user}\n`)
  const other = await startTestGateway({}, { GW_CONFIG: path })
  try {
    const res = await other.chat({ model: 'vllm/llama3.2', messages: [{ role: 'system', content: 'Be brief' }, ...hello] })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-gw-cost-usd')).toBe('0')
    expect(chatRequests(ollama)[0]?.body).toMatchObject({ model: 'llama3.2', messages: [{ role: 'user', content: 'Be brief\n\nSay hi please' }] })
  } finally {
    await other.stop()
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a record is checked: a native name, a missing baseUrl outside the presets, a header gw sets itself or a header name that is not one is a 400', async () => {
  const put = (name: string, body: object) => gw.admin('PUT', `/orgs/default/providers/${name}`, { kind: 'openai-compatible', ...body })
  expect((await put('openai', { baseUrl: ollama.url })).status).toBe(400)
  expect((await put('somewhere', {})).status).toBe(400)
  const host = await put('somewhere', { baseUrl: ollama.url, headers: { Host: 'elsewhere.example' } })
  expect(host.status).toBe(400)
  expect(((await host.json()) as any).message).toContain('gw sets it itself')
  // A header name that is not a token could never be sent: refused when the record is set.
  const spaced = await put('somewhere', { baseUrl: ollama.url, headers: { 'bad header': 'x' } })
  expect(spaced.status).toBe(400)
  expect(((await spaced.json()) as any).message).toContain('Invalid header name "bad header"')
  expect((await put('groq', { apiKey: 'gsk-0000000000000000' })).status).toBe(200)
})

test('the other APIs reach an OpenAI-compatible provider as they reach OpenAI: Messages translated to chat, embeddings relayed, no key sent to a keyless server', async () => {
  const post = (path: string, body: object) => gw.fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const messages = await post('/v1/messages', { model: 'ollama/llama3.2', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] })
  expect(messages.status).toBe(200)
  expect(((await messages.json()) as any).model).toBe('ollama/llama3.2')
  const embeddings = await post('/v1/embeddings', { model: 'ollama/nomic-embed-text', input: 'hi' })
  expect(embeddings.status).toBe(200)
  expect(((await embeddings.json()) as any).data[0].embedding.length).toBeGreaterThan(0)
  expect(ollama.requests.map((r) => r.path)).toEqual(['/v1/chat/completions', '/v1/embeddings'])
  for (const r of ollama.requests) expect(r.headers.authorization).toBeUndefined()
})

test("an upstream error that echoes the provider's own headers or key reaches the client and the log without them", async () => {
  const HEADER = 'HDRSECRET-compat-credential-0123456789'
  const KEY = 'sk-echoed-key-0123456789abcdef'
  const echo = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (req) =>
      Response.json(
        { error: { message: `bad request, your key is ${req.headers.get('x-api-key')} and you are ${req.headers.get('authorization')}`, type: 'invalid_request_error' } },
        { status: 400 },
      ),
  })
  try {
    expect((await gw.admin('PUT', '/orgs/default/providers/echoer', { kind: 'openai-compatible', baseUrl: `http://127.0.0.1:${echo.port}/v1`, apiKey: KEY, headers: { 'x-api-key': HEADER } })).status).toBe(200)
    const res = await gw.chat({ model: 'echoer/any', messages: hello })
    const body = await res.text()
    expect(body).toContain('your key is [redacted] and you are [redacted]')
    const entry = await gw.log(res.headers.get('x-gw-request-id') as string)
    for (const secret of [HEADER, KEY]) {
      expect(body).not.toContain(secret)
      expect(JSON.stringify(entry)).not.toContain(secret)
    }
  } finally {
    echo.stop(true)
    await gw.admin('DELETE', '/orgs/default/providers/echoer/keys/default')
  }
})
