// Provider secrets never leave gw (PRODUCT §17, issue 27): one provider of each kind (OpenAI-compatible with a
// secret header, Azure, Bedrock SigV4 / STS / API key, Vertex service account, a preset from its variable), used
// with success, streams, refusals and other APIs; then every text gw produced (HTTP answers and headers, the
// dashboard and the admin answers it reads, log entries, metrics, the OpenAPI document, stdout access lines,
// stderr, exported spans, the database file) is searched for every secret. The fakes' received requests, where
// the secrets legitimately go, are only checked to prove the secrets were really used.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { exportPKCS8, generateKeyPair } from 'jose'
import { startFakeBedrock, type FakeBedrock } from '../fakes/bedrock'
import { type FakeGoogleOAuth, startFakeGoogleOAuth } from '../fakes/google-oauth'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { type FakeVertex, startFakeVertex } from '../fakes/vertex'
import { type OtlpReceiver, startOtlpReceiver } from '../helpers/otlp-receiver'
import { type GwProcess, spawnGw } from '../helpers/process'

const ADMIN = 'admin-token-SWEEP-0123456789abcdef'
const SERVICE_KEY = `gw_sk_${'S3cr3tSw'.repeat(5)}wxyz`
const COMPAT_KEY = 'sk-compat-SWEEPSECRET-a1b2c3d4e5f6a7b8'
const COMPAT_WRONG = 'sk-compat-SWEEPWRONG-0f1e2d3c4b5a6978'
const HEADER_SECRET = 'hdr-SWEEPSECRET-9d8c7b6a5f4e3d2c1b0a'
const GROQ_KEY = 'gsk_SWEEPSECRETpresetkey0123456789abcd'
const AZURE_KEY = 'azure-SWEEPSECRET-00112233445566778899'
const AZURE_WRONG = 'azure-SWEEPWRONG-99887766554433221100'
const AWS_SECRET = 'sWeEpSeCrEt/K7MDENG/bPxRfiCYEXAMPLEKEY1'
const AWS_WRONG = 'sWeEpWrOnG/K7MDENG/bPxRfiCYEXAMPLEKEY2'
const AWS_SESSION = 'FwoGZXIvYXdzEBYaDSWEEPSESSIONTOKEN0123456789abcdef'
const BEDROCK_API_KEY = 'ABSKU1dFRVBTRUNSRVRCZWRyb2NrQVBJS2V5MDEyMzQ1Njc4OQ'
const MODEL = 'anthropic.claude-3-5-sonnet-20240620-v1:0'
const EMAIL = 'gw-sweep@example-project.iam.gserviceaccount.com'
const PROJECT = 'example-project'
const LOCATION = 'us-central1'
const hello = [{ role: 'user', content: 'Say hi please' }]

let compat: FakeUpstream
let groq: FakeUpstream
let azure: FakeUpstream
let aws: FakeBedrock
let oauth: FakeGoogleOAuth
let vertex: FakeVertex
let receiver: OtlpReceiver
let gw: GwProcess
let dir: string
let pem = ''
let foreignPem = ''

/** Every text gw produced, labelled by where it came from. */
const gathered: { where: string; text: string }[] = []
const requestIds: string[] = []

/** 40 characters from the middle of a PEM's base64 body (one line, so no line break splits it). */
function pemSlice(p: string): string {
  const lines = p.split('\n').filter((l) => l && !l.startsWith('-----'))
  const line = lines[Math.floor(lines.length / 2)] as string
  return line.slice(10, 50)
}

const serviceAccountKey = (privateKey: string) => oauth.serviceAccountKey(privateKey, PROJECT)

/** An HTTP exchange with gw, its status, headers and whole body gathered. */
async function call(path: string, init: RequestInit & { auth?: 'admin' | 'service' | 'none'; cookie?: string } = {}): Promise<{ status: number; text: string; headers: Headers }> {
  const { auth = 'service', cookie, ...rest } = init
  const headers = new Headers(rest.headers)
  if (auth === 'admin') headers.set('authorization', `Bearer ${ADMIN}`)
  if (auth === 'service') headers.set('authorization', `GwKey ${SERVICE_KEY}`)
  if (cookie) headers.set('cookie', cookie)
  if (rest.body !== undefined) headers.set('content-type', 'application/json')
  const res = await fetch(`${gw.url}${path}`, { ...rest, headers })
  const text = await res.text()
  const id = res.headers.get('x-gw-request-id')
  if (id && path.startsWith('/v1/') && !path.startsWith('/v1/logs') && !path.startsWith('/v1/models')) requestIds.push(id)
  gathered.push({ where: `${rest.method ?? 'GET'} ${path} → ${res.status}`, text: `${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n\n${text}` })
  return { status: res.status, text, headers: res.headers }
}
const post = (path: string, body: object, auth: 'admin' | 'service' = 'service') => call(path, { method: 'POST', body: JSON.stringify(body), auth })
const put = (path: string, body: object) => call(path, { method: 'PUT', body: JSON.stringify(body), auth: 'admin' })

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gw-provider-secrets-'))
  const pair = await generateKeyPair('RS256', { extractable: true })
  pem = await exportPKCS8(pair.privateKey)
  foreignPem = await exportPKCS8((await generateKeyPair('RS256', { extractable: true })).privateKey)
  compat = await startFake('openai', { apiKey: COMPAT_KEY })
  groq = await startFake('openai', { apiKey: GROQ_KEY })
  azure = await startFake('azure', { apiKey: AZURE_KEY })
  aws = startFakeBedrock({
    region: 'eu-west-1',
    keys: { AKIASWEEPBEDROCK001: { secretAccessKey: AWS_SECRET }, ASIASWEEPBEDROCK002: { secretAccessKey: AWS_SECRET, sessionToken: AWS_SESSION } },
    apiKeys: [BEDROCK_API_KEY],
  })
  oauth = startFakeGoogleOAuth({ clientEmail: EMAIL, publicKey: pair.publicKey, keyId: 'a1b2c3d4e5f6', expiresIn: 3600 })
  vertex = startFakeVertex({ project: PROJECT, location: LOCATION, tokens: () => oauth.issued })
  receiver = await startOtlpReceiver()
  gw = await spawnGw({
    GW_LOG_FORMAT: 'json',
    GW_DB: join(dir, 'gw.db'),
    GW_ADMIN_TOKEN: ADMIN,
    GW_SERVICE_KEY: SERVICE_KEY,
    GW_PROMPTS_DIR: join(dir, 'none'),
    GW_GROQ_BASE_URL: groq.url,
    GROQ_API_KEY: GROQ_KEY,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  })
})
afterAll(async () => {
  if (gw.proc.exitCode === null) gw.proc.kill('SIGTERM')
  await gw.proc.exited
  aws.stop()
  await Promise.all([compat.stop(), groq.stop(), azure.stop(), oauth.stop(), vertex.stop(), receiver.stop()])
  rmSync(dir, { recursive: true, force: true })
})

test('no AWS secret key, session token, service-account private key, API key or secret header value appears in anything gw answers, logs, traces or stores', async () => {
  // Providers of each kind, set through the admin API (their answers are gathered too).
  const records: Record<string, object> = {
    compat: { kind: 'openai-compatible', baseUrl: compat.url, apiKey: COMPAT_KEY, headers: { 'x-secret': HEADER_SECRET }, models: ['listed-model'] },
    azure: { kind: 'azure', baseUrl: azure.url, apiKey: AZURE_KEY, deployments: { 'gpt-4o': 'prod-4o' } },
    bedrock: { kind: 'bedrock', region: 'eu-west-1', accessKeyId: 'AKIASWEEPBEDROCK001', secretAccessKey: AWS_SECRET, baseUrl: aws.url },
    'bedrock-sts': { kind: 'bedrock', region: 'eu-west-1', accessKeyId: 'ASIASWEEPBEDROCK002', secretAccessKey: AWS_SECRET, sessionToken: AWS_SESSION, baseUrl: aws.url },
    'bedrock-key': { kind: 'bedrock', region: 'eu-west-1', apiKey: BEDROCK_API_KEY, baseUrl: aws.url },
    vertex: { kind: 'vertex', project: PROJECT, location: LOCATION, serviceAccountKey: serviceAccountKey(pem), baseUrl: vertex.url },
  }
  // Records with wrong secrets, two of each: a refused key sits out, so the stream gets its own record to be refused upstream.
  for (const suffix of ['wrong', 'wrong-s']) {
    records[`compat-${suffix}`] = { kind: 'openai-compatible', baseUrl: compat.url, apiKey: COMPAT_WRONG, headers: { 'x-secret': HEADER_SECRET } }
    records[`azure-${suffix}`] = { kind: 'azure', baseUrl: azure.url, apiKey: AZURE_WRONG }
    records[`bedrock-${suffix}`] = { kind: 'bedrock', region: 'eu-west-1', accessKeyId: 'AKIASWEEPBEDROCK001', secretAccessKey: AWS_WRONG, baseUrl: aws.url }
    records[`vertex-${suffix}`] = { kind: 'vertex', project: PROJECT, location: LOCATION, serviceAccountKey: JSON.stringify(serviceAccountKey(foreignPem)), baseUrl: vertex.url }
  }
  for (const [name, body] of Object.entries(records)) expect((await put(`/admin/orgs/default/providers/${name}`, body)).status).toBe(200)
  // Refused records: the 400 must not repeat what it refuses.
  const refused = [
    { kind: 'bedrock', region: 'eu-west-1', accessKeyId: 'AKIASWEEPBEDROCK001', secretAccessKey: AWS_SECRET, apiKey: BEDROCK_API_KEY },
    { kind: 'bedrock', region: 'eu-west-1', secretAccessKey: AWS_SECRET, sessionToken: AWS_SESSION },
    { kind: 'vertex', project: PROJECT, location: LOCATION, serviceAccountKey: { private_key: pem } },
    { kind: 'vertex', project: PROJECT, location: LOCATION, serviceAccountKey: `not json ${pem}` },
    { kind: 'azure', baseUrl: 'not a url', apiKey: AZURE_KEY },
    { kind: 'openai-compatible', baseUrl: compat.url, apiKey: 42, headers: { 'x-secret': HEADER_SECRET } },
  ]
  const refusals = []
  for (const body of refused) refusals.push((await put('/admin/orgs/default/providers/refused', body)).status)
  expect(refusals).toEqual(refused.map(() => 400))

  // Successes, JSON and streamed, for each kind (and the preset set from GROQ_API_KEY).
  const working = ['compat/gpt-4o-mini', 'groq/llama-3.3-70b-versatile', 'azure/gpt-4o', `bedrock/${MODEL}`, `bedrock-sts/${MODEL}`, `bedrock-key/${MODEL}`, 'vertex/gemini-2.5-flash', 'vertex/claude-sonnet-4@20250514']
  for (const model of working) {
    expect((await post('/v1/chat/completions', { model, messages: hello })).status).toBe(200)
    const streamed = await post('/v1/chat/completions', { model, messages: hello, stream: true })
    expect(streamed.status).toBe(200)
    expect(streamed.text).toContain('[DONE]')
  }
  // The other APIs.
  expect((await post('/v1/messages', { model: `bedrock/${MODEL}`, max_tokens: 50, messages: hello })).status).toBe(200)
  expect((await post('/v1/messages', { model: 'vertex/gemini-2.5-flash', max_tokens: 50, messages: hello, stream: true })).status).toBe(200)
  expect((await post('/v1/responses', { model: 'azure/gpt-4o', input: 'Say hi please' })).status).toBe(200)
  expect((await post('/v1/embeddings', { model: 'azure/text-embedding-3-small', input: 'hi' })).status).toBe(200)

  // Failures: wrong keys (upstream 401), a refused signature (403), a foreign service-account key (invalid_grant),
  // an upstream error, and a failure that falls back.
  const refusedUpstream: number[] = []
  for (const prefix of ['compat', 'azure', 'bedrock', 'vertex']) {
    const model = prefix === 'bedrock' ? MODEL : 'gemini-2.5-flash'
    refusedUpstream.push((await post('/v1/chat/completions', { model: `${prefix}-wrong/${model}`, messages: hello })).status)
    refusedUpstream.push((await post('/v1/chat/completions', { model: `${prefix}-wrong-s/${model}`, messages: hello, stream: true })).status)
  }
  expect(refusedUpstream).toEqual(Array(8).fill(502))
  aws.plan({ kind: 'error', status: 400, type: 'ValidationException', message: 'Input is too long for requested model.' })
  expect((await post('/v1/chat/completions', { model: `bedrock/${MODEL}`, messages: hello })).status).toBeGreaterThanOrEqual(400)
  const fellBack = await post('/v1/chat/completions', { model: 'bedrock-wrong/' + MODEL, messages: hello, fallback_chain: [{ model: 'vertex-wrong/gemini-2.5-flash' }, { model: 'compat-wrong/x' }, { model: 'azure/gpt-4o' }] })
  expect(fellBack.status).toBe(200)

  // The secrets really were used: each reached its upstream (where they belong; these requests are not searched).
  expect(compat.requests.some((r) => r.headers.authorization === `Bearer ${COMPAT_KEY}` && r.headers['x-secret'] === HEADER_SECRET)).toBe(true)
  expect(compat.requests.filter((r) => r.headers.authorization === `Bearer ${COMPAT_WRONG}`).length).toBeGreaterThanOrEqual(2)
  expect(groq.requests.some((r) => r.headers.authorization === `Bearer ${GROQ_KEY}`)).toBe(true)
  expect(azure.requests.some((r) => r.headers['api-key'] === AZURE_KEY)).toBe(true)
  expect(azure.requests.filter((r) => r.headers['api-key'] === AZURE_WRONG).length).toBeGreaterThanOrEqual(2)
  expect(new Set(aws.seen.map((s) => s.signer))).toEqual(new Set(['AKIASWEEPBEDROCK001', 'ASIASWEEPBEDROCK002', 'bearer']))
  expect(aws.seen.some((s) => s.headers.get('x-amz-security-token') === AWS_SESSION)).toBe(true)
  expect(oauth.grants.map((g) => g.status)).toContain(200)
  expect(oauth.grants.filter((g) => g.status === 400).length).toBeGreaterThanOrEqual(2)

  // Reads: the admin API, the dashboard (its page, its assets, and the admin answers it fetches, signed in).
  for (const path of ['/admin/orgs', '/admin/orgs/default', '/admin/orgs/default/routes', '/admin/orgs/default/budgets', '/admin/orgs/default/service-keys', '/admin/orgs/default/signing-secrets', '/admin/orgs/default/stats', '/admin/orgs/default/usage?groupBy=model'])
    expect((await call(path, { auth: 'admin' })).status).toBe(200)
  const page = await call('/ui', { auth: 'none' })
  expect(page.status).toBe(200)
  for (const m of page.text.matchAll(/(?:src|href)="(\/ui\/[^"]+)"/g)) expect((await call(m[1] as string, { auth: 'none' })).status).toBe(200)
  const signIn = await call('/ui/session', { method: 'POST', body: JSON.stringify({ token: ADMIN }), auth: 'none' })
  expect(signIn.status).toBe(201)
  const cookie = (signIn.headers.get('set-cookie') as string).split(';')[0] as string
  const { csrf } = JSON.parse(signIn.text) as { csrf: string }
  for (const path of ['/ui/session', '/admin/orgs', '/admin/orgs/default', '/admin/orgs/default/logs', '/admin/orgs/default/prompts', '/admin/orgs/default/stats', '/admin/orgs/default/budgets'])
    expect((await call(path, { auth: 'none', cookie })).status).toBe(200)
  // The dashboard sets a provider too (the answer it shows after saving).
  expect((await call('/admin/orgs/default/providers/azure', { method: 'PUT', auth: 'none', cookie, headers: { 'x-gw-csrf': csrf }, body: JSON.stringify(records.azure) })).status).toBe(200)

  // Log entries with their bodies, through both APIs; models, metrics, the OpenAPI document.
  await Bun.sleep(300) // the log writer's batch
  expect((await call('/v1/logs?limit=100')).status).toBe(200)
  expect((await call('/admin/orgs/default/logs?limit=100', { auth: 'admin' })).status).toBe(200)
  for (const id of requestIds) {
    expect((await call(`/v1/logs/${id}`)).status).toBe(200)
    expect((await call(`/admin/orgs/default/logs/${id}`, { auth: 'admin' })).status).toBe(200)
  }
  const models = await call('/v1/models')
  expect(models.text).toContain('listed-model')
  expect((await call('/metrics', { auth: 'admin' })).status).toBe(200)
  for (const path of ['/openapi.json', '/docs', '/health']) expect((await call(path, { auth: 'none' })).status).toBe(200)

  // Stop gw: the exporter sends what is left, the log writer flushes.
  gw.proc.kill('SIGTERM')
  await gw.proc.exited
  await Bun.sleep(100)
  gathered.push({ where: 'stdout', text: gw.output() }, { where: 'stderr', text: gw.errors() })
  for (const [i, body] of receiver.bodies.entries()) gathered.push({ where: `OTLP export ${i}`, text: body })
  for (const f of readdirSync(dir).filter((f) => f.startsWith('gw.db'))) gathered.push({ where: f, text: readFileSync(join(dir, f)).toString('latin1') })

  // What was gathered is the real thing: log entries carry the bodies, spans name the providers, stdout has access lines.
  const has = (where: RegExp, text: string) => gathered.some((g) => where.test(g.where) && g.text.includes(text))
  expect([
    has(/\/logs\//, 'Say hi please'),
    has(/OTLP/, '"bedrock-sts"'),
    has(/OTLP/, 'chat gemini-2.5-flash'),
    has(/OTLP/, 'azure.ai.openai'),
    has(/^stdout$/, requestIds.at(-1) as string),
    has(/GET \/admin\/orgs\/default →/, 'vertex-wrong-s'),
    has(/GET \/ui →/, '<script'),
  ]).toEqual([true, true, true, true, true, true, true])

  const secrets: Record<string, string> = {
    'OpenAI-compatible API key': COMPAT_KEY,
    'OpenAI-compatible wrong key': COMPAT_WRONG,
    'OpenAI-compatible header value': HEADER_SECRET,
    'preset key (GROQ_API_KEY)': GROQ_KEY,
    'Azure api-key': AZURE_KEY,
    'Azure wrong api-key': AZURE_WRONG,
    'AWS secretAccessKey': AWS_SECRET,
    'AWS wrong secretAccessKey': AWS_WRONG,
    'AWS sessionToken': AWS_SESSION,
    'Bedrock API key': BEDROCK_API_KEY,
    'service-account private key': pemSlice(pem),
    'foreign service-account private key': pemSlice(foreignPem),
  }
  const leaks: string[] = []
  for (const { where, text } of gathered)
    for (const [name, secret] of Object.entries(secrets))
      for (const form of new Set([secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1), Buffer.from(secret).toString('base64')]))
        if (text.includes(form)) leaks.push(`${name} in ${where}`)
  expect(leaks).toEqual([])
  expect(gathered.length).toBeGreaterThan(100)
}, 60_000)
