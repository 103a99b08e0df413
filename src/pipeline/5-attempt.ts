// Stage 5, one upstream attempt: the object that owns it from admission to its last byte — the
// header and stall timer, the abort wiring to the client's signal, the first-content-byte commit
// point, cancel, the health/cool-down record and the finished Attempt record (PRODUCT §4a).
//
// run() returns a failure or an answer. A JSON answer is complete and the attempt is closed. A
// streamed answer is handed over at its commit point: the reader (stage 6) pulls the rest with
// next() and calls close() when it is done with it; every resource is released there, once.

import type { RelayReader } from '../apis/relay-transcript'
import { GatewayError } from '../errors'
import {
  failureClass,
  isContent,
  providerName,
  type ProviderAdapter,
  type StreamDecoder,
  type StreamPart,
  type StreamTranslator,
  type Target,
  type TransportEnv,
  type UpstreamCompletion,
  type UpstreamFailure,
} from '../providers/adapter'
import type { ChatRequest } from '../providers/openai-types'
import { clip, parseUpstreamJson } from '../providers/upstream-errors'
import { lastEventEnd, SseDecoder } from '../sse/parse'
import { readCapped } from '../http/read-capped'
import { kindOf } from '../providers/registry'
import type { AttemptSpan } from '../observability/tracer'
import type { Attempt } from '../domain/log-entry'
import type { AuthedContext, Deps, ModelRef } from './context'
import type { HealthKey } from './upstream-health'

export type Answer =
  /** `text`: the upstream body as received (a relayed answer goes out as these very bytes). */
  | { kind: 'json'; completion: UpstreamCompletion; refusal: boolean; text: string }
  | { kind: 'stream'; head: StreamPart[]; attempt: UpstreamAttempt; refusal: boolean }

export type AttemptResult = { ok: true; answer: Answer } | { ok: false; failure: UpstreamFailure }

/** Status used (in the log only) when the client went away before the answer was ready. */
export const CLIENT_CLOSED = 499
export const clientGone = () => new GatewayError(CLIENT_CLOSED, 'gateway_error', 'The client closed the request before the answer was ready')

/**
 * The upstream attempts waiting for their answer, for shutdown to stop once the drain time is up: a
 * list threaded through the attempts themselves (a few pointer writes per attempt; a Set of them cost
 * the serving thread microseconds per request under load, bench/results/ab-2026-11-28-fixes.md).
 */
export class WaitingAttempts {
  private head: UpstreamAttempt | undefined

  add(a: UpstreamAttempt): void {
    a.nextWaiting = this.head
    if (this.head) this.head.prevWaiting = a
    this.head = a
  }

  remove(a: UpstreamAttempt): void {
    if (a.prevWaiting) a.prevWaiting.nextWaiting = a.nextWaiting
    else if (this.head === a) this.head = a.nextWaiting
    else return
    if (a.nextWaiting) a.nextWaiting.prevWaiting = a.prevWaiting
    a.prevWaiting = a.nextWaiting = undefined
  }

  /** Stops every one (each then ends its request with a 503). */
  stopAll(): void {
    for (let a = this.head; a; a = this.head) {
      this.remove(a)
      a.stop()
    }
  }
}

/** gw stopped a request still waiting for its answer when its drain time ran out (docs/reliability.md). */
const shuttingDown = () =>
  new GatewayError(503, 'gateway_error', 'gw is shutting down: the request was stopped before its answer came; send it again', { headers: { 'retry-after': '1' } })

/** The largest non-streamed answer read from a provider; past it the attempt is a provider_error (docs/reliability.md). */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024
/** The largest error body read (its message is all gw keeps of it). */
const MAX_ERROR_BYTES = 1024 * 1024

/** Headers of an upstream request that hold no credential (the others' values are never echoed to a client). */
const PLAIN_HEADERS: ReadonlySet<string> = new Set(['content-type', 'accept', 'anthropic-version', 'anthropic-beta', 'user-agent', 'traceparent', 'tracestate', 'x-amz-date', 'x-amz-content-sha256'])

/**
 * A failure's message without what gw sent the upstream that an upstream may echo back: the key, and
 * every credential header's value (an OpenAI-compatible provider's own headers, a Vertex access token),
 * also without its `Bearer ` scheme.
 */
function redact(text: string, apiKey: string, headers: Record<string, string> | undefined): string {
  const secrets = [apiKey]
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (PLAIN_HEADERS.has(name.toLowerCase())) continue
    secrets.push(value)
    const token = /^(?:Bearer|Basic)\s+(.+)$/i.exec(value)?.[1]
    if (token) secrets.push(token)
  }
  // Longest first: a header's whole value before the token inside it.
  for (const secret of secrets.sort((a, b) => b.length - a.length)) if (secret.length >= 4) text = text.split(secret).join('[redacted]')
  return text
}

/** Did this part put something the client can see on the wire? */
function isRefusal(p: StreamPart): boolean {
  return p.type === 'choices' && p.choices.some((c) => !!c.delta.refusal || c.finish_reason === 'content_filter')
}

function completionIsRefusal(c: UpstreamCompletion): boolean {
  return c.choices.some((ch) => ch.message.refusal !== null || ch.finish_reason === 'content_filter')
}

/** What went wrong with a connection, in a few words: never the runtime's own message (it gives advice to its developers). */
export function connectionTrouble(err: unknown): string {
  const code = typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : ''
  const known: Record<string, string> = {
    ConnectionRefused: 'connection refused',
    ECONNREFUSED: 'connection refused',
    ECONNRESET: 'connection reset',
    ConnectionClosed: 'connection closed before the answer was complete',
    FailedToOpenSocket: 'could not open a connection',
    ENOTFOUND: 'host not found',
    UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'TLS certificate not trusted',
    CERT_HAS_EXPIRED: 'TLS certificate expired',
  }
  return known[code] ?? (code ? `connection failed (${code})` : 'connection failed')
}

const LF = 10

/** The bytes of an event the upstream ended without its blank line, closed by one. */
function closedEvent(held: Uint8Array): Uint8Array {
  const tail = held[held.length - 1] === LF ? 1 : 2
  const out = new Uint8Array(held.length + tail)
  out.set(held)
  out.fill(LF, held.length)
  return out
}

/** `a` then `b`, in one buffer. */
function joined(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length)
  out.set(a)
  out.set(b, a.length)
  return out
}

/**
 * Bytes of an event not yet whole that a translator given bytes holds at most (StreamTranslator.passesBytes):
 * a longer event goes to the decoder, which bounds it (MAX_SSE_EVENT_CHARS), rather than being joined again with every read.
 */
const MAX_PASS_HELD = 64 * 1024

export class UpstreamAttempt {
  /** This attempt's line in the log entry; later outcomes (a stream failing or refusing late) land here. */
  readonly record: Attempt
  /** HTTP status of the upstream's answer. */
  status = 0
  /** Time from the attempt's start to the upstream's response headers. */
  headersMs = 0
  /** Streams: time from the request's start to the first content byte. */
  ttftMs: number | null = null
  /** The answer is (or turned into) a refusal. */
  refusal = false

  private readonly ac = new AbortController()
  private readonly started = performance.now()
  private admitted = false
  /** The health tracker has been told how this attempt went. */
  private judged = false
  private closed = false
  private handedOver = false
  // One timer for the whole attempt: it fires at `deadline`, which the reading side moves forward
  // with a plain assignment per chunk (no timer or Promise per chunk).
  private timer: ReturnType<typeof setTimeout> | undefined
  private deadline = 0
  private phase: 'headers' | 'stall' = 'headers'
  private firstContentBy = Infinity
  private timedOut: 'headers' | 'first-content' | 'stall' | undefined
  private reader: ReadableStreamDefaultReader<Uint8Array> | undefined
  private decoder: StreamDecoder | undefined
  private translator: StreamTranslator | undefined
  /** Bytes of an event not yet whole (byte relay: see wholeEvents). */
  private heldBytes: Uint8Array | undefined
  private ended = false
  private readonly onClientAbort = () => this.ac.abort()
  /** The headers sent upstream (credentials among them): a failure's message never repeats them. */
  private sent: Record<string, string> | undefined
  /** gw is stopping (WaitingAttempts): the exchange is aborted and the request ends with a 503. */
  private stopped = false
  /** Neighbours in Deps.waiting while the attempt waits for its answer. */
  prevWaiting: UpstreamAttempt | undefined
  nextWaiting: UpstreamAttempt | undefined
  /** The provider key, as the health record knows it. */
  private readonly key: HealthKey
  /** This attempt's trace span (CLIENT), when tracing is on; ended in close(). */
  private span: AttemptSpan | undefined

  constructor(
    private readonly deps: Deps,
    private readonly ctx: AuthedContext,
    readonly ref: ModelRef,
    private readonly adapter: ProviderAdapter,
    readonly target: Target,
    /** The body sent upstream (after clamping). */
    readonly body: ChatRequest,
    /** The prompt's token estimate, from the request's policy view (the context-window check). */
    private readonly promptEstimate: () => number,
    private readonly timeoutMs: number,
  ) {
    this.record = { model: ref.name, key: target.keyName, outcome: 'ok', status: null, latencyMs: 0 }
    this.key = { name: target.keyName, revision: target.keyRevision }
  }

  /** Sends the request and reads the answer (a stream up to its first content byte). Throws only when the client left. */
  async run(): Promise<AttemptResult> {
    try {
      return await this.exchange()
    } catch (err) {
      if (this.stopped || this.ctx.signal.aborted) {
        this.record.outcome = 'cancelled'
        throw this.stopped ? shuttingDown() : clientGone()
      }
      if (err instanceof GatewayError) throw err
      if (this.timedOut) return this.fail({ kind: 'timeout', message: this.timeoutMessage() })
      return this.fail({ kind: 'provider_error', message: `the connection to ${providerName(this.target)} failed: ${connectionTrouble(err)}` })
    } finally {
      if (!this.handedOver) this.close()
    }
  }

  private async exchange(): Promise<AttemptResult> {
    const { deps, ctx, target, body, adapter } = this
    const admission = deps.health.admit(ctx.org.org.id, this.ref.name, this.key)
    if (!admission.ok) {
      this.record.outcome = admission.kind
      this.record.class = admission.class
      this.record.message = admission.message
      return { ok: false, failure: { kind: admission.kind, message: admission.message, retryAfterMs: admission.retryAfterMs } }
    }
    this.admitted = true
    if (target.model.known) {
      const tokens = this.promptEstimate()
      if (tokens > target.model.info.contextWindow)
        return this.fail({
          kind: 'context_limit',
          message: `the prompt (about ${tokens} tokens) exceeds the ${target.model.info.contextWindow}-token context window`,
        })
    }
    let req = adapter.buildRequest(body, target)
    const kind = kindOf(target)
    if (kind.authorize) {
      // The provider kind's credentials (a SigV4 signature, a Vertex access token shared by concurrent requests,
      // so its fetch is bounded by the attempt timeout rather than by one client).
      const auth = await kind.authorize(req, target, this.transport())
      if (!auth.ok) return this.fail(auth.failure)
      req = auth.request
    }
    this.sent = req.headers
    this.span = deps.observer.attemptSpan(ctx)
    const headers = this.span ? { ...req.headers, ...this.span.headers() } : req.headers
    ctx.signal.addEventListener('abort', this.onClientAbort, { once: true })
    deps.waiting.add(this)
    this.arm(this.timeoutMs, 'headers')
    const res = await deps.fetch(req.url, { method: 'POST', headers, body: req.body, signal: this.ac.signal, redirect: 'manual' })
    this.headersMs = this.elapsed()
    this.status = res.status
    this.record.status = res.status

    if (res.status >= 300 && res.status < 400) {
      res.body?.cancel().catch(() => {})
      return this.fail({ kind: 'provider_error', status: res.status, message: `${providerName(target)}: redirected (HTTP ${res.status}); redirects are not followed` })
    }
    if (!res.ok) {
      if (res.status === 401) kind.unauthorized?.(target, this.transport())
      const text = await readCapped(res, MAX_ERROR_BYTES)
      return this.fail(adapter.parseError(res.status, text ?? `(an error body over ${MAX_ERROR_BYTES} bytes, not read)`, res.headers))
    }

    if (!target.stream) {
      this.arm(this.timeoutMs, 'headers')
      const text = await readCapped(res, MAX_ANSWER_BYTES)
      if (text === undefined) return this.fail({ kind: 'provider_error', status: res.status, message: `the answer is larger than ${MAX_ANSWER_BYTES / 1024 / 1024} MiB` })
      let completion: UpstreamCompletion
      try {
        completion = adapter.parseResponse(parseUpstreamJson(text), target, body)
      } catch (err) {
        const why = err instanceof Error ? err.message : String(err)
        return this.fail({ kind: 'provider_error', status: res.status, message: `malformed answer (${why}): ${clip(text, 200)}` })
      }
      this.refusal = completionIsRefusal(completion)
      this.succeed()
      return { ok: true, answer: { kind: 'json', completion, refusal: this.refusal, text } }
    }

    const contentType = res.headers.get('content-type') ?? ''
    const framing = adapter.streamFraming
    if (!res.body || !contentType.includes(framing?.contentType ?? 'text/event-stream')) {
      const text = await res.text().catch(() => '')
      return this.fail({ kind: 'provider_error', status: res.status, message: `expected an event stream, got "${contentType}": ${clip(text, 200)}` })
    }
    this.reader = res.body.getReader()
    this.decoder = framing ? framing.decoder() : new SseDecoder()
    this.translator = adapter.createStream(target, body)
    // The first content byte must come within the limit too, even if the upstream sends pings.
    this.firstContentBy = performance.now() + this.timeoutMs
    let head: StreamPart[] = []
    for (let committed = false; !committed; ) {
      const parts = await this.read()
      if (ctx.signal.aborted) throw clientGone()
      if (parts === null) return this.fail({ kind: 'provider_error', status: res.status, message: 'the stream ended before any content' })
      for (const p of parts) {
        if (!committed && p.type === 'failure') return this.fail({ ...p.failure, status: p.failure.status ?? res.status })
        head.push(p)
        if (isContent(p) || p.type === 'end') committed = true
      }
    }
    // Committed: from here on the client's disconnect reaches us through the response stream (close()).
    this.firstContentBy = Infinity
    ctx.signal.removeEventListener('abort', this.onClientAbort)
    // The answer's stream ends it at shutdown from here on (StreamPump).
    deps.waiting.remove(this)
    this.ttftMs = Math.round(performance.now() - ctx.start)
    this.succeed()
    this.handedOver = true
    head = this.observe(head)
    return { ok: true, answer: { kind: 'stream', head, attempt: this, refusal: this.refusal } }
  }

  /**
   * After the commit point: the next translated parts, or null once the stream is over (after its
   * `end` part, or after close()). A failure is recorded here and returned as the last part.
   */
  async next(): Promise<StreamPart[] | null> {
    if (this.closed || this.ended) return null
    let parts: StreamPart[] | null
    try {
      parts = await this.read()
    } catch (err) {
      if (this.closed) return null
      parts = [
        {
          type: 'failure',
          failure: this.timedOut
            ? { kind: 'timeout', message: this.timeoutMessage() }
            : { kind: 'provider_error', message: `the connection to ${providerName(this.target)} was lost mid-stream: ${connectionTrouble(err)}` },
        },
      ]
    }
    if (this.closed) return null
    return this.observe(parts ?? [{ type: 'failure', failure: { kind: 'provider_error', message: 'the upstream stream ended before it was complete' } }])
  }

  /** Parts past the commit point: notes the end and a late refusal; a failure is recorded and is the last part. */
  private observe(parts: StreamPart[]): StreamPart[] {
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i] as StreamPart
      if (p.type === 'failure') {
        this.failLate(p.failure)
        return parts.slice(0, i + 1)
      }
      if (p.type === 'end') this.ended = true
      else if (!this.refusal && isRefusal(p)) this.markRefusal()
    }
    return parts
  }

  /** The stream's relay reader, when its events reach the log as the text the client received (RawRelay). */
  get relayReader(): RelayReader | undefined {
    return this.translator?.reader
  }

  /** gw is stopping and the drain time is up: the exchange is aborted, and the request ends with a 503 (run()). */
  stop(): void {
    this.stopped = true
    this.ac.abort()
  }

  /**
   * Nobody reads the stream for a while (a refusal kept as the answer while the chain tries others): no
   * stall is counted until the next read, which sets the deadline again.
   */
  pause(): void {
    clearTimeout(this.timer)
    this.timer = undefined
  }

  /** Ends the attempt: timers, listener, the upstream connection and the health record. Safe to call twice. */
  close(): void {
    if (this.closed) return
    this.closed = true
    clearTimeout(this.timer)
    this.ctx.signal.removeEventListener('abort', this.onClientAbort)
    this.deps.waiting.remove(this)
    if (this.reader && !this.ended) {
      this.ac.abort()
      this.reader.cancel().catch(() => {})
    }
    // Admitted but never judged (the client left, gw is stopping): the upstream told us nothing.
    if (this.admitted && !this.judged) this.deps.health.release(this.ctx.org.org.id, this.ref.name, this.key)
    if (!this.record.latencyMs) this.record.latencyMs = this.elapsed()
    this.span?.end(this)
  }

  /** Translated parts from the next upstream bytes that produce any, or null at the body's end. */
  private async read(): Promise<StreamPart[] | null> {
    const reader = this.reader as ReadableStreamDefaultReader<Uint8Array>
    const decoder = this.decoder as StreamDecoder
    const translator = this.translator as StreamTranslator
    for (;;) {
      this.arm(this.firstContentBy === Infinity ? this.timeoutMs : Math.min(this.timeoutMs, this.firstContentBy - performance.now()), 'stall')
      const chunk = await reader.read()
      let value = chunk.done ? undefined : chunk.value
      let passed: StreamPart[] | undefined
      if (translator.passesBytes) {
        const cut = this.passCut(value)
        if (cut.whole) passed = (translator.passBytes as (b: Uint8Array) => StreamPart[])(cut.whole)
        if (!cut.off) {
          if (passed?.length) return passed
          continue
        }
        // Off for good: what was not passed is decoded, as every read after it.
        translator.passesBytes = false
        value = cut.rest
      }
      // Cut before the events are translated: a CR in the bytes turns the byte relay off for them.
      const bytes = translator.relaysBytes && value ? this.wholeEvents(value, translator) : undefined
      const events = value ? decoder.push(value) : []
      if (chunk.done) events.push(...decoder.end())
      if (decoder.tooLarge) return [...(passed ?? []), { type: 'failure', failure: { kind: 'provider_error', message: decoder.tooLarge } }]
      const parts: StreamPart[] = passed ?? []
      if (chunk.done) {
        // A last event without its blank line is relayed too, closed (as every event once was).
        const held = this.heldBytes
        this.heldBytes = undefined
        if (translator.relaysBytes && held && events.length) parts.push({ type: 'bytes', bytes: closedEvent(held) })
        for (const e of events) parts.push(...translator.push(e))
        parts.push(...translator.end())
        return parts.length ? parts : null
      }
      if (bytes) parts.push(bytes)
      for (const e of events) for (const p of translator.push(e)) parts.push(p)
      if (parts.length) return parts
    }
  }

  /**
   * For a translator given bytes (StreamTranslator.passesBytes): the whole events of what was read so
   * far, the rest held until its event is whole. `off`: the bytes are decoded from here on, `rest`
   * first: at the end of the body (what is held is a last event without its blank line), at a CR
   * (line ends the byte scan does not follow), or past MAX_PASS_HELD held (a long event is decoded, and
   * bounded, by the decoder).
   */
  private passCut(value: Uint8Array | undefined): { whole?: Uint8Array; rest?: Uint8Array; off: boolean } {
    const held = this.heldBytes
    this.heldBytes = undefined
    if (!value) return { rest: held, off: true }
    const buf = held ? joined(held, value) : value
    const end = lastEventEnd(buf)
    if (end === -1) return { rest: buf, off: true }
    const whole = end > 0 ? buf.subarray(0, end) : undefined
    const rest = end < buf.length ? buf.subarray(end) : undefined
    if (rest && rest.length > MAX_PASS_HELD) return { whole, rest, off: true }
    this.heldBytes = rest
    return { whole, off: false }
  }

  /**
   * The whole events of the bytes read so far, to relay as received; the rest is held until its event
   * is whole. A CR turns the byte relay off for the rest of the stream (what is held is then relayed
   * as its event's text when the decoder completes it).
   */
  private wholeEvents(chunk: Uint8Array, translator: StreamTranslator): StreamPart | undefined {
    const buf = this.heldBytes ? joined(this.heldBytes, chunk) : chunk
    const end = lastEventEnd(buf)
    if (end === -1) {
      translator.relaysBytes = false
      this.heldBytes = undefined
      return undefined
    }
    this.heldBytes = end < buf.length ? buf.subarray(end) : undefined
    return end > 0 ? { type: 'bytes', bytes: buf.subarray(0, end) } : undefined
  }

  /** Moves the deadline `ms` from now; the one timer is created lazily and re-armed only when it fires early. */
  private arm(ms: number, phase: 'headers' | 'stall'): void {
    this.deadline = performance.now() + Math.max(0, ms)
    this.phase = phase
    if (this.timer === undefined) this.timer = setTimeout(this.onTimer, Math.max(1, ms))
  }

  private readonly onTimer = () => {
    this.timer = undefined
    if (this.closed) return
    const left = this.deadline - performance.now()
    if (left > 0.5) {
      this.timer = setTimeout(this.onTimer, Math.max(1, left))
      return
    }
    this.timedOut = this.phase === 'headers' ? 'headers' : this.deadline >= this.firstContentBy - 0.5 ? 'first-content' : 'stall'
    this.ac.abort()
  }

  private timeoutMessage(): string {
    if (this.timedOut === 'first-content') return 'no content before the deadline'
    if (this.timedOut === 'stall') return `upstream stream stalled: no data for ${this.timeoutMs} ms`
    return `no answer within ${this.timeoutMs} ms`
  }

  /** What a provider kind's transport may use: the gateway (owner of cached tokens) and a fetch bounded by the attempt's limit. */
  private transport(): TransportEnv {
    const { deps, timeoutMs } = this
    return { owner: deps, fetch: (url, init) => deps.fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' }) }
  }

  private elapsed(): number {
    return Math.round(performance.now() - this.started)
  }

  private succeed(): void {
    this.judged = true
    this.deps.health.record(this.ctx.org.org.id, this.ref.name, 'ok', this.key)
    this.record.outcome = this.refusal ? 'refusal_detected' : 'ok'
    this.record.latencyMs = this.elapsed()
    this.deps.latency.observe(this.ctx.org.org.id, this.ref.name, this.record.latencyMs)
  }

  private fail(failure: UpstreamFailure): AttemptResult {
    const f = { ...failure, message: redact(failure.message, this.target.apiKey, this.sent) }
    this.judged = true
    this.deps.health.record(this.ctx.org.org.id, this.ref.name, f, this.key)
    this.record.outcome = f.kind
    this.record.class = failureClass(f)
    this.record.status = f.status ?? null
    this.record.message = f.message
    this.record.latencyMs = this.elapsed()
    return { ok: false, failure: f }
  }

  /** A failure after the commit point: the answer had started, so it is recorded, not retried. */
  private failLate(failure: UpstreamFailure): void {
    failure.message = redact(failure.message, this.target.apiKey, this.sent)
    this.deps.health.record(this.ctx.org.org.id, this.ref.name, failure, this.key)
    this.record.outcome = failure.kind
    this.record.class = failureClass(failure)
    this.record.message = failure.message
    this.close()
  }

  /** A refusal can also come late in a stream that had started normally (Anthropic, Gemini). */
  private markRefusal(): void {
    this.refusal = true
    if (this.record.outcome === 'ok') this.record.outcome = 'refusal_detected'
  }
}
