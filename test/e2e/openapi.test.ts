// GET /openapi.json and GET /docs (PRODUCT §16): a valid OpenAPI 3.1 document of every operation gw serves,
// whose schemas match gw's real answers, from which a standard generator makes a client that calls gw.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Validator } from '@seriousme/openapi-schema-validator'
import Ajv2020 from 'ajv/dist/2020'
import { generate } from 'openapi-typescript-codegen'
import { createApp } from '../../src/app'
import { openApiDocument } from '../../src/http/openapi'
import * as answers from '../../src/schemas/answers'
import { type FakeUpstream, startFake } from '../fakes/upstream'
import { browserAvailable, openBrowser } from '../helpers/browser'
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway'

type Json = Record<string, any>

let openai: FakeUpstream
let anthropic: FakeUpstream
let gw: TestGateway
let doc: Json

beforeAll(async () => {
  openai = await startFake('openai')
  anthropic = await startFake('anthropic')
  gw = await startTestGateway({ openai, anthropic })
  const res = await fetch(`${gw.url}/openapi.json`)
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toContain('application/json')
  expect(res.headers.get('x-gw-request-id')).toBeTruthy()
  doc = (await res.json()) as Json
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
  await anthropic.stop()
})

/** A JSON Schema 2020-12 checker for the document's schemas, its `$ref`s to components resolved. */
function schemaChecker(document: Json) {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  ajv.addSchema({ $id: 'gw-openapi', components: document.components })
  return (schema: Json, value: unknown): string[] => {
    const resolved = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"gw-openapi#/components/'))
    const check = ajv.compile(resolved)
    return check(value) ? [] : (check.errors ?? []).map((e) => `${e.instancePath} ${e.message}`)
  }
}

const operationOf = (path: string, method: string): Json => doc.paths[path]?.[method] as Json

/** The schema the document gives for one answer of an operation. */
function answerSchema(path: string, method: string, status: number, media = 'application/json'): Json {
  const schema = operationOf(path, method)?.responses?.[status]?.content?.[media]?.schema
  if (!schema) throw new Error(`the document has no ${media} answer ${status} for ${method.toUpperCase()} ${path}`)
  return schema as Json
}

test('the document is a valid OpenAPI 3.1 document, and every schema in it compiles as JSON Schema 2020-12', async () => {
  expect(doc.openapi).toBe('3.1.0')
  const result = await new Validator().validate(doc)
  expect(result.errors ?? []).toEqual([])
  expect(result.valid).toBe(true)
  const ajv = new Ajv2020({ strict: false })
  for (const [name, schema] of Object.entries(doc.components.schemas as Json)) expect({ name, ok: ajv.validateSchema(schema) }).toEqual({ name, ok: true })
})

/** Pipeline routes whose declarations (src/apis, ENDPOINTS) are not plugged into the document yet. */
test('every route gw registers (but the dashboard files) is in the document, and nothing else', () => {
  const routes = createApp(gw.gw.deps, gw.gw.admin).routes
  const registered = new Set(
    routes
      .filter((r) => !(r.path === '/ui' || r.path.startsWith('/ui/')))
      .map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}').replace(/\*$/, '{id}')}`),
  )
  const documented = new Set(Object.entries(doc.paths as Json).flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`)))
  expect([...registered].filter((r) => !documented.has(r)).sort()).toEqual([])
  expect([...documented].filter((r) => !registered.has(r))).toEqual([])
  // Each operation has its id, summary, answers with the request id header, and path parameters for its {names}.
  for (const [path, item] of Object.entries(doc.paths as Json))
    for (const op of Object.values(item as Json) as Json[]) {
      expect(op.operationId).toMatch(/^[a-z][A-Za-z]+$/)
      expect(op.summary).toBeTruthy()
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])
      expect((op.parameters ?? []).filter((p: Json) => p.in === 'path').map((p: Json) => p.name)).toEqual(names)
    }
})

test('security follows who may call: the admin token on /admin and /metrics, the client credentials on /v1, none on health and docs', () => {
  expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['AdminToken', 'ApiKeyHeader', 'Bearer', 'GwKey', 'GwSigned'])
  expect(operationOf('/admin/orgs', 'post').security).toEqual([{ AdminToken: [] }])
  expect(operationOf('/metrics', 'get').security).toEqual([{ AdminToken: [] }])
  expect(operationOf('/v1/models', 'get').security).toEqual([{ GwKey: [] }, { GwSigned: [] }, { Bearer: [] }, { ApiKeyHeader: [] }])
  for (const [path, method] of [['/health', 'get'], ['/health/ready', 'get'], ['/openapi.json', 'get'], ['/docs', 'get']] as const)
    expect(operationOf(path, method).security).toBeUndefined()
  // /health and /health/ready answer 503 with the same body when down; the process answering is always 200.
  for (const path of ['/health', '/health/ready'])
    expect(Object.keys(operationOf(path, 'get').responses)).toEqual(['200', '503'])
  expect(operationOf('/health/ready', 'get').responses['503'].content).toEqual(operationOf('/health/ready', 'get').responses['200'].content)
  expect(Object.keys(operationOf('/health/live', 'get').responses)).toEqual(['200'])
  // The error answers are gw's shape or OpenAI's (PRODUCT §4); a deletion answers 204 without a body.
  expect(operationOf('/v1/logs', 'get').responses['401'].content['application/json'].schema).toEqual({
    oneOf: [{ $ref: '#/components/schemas/GwError' }, { $ref: '#/components/schemas/OpenAiError' }],
  })
  expect(operationOf('/admin/orgs/{org}/routes/{name}', 'delete').responses['204'].content).toBeUndefined()
  // A titled schema is one component, wherever it stands.
  expect(doc.components.schemas.Org.properties.policy).toEqual({ $ref: '#/components/schemas/Policy' })
  expect(operationOf('/admin/orgs/{org}/policy', 'put').requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Policy' })
})

test("the client API's error styles and streams, from the endpoint declarations: Anthropic's errors, OpenAI's, server-sent events", () => {
  const d = doc as Json
  const messages = d.paths['/v1/messages'].post
  expect(Object.keys(messages.responses['200'].content)).toEqual(['application/json', 'text/event-stream'])
  expect(messages.responses['429'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/AnthropicError' })
  expect(messages.responses['502'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/AnthropicError' })
  expect(d.paths['/v1/responses'].post.responses['401'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/OpenAiError' })
  expect(Object.keys(d.paths['/v1/embeddings'].post.responses['200'].content)).toEqual(['application/json'])
  expect(d.paths['/v1/chat/completions'].post.requestBody.content['application/json'].schema).toBeTruthy()
  const twice = { id: 'a', method: 'GET', path: '/x', summary: 's', audience: 'public', errorStyle: 'gw' } as const
  expect(() => openApiDocument([twice, { ...twice, method: 'PUT' }], { title: 't', version: '0' })).toThrow(/two operations/)
})

describe("the document's schemas match what gw answers", () => {
  let check: ReturnType<typeof schemaChecker>
  beforeAll(() => {
    check = schemaChecker(doc)
  })
  const json = { 'content-type': 'application/json' }

  test('admin, health, models, logs and the error bodies', async () => {
    const created = await gw.admin('POST', '/orgs', { id: 'schema-org', name: 'Schema' })
    expect(check(answerSchema('/admin/orgs', 'post', 201), await created.json())).toEqual([])
    expect(check(answerSchema('/admin/orgs', 'get', 200), await (await gw.admin('GET', '/orgs')).json())).toEqual([])
    expect(check(answerSchema('/admin/orgs/{org}', 'get', 200), await (await gw.admin('GET', '/orgs/default')).json())).toEqual([])
    const health = await fetch(`${gw.url}/health`)
    expect(check(answerSchema('/health', 'get', 200), await health.json())).toEqual([])
    expect(check(answerSchema('/v1/models', 'get', 200), await (await gw.fetch('/v1/models')).json())).toEqual([])
    const chat = await gw.chat({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Say hi please' }] })
    expect(check(answerSchema('/v1/logs/{requestId}', 'get', 200), await gw.log(chat.headers.get('x-gw-request-id') as string))).toEqual([])
    expect(check(answerSchema('/v1/logs', 'get', 200), await (await gw.fetch('/v1/logs')).json())).toEqual([])
    // Errors: gw's shape, and OpenAI's on request.
    const missing = await gw.admin('GET', '/orgs/no-such-org')
    expect(missing.status).toBe(404)
    expect(check(answerSchema('/admin/orgs/{org}', 'get', 404), await missing.json())).toEqual([])
    const openaiShaped = await fetch(`${gw.url}/v1/models`, { headers: { 'x-gw-error-format': 'openai' } })
    expect(openaiShaped.status).toBe(401)
    const body = (await openaiShaped.json()) as Json
    expect(typeof body.error).toBe('object')
    expect(check(answerSchema('/v1/models', 'get', 401), body)).toEqual([])
  })

  test("the client API's answers and error bodies (src/schemas/answers.ts)", async () => {
    const a = answers
    const plain = (s: unknown) => JSON.parse(JSON.stringify(s)) as Json
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      gw.fetch(path, { method: 'POST', headers: { ...json, ...headers }, body: JSON.stringify(body) })
    const hello = [{ role: 'user', content: 'Say hi please' }]
    const chat = await post('/v1/chat/completions', { model: 'openai/gpt-4o-mini', messages: hello })
    const chatBody = (await chat.json()) as Json
    expect(chatBody.usage.cost_usd).toBeDefined()
    expect(check(plain(a.ChatCompletionAnswer), chatBody)).toEqual([])
    // Messages: Anthropic's own answer (pass-through) and one translated from OpenAI's.
    for (const model of ['claude-sonnet-4-6', 'openai/gpt-4o-mini']) {
      const res = await post('/v1/messages', { model, max_tokens: 50, messages: hello })
      expect(res.status).toBe(200)
      expect(check(plain(a.MessageAnswer), await res.json())).toEqual([])
    }
    const counted = await post('/v1/messages/count_tokens', { model: 'claude-sonnet-4-6', messages: hello })
    expect(check(plain(a.CountTokensAnswer), await counted.json())).toEqual([])
    for (const model of ['openai/gpt-4o-mini', 'anthropic/claude-sonnet-4-6']) {
      const res = await post('/v1/responses', { model, input: 'Say hi please' })
      expect(res.status).toBe(200)
      expect(check(plain(a.ResponseAnswer), await res.json())).toEqual([])
    }
    for (const encoding_format of ['float', 'base64']) {
      const res = await post('/v1/embeddings', { model: 'openai/text-embedding-3-small', input: ['a', 'b'], encoding_format })
      expect(res.status).toBe(200)
      expect(check(plain(a.EmbeddingsAnswer), await res.json())).toEqual([])
    }
    // The three error bodies, as each endpoint sends them.
    const bad = { model: 'openai/gpt-4o-mini', messages: [] }
    expect(check(plain(a.GwErrorAnswer), await (await post('/v1/chat/completions', bad)).json())).toEqual([])
    expect(check(plain(a.OpenAiErrorAnswer), await (await post('/v1/chat/completions', bad, { 'x-gw-error-format': 'openai' })).json())).toEqual([])
    expect(check(plain(a.OpenAiErrorAnswer), await (await post('/v1/responses', { model: 'openai/gpt-4o-mini' })).json())).toEqual([])
    expect(check(plain(a.AnthropicErrorAnswer), await (await post('/v1/messages', { model: 'claude-sonnet-4-6', messages: 'no' })).json())).toEqual([])
    // …and the checker does reject a body of another shape.
    expect(check(plain(a.AnthropicErrorAnswer), chatBody)).not.toEqual([])
  })
})

test('a client generated by openapi-typescript-codegen calls gw: health, admin API, models with the key it created, errors', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-openapi-client-'))
  const cwd = process.cwd()
  try {
    // The generator writes only below the working directory.
    process.chdir(dir)
    await generate({ input: doc, output: './client', httpClient: 'fetch' })
  } finally {
    process.chdir(cwd)
  }
  try {
    const client = await import(join(dir, 'client', 'index.ts'))
    const { OpenAPI, HealthService, AdminService, ModelsService, ChatService, ApiError } = client
    OpenAPI.BASE = gw.url
    expect(await HealthService.health()).toMatchObject({ ok: true, status: 'ok' })
    OpenAPI.TOKEN = ADMIN_TOKEN
    expect(await AdminService.createOrg({ id: 'generated', name: 'Made by a generated client' })).toEqual({ id: 'generated', name: 'Made by a generated client' })
    const orgs = await AdminService.listOrgs()
    expect(orgs.data.map((o: Json) => o.id)).toContain('generated')
    await AdminService.putProviderKey('generated', 'openai', { apiKey: openai.apiKey, baseUrl: openai.url })
    const { key } = await AdminService.createServiceKey('generated', { name: 'from the generated client' })
    expect(key).toMatch(/^gw_sk_/)
    expect((await AdminService.getOrg('generated')).serviceKeys).toHaveLength(1)
    // The service key as the generated client sends a token: `Authorization: Bearer gw_sk_…`.
    OpenAPI.TOKEN = key
    const models = await ModelsService.listModels()
    expect(models.data.map((m: Json) => m.id)).toContain('openai/gpt-4o-mini')
    expect((await ModelsService.getModel('openai/gpt-4o-mini')).id).toBe('openai/gpt-4o-mini')
    // A chat completion through the generated client, answered by the fake.
    const chat = await ChatService.createChatCompletion({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Say hi' }] })
    expect(chat).toMatchObject({ object: 'chat.completion', model: 'openai/gpt-4o-mini', usage: { cost_usd: expect.any(Number) } })
    expect(chat.choices[0].message.content).toContain('fake-openai')
    expect(openai.requests.at(-1)?.body).toMatchObject({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hi' }] })
    // An error reaches the generated client as its ApiError, with gw's body.
    OpenAPI.TOKEN = ADMIN_TOKEN
    const err = await AdminService.getOrg('no-such-org').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ApiError)
    expect(err).toMatchObject({ status: 404, body: { error: true, code: 'gateway_error', requestId: expect.any(String) } })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}, 60_000)

test('/docs is an HTML page that loads nothing from another host', async () => {
  const res = await fetch(`${gw.url}/docs`)
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
  const csp = res.headers.get('content-security-policy') as string
  expect(csp).toContain("default-src 'none'")
  expect(csp).toContain("connect-src 'self'")
  expect(csp).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'/)
  const html = await res.text()
  expect(html).not.toMatch(/(src|href)\s*=\s*["']?(https?:)?\/\//i)
  expect(html).not.toMatch(/@import|url\(/)
})

const enabled = browserAvailable()
;(enabled ? test : test.skip)('in a browser /docs lists every operation of the document, without errors or other hosts', async () => {
  const b = await openBrowser()
  try {
    await b.page.goto(`${gw.url}/docs`)
    await b.page.waitForSelector('details.op')
    const count = Object.values(doc.paths as Json).reduce((n, item) => n + Object.keys(item).length, 0)
    expect(await b.page.locator('main > details.op:not([id^="schema-"])').count()).toBe(count)
    await b.page.locator('details#createOrg > summary').click()
    expect(await b.page.locator('details#createOrg').innerText()).toContain('/admin/orgs')
    expect(await b.page.locator('details#createOrg').innerText()).toContain('AdminToken')
    expect(b.errors).toEqual([])
    expect(b.requests.filter((u) => new URL(u).origin !== new URL(gw.url).origin)).toEqual([])
  } finally {
    await b.close()
  }
}, 60_000)

test('each listener documents what it serves: the public one no admin API, the admin one no client API; none without GW_ADMIN_TOKEN', async () => {
  const pathsOf = async (url: string) => Object.keys(((await (await fetch(`${url}/openapi.json`)).json()) as Json).paths as Json)
  const split = await startTestGateway({}, { GW_ADMIN_HOST: '127.0.0.1', GW_ADMIN_PORT: '0' })
  const tokenless = await startTestGateway({}, { GW_ADMIN_TOKEN: '' })
  try {
    const pub = await pathsOf(split.url)
    expect(pub).toContain('/v1/models')
    expect(pub).toContain('/health')
    expect(pub.filter((p) => p.startsWith('/admin') || p === '/metrics')).toEqual([])
    const admin = await pathsOf(split.gw.adminUrl as string)
    expect(admin).toContain('/admin/orgs')
    expect(admin).toContain('/metrics')
    expect(admin.filter((p) => p.startsWith('/v1/'))).toEqual([])
    const none = await pathsOf(tokenless.url)
    expect(none).toContain('/v1/logs')
    expect(none.filter((p) => p.startsWith('/admin'))).toEqual([])
  } finally {
    await split.stop()
    await tokenless.stop()
  }
})
