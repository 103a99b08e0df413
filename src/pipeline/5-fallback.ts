// Stage 5, the walk down the fallback chain (PRODUCT §4a): primary first, then each chain entry
// whose triggers match the last failure; one UpstreamAttempt per model tried, every one recorded.

import { badRequest, GatewayError } from '../errors'
import { type FailureKind, failureClass, type ProviderAdapter, type Target, type UpstreamFailure } from '../providers/adapter'
import type { Wire } from '../providers/provider-id'
import { adapterFor } from '../providers/registry'
import type { Attempt, Fallback, RequestWarning } from '../domain/log-entry'
import { clamp } from './4-clamp'
import type { Candidate } from './3-route'
import { type Answer, UpstreamAttempt } from './5-attempt'
import type { AuthedContext, ChatInput, Deps } from './context'

/** The adapter that speaks a wire for this endpoint (the target says which record, e.g. Azure); undefined when it does not serve it. */
export type AdapterLookup = (wire: Wire, target?: Target) => ProviderAdapter | undefined

export const NO_FALLBACK: Fallback = Object.freeze({ used: false, reason: null, model: null })

export interface Dispatched {
  ok: true
  answer: Answer
  /** The attempt that answered (its target, the body sent, its timings and record). */
  attempt: UpstreamAttempt
  attempts: Attempt[]
  fallback: Fallback
  warnings: RequestWarning[]
  /** The prompt's token estimate, from the request's policy view (for usage a provider does not report). */
  promptEstimate: () => number
}

export interface DispatchFailed {
  ok: false
  error: GatewayError
  attempts: Attempt[]
  lastModel: string | null
}

function describe(a: Attempt): string {
  const what = a.status ? `HTTP ${a.status}` : a.outcome
  return `${a.model} → ${what}${a.message ? `: ${a.message}` : ''}`
}

/**
 * The answer once nothing answered. When the last failure was the caller's own request (PRODUCT §4a),
 * retrying cannot help: `x-should-retry: false`, and the APIs with their own error shape answer 400.
 */
function exhausted(ctx: AuthedContext, attempts: Attempt[], last: UpstreamFailure): GatewayError {
  const tried = attempts.filter((a) => a.outcome !== 'skipped')
  const refused = failureClass(last) === 'request'
  // An API with an error shape of its own (Messages, Responses) answers a refused request as the client's 400.
  const status = refused && ctx.errorStyle !== 'gw' ? 400 : last.kind === 'timeout' ? 504 : 502
  const message =
    tried.length === 1 && tried[0]
      ? `Upstream ${describe(tried[0])}`
      : `All ${tried.length} models failed: ${tried.map(describe).join('; ')}`
  const headers: Record<string, string> = {}
  if (last.retryAfterMs) headers['retry-after'] = String(Math.ceil(last.retryAfterMs / 1000))
  if (refused) headers['x-should-retry'] = 'false'
  return new GatewayError(status, 'provider_error', message, { headers, requestRefused: refused })
}

/** Should this chain entry fire after a failure of this kind? */
function fires(c: Candidate, kind: FailureKind): boolean {
  return c.triggers ? c.triggers.includes(kind) : kind !== 'refusal_detected'
}

/** Ends a stream kept as the refusal to fall back on, once something better answered or the client left. */
function drop(d: Dispatched | undefined): void {
  if (d?.answer.kind === 'stream') d.answer.attempt.close()
}

export async function dispatch(
  deps: Deps,
  ctx: AuthedContext,
  input: ChatInput,
  candidates: Candidate[],
  adapters: AdapterLookup = adapterFor,
): Promise<Dispatched | DispatchFailed> {
  const timeoutMs = ctx.org.org.policy.upstreamTimeoutMs ?? deps.config.upstreamTimeoutMs
  const attempts: Attempt[] = []
  const skip = (c: Candidate, message: string) => attempts.push({ model: c.ref.name, outcome: 'skipped', status: null, latencyMs: 0, message })
  let kind: FailureKind | undefined
  let last: UpstreamFailure | undefined
  let refused: Dispatched | undefined
  // The prompt's estimate, worked out once by the request's view and shared by every attempt and the answer.
  const promptEstimate = () => input.view.promptEstimate()

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
    const firedBy = i > 0 ? (kind ?? null) : null
    const adapter = adapters(c.target.provider, c.target)
    if (!adapter) {
      const why = `${c.ref.name.slice(0, 64)} does not serve ${ctx.endpoint}`
      // The model asked for cannot answer this endpoint at all (Claude's embeddings): the caller's request is wrong.
      if (i === 0 && !candidates.slice(1).some((e) => e.target)) throw badRequest(`${why}: use a model that does`)
      skip(c, why)
      continue
    }
    const prepared = clamp(input, c.target, adapter)
    // A key failure (401, 403, 429) is retried at once on the provider's next healthy key, before any fallback.
    const spares = c.spareKeys.filter((t) => deps.health.available(ctx.org.org.id, c.ref.name, { name: t.keyName, revision: t.keyRevision }))
    let attempt: UpstreamAttempt
    let r: Awaited<ReturnType<UpstreamAttempt['run']>>
    let target: Target | undefined = c.target
    do {
      attempt = new UpstreamAttempt(deps, ctx, c.ref, adapter, target, prepared.body, promptEstimate, timeoutMs)
      attempts.push(attempt.record)
      try {
        r = await attempt.run()
      } catch (err) {
        drop(refused)
        // The client left, or gw is stopping: the request ends here, its attempts on its log entry.
        if (err instanceof GatewayError) return { ok: false, error: err, attempts, lastModel: c.ref.name }
        throw err
      }
      target = !r.ok && failureClass(r.failure) === 'key' ? spares.shift() : undefined
    } while (target)
    if (!r.ok) {
      kind = r.failure.kind
      last = r.failure
      continue
    }
    const done: Dispatched = {
      ok: true,
      answer: r.answer,
      attempt,
      attempts,
      fallback: i > 0 ? { used: true, reason: firedBy, model: c.ref.name } : NO_FALLBACK,
      warnings: prepared.warnings,
      promptEstimate,
    }
    drop(refused)
    if (!r.answer.refusal) return done
    // A refusal is an answer: it is returned unless a chain entry that names refusal_detected does better.
    refused = done
    if (done.answer.kind === 'stream') done.answer.attempt.pause()
    kind = 'refusal_detected'
  }
  if (refused) return refused
  return {
    ok: false,
    error: exhausted(ctx, attempts, last ?? { kind: 'provider_error', message: 'no model could be tried' }),
    attempts,
    lastModel: attempts.findLast((a) => a.outcome !== 'skipped')?.model ?? null,
  }
}
