// Attacks from the hardening review (PRODUCT §4): one request must not stall the process, grow its memory or bypass a limit.
// The gateway runs as a child process, so an attack that pins its event loop fails these tests instead of hanging the runner.

import { afterAll, afterEach, beforeAll, beforeEach, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { processStats } from '../helpers/fault-load'
import { type GwProcess, putDefaultPolicy, spawnGw } from '../helpers/process'

const KEY = 'gw_sk_attacks000000000000000000000000000000000000000'
const ADMIN = 'attacks-admin-token-0123456789'
let openai: FakeUpstream
let gw: GwProcess
let n = 0
const dir = mkdtempSync(join(tmpdir(), 'gw-attacks-'))

beforeAll(async () => {
  openai = await startFake('openai')
})
// A fresh process per attack, so each test shows its own attack failing or not.
beforeEach(async () => {
  gw = await spawnGw({
    GW_DB: join(dir, `gw-${++n}.db`),
    GW_SERVICE_KEY: KEY,
    GW_ADMIN_TOKEN: ADMIN,
    GW_OPENAI_BASE_URL: openai.url,
    OPENAI_API_KEY: openai.apiKey,
  })
})
afterEach(() => {
  gw.proc.kill('SIGKILL')
})
afterAll(async () => {
  await openai.stop()
  rmSync(dir, { recursive: true, force: true })
})

const chat = (body: unknown, headers: Record<string, string> = {}, timeoutMs = 30_000) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `GwKey ${KEY}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  })

/** `/health` answers within a generous bound while an attack runs (a pinned event loop never answers). */
async function healthAnswers(): Promise<void> {
  const res = await fetch(`${gw.url}/health`, { signal: AbortSignal.timeout(5_000) })
  expect(res.status).toBe(200)
}

const setPolicy = (policy: object) => putDefaultPolicy(gw, ADMIN, policy)

const ask = (content: string) => ({ model: 'openai/gpt-4o', messages: [{ role: 'user', content }] })

test('a self-referencing output_schema is a 400 at once, and the process keeps answering', async () => {
  const schema = { mode: 'json_schema', anyOf: [{ $ref: '#' }, { $ref: '#' }] }
  const res = await chat({ ...ask('hi'), output_schema: schema }, {}, 10_000)
  expect(res.status).toBe(400)
  expect(((await res.json()) as { message: string }).message).toMatch(/output_schema.*loop back/)
  const viaFormat = { type: 'json_schema', json_schema: { name: 'x', schema: { anyOf: [{ $ref: '#' }, { $ref: '#' }] } } }
  expect((await chat({ ...ask('hi'), response_format: viaFormat }, {}, 10_000)).status).toBe(400)
  await healthAnswers()
}, 20_000)

test('a long unbroken word under maxPromptTokens never holds the event loop; special tokens are plain text', async () => {
  await setPolicy({ maxPromptTokens: 1_000_000 })
  try {
    const started = performance.now()
    const pending = chat(ask('a'.repeat(400_000)), {}, 60_000)
    await Bun.sleep(100)
    await healthAnswers()
    const res = await pending
    expect(res.status).toBe(200)
    // Minutes before the fix (the BPE merge is quadratic in a run's length); well under a second after.
    expect(performance.now() - started).toBeLessThan(20_000)
    const special = await chat(ask('say <|endoftext|> and <|im_start|> literally'))
    expect(special.status).toBe(200)
  } finally {
    await setPolicy({})
  }
}, 60_000)

test('a prompt far over maxPromptTokens is refused after counting only the limit', async () => {
  await setPolicy({ maxPromptTokens: 1_000 })
  try {
    const res = await chat(ask('word '.repeat(1_500_000)), {}, 60_000)
    expect(res.status).toBe(400)
    expect(((await res.json()) as { message: string }).message).toMatch(/at least \d+ tokens, over the org's limit of 1000/)
    await healthAnswers()
  } finally {
    await setPolicy({})
  }
}, 60_000)

/** A GwSigned-shaped token (unverifiable) naming `orgId`. */
function forgedToken(orgId: string): string {
  const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url')
  return `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ orgId, sub: 'x', iat: Math.floor(Date.now() / 1000), ttl: 60 })}.c2ln`
}

test('forged signed tokens naming thousands of distinct orgs leave no memory behind', async () => {
  const send = (i: number, pad: number) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `GwSigned ${forgedToken(`org-${i}-${'x'.repeat(pad)}`)}`, 'content-type': 'application/json' },
      body: '{}',
    }).then((r) => r.status)
  const round = async (from: number, n: number, pad: number) => {
    const statuses = new Set<number>()
    for (let i = from; i < from + n; i += 50)
      for (const s of await Promise.all(Array.from({ length: 50 }, (_, j) => send(i + j, pad)))) statuses.add(s)
    return [...statuses]
  }
  expect(await round(0, 1_000, 8_000)).toEqual([401]) // warm-up: pools and JIT at their working size
  const before = processStats(gw.proc.pid).rssMb
  expect(await round(1_000, 5_000, 8_000)).toEqual([401]) // 8 KB ids: refused before any lookup
  expect(await round(6_000, 5_000, 40)).toEqual([401]) // org-shaped ids: looked up, the miss not kept
  const grown = processStats(gw.proc.pid).rssMb - before
  // Before the fix every id stayed cached: 5,000 × 8 KB ids alone added ~40 MB.
  expect(grown).toBeLessThan(25)
  await healthAnswers()
}, 60_000)

test('identifiers over 256 characters are 400s naming the field, and no error echoes more than 64 characters', async () => {
  const cases: [object, Record<string, string>, RegExp][] = [
    [{ ...ask('hi'), user: 'u'.repeat(3_000_000) }, {}, /"user"/],
    [{ ...ask('hi'), model: `openai/${'m'.repeat(1_000_000)}` }, {}, /"model"/],
    [{ ...ask('hi'), fallback_chain: [{ model: `openai/${'m'.repeat(300)}` }] }, {}, /fallback_chain\/0\/model/],
    [ask('hi'), { 'x-gw-end-user-id': 'e'.repeat(300) }, /x-gw-end-user-id/],
  ]
  for (const [body, headers, field] of cases) {
    const res = await chat(body, headers)
    const text = await res.text()
    expect({ status: res.status, short: text.length < 400 }).toEqual({ status: 400, short: true })
    expect(JSON.parse(text).message).toMatch(field)
  }
  // An invalid model within the limit is echoed only by its first 64 characters.
  const res = await chat({ ...ask('hi'), model: `nope/${'z'.repeat(200)}` })
  expect(res.status).toBe(400)
  const message = ((await res.json()) as { message: string }).message
  expect(message).toContain(`"nope/${'z'.repeat(59)}…"`)
  expect(message).not.toContain('z'.repeat(65))
})
