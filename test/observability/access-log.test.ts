// Access log lines and the start-up summary of a real `gw serve` process: one JSON line per API request
// (401s included) with the §14 keys, and no secret or body text anywhere on stdout.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { spawnGw } from '../helpers/process'

const SERVICE_KEY = `gw_sk_${'A1b2C3d4'.repeat(5)}wxyz`
const ADMIN = 'admin-token-must-not-leak-0123'
const PROVIDER_KEY = 'sk-provider-key-must-not-leak-9876'
const BODY_SECRET = 'sk-proj-BODYSECRET-0000111122223333'
const PROMPT_TEXT = 'the launch code is tangerine-walrus'

let openai: FakeUpstream
let mistral: FakeUpstream
let dir: string
beforeAll(async () => {
  openai = await startFake('openai', { apiKey: PROVIDER_KEY })
  mistral = await startFake('mistral')
  dir = mkdtempSync(join(tmpdir(), 'gw-access-log-'))
})
afterAll(async () => {
  await openai.stop()
  await mistral.stop()
  rmSync(dir, { recursive: true, force: true })
})

async function stopAndRead(gw: Awaited<ReturnType<typeof spawnGw>>): Promise<string> {
  gw.proc.kill('SIGTERM')
  await gw.proc.exited
  await Bun.sleep(50)
  return gw.output()
}

test('GW_LOG_FORMAT=json: one valid JSON line per API request with the §14 keys; no secrets or bodies', async () => {
  const gw = await spawnGw({
    GW_LOG_FORMAT: 'json',
    GW_DB: join(dir, 'json.db'),
    GW_SERVICE_KEY: SERVICE_KEY,
    GW_ADMIN_TOKEN: ADMIN,
    OPENAI_API_KEY: PROVIDER_KEY,
    GW_OPENAI_BASE_URL: openai.url,
    MISTRAL_API_KEY: mistral.apiKey,
    GW_MISTRAL_BASE_URL: mistral.url,
    GW_PROMPTS_DIR: join(dir, 'none'),
    // A collector URL with credentials and an auth header: neither may be printed.
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://gw:collector-pw-must-not-leak@127.0.0.1:9',
    OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer collector-token-must-not-leak',
  })
  const chat = (body: object, key = SERVICE_KEY) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `GwKey ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
  const messages = [{ role: 'user', content: `${PROMPT_TEXT}; my key is ${BODY_SECRET}` }]
  const ids: string[] = []
  const send = async (res: Response, status: number) => {
    expect(res.status).toBe(status)
    ids.push(res.headers.get('x-gw-request-id') as string)
    await res.text()
  }
  openai.setDefault({ kind: 'reply', text: `echo ${PROMPT_TEXT}`, usage: { prompt: 12, completion: 4 } })
  await send(await chat({ model: 'openai/gpt-4o-mini', messages, metadata: { note: BODY_SECRET } }), 200)
  await send(await chat({ model: 'openai/gpt-4o-mini', messages, stream: true }), 200)
  openai.enqueue({ kind: 'error', status: 500, errorType: 'server' })
  await send(await chat({ model: 'openai/gpt-4o', messages, fallback_chain: [{ model: 'mistral/mistral-small-latest' }] }), 200)
  await send(await chat({ model: 'openai/gpt-4o-mini', messages }, `gw_sk_${'Z'.repeat(44)}`), 401)
  await send(await chat({ model: 'openai/gpt-4o-mini', messages: 'not a list' }), 400)
  await send(await fetch(`${gw.url}/v1/models`, { headers: { authorization: `GwKey ${SERVICE_KEY}` } }), 200)
  const out = await stopAndRead(gw)

  const lines = out.trim().split('\n')
  const records = lines.map((l) => JSON.parse(l) as Record<string, any>)
  expect(records[0]).toMatchObject({ msg: 'gw started', address: gw.url, providers: ['openai', 'mistral'], accessLog: 'json' })
  expect(records[0]?.tracing).toBe('OTLP http/protobuf to http://127.0.0.1:9/v1/traces')
  const access = records.filter((r) => r.requestId)
  expect(access.map((r) => r.requestId)).toEqual(ids)
  for (const r of access)
    expect(Object.keys(r).sort()).toEqual(
      ['time', 'requestId', 'orgId', 'endpoint', 'model', 'status', 'code', 'latencyMs', 'ttftMs', 'usage', 'costUsd', 'fallback'].sort(),
    )
  const [json, stream, fallback, unauth, bad, models] = access
  expect(json).toMatchObject({ orgId: 'default', endpoint: '/v1/chat/completions', model: 'openai/gpt-4o-mini', status: 200, code: '', ttftMs: null, fallback: null })
  expect(json?.usage).toMatchObject({ promptTokens: 12, completionTokens: 4, totalTokens: 16 })
  expect(json?.costUsd).toBeGreaterThan(0)
  expect(stream?.ttftMs).toBeGreaterThanOrEqual(0)
  expect(fallback).toMatchObject({ model: 'mistral/mistral-small-latest', fallback: { reason: 'provider_error', model: 'mistral/mistral-small-latest' } })
  expect(unauth).toMatchObject({ orgId: null, status: 401, code: 'unauthorized', usage: null, costUsd: null })
  expect(bad).toMatchObject({ orgId: 'default', status: 400, code: 'gateway_error' })
  expect(models).toMatchObject({ orgId: 'default', endpoint: '/v1/models', status: 200, code: '', model: null })
  // Nothing secret and no body text, anywhere on stdout.
  for (const secret of [SERVICE_KEY, ADMIN, PROVIDER_KEY, BODY_SECRET, PROMPT_TEXT, 'tangerine', 'Z'.repeat(44), 'collector-pw', 'collector-token'])
    expect(out).not.toContain(secret)
  expect(records.at(-1)).toMatchObject({ msg: 'stopped' })
}, 30_000)

test('GW_LOG_FORMAT=pretty: one short line per request; start-up says plainly when no provider key is set', async () => {
  const gw = await spawnGw({
    GW_LOG_FORMAT: 'pretty',
    GW_DB: join(dir, 'pretty.db'),
    GW_SERVICE_KEY: SERVICE_KEY,
    GW_PROMPTS_DIR: join(dir, 'none'),
  })
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `GwKey ${SERVICE_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: PROMPT_TEXT }] }),
  })
  const id = res.headers.get('x-gw-request-id') as string
  await res.text()
  const out = await stopAndRead(gw)
  expect(out).toContain('gw: providers: none')
  expect(out).toContain('gw: metrics off until GW_ADMIN_TOKEN is set (or GW_METRICS=public); tracing off; access log pretty')
  // Without GW_ADMIN_TOKEN there is no admin API: the hint names the CLI instead.
  expect(out).toMatch(/no provider key is configured yet for the "default" org.*OPENAI_API_KEY.*npx bun src\/main\.ts provider set openai/)
  const line = out.split('\n').find((l) => l.includes(`req=${id}`)) as string
  expect(line).toMatch(/^\d\d:\d\d:\d\d\.\d{3} 403 \/v1\/chat\/completions openai\/gpt-4o-mini \d+ms model_not_allowed org=default req=/)
  expect(out).not.toContain(PROMPT_TEXT)
  expect(out).not.toContain(SERVICE_KEY)
}, 30_000)

test('a stdout reader that goes away (EPIPE) does not stop gw', async () => {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, '../../src/main.ts'), 'serve', '--port', '0'], {
    env: { PATH: process.env.PATH ?? '', GW_LOG_FORMAT: 'json', GW_DB: join(dir, 'epipe.db'), GW_SERVICE_KEY: SERVICE_KEY, GW_PROMPTS_DIR: join(dir, 'none') },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  try {
    const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
    const { value } = await reader.read()
    const url = (JSON.parse(new TextDecoder().decode(value).split('\n')[0] as string) as { address: string }).address
    await reader.cancel()
    for (let i = 0; i < 20; i++) {
      const res = await fetch(`${url}/v1/models`, { headers: { authorization: `GwKey ${SERVICE_KEY}` } })
      expect(res.status).toBe(200)
      await res.text()
      await Bun.sleep(5)
    }
    expect(proc.exitCode).toBeNull()
  } finally {
    proc.kill('SIGKILL')
    await proc.exited
  }
}, 30_000)
