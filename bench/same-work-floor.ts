// The same-work floor: the least a gateway can do for gw's benchmark requests with the same stack, as a
// bare `Bun.serve` handler. Per request it does exactly the work gw's contract requires and nothing else:
// check the service key (SHA-256, constant-time), parse the body, estimate the prompt's tokens and charge
// the per-minute request and token limits, translate to the provider (gw's own adapters), call it with a
// header timeout and the client's leaving wired to abort it, translate the answer back (streams: per
// event), price it, settle the token charge, and hand one log entry with both bodies to gw's own log
// path as gw does (src/store/log-path.ts: the entry's head as JSON text, the bodies as the texts read
// and sent; the log thread builds and writes it), so that only the work that must stay on the serving
// thread runs there. No framework, validation schema, fallback chain, clamping, metrics, traces,
// budgets or CORS. It is the floor a gateway doing gw's work on Bun and SQLite cannot go under;
// docs/benchmarks.md sets gw against it, serving thread against serving thread.
// Usage: UPSTREAM=url KEY=gw_sk_… DB=path [SKIP=log,tokens,limits] bun bench/same-work-floor.ts
// (SKIP leaves parts out, for bench/same-work-parts.ts to price each part of the required work).

import { hashKey, keyMatches } from '../src/auth/service-keys'
import { costUsd, loadCatalog, usageTokens } from '../src/catalog/catalog'
import { SecretBox } from '../src/crypto/secret-box'
import { isoTime } from '../src/iso-time'
import { MemoryRateLimiter } from '../src/policy/rate-limiter'
import type { StreamPart, Target } from '../src/providers/adapter'
import type { ChatRequest, Usage } from '../src/providers/openai-types'
import type { ProviderId } from '../src/providers/provider-id'
import { adapterFor } from '../src/providers/registry'
import { SSE_DONE, SSE_HEADERS, sseData } from '../src/sse/encode'
import { lastEventEnd, SseDecoder } from '../src/sse/parse'
import { LogPath } from '../src/store/log-path'
import type { BodyMaterial } from '../src/store/log-sink'
import { createSqliteStore } from '../src/store/sqlite'
import type { LogEntry } from '../src/domain/log-entry'
import { estimatePromptTokens } from '../src/tokens'
import { resolve } from 'node:path'

const upstream = process.env.UPSTREAM as string
const utf8in = new TextDecoder()
const keyHash = hashKey(process.env.KEY as string)
const store = createSqliteStore(process.env.DB as string, new SecretBox('same-work-floor-secret-0123456789abcdef'))
const SKIP = new Set((process.env.SKIP ?? '').split(','))
const logs = LogPath.thread({ kind: 'sqlite', path: resolve(process.env.DB as string) }, { bodyMaxBytes: 64 * 1024 }, { logs: store.logs })
const limiter = new MemoryRateLimiter()
const catalog = loadCatalog()
const LIMITS = { rpm: 100_000_000, tpm: 1_000_000_000_000 }
const HEADER_TIMEOUT_MS = 60_000

function error(status: number, message: string): Response {
  return Response.json({ error: { code: 'gateway_error', message } }, { status })
}

async function chat(req: Request): Promise<Response> {
  const started = performance.now()
  const auth = req.headers.get('authorization') ?? ''
  if (!auth.startsWith('GwKey ') || !keyMatches(auth.slice(6), keyHash)) return error(401, 'unauthorized')
  const text = await req.text()
  const { metadata = {}, ...body } = JSON.parse(text) as ChatRequest & { metadata?: Record<string, string> }
  if (typeof body.model !== 'string' || !Array.isArray(body.messages)) return error(400, 'model and messages are required')
  const slash = body.model.indexOf('/')
  const provider = body.model.slice(0, slash) as ProviderId
  const model = catalog.resolve(provider, body.model.slice(slash + 1))
  // gw charges the token rate with its estimate; the BPE count is only for a maxPromptTokens policy, which the bench has not.
  const tokens = SKIP.has('tokens') ? 0 : estimatePromptTokens(body.messages)
  const at = Date.now()
  const checks = [
    { key: 'org:default:rpm', limit: LIMITS.rpm, cost: 1 },
    { key: 'org:default:tpm', limit: LIMITS.tpm, cost: tokens },
  ]
  if (!SKIP.has('limits') && !(await limiter.admit(checks, at)).ok) return error(429, 'rate limit')
  const adapter = adapterFor(provider)
  const stream = body.stream === true
  const target: Target = { provider, kind: 'native', model, baseUrl: `${upstream}/v1`, apiKey: 'sk-bench', keyName: 'default', keyRevision: '', stream }
  const up = adapter.buildRequest(body, target)
  const abort = new AbortController()
  // A client that leaves before the answer has begun aborts the upstream call (docs/fallbacks.md).
  const clientLeft = () => abort.abort()
  req.signal.addEventListener('abort', clientLeft, { once: true })
  const timer = setTimeout(() => abort.abort(), HEADER_TIMEOUT_MS)
  const res = await fetch(up.url, { method: 'POST', headers: up.headers, body: up.body, signal: abort.signal }).finally(() => clearTimeout(timer))
  const requestId = Bun.randomUUIDv7()
  const finish = (usage: Usage | undefined, answer: BodyMaterial, upstreamMs: number) => {
    const u = usageTokens(usage ?? null)
    const cost = costUsd(model, u)
    if (!SKIP.has('limits')) void limiter.adjust(['org:default:tpm'], u.promptTokens + u.completionTokens - tokens, at)
    const head = logEntry(requestId, body, metadata, model.name, provider, stream, u, cost, performance.now() - started, upstreamMs)
    if (!SKIP.has('log')) void logs.record(head, { request: { text, bytes: text.length }, response: answer })
    return cost
  }
  if (!stream) {
    const native: unknown = JSON.parse(await res.text())
    req.signal.removeEventListener('abort', clientLeft)
    const upstreamMs = performance.now() - started
    const done = adapter.parseResponse(native, target, body)
    const answer = JSON.stringify({ id: done.id ?? requestId, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model: model.name, choices: done.choices, usage: done.usage })
    const cost = finish(done.usage, { text: answer }, upstreamMs)
    return new Response(answer, { headers: { 'content-type': 'application/json', 'x-gw-request-id': requestId, 'x-gw-cost-usd': String(cost) } })
  }
  // From here on the client's leaving reaches the upstream through the response stream's cancel.
  req.signal.removeEventListener('abort', clientLeft)
  const reader = (res.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new SseDecoder()
  const translator = adapter.createStream(target, body)
  const encoder = new TextEncoder()
  // OpenAI's chunks go on as bytes, their model renamed, as gw's chat endpoints pass them (src/apis/chat/chunk-pass.ts).
  const passes = translator.passBytes !== undefined
  let held: Uint8Array | undefined
  // What the client received: the log thread reads the answer's text from it, as gw's relayed streams.
  const sent: (Uint8Array | string)[] = []
  let usage: Usage | undefined
  const upstreamMs = performance.now() - started
  const meta = { id: requestId, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: model.name }
  const out = new ReadableStream<Uint8Array>({
    pull: (controller) => relay(controller),
    cancel: () => reader.cancel(),
  })
  const send = (controller: ReadableStreamDefaultController<Uint8Array>, chunk: string | Uint8Array) => {
    controller.enqueue(typeof chunk === 'string' ? encoder.encode(chunk) : chunk)
    sent.push(chunk)
  }
  async function relay(controller: ReadableStreamDefaultController<Uint8Array>) {
    for (;;) {
      const { done, value } = await reader.read()
      const parts: StreamPart[] = []
      if (passes && !done) {
        // Whole events only (the bench's streams hold no CR).
        const buf = held ? Buffer.concat([held, value]) : value
        const end = lastEventEnd(buf)
        held = end < buf.length ? buf.subarray(end) : undefined
        if (end > 0) parts.push(...(translator.passBytes as (b: Uint8Array) => StreamPart[])(buf.subarray(0, end)))
      } else {
        const events = done ? [...(held ? decoder.push(held) : []), ...decoder.end()] : decoder.push(value)
        for (const event of events) parts.push(...translator.push(event))
        if (done) parts.push(...translator.end())
      }
      let chunk = ''
      let wrote = false
      for (const part of parts) {
        if (part.type === 'bytes') {
          if (chunk) send(controller, chunk)
          chunk = ''
          send(controller, part.bytes)
          wrote = true
        } else if (part.type === 'choices') chunk += sseData({ ...meta, choices: part.choices })
        else if (part.type === 'usage') usage = part.usage
      }
      if (done) {
        if (usage) chunk += sseData({ ...meta, choices: [], usage })
        send(controller, chunk + SSE_DONE)
        const text = sent.map((c) => (typeof c === 'string' ? c : utf8in.decode(c))).join('')
        finish(usage, { events: { reader: 'openai-chat', text } }, upstreamMs)
        controller.close()
        return
      }
      if (chunk) send(controller, chunk)
      if (chunk || wrote) return
    }
  }
  return new Response(out, { headers: { ...SSE_HEADERS, 'x-gw-request-id': requestId } })
}

function logEntry(
  requestId: string,
  body: ChatRequest,
  metadata: Record<string, string>,
  model: string,
  provider: string,
  stream: boolean,
  u: ReturnType<typeof usageTokens>,
  cost: number | null,
  latencyMs: number,
  upstreamMs: number,
): LogEntry {
  return {
    requestId,
    createdAt: isoTime(Date.now()),
    orgId: 'default',
    endpoint: '/v1/chat/completions',
    authMode: 'GwKey',
    subject: 'sk_bench',
    endUserId: null,
    user: null,
    promptId: null,
    promptSlug: null,
    promptVersion: null,
    requestedModel: body.model,
    route: null,
    providerKey: 'default',
    model,
    provider,
    stream,
    status: 200,
    errorCode: null,
    errorMessage: null,
    fallback: { used: false, reason: null, model: null },
    attempts: [{ model, outcome: 'ok', status: 200, latencyMs: upstreamMs }],
    usage: { ...u, totalTokens: u.promptTokens + u.completionTokens, estimated: false },
    costUsd: cost,
    priceVersion: catalog.priceVersion,
    latencyMs,
    upstreamLatencyMs: upstreamMs,
    ttftMs: null,
    incomplete: false,
    refusal: false,
    warnings: [],
    metadata,
    structuredOutput: null,
  }
}

const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  idleTimeout: 0,
  fetch: (req) => (req.method === 'POST' && new URL(req.url).pathname === '/v1/chat/completions' ? chat(req) : error(404, 'not found')),
})
console.log(JSON.stringify({ port: server.port }))
// A clean exit on SIGTERM, so `bun --cpu-prof` writes its profile (bench/profile-diff.ts).
process.on('SIGTERM', () => process.exit(0))
