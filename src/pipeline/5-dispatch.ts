// Stage 5: send the request upstream — primary first, then the fallback chain (PRODUCT §4a) — and
// come back with the first usable answer, every attempt recorded.
//
// One attempt: clamp (stage 4) → adapter.buildRequest → fetch with a header timeout → adapter
// reads the answer. A streamed answer is read up to its first content byte (the commit point):
// anything that goes wrong before it falls back like a non-streamed failure.

import { GatewayError } from '../errors'
import type { FailureKind, ProviderAdapter, StreamPart, Target, UpstreamCompletion, UpstreamFailure } from '../providers/adapter'
import type { ChatRequest } from '../providers/openai-types'
import type { ProviderId } from '../providers/provider-id'
import { adapterFor } from '../providers/registry'
import { clip } from '../providers/upstream-errors'
import type { Attempt } from '../store/types'
import { estimatePromptTokens } from '../tokens'
import { clamp } from './4-clamp'
import type { Candidate } from './3-route'
import type { ChatInput, Deps, RequestContext } from './context'
import { UpstreamStream } from './upstream-stream'

/** The adapter that speaks to a provider for this endpoint; undefined when the provider does not serve it. */
export type AdapterLookup = (provider: ProviderId) => ProviderAdapter | undefined

export type Answer =
  | { kind: 'json'; completion: UpstreamCompletion; refusal: boolean }
  | { kind: 'stream'; head: StreamPart[]; upstream: UpstreamStream; refusal: boolean }

export interface Fallback {
  used: boolean
  reason: FailureKind | null
  model: string | null
}

export interface Dispatched {
  ok: true
  answer: Answer
  target: Target
  /** The body sent to the answering upstream (after clamping). */
  sent: ChatRequest
  attempts: Attempt[]
  fallback: Fallback
  warnings: string[]
  /** Time from the answering attempt's start to its response headers. */
  upstreamLatencyMs: number
  /** Streams: time from request start to the first content byte. */
  ttftMs: number | null
}

export interface DispatchFailed {
  ok: false
  error: GatewayError
  attempts: Attempt[]
  fallback: Fallback
  lastModel: string | null
}

type AttemptResult =
  | { ok: true; answer: Answer; status: number; latencyMs: number; headersMs: number; ttftMs: number | null }
  | { ok: false; failure: UpstreamFailure; latencyMs: number }

/** Status used (in the log only) when the client went away before the answer was ready. */
export const CLIENT_CLOSED = 499
const clientGone = () => new GatewayError(CLIENT_CLOSED, 'gateway_error', 'The client closed the request before the answer was ready')

const redact = (text: string, secret: string) => (secret.length >= 4 ? text.split(secret).join('[redacted]') : text)

/** Did this part put something the client can see on the wire? */
function isContent(p: StreamPart): boolean {
  return (
    p.type === 'choices' &&
    p.choices.some((c) => !!c.delta.content || !!c.delta.refusal || !!c.delta.tool_calls?.length || c.finish_reason !== null)
  )
}

function isRefusal(parts: readonly StreamPart[]): boolean {
  return parts.some(
    (p) => p.type === 'choices' && p.choices.some((c) => !!c.delta.refusal || c.finish_reason === 'content_filter'),
  )
}

function completionIsRefusal(c: UpstreamCompletion): boolean {
  return c.choices.some((ch) => ch.message.refusal !== null || ch.finish_reason === 'content_filter')
}

async function attemptOnce(
  deps: Deps,
  ctx: RequestContext,
  adapter: ProviderAdapter,
  target: Target,
  body: ChatRequest,
  timeoutMs: number,
): Promise<AttemptResult> {
  const started = performance.now()
  const elapsed = () => Math.round(performance.now() - started)
  const fail = (failure: UpstreamFailure): AttemptResult => ({
    ok: false,
    failure: { ...failure, message: redact(failure.message, target.apiKey) },
    latencyMs: elapsed(),
  })

  if (target.model.known && estimatePromptTokens(body.messages) > target.model.info.contextWindow)
    return fail({
      kind: 'context_limit',
      message: `the prompt (about ${estimatePromptTokens(body.messages)} tokens) exceeds the ${target.model.info.contextWindow}-token context window`,
    })

  const req = adapter.buildRequest(body, target)
  const ac = new AbortController()
  let timedOut = false
  const onClientAbort = () => ac.abort()
  ctx.signal.addEventListener('abort', onClientAbort, { once: true })
  let timer: ReturnType<typeof setTimeout> | undefined
  const arm = () => {
    clearTimeout(timer)
    timer = setTimeout(() => {
      timedOut = true
      ac.abort()
    }, timeoutMs)
  }
  const disarm = () => {
    clearTimeout(timer)
    ctx.signal.removeEventListener('abort', onClientAbort)
  }
  const abortError = (err: unknown): AttemptResult => {
    disarm()
    if (ctx.signal.aborted) throw clientGone()
    if (timedOut) return fail({ kind: 'timeout', message: `no answer within ${timeoutMs} ms` })
    const why = err instanceof Error ? err.message : String(err)
    return fail({ kind: 'provider_error', message: `connection failed: ${why}` })
  }

  arm()
  let res: Response
  try {
    res = await deps.fetch(req.url, { method: 'POST', headers: req.headers, body: req.body, signal: ac.signal })
  } catch (err) {
    return abortError(err)
  }
  const headersMs = elapsed()

  if (!res.ok) {
    let text: string
    try {
      text = await res.text()
    } catch (err) {
      return abortError(err)
    }
    disarm()
    return fail(adapter.parseError(res.status, text, res.headers))
  }

  if (!target.stream) {
    let text: string
    try {
      arm()
      text = await res.text()
    } catch (err) {
      return abortError(err)
    }
    disarm()
    let completion: UpstreamCompletion
    try {
      completion = adapter.parseResponse(JSON.parse(text), target, body)
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err)
      return fail({ kind: 'provider_error', status: res.status, message: `malformed answer (${why}): ${clip(text, 200)}` })
    }
    return {
      ok: true,
      answer: { kind: 'json', completion, refusal: completionIsRefusal(completion) },
      status: res.status,
      latencyMs: elapsed(),
      headersMs,
      ttftMs: null,
    }
  }

  // Streams: the silence limit now applies between chunks; read up to the commit point.
  clearTimeout(timer)
  const contentType = res.headers.get('content-type') ?? ''
  if (!res.body || !contentType.includes('text/event-stream')) {
    const text = await res.text().catch(() => '')
    disarm()
    return fail({ kind: 'provider_error', status: res.status, message: `expected an event stream, got "${contentType}": ${clip(text, 200)}` })
  }
  const upstream = new UpstreamStream(res.body, adapter.createStream(target, body), () => ac.abort(), timeoutMs)
  const head: StreamPart[] = []
  let committed = false
  // The first content byte must come within the limit too, even if the upstream sends pings.
  const firstTokenDeadline = performance.now() + timeoutMs
  while (!committed) {
    let parts: StreamPart[] | null
    try {
      parts = await upstream.next(firstTokenDeadline)
    } catch (err) {
      return abortError(err)
    }
    if (ctx.signal.aborted) {
      upstream.cancel()
      disarm()
      throw clientGone()
    }
    if (parts === null) {
      disarm()
      return fail({ kind: 'provider_error', status: res.status, message: 'the stream ended before any content' })
    }
    for (const p of parts) {
      if (!committed && p.type === 'failure') {
        upstream.cancel()
        disarm()
        if (ctx.signal.aborted) throw clientGone()
        return fail({ ...p.failure, status: p.failure.status ?? res.status })
      }
      head.push(p)
      if (isContent(p) || p.type === 'end') committed = true
    }
  }
  // From here on the response stream owns the abort: the client's disconnect cancels it there.
  disarm()
  return {
    ok: true,
    answer: { kind: 'stream', head, upstream, refusal: isRefusal(head) },
    status: res.status,
    latencyMs: elapsed(),
    headersMs,
    ttftMs: Math.round(performance.now() - ctx.start),
  }
}

function describe(a: Attempt): string {
  const what = a.status ? `HTTP ${a.status}` : a.outcome
  return `${a.model} → ${what}${a.message ? `: ${a.message}` : ''}`
}

function exhausted(attempts: Attempt[], last: UpstreamFailure): GatewayError {
  const tried = attempts.filter((a) => a.outcome !== 'skipped')
  const status = last.kind === 'timeout' ? 504 : 502
  const message =
    tried.length === 1 && tried[0]
      ? `Upstream ${describe(tried[0])}`
      : `All ${tried.length} models failed: ${tried.map(describe).join('; ')}`
  const headers = last.retryAfterMs ? { 'retry-after': String(Math.ceil(last.retryAfterMs / 1000)) } : undefined
  return new GatewayError(status, 'provider_error', message, headers ? { headers } : {})
}

/** Should this chain entry fire after a failure of this kind? */
function fires(c: Candidate, kind: FailureKind): boolean {
  return c.triggers ? c.triggers.includes(kind) : kind !== 'refusal_detected'
}

export async function dispatch(
  deps: Deps,
  ctx: RequestContext,
  input: ChatInput,
  candidates: Candidate[],
  adapters: AdapterLookup = adapterFor,
): Promise<Dispatched | DispatchFailed> {
  const org = ctx.org
  if (!org) throw new Error('dispatch before auth')
  const timeoutMs = org.org.policy.upstreamTimeoutMs ?? deps.config.upstreamTimeoutMs
  const attempts: Attempt[] = []
  const skip = (c: Candidate, message: string) =>
    attempts.push({ model: c.ref.name, outcome: 'skipped', status: null, latencyMs: 0, message })
  let kind: FailureKind | undefined
  let last: UpstreamFailure | undefined
  let refused: Dispatched | undefined

  for (let i = 0; i < candidates.length; i++) {
    const c = candidates[i] as Candidate
    if (i > 0) {
      if (kind === undefined) break
      if (!fires(c, kind)) {
        skip(c, `its triggers do not include ${kind}`)
        continue
      }
    }
    if (!c.target) {
      skip(c, c.unavailable ?? `provider "${c.ref.provider}" is not available`)
      continue
    }
    const adapter = adapters(c.ref.provider)
    if (!adapter) {
      skip(c, `provider "${c.ref.provider}" does not serve ${ctx.endpoint}`)
      continue
    }
    const firedBy = i > 0 ? (kind ?? null) : null
    const admission = deps.health.admit(org.org.id, c.ref.name)
    if (!admission.ok) {
      attempts.push({ model: c.ref.name, outcome: admission.kind, status: null, latencyMs: 0, message: admission.message })
      kind = admission.kind
      last = { kind, message: admission.message, retryAfterMs: admission.retryAfterMs }
      continue
    }
    const prepared = clamp(input, c.target, adapter)
    let r: AttemptResult
    try {
      r = await attemptOnce(deps, ctx, adapter, c.target, prepared.body, timeoutMs)
    } catch (err) {
      deps.health.release(org.org.id, c.ref.name)
      if (refused?.answer.kind === 'stream') refused.answer.upstream.cancel()
      throw err
    }
    if (!r.ok) {
      deps.health.record(org.org.id, c.ref.name, r.failure.kind, r.failure.retryAfterMs)
      attempts.push({
        model: c.ref.name,
        outcome: r.failure.kind,
        status: r.failure.status ?? null,
        latencyMs: r.latencyMs,
        message: r.failure.message,
      })
      kind = r.failure.kind
      last = r.failure
      continue
    }
    deps.health.record(org.org.id, c.ref.name, 'ok')
    attempts.push({ model: c.ref.name, outcome: r.answer.refusal ? 'refusal_detected' : 'ok', status: r.status, latencyMs: r.latencyMs })
    const done: Dispatched = {
      ok: true,
      answer: r.answer,
      target: c.target,
      sent: prepared.body,
      attempts,
      fallback: { used: i > 0, reason: firedBy, model: i > 0 ? c.ref.name : null },
      warnings: prepared.warnings,
      upstreamLatencyMs: r.headersMs,
      ttftMs: r.ttftMs,
    }
    if (!r.answer.refusal) {
      if (refused?.answer.kind === 'stream') refused.answer.upstream.cancel()
      return done
    }
    // A refusal is an answer: it is returned unless a chain entry that names refusal_detected does better.
    if (refused?.answer.kind === 'stream') refused.answer.upstream.cancel()
    refused = done
    kind = 'refusal_detected'
  }
  if (refused) return refused
  const lastModel = attempts.findLast((a) => a.outcome !== 'skipped')?.model ?? null
  return {
    ok: false,
    error: exhausted(attempts, last ?? { kind: 'provider_error', message: 'no model could be tried' }),
    attempts,
    fallback: { used: false, reason: null, model: null },
    lastModel,
  }
}
