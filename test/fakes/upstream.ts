// Fake upstream servers for gateway tests: one Bun.serve per provider speaking the provider's native HTTP protocol, scripted by queued behaviours.

import { anthropic } from './anthropic.ts'
import { azure } from './azure.ts'
import { isObj, planReply, sleep, untilAborted } from './common.ts'
import { google } from './google.ts'
import { mistral } from './mistral.ts'
import { ollama } from './ollama.ts'
import { openai } from './openai.ts'
import { openrouter } from './openrouter.ts'
import type {
  Behavior,
  FakeProtocol,
  FakeProvider,
  FakeUpstream,
  NativeReply,
  ProviderImpl,
  RawBehavior,
  RecordedRequest,
  ReplyBehavior,
  RequestCtx,
  Route,
} from './types.ts'

export type {
  Behavior,
  ErrorBehavior,
  FakeProtocol,
  ErrorType,
  FakeProvider,
  FakeUpstream,
  FinishKind,
  RawBehavior,
  RecordedRequest,
  ReplyBehavior,
  StreamErrorType,
  ToolCallSpec,
  UsageSpec,
} from './types.ts'

const PROVIDERS: Record<FakeProvider | 'ollama' | 'azure' | 'openrouter', ProviderImpl> = { openai, anthropic, google, mistral, ollama, azure, openrouter }

/** Gap between the chunks of a `raw` behaviour given as an array. */
const RAW_CHUNK_GAP_MS = 15

const encoder = new TextEncoder()

/** Per-request bookkeeping: whether the fake finished answering, so a later disconnect is not an abort. */
interface Exchange {
  rec: RecordedRequest
  finished: boolean
  /** Aborts when the client goes away or the fake stops. */
  gone: AbortSignal
}

function done(ex: Exchange, res: Response): Response {
  ex.finished = true
  return res
}

function toResponse(r: NativeReply, extraHeaders?: Record<string, string>, bodyOverride?: string): Response {
  return new Response(bodyOverride ?? r.body, { status: r.status, headers: { ...r.headers, ...extraHeaders } })
}

/** A response whose body errors before the first byte: Bun then drops the connection without sending anything. */
function connectionReset(): Response {
  return new Response(
    new ReadableStream<Uint8Array>({
      start(c) {
        c.error()
      },
    }),
  )
}

class Fake implements FakeUpstream {
  readonly requests: RecordedRequest[] = []
  readonly url: string
  private queue: Behavior[] = []
  private fallback: Behavior = { kind: 'reply' }
  private readonly stopping = new AbortController()
  private readonly server: ReturnType<typeof Bun.serve>

  constructor(
    readonly provider: FakeProtocol,
    readonly apiKey: string,
    private readonly impl: ProviderImpl,
  ) {
    this.server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      idleTimeout: 0,
      fetch: (req) => this.handle(req),
      error: (err) => new Response(`fake upstream crashed: ${err.message}`, { status: 500 }),
    })
    this.url = `http://127.0.0.1:${this.server.port}${impl.basePath}`
  }

  enqueue(...b: Behavior[]): void {
    this.queue.push(...b)
  }

  setDefault(b: Behavior): void {
    this.fallback = b
  }

  reset(): void {
    this.queue = []
    this.requests.length = 0
    this.fallback = { kind: 'reply' }
  }

  async waitForAbort(i: number, timeoutMs = 2000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      if (this.requests[i]?.aborted) return true
      if (Date.now() >= deadline) return false
      await Bun.sleep(5)
    }
  }

  async stop(): Promise<void> {
    this.stopping.abort()
    await this.server.stop(true)
  }

  private async handle(req: Request): Promise<Response> {
    const url = new URL(req.url)
    const headers: Record<string, string> = {}
    req.headers.forEach((v, k) => {
      headers[k.toLowerCase()] = v
    })
    const raw = await req.text().catch(() => '')
    let body: unknown = raw
    let isJson = false
    try {
      body = JSON.parse(raw)
      isJson = true
    } catch {
      // keep the raw text
    }
    const rec: RecordedRequest = { method: req.method, path: url.pathname + url.search, headers, body, text: raw, aborted: false }
    this.requests.push(rec)
    const ex: Exchange = { rec, finished: false, gone: AbortSignal.any([req.signal, this.stopping.signal]) }
    req.signal.addEventListener('abort', () => {
      if (!ex.finished) rec.aborted = true
    })
    const done = (res: Response): Response => {
      ex.finished = true
      return res
    }

    const impl = this.impl
    const route = impl.route(req.method, url)
    if (!route) return done(toResponse(impl.notFound(req.method, url)))
    const b = this.queue.shift() ?? this.fallback

    // Transport-level behaviours ignore the request's content.
    if (b.kind === 'reset') return done(connectionReset())
    if (b.kind === 'stall-headers') return this.stall(ex)
    if (b.kind === 'raw') return this.raw(ex, b, route.streamMode !== undefined || (isObj(body) && body.stream === true))

    const authErr = impl.authenticate(headers, url, this.apiKey, { method: req.method, text: raw })
    if (authErr) return done(toResponse(authErr))
    if (route.endpoint && impl.extra) return this.extra(ex, route, body, isJson, headers, b)
    const v = impl.validate(body, isJson, route, headers)
    if (!v.ok) return done(toResponse(v.reply))
    const ctx = v.ctx

    if (b.kind === 'error') {
      const native = impl.error(b, { model: ctx.model, promptTokens: ctx.promptTokens, apiKey: this.apiKey })
      const extra: Record<string, string> = {}
      if (b.retryAfter !== undefined && impl.id !== 'google') extra['retry-after'] = b.retryAfter
      Object.assign(extra, b.headers)
      const override = b.body === undefined ? undefined : typeof b.body === 'string' ? b.body : JSON.stringify(b.body)
      return done(toResponse({ ...native, status: b.status }, extra, override))
    }

    const replyB: ReplyBehavior = b.kind === 'reply' ? b : { kind: 'reply' }
    if (replyB.delayMs) {
      await sleep(replyB.delayMs, ex.gone)
      if (ex.gone.aborted) return done(connectionReset())
    }
    const reply = planReply(impl.id, impl.refusalText, replyB, ctx)

    if (ctx.stream === false) return this.nonStreaming(ex, b, ctx, impl.complete(reply, ctx))
    return this.streaming(ex, b, replyB, ctx, impl.stream(reply, ctx))
  }

  /** Endpoints besides chat: a queued `error` answers in the provider's shape; otherwise the provider's handler. */
  private extra(ex: Exchange, route: Route, body: unknown, isJson: boolean, headers: Record<string, string>, b: Behavior): Response {
    const impl = this.impl
    if (b.kind === 'error') {
      const native = impl.error(b, { model: isObj(body) && typeof body.model === 'string' ? body.model : '', promptTokens: 0, apiKey: this.apiKey })
      const extra: Record<string, string> = { ...b.headers }
      if (b.retryAfter !== undefined && impl.id !== 'google') extra['retry-after'] = b.retryAfter
      const override = b.body === undefined ? undefined : typeof b.body === 'string' ? b.body : JSON.stringify(b.body)
      return done(ex, toResponse({ ...native, status: b.status }, extra, override))
    }
    const answer = impl.extra?.(route, body, isJson, headers, b)
    if (!answer) return done(ex, new Response('no handler', { status: 500 }))
    if ('events' in answer) return this.write(ex, 200, answer.headers, answer.events, 'close')
    return done(ex, toResponse(answer))
  }

  /** Never answer; the recorded request is marked aborted when the client goes away. */
  private async stall(ex: Exchange): Promise<Response> {
    await untilAborted(ex.gone)
    return connectionReset()
  }

  private async raw(ex: Exchange, b: RawBehavior, wantsStream: boolean): Promise<Response> {
    if (b.delayMs) await sleep(b.delayMs, ex.gone)
    const headers: Record<string, string> = {
      'content-type': wantsStream ? 'text/event-stream' : 'application/json',
      ...Object.fromEntries(Object.entries(b.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v])),
    }
    if (!Array.isArray(b.body)) {
      ex.finished = true
      return new Response(b.body, { status: b.status, headers })
    }
    const parts = b.body
    const stream = new ReadableStream<Uint8Array>({
      start: async (c) => {
        for (let i = 0; i < parts.length; i++) {
          if (i > 0) await sleep(RAW_CHUNK_GAP_MS, ex.gone)
          if (ex.gone.aborted) return
          const part = parts[i] ?? ''
          if (part.length > 0) c.enqueue(encoder.encode(part))
        }
        ex.finished = true
        c.close()
      },
      cancel: () => {
        if (!ex.finished) ex.rec.aborted = true
      },
    })
    return new Response(stream, { status: b.status, headers })
  }

  private async nonStreaming(ex: Exchange, b: Behavior, ctx: RequestCtx, native: NativeReply): Promise<Response> {
    switch (b.kind) {
      case 'stall-after':
        return this.stall(ex)
      case 'cut-after': {
        // Headers and the first half of the JSON body, then a clean close.
        const half = native.body.slice(0, Math.max(1, Math.floor(native.body.length / 2)))
        return this.write(ex, native.status, native.headers, [half], 'close')
      }
      case 'error-event-after': {
        const status = b.errorType === 'rate_limit' ? 429 : b.errorType === 'overloaded' ? (this.impl.id === 'anthropic' ? 529 : 503) : 500
        const errorType = b.errorType ?? (this.impl.id === 'anthropic' ? 'overloaded' : 'server')
        const native2 = this.impl.error({ kind: 'error', status, errorType }, { model: ctx.model, promptTokens: ctx.promptTokens, apiKey: this.apiKey })
        ex.finished = true
        return toResponse({ ...native2, status })
      }
      case 'malformed-after':
        ex.finished = true
        return toResponse(native, undefined, '{not json')
      default:
        ex.finished = true
        return toResponse(native)
    }
  }

  private streaming(ex: Exchange, b: Behavior, rb: ReplyBehavior, ctx: RequestCtx, plan: { events: string[]; end: string; headers: Record<string, string> }): Response {
    const { events, end } = plan
    const impl = this.impl
    switch (b.kind) {
      case 'stall-after':
        return this.write(ex, 200, plan.headers, events.slice(0, b.events), 'stall')
      case 'cut-after':
        return this.write(ex, 200, plan.headers, events.slice(0, b.events), 'close')
      case 'error-event-after': {
        const head = events.slice(0, b.events)
        return this.write(ex, 200, plan.headers, [...head, impl.streamError(b.errorType, ctx, head.length)], 'close')
      }
      case 'malformed-after': {
        const head = events.slice(0, b.events)
        const tail = events.slice(b.events)
        return this.write(ex, 200, plan.headers, [...head, impl.malformed(ctx, head.length), ...tail, end], 'close')
      }
      default:
        return this.write(ex, 200, plan.headers, [...events, end], 'close', rb.chunkDelayMs ?? 0)
    }
  }

  /** Stream `chunks` (one enqueue each, `gapMs` apart), then close cleanly or go silent until the client leaves. */
  private write(ex: Exchange, status: number, headers: Record<string, string>, chunks: string[], then: 'close' | 'stall', gapMs = 0): Response {
    let cancelled = false
    const stream = new ReadableStream<Uint8Array>({
      start: (c) => {
        void (async () => {
          let first = true
          for (const s of chunks) {
            if (s.length === 0) continue
            if (!first && gapMs > 0) await sleep(gapMs, ex.gone)
            first = false
            if (cancelled || ex.gone.aborted) return
            try {
              // A binary protocol's frames travel as latin1 strings (one character per byte).
              c.enqueue(this.impl.binary ? Buffer.from(s, 'latin1') : encoder.encode(s))
            } catch {
              return
            }
          }
          if (then === 'stall') {
            await untilAborted(ex.gone)
            return
          }
          ex.finished = true
          try {
            c.close()
          } catch {
            // already cancelled
          }
        })()
      },
      cancel: () => {
        cancelled = true
        if (!ex.finished) ex.rec.aborted = true
      },
    })
    return new Response(stream, { status, headers })
  }
}

/**
 * `ollama`: an OpenAI-compatible upstream speaking OpenAI's format with Ollama's differences (test/fakes/ollama.ts);
 * `azure`: Azure OpenAI's URL forms and `api-key` header (test/fakes/azure.ts).
 */
/** A fake speaking a protocol made for one test setup (Vertex AI's publishers, Bedrock's Converse), `apiKey` its secret. */
export function startFakeImpl(impl: ProviderImpl, apiKey: string): FakeUpstream {
  return new Fake(impl.id, apiKey, impl)
}

export async function startFake(provider: FakeProvider | 'ollama' | 'azure' | 'openrouter', opts?: { apiKey?: string }): Promise<FakeUpstream> {
  const impl = PROVIDERS[provider]
  return new Fake(impl.id, opts?.apiKey ?? `test-${provider}-key`, impl)
}
