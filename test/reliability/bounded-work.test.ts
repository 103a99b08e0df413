// Bounded work (PRODUCT §4, docs/security.md): no request keeps the event loop busy for long, grows gw's
// memory without end, or crashes a check after the provider was paid. Each attack runs against its own
// `gw serve` process; a second client asks /health every few ms and the longest gap between its answers
// is what "the gateway froze" means.

import { afterAll, afterEach, beforeAll, beforeEach, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomAlnum } from '../fakes/common'
import { type FakeUpstream, startFake } from '../fakes/upstream'
import { readSse } from '../helpers/gateway'
import { type GwProcess, putDefaultPolicy, spawnGw } from '../helpers/process'
import { endlessBody } from '../helpers/endless-body'

const KEY = 'gw_sk_bounded00000000000000000000000000000000000000'
const ADMIN = 'bounded-admin-token-0123456789'
/** The longest the gateway may go without answering /health while one request works (this machine is slow and shared). */
const MAX_GAP_MS = 200
let openai: FakeUpstream
let anthropic: FakeUpstream
let gw: GwProcess
let n = 0
const dir = mkdtempSync(join(tmpdir(), 'gw-bounded-'))

async function startGw(openaiUrl: string): Promise<GwProcess> {
  return spawnGw({
    GW_DB: join(dir, `gw-${++n}.db`),
    GW_SERVICE_KEY: KEY,
    GW_ADMIN_TOKEN: ADMIN,
    GW_OPENAI_BASE_URL: openaiUrl,
    OPENAI_API_KEY: openai.apiKey,
    GW_ANTHROPIC_BASE_URL: anthropic.url,
    ANTHROPIC_API_KEY: anthropic.apiKey,
  })
}

beforeAll(async () => {
  openai = await startFake('openai')
  anthropic = await startFake('anthropic')
})
beforeEach(async () => {
  openai.reset()
  anthropic.reset()
  gw = await startGw(openai.url)
})
afterEach(() => {
  gw.proc.kill('SIGKILL')
})
afterAll(async () => {
  await openai.stop()
  await anthropic.stop()
  rmSync(dir, { recursive: true, force: true })
})

const post = (body: string, timeoutMs = 120_000) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `GwKey ${KEY}`, 'content-type': 'application/json' },
    body,
    signal: AbortSignal.timeout(timeoutMs),
  })
const chat = (body: unknown, timeoutMs?: number) => post(JSON.stringify(body), timeoutMs)
const ask = (content: string) => ({ model: 'openai/gpt-4o', messages: [{ role: 'user', content }] })

const setPolicy = (policy: object) => putDefaultPolicy(gw, ADMIN, policy)

/** An OpenAI chat completion whose message content is `content` (the fake's `raw` behaviour sends it as it is). */
const completion = (content: string) => ({
  kind: 'raw' as const,
  status: 200,
  body: JSON.stringify({
    id: 'chatcmpl-bounded',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
  }),
})

/** The same content as an OpenAI stream, in pieces of at most 64 KB. */
function streamed(content: string) {
  const chunk = (delta: object, finish: string | null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-bounded', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
  const events = [chunk({ role: 'assistant', content: '' }, null)]
  for (let i = 0; i < content.length; i += 65_536) events.push(chunk({ content: content.slice(i, i + 65_536) }, null))
  events.push(chunk({}, 'stop'), 'data: [DONE]\n\n')
  return { kind: 'raw' as const, status: 200, body: events.join('') }
}

/**
 * Runs `work` while a second client, in its own process, asks /health every 2 ms: the longest time
 * (ms) between two of its answers. The test's inputs are built before, so its own work is not counted.
 */
async function withHealthProbe<T>(work: () => Promise<T>): Promise<{ result: T; gapMs: number }> {
  const probe = Bun.spawn([process.execPath, join(import.meta.dir, '../helpers/health-probe.ts'), gw.url], { stdin: 'pipe', stdout: 'pipe' })
  const out = (probe.stdout as ReadableStream<Uint8Array>).getReader()
  const lines: string[] = []
  const decoder = new TextDecoder()
  while (!lines.includes('ready')) {
    const { value, done } = await out.read()
    if (done) throw new Error('the /health probe did not start')
    lines.push(...decoder.decode(value).split('\n').filter(Boolean))
  }
  let stopped = false
  try {
    const result = await work()
    return { result, gapMs: await stop() }
  } finally {
    if (!stopped) await stop()
  }
  async function stop(): Promise<number> {
    stopped = true
    probe.stdin.end()
    for (;;) {
      const { value, done } = await out.read()
      if (done) break
      lines.push(...decoder.decode(value).split('\n').filter(Boolean))
    }
    await probe.exited
    return Number(lines.at(-1))
  }
}

async function logOf(requestId: string): Promise<Record<string, any>> {
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${gw.url}/v1/logs/${requestId}`, { headers: { authorization: `GwKey ${KEY}` } })
    if (res.status === 200) return (await res.json()) as Record<string, any>
    await Bun.sleep(50)
  }
  throw new Error(`no log entry for ${requestId}`)
}

/** How many entries the log holds for `requestId` (the whole log of this fresh gateway is one page). */
async function entriesFor(requestId: string): Promise<number> {
  await logOf(requestId)
  const res = await fetch(`${gw.url}/v1/logs?limit=100`, { headers: { authorization: `GwKey ${KEY}` } })
  const page = (await res.json()) as { data: { requestId: string }[] }
  return page.data.filter((e) => e.requestId === requestId).length
}

/** A warm gateway (first-request set-up, JIT) so the probe measures the attack, not the start. */
async function warmUp(): Promise<void> {
  expect((await chat(ask('warm up'))).status).toBe(200)
}

/**
 * The attack's longest /health gap is under MAX_GAP_MS; when the machine is so loaded that a request
 * of the same size without the attack (`floorMs`) already stalls longer, under that plus MAX_GAP_MS / 2.
 */
function expectNoFreeze(what: string, gapMs: number, floorMs: number): void {
  console.log(`${what}: longest /health gap ${gapMs.toFixed(0)} ms (a request of the same size without it: ${floorMs.toFixed(0)} ms)`)
  expect(gapMs).toBeLessThan(Math.max(MAX_GAP_MS, floorMs + MAX_GAP_MS / 2))
}

const requestIdOf = (res: Response) => res.headers.get('x-gw-request-id') as string

test('an output_schema enum of 99,000 values (8 MB) checked against a 1,000-item answer never freezes the gateway; more enum values are a 400', async () => {
  await warmUp()
  const value = (i: number) => `value-${String(i).padStart(74, '0')}`
  const schema = { mode: 'json_schema', properties: { items: { type: 'array', items: { enum: Array.from({ length: 99_000 }, (_, i) => value(i)) } } } }
  // Items from the enum's end: each one was compared with about 98,000 values before it matched.
  const answer = { items: Array.from({ length: 1_000 }, (_, i) => value(98_000 + i)) }
  // The same bytes and answer without the schema first: what a request this size costs anyway.
  openai.enqueue(completion(JSON.stringify(answer)))
  const plain = JSON.stringify({ ...ask('list them'), wide_field: schema })
  const floor = await withHealthProbe(() => post(plain).then((r) => r.arrayBuffer()))
  openai.enqueue(completion(JSON.stringify(answer)))
  const body = JSON.stringify({ ...ask('list them'), output_schema: schema })
  expect(body.length).toBeGreaterThan(7_900_000)
  const { result: res, gapMs } = await withHealthProbe(() => post(body))
  expect(res.status).toBe(200)
  expectNoFreeze('8 MB enum × 1,000-item answer', gapMs, floor.gapMs)
  expect((await logOf(requestIdOf(res))).structuredOutput).toEqual({ parsed: true, matchesSchema: true })

  const tooMany = { mode: 'json_schema', properties: { items: { type: 'array', items: { enum: Array.from({ length: 110_000 }, (_, i) => `v${i}`) } } } }
  const refused = await chat({ ...ask('list them'), output_schema: tooMany })
  expect(refused.status).toBe(400)
  const error = (await refused.json()) as { code: string; message: string }
  expect(error.code).toBe('gateway_error')
  expect(error.message).toMatch(/output_schema.*"enum" and "const" values hold more than 100000 JSON values/)
}, 120_000)

const DEEP = 6_000
const deepJson = '{"a":'.repeat(DEEP) + '{}' + '}'.repeat(DEEP)
const nested = { mode: 'json_schema', properties: { a: { anyOf: [{ $ref: '#' }, { type: 'null' }] } } }

test('a 6,000-level nested answer under output_schema: a clean answer, one log entry, the budget reservation given back', async () => {
  // max_tokens 1,000 reserves about $0.011 on gpt-4o: the budget holds one such reservation, not two.
  await setPolicy({ budgets: [{ scope: 'org', usd: 0.015, period: 'day' }] })
  openai.enqueue(completion(deepJson))
  const res = await chat({ ...ask('nest'), max_tokens: 1_000, output_schema: nested })
  expect(res.status).toBe(200)
  expect(((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBe(deepJson)
  const id = requestIdOf(res)
  expect(await entriesFor(id)).toBe(1)
  expect(await logOf(id)).toMatchObject({ status: 200, structuredOutput: { parsed: true, matchesSchema: true } })
  // Before: the checker overflowed its stack after the provider was paid: a 500, no log entry, the reservation kept.
  const next = await chat({ ...ask('again'), max_tokens: 1_000 })
  expect(next.status).toBe(200)
}, 60_000)

test('the same answer streamed: the stream ends cleanly, one log entry, the stream slot given back', async () => {
  await setPolicy({ maxConcurrentStreamsPerKey: 1 })
  openai.enqueue(streamed(deepJson))
  const res = await chat({ ...ask('nest'), stream: true, output_schema: nested })
  expect(res.status).toBe(200)
  const events = await readSse(res)
  expect(events.at(-1)).toBe('[DONE]')
  expect(events.some((e) => e !== '[DONE]' && 'error' in e)).toBe(false)
  const id = requestIdOf(res)
  expect(await entriesFor(id)).toBe(1)
  expect(await logOf(id)).toMatchObject({ status: 200, incomplete: false, structuredOutput: { parsed: true, matchesSchema: true } })
  // Before: the check threw when the stream ended: no log entry, and the one slot stayed taken (429).
  const next = await chat({ ...ask('again'), stream: true })
  expect(next.status).toBe(200)
  await readSse(next)
}, 60_000)

test('an upstream answer nested 100,000 levels deep is a provider_error with its log entry, and the reservation is given back', async () => {
  await setPolicy({ budgets: [{ scope: 'org', usd: 0.015, period: 'day' }] })
  const deep = '['.repeat(100_000) + ']'.repeat(100_000)
  const answer = JSON.parse(completion('hi').body)
  openai.enqueue({ kind: 'raw', status: 200, body: JSON.stringify(answer).replace('"finish_reason":"stop"', `"finish_reason":"stop","logprobs":${deep}`) })
  const res = await chat({ ...ask('hi'), max_tokens: 1_000 })
  // Before: passed on to JSON.stringify, which overflowed the stack: a 500, no log entry, the reservation kept.
  expect(res.status).toBe(502)
  const error = (await res.json()) as { code: string; message: string; requestId: string }
  expect(error.code).toBe('provider_error')
  expect(error.message).toMatch(/more than 1000 levels deep/)
  expect(await entriesFor(error.requestId)).toBe(1)
  expect(await logOf(error.requestId)).toMatchObject({ status: 502, errorCode: 'provider_error' })
  expect((await chat({ ...ask('again'), max_tokens: 1_000 })).status).toBe(200)
})

test('a tool-call argument string nested 100,000 levels deep reaches Anthropic as an empty input', async () => {
  const args = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000)
  const messages = [
    { role: 'user', content: 'call it' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: args } }] },
    { role: 'tool', tool_call_id: 'call_1', content: 'done' },
  ]
  // A model outside the catalog: no context window to refuse the 600 KB argument before it is sent.
  const res = await chat({ model: 'anthropic/claude-bounded-test', messages, tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }] })
  // Before: parsed into an object too deep to serialise into Anthropic's body: the attempt failed, a 502.
  expect(res.status).toBe(200)
  const sent = anthropic.requests.at(-1)?.body as { messages: { content: { type: string; input?: unknown }[] }[] }
  expect(sent.messages[1]?.content.find((b) => b.type === 'tool_use')?.input).toEqual({})
})

test('a chunk cut short after the answer started is a provider_error, never passed on as it came: one log entry, the stream slot given back', async () => {
  await setPolicy({ maxConcurrentStreamsPerKey: 1 })
  // Plain-text chunks are passed on unread; this one is cut short (its braces never close), so it is
  // read, and its failure acted on (PRODUCT §4: a failure mid-stream never ends in a clean finish).
  const chunk = (rest: string) => `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,${rest}\n\n`
  openai.enqueue({
    kind: 'raw',
    status: 200,
    body: [chunk('"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}'), chunk('"delta":{"content":" there"}'), chunk('"delta":{},"finish_reason":"stop"}]}'), 'data: [DONE]\n\n'],
  })
  const res = await chat({ ...ask('hi'), stream: true })
  expect(res.status).toBe(200)
  const id = requestIdOf(res)
  // The client gets the whole chunk before it, then the stream's error event and its end; no broken JSON.
  const blocks = (await res.text()).trim().split('\n\n')
  expect(blocks.at(-1)).toBe('data: [DONE]')
  expect(JSON.parse((blocks.at(-2) as string).slice(6))).toMatchObject({ error: true, code: 'provider_error' })
  for (const b of blocks.slice(0, -1)) expect(() => JSON.parse(b.slice(6))).not.toThrow()
  expect(blocks.some((b) => b.includes('" there"'))).toBe(false)
  expect(await entriesFor(id)).toBe(1)
  expect(await logOf(id)).toMatchObject({ errorCode: 'provider_error', model: 'openai/gpt-4o', stream: true })
  // Before settlement owned every ending: no log entry, and the one stream slot stayed taken: every later stream was a 429.
  const next = await chat({ ...ask('again'), stream: true })
  expect(next.status).toBe(200)
  await readSse(next)
}, 60_000)

const blockedTerms = () => Array.from({ length: 1_000 }, (_, i) => `forbidden-${i}-${randomAlnum(8)}`)

test('blocked terms: a 1,000,000-element array is scanned, and a term at its end found', async () => {
  const terms = blockedTerms()
  await setPolicy({ blockedTerms: terms })
  // Before: the scan spread the array into a function call's arguments: RangeError, 500.
  const wide = await chat({ ...ask('hi'), wide_field: Array.from({ length: 1_000_000 }, () => 0) })
  expect(wide.status).toBe(200)
  const blocked = await chat({ ...ask('hi'), wide_field: [...Array.from({ length: 999_999 }, () => 0), `x ${terms[999]?.toUpperCase()} x`] })
  expect(blocked.status).toBe(403)
  expect(((await blocked.json()) as { message: string }).message).toContain(terms[999] as string)
}, 60_000)

test('blocked terms: 1,000 terms over 10 MB of tools never freeze the gateway', async () => {
  await warmUp()
  const tool = (i: number) => ({ type: 'function', function: { name: `tool_${i}`, description: `${randomAlnum(64)} `.repeat(150), parameters: { type: 'object' } } })
  const tools = Array.from({ length: 1_000 }, (_, i) => tool(i))
  const body = JSON.stringify({ ...ask('hi'), tools })
  expect(body.length).toBeGreaterThan(9_500_000)
  const floor = await withHealthProbe(() => post(body).then((r) => r.arrayBuffer()))
  await setPolicy({ blockedTerms: blockedTerms() })
  const { result: res, gapMs } = await withHealthProbe(() => post(body))
  expect(res.status).toBe(200)
  // Every term was searched for in every string before: 1-3.5 s without an answer.
  expectNoFreeze('1,000 blocked terms over 10 MB of tools', gapMs, floor.gapMs)
}, 120_000)

test('a secrets guardrail over 9 MB of private-key BEGIN lines without an END never freezes the gateway; a real key after them is still found', async () => {
  await warmUp()
  const begins = '-----BEGIN PRIVATE KEY-----\n'.repeat(330_000)
  const key = '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234\n-----END RSA PRIVATE KEY-----'
  const body = JSON.stringify(ask(`${begins} and ${key}`))
  const floor = await withHealthProbe(() => post(body).then((r) => r.arrayBuffer()))
  await setPolicy({ guardrails: [{ name: 'keys', kind: 'pii', entities: ['secret'], on: 'input', action: 'block' }] })
  try {
    const { result: res, gapMs } = await withHealthProbe(() => post(body))
    expect(res.status).toBe(400)
    expect(((await res.json()) as { message: string }).message).toContain('Guardrail "keys" blocked the request')
    // Each BEGIN line searched the rest of the text for its END: ~0.5 s a 256 KiB window, minutes for the body.
    expectNoFreeze('a secrets guardrail over 9 MB of BEGIN lines', gapMs, floor.gapMs)
  } finally {
    await setPolicy({})
  }
}, 120_000)

/** CPU time (user + system) the process has used, from /proc/<pid>/stat (clock ticks of 10 ms). */
/** CPU seconds of the whole process, or with `servingThread` of its main thread only (the log thread's work left out). */
function cpuSeconds(pid: number, servingThread = false): number {
  const fields = readFileSync(servingThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) / 100
}

function rssMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const kb = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
  return Number(kb) / 1024
}

/** An upstream that starts an SSE line (after `head`) and never ends it. */
const endlessLine = (head: string) => endlessBody(`${head}data: {"choices":[{"index":0,"delta":{"content":"`, { headers: { 'content-type': 'text/event-stream' } })

const firstChunk = `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o', choices: [{ index: 0, delta: { role: 'assistant', content: 'Hello' }, finish_reason: null }] })}\n\n`

test('an upstream SSE line without end: provider_error before the first byte and after it, and gw’s memory stays bounded', async () => {
  for (const [head, when] of [['', 'before'] as const, [firstChunk, 'after'] as const]) {
    const upstream = endlessLine(head)
    gw.proc.kill('SIGKILL')
    gw = await startGw(`http://127.0.0.1:${upstream.port}/v1`)
    try {
      const before = rssMb(gw.proc.pid, 'VmRSS')
      const res = await chat({ ...ask('talk'), stream: true }, 60_000)
      if (when === 'before') {
        expect(res.status).toBe(502)
        expect(((await res.json()) as { code: string }).code).toBe('provider_error')
      } else {
        expect(res.status).toBe(200)
        const events = await readSse(res)
        const error = events.find((e) => e !== '[DONE]' && 'error' in e) as { code: string; message: string } | undefined
        expect(error).toMatchObject({ code: 'provider_error' })
        expect(error?.message).toMatch(/longer than 8388608 characters/)
      }
      // Before: the line grew in memory until the upstream stopped (a 300 MB line took RSS to 1.5 GB).
      const grown = rssMb(gw.proc.pid, 'VmHWM') - before
      console.log(`endless SSE line (${when} the first byte): peak RSS ${grown.toFixed(0)} MB over the start`)
      expect(grown).toBeLessThan(200)
    } finally {
      upstream.stop()
    }
  }
}, 120_000)

test('a JSON answer or an error body without end is cut off at its limit: provider_error, and gw’s memory stays bounded', async () => {
  for (const [status, limitMb] of [[200, 64], [500, 1]] as const) {
    const upstream = endlessBody('{"choices":[{"index":0,"message":{"role":"assistant","content":"', { status, headers: { 'content-type': 'application/json' } })
    gw.proc.kill('SIGKILL')
    gw = await startGw(`http://127.0.0.1:${upstream.port}/v1`)
    try {
      const before = rssMb(gw.proc.pid, 'VmRSS')
      const res = await chat({ ...ask('talk') }, 60_000)
      expect(res.status).toBe(502)
      const error = (await res.json()) as { code: string; message: string }
      expect(error.code).toBe('provider_error')
      if (status === 200) expect(error.message).toContain('larger than 64 MiB')
      // Read no further than the limit (and what the socket had buffered): before, all 400 MB.
      expect(upstream.sent()).toBeLessThan(limitMb + 32)
      const grown = rssMb(gw.proc.pid, 'VmHWM') - before
      console.log(`endless ${status === 200 ? 'JSON answer' : 'error body'}: ${upstream.sent()} MB sent, peak RSS ${grown.toFixed(0)} MB over the start`)
      expect(grown).toBeLessThan(250)
    } finally {
      upstream.stop()
    }
  }
}, 120_000)

test('a 4 MB prompt under maxPromptTokens 5,000,000 is not counted token by token; a prompt whose bytes pass the limit still is', async () => {
  await setPolicy({ maxPromptTokens: 5_000_000 })
  await warmUp()
  const prompt = randomAlnum(4_000_000)
  const cpuBefore = cpuSeconds(gw.proc.pid)
  // A model outside the catalog: no context window to refuse a 4 MB prompt before it is sent.
  const { result: res, gapMs } = await withHealthProbe(() => chat({ ...ask(prompt), model: 'openai/gpt-bounded-test' }))
  expect(res.status).toBe(200)
  const entry = await logOf(requestIdOf(res))
  // Before: 30-45 s of tokenizer CPU (given back every 4 ms, so /health answered, but the request waited).
  const cpu = cpuSeconds(gw.proc.pid) - cpuBefore
  console.log(`4 MB prompt under maxPromptTokens: latency ${entry.latencyMs} ms, gw CPU ${cpu.toFixed(2)} s, longest /health gap ${gapMs.toFixed(0)} ms`)
  expect(entry.latencyMs).toBeLessThan(5_000)
  expect(cpu).toBeLessThan(5)

  await setPolicy({ maxPromptTokens: 60 })
  expect((await chat(ask('x'.repeat(400)))).status).toBe(200)
  const over = await chat(ask('x'.repeat(480)))
  expect(over.status).toBe(400)
  expect(((await over.json()) as { message: string }).message).toMatch(/The prompt has at least 67 tokens, over the org's limit of 60/)
}, 120_000)

test('a client that leaves while its prompt is counted stops the count, and its log entry says it closed the request (499)', async () => {
  await setPolicy({ maxPromptTokens: 5_000_000 })
  await warmUp()
  const body = JSON.stringify({ ...ask(randomAlnum(4_000_000)), model: 'openai/gpt-bounded-test' })
  // What the serving thread spends on such a request without the count (reading, parsing, answering):
  // the abort below waits for more than that, so that it comes during the count on a slow machine too.
  const uncounted = cpuSeconds(gw.proc.pid, true)
  const plain = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `GwKey ${KEY}`, 'content-type': 'application/json' }, body })
  expect(plain.status).toBe(200)
  await plain.arrayBuffer()
  const reading = cpuSeconds(gw.proc.pid, true) - uncounted
  // 4 MB of bytes over a 3,000,000-token limit must be counted: about a minute of tokenizer CPU.
  await setPolicy({ maxPromptTokens: 3_000_000 })
  const ac = new AbortController()
  const pending = fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `GwKey ${KEY}`, 'content-type': 'application/json' },
    body,
    signal: ac.signal,
  }).catch(() => undefined)
  // Abort once gw is counting (its serving thread's CPU time climbs), not while the body is still on
  // its way. The serving thread's own: the log thread may still be writing the previous test's 4 MB bodies.
  const sent = cpuSeconds(gw.proc.pid, true)
  for (let i = 0; i < 400 && cpuSeconds(gw.proc.pid, true) - sent < reading + 0.5; i++) await Bun.sleep(50)
  ac.abort()
  await pending
  await Bun.sleep(200)
  const cpu = cpuSeconds(gw.proc.pid, true)
  await Bun.sleep(1_000)
  expect(cpuSeconds(gw.proc.pid, true) - cpu).toBeLessThan(0.5)
  let entry: Record<string, any> | undefined
  // Every 500 ms: log reads are limited to 120 a minute per org, and the log thread may still be writing the earlier tests' 4 MB bodies.
  for (let i = 0; i < 60 && !entry; i++) {
    const page = (await (await fetch(`${gw.url}/v1/logs?limit=10`, { headers: { authorization: `GwKey ${KEY}` } })).json()) as { data: Record<string, any>[] }
    entry = page.data.find((e) => e.requestedModel === 'openai/gpt-bounded-test')
    if (!entry) await Bun.sleep(500)
  }
  // Before: the count's abort was logged as gw's own failure, a 500 "Internal error".
  expect(entry).toMatchObject({ status: 499, errorCode: 'gateway_error' })
}, 60_000)
