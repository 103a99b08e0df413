// Admission under load, on gw started as `npm start` starts it: streams nobody reads leave other orgs
// an upstream connection, and request bodies in flight are bounded in bytes (docs/security.md).

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { startTestGateway } from '../helpers/gateway'
import { type GwProcess, spawnGw } from '../helpers/process'

const ADMIN = 'test-admin-token-0123456789'
/** The default org's key. */
const KEY = 'gw_sk_admission000000000000000000000000000000000000'
const MB = 1024 * 1024
let openai: FakeUpstream
const dir = mkdtempSync(join(tmpdir(), 'gw-admission-'))
const running: GwProcess[] = []

beforeAll(async () => {
  openai = await startFake('openai')
})
afterAll(async () => {
  for (const gw of running) gw.proc.kill('SIGKILL')
  await openai.stop()
  rmSync(dir, { recursive: true, force: true })
})

/** `gw serve` from source with no BUN_CONFIG_MAX_HTTP_REQUESTS, as `npm start` runs it (Bun's pool of 256). */
async function startGw(name: string, env: Record<string, string> = {}): Promise<GwProcess & { admin: (method: string, path: string, body?: unknown) => Promise<Response> }> {
  const gw = await spawnGw({
    GW_DB: join(dir, `${name}.db`),
    GW_ADMIN_TOKEN: ADMIN,
    GW_SERVICE_KEY: KEY,
    GW_OPENAI_BASE_URL: openai.url,
    OPENAI_API_KEY: openai.apiKey,
    GW_PROMPTS_DIR: '/nonexistent-gw-test-prompts',
    ...env,
  })
  running.push(gw)
  const admin = (method: string, path: string, body?: unknown) =>
    fetch(`${gw.url}/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
  return Object.assign(gw, { admin })
}

const chatBody = (stream: boolean, content = 'hi', model = 'openai/gpt-4o') => JSON.stringify({ model, stream, messages: [{ role: 'user', content }] })

/**
 * Opens a streamed chat on a raw socket, reads the status line of the answer and then nothing more:
 * the status, or 0 when no answer came within `waitMs` (the socket is left open either way).
 */
function openUnreadStream(url: string, key: string, sockets: Socket[], waitMs: number): Promise<number> {
  const body = chatBody(true)
  return new Promise((resolve) => {
    const socket = connect(Number(new URL(url).port), '127.0.0.1', () =>
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: GwKey ${key}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      ),
    )
    sockets.push(socket)
    const timer = setTimeout(() => resolve(0), waitMs)
    socket.once('data', (d: Buffer) => {
      socket.pause()
      clearTimeout(timer)
      resolve(Number(d.toString('latin1').split(' ')[1]))
    })
    socket.on('error', () => {})
  })
}

test('an org holding every stream it may, unread, against an upstream that never ends them: another org is still answered at once', async () => {
  const gw = await startGw('streams')
  // Org A (the default org) gets two more keys, so its own cap (not one key's) is what stops it.
  const aKeys = [KEY]
  for (let i = 0; i < 2; i++) aKeys.push(((await (await gw.admin('POST', '/orgs/default/service-keys', {})).json()) as { key: string }).key)
  expect((await gw.admin('POST', '/orgs', { id: 'org-b', name: 'org-b' })).status).toBe(201)
  expect((await gw.admin('PUT', '/orgs/org-b/providers/openai', { apiKey: openai.apiKey, baseUrl: openai.url })).status).toBe(200)
  const b = ((await (await gw.admin('POST', '/orgs/org-b/service-keys', {})).json()) as { key: string }).key

  openai.reset()
  openai.setDefault({ kind: 'stall-after', events: 3 })
  const sockets: Socket[] = []
  try {
    // Org A opens streams until gw refuses it (or 320 are open or waiting: past Bun's pool of 256).
    const statuses: number[] = []
    for (let i = 0; i < 320 && !statuses.includes(429); i += 8)
      statuses.push(...(await Promise.all(Array.from({ length: 8 }, (_, j) => openUnreadStream(gw.url, aKeys[j % aKeys.length] as string, sockets, 1_500)))))
    const held = statuses.filter((s) => s === 200).length
    // B's requests are answered by the fake, not held behind A's streams.
    openai.setDefault({ kind: 'reply', text: 'for b' })
    const askAsB = (stream: boolean) =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `GwKey ${b}`, 'content-type': 'application/json' },
        body: chatBody(stream),
        signal: AbortSignal.timeout(5_000),
      }).catch((e: Error) => e)
    const t0 = performance.now()
    const json = await askAsB(false)
    const jsonMs = performance.now() - t0
    const stream = await askAsB(true)
    console.log(`org A: ${held} streams open, then ${statuses.filter((s) => s === 429).length} refused (${statuses.filter((s) => s === 0).length} unanswered); org B's JSON answer in ${jsonMs.toFixed(0)} ms`)
    expect(json).toBeInstanceOf(Response)
    expect((json as Response).status).toBe(200)
    expect(((await (json as Response).json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBe('for b')
    expect(stream).toBeInstanceOf(Response)
    expect((stream as Response).status).toBe(200)
    expect(await (stream as Response).text()).toContain('[DONE]')
    // A was refused with the rate-limit answer before the pool ran out, and no request of A was left waiting.
    expect(statuses).toContain(429)
    expect(statuses).not.toContain(0)
    expect(held).toBeLessThan(256)
  } finally {
    for (const s of sockets) s.destroy()
    openai.reset()
  }
}, 90_000)

const statusKb = (pid: number, field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1])

test('100 concurrent valid 10 MB bodies from one key, with maxPromptTokens: memory stays bounded, the bodies that do not fit get 503 with Retry-After, the rest are answered', async () => {
  const gw = await startGw('bodies')
  expect((await gw.admin('PUT', '/orgs/default/policy', { maxPromptTokens: 5_000_000 })).status).toBe(200)
  openai.reset()
  // Just under 10 MB of prompt (the default GW_MAX_BODY_BYTES is 10 MiB), about 2 million tokens,
  // to a model gw knows no context window of (so the body goes upstream).
  const body = chatBody(false, 'the quick brown fox jumps over the lazy dog '.repeat(227_000), 'openai/gpt-long-context-test')
  expect(Buffer.byteLength(body)).toBeGreaterThan(9_900_000)
  const send = () =>
    fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `GwKey ${KEY}`, 'content-type': 'application/json' }, body })
  const before = statusKb(gw.proc.pid, 'VmRSS')
  const answers = await Promise.all(
    Array.from({ length: 100 }, async () => {
      const res = await send()
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Record<string, unknown> }
    }),
  )
  const peakMb = statusKb(gw.proc.pid, 'VmHWM') / 1024
  const ok = answers.filter((a) => a.status === 200)
  const refused = answers.filter((a) => a.status !== 200)
  console.log(`${ok.length} answered, ${refused.length} refused; gw RSS ${(before / 1024).toFixed(0)} MB before, peak ${peakMb.toFixed(0)} MB`)
  expect(ok.length).toBeGreaterThan(0)
  for (const a of ok) expect(a.body).toMatchObject({ object: 'chat.completion' })
  expect(openai.requests.length).toBe(ok.length)
  for (const a of refused) {
    expect(a.status).toBe(503)
    expect(a.retryAfter).toBe('1')
    expect(a.body).toMatchObject({ error: true, code: 'gateway_error' })
    expect(typeof a.body.requestId).toBe('string')
  }
  expect(peakMb).toBeLessThan(1_536)
  // Once they are done, the whole budget is free again: another large body is taken.
  expect((await send()).status).toBe(200)
}, 240_000)

test('the stream caps follow BUN_CONFIG_MAX_HTTP_REQUESTS: with a pool of 8, six streams at most (503 past them, whatever the policies say), and a JSON request still goes through', async () => {
  const gw = await startGw('pool8', { BUN_CONFIG_MAX_HTTP_REQUESTS: '8' })
  // Policies far above the instance's cap: only the instance's cap (6 of 8) applies.
  expect((await gw.admin('PUT', '/orgs/default/policy', { maxConcurrentStreams: 100, maxConcurrentStreamsPerKey: 100 })).status).toBe(200)
  openai.reset()
  openai.setDefault({ kind: 'stall-after', events: 3 })
  // The responses are kept with their controllers: one nobody refers to may be collected and its
  // unread body cancelled, which would end its stream early (test/reliability/stream-limits.test.ts).
  const held: { ac: AbortController; res: Response }[] = []
  const ask = async (stream: boolean) => {
    const ac = new AbortController()
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `GwKey ${KEY}`, 'content-type': 'application/json' },
      body: chatBody(stream),
      signal: AbortSignal.any([ac.signal, AbortSignal.timeout(5_000)]),
    })
    if (res.status === 200 && stream) held.push({ ac, res })
    return res
  }
  try {
    for (let i = 0; i < 6; i++) expect((await ask(true)).status).toBe(200)
    const refused = await ask(true)
    expect(refused.status).toBe(503)
    expect(refused.headers.get('retry-after')).toBe('1')
    expect(await refused.json()).toMatchObject({ error: true, code: 'gateway_error' })
    openai.setDefault({ kind: 'reply', text: 'still here' })
    const json = await ask(false)
    expect(json.status).toBe(200)
    expect(((await json.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBe('still here')
  } finally {
    for (const h of held) h.ac.abort()
    openai.reset()
  }
}, 30_000)

test('a stream keeps its body counted until it ends; a chunked body is counted as it arrives', async () => {
  const gw = await startTestGateway({ openai }, { GW_MAX_BODY_BYTES: String(MB), GW_MAX_INFLIGHT_BODY_BYTES: String(MB + MB / 2), GW_UPSTREAM_TIMEOUT_MS: '60000' })
  const big = (stream: boolean) => chatBody(stream, 'word '.repeat(180_000), 'openai/gpt-long-context-test') // ~900 KB
  const ac = new AbortController()
  openai.reset()
  try {
    openai.enqueue({ kind: 'stall-after', events: 3 })
    const open = await gw.fetch('/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: big(true), signal: ac.signal })
    expect(open.status).toBe(200)
    // While that stream is open, a second body of its size does not fit: 503, declared or chunked.
    const declared = await gw.chat(JSON.parse(big(false)))
    expect(declared.status).toBe(503)
    expect(declared.headers.get('retry-after')).toBe('1')
    const text = big(false)
    const chunked = await gw.fetch('/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new ReadableStream({
        start(c) {
          for (let i = 0; i < text.length; i += 64 * 1024) c.enqueue(new TextEncoder().encode(text.slice(i, i + 64 * 1024)))
          c.close()
        },
      }),
    })
    expect(chunked.status).toBe(503)
    expect(await chunked.json()).toMatchObject({ error: true, code: 'gateway_error' })
    // A small one still fits beside the stream.
    expect((await gw.chat(JSON.parse(chatBody(false)))).status).toBe(200)
    ac.abort()
    // The stream's end gives its bytes back: the large body is taken again.
    const deadline = Date.now() + 5_000
    let again = 0
    while (Date.now() < deadline && again !== 200) again = (await gw.chat(JSON.parse(big(false)))).status
    expect(again).toBe(200)
  } finally {
    ac.abort()
    openai.reset()
    await gw.stop()
  }
}, 30_000)
