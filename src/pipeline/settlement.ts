// One settlement per authenticated request (PRODUCT §16): it holds the request's charges and ends the
// request exactly once, whatever way it ends — its log entry (stage 7), its observation (metrics, span,
// access line) and its charges (rate limits, budget reservation, stream slot) settled or released.

import { GatewayError } from '../errors'
import type { LogEntry } from '../domain/log-entry'
import type { Guard } from '../guardrails/guard'
import type { CachePut } from '../store/types'
import { type Charge, settleCharge, settleTokens } from './2-policy'
import { clientGone } from './5-attempt'
import { failureOutcome, logEntry, loggedAnswer, type Outcome, recordRequest } from './7-log'
import type { AuthedContext, ChatInput, Deps, RequestContext } from './context'

export class Settlement {
  private charge: Charge | undefined
  private done = false
  /** The request as parsed, once it is (the log entry names its model, metadata, …). */
  input: ChatInput | undefined
  /** The request's guardrails, when the org has some: what they did goes on the log entry, and no value they hid does. */
  guard: Guard | undefined
  /**
   * The response cache's part (PRODUCT §19): `miss` or `refresh` on the log entry, and the answer kept
   * once the request ends with it (a put returned goes to the log path with the entry).
   */
  private cache: { result: 'miss' | 'refresh'; keep: (o: Outcome) => CachePut | undefined } | undefined

  cached(result: 'miss' | 'refresh', keep: (o: Outcome) => CachePut | undefined): void {
    this.cache = { result, keep }
  }

  constructor(
    private readonly deps: Deps,
    private readonly ctx: AuthedContext,
  ) {}

  /** The charges stage 2 made; settled with the request's real usage and cost when it ends. */
  hold(charge: Charge | undefined): void {
    this.charge = charge
  }

  /**
   * Ends the request with its outcome; only the first call counts. Stage 6 calls it when the answer is
   * complete. A promise while its token count is being written to the counters every instance shares:
   * the answer's last bytes wait for it (PRODUCT §10).
   */
  readonly finish = (o: Outcome): Promise<void> | undefined => {
    if (this.done) return undefined
    this.done = true
    if (this.guard) o = guarded(this.guard, this.ctx, o, this.deps.config.logBodyMaxBytes)
    if (this.cache) {
      // Kept first: a relayed stream's transcript it reads is then on the outcome the trace reads too.
      // A failure to keep the answer (a bug) never costs the request its log entry.
      let kept: CachePut | undefined
      try {
        kept = this.cache.keep(o)
      } catch (err) {
        console.error(`gw: keeping the answer of request ${this.ctx.requestId} in the response cache failed:`, err instanceof Error ? err.message : err)
      }
      o = { ...o, cache: this.cache.result, kept }
    }
    let cost: number | null = null
    let room: Promise<void> | undefined
    let counted: Promise<void> | undefined
    try {
      const recorded = record(this.deps, this.ctx, this.input, o)
      cost = recorded.entry.costUsd
      room = recorded.room
    } finally {
      // The charges are settled whatever the log entry did.
      counted = settleCharge(this.deps, this.charge, o.usage?.total_tokens ?? 0, cost)
    }
    // A full log queue holds the answer's end too (back-pressure: the entry is never dropped).
    return room && counted ? Promise.all([room, counted]).then(() => {}) : (room ?? counted)
  }

  /** Settles the token count alone, before a stream's closing events (its log entry follows them); a promise as for finish. */
  readonly countTokens = (usedTokens: number): Promise<void> | undefined => settleTokens(this.deps, this.charge, usedTokens)

  /** Ends the request with a throw, unless it has ended already (`answered`: what the attempt that answered left). */
  async fail(err: unknown, answered: Partial<Outcome> = {}): Promise<void> {
    if (!this.done) await this.finish({ ...failureOf(err, this.ctx.signal), ...answered })
  }
}

/**
 * What the log keeps of a guarded request: the guardrails that acted, and its bodies with every value
 * they masked, redacted or refused replaced by its placeholder or label (PRODUCT §19); no request body
 * when it was refused before its input guardrails read it.
 */
function guarded(guard: Guard, ctx: AuthedContext, o: Outcome, maxBodyBytes: number): Outcome {
  const raw = ctx.rawBody
  if (raw && guard.hides) {
    if (raw.bytes > maxBodyBytes) ctx.rawBody = { ...raw, text: guard.scrubbedPreview(raw.value, maxBodyBytes) }
    else {
      const value = guard.scrub(raw.value)
      ctx.rawBody = { ...raw, value, text: JSON.stringify(value) }
    }
  } else if (raw && guard.inputUnread) {
    raw.release?.()
    ctx.rawBody = undefined
  }
  return {
    ...o,
    guardrails: guard.acted,
    responseBody: guard.scrub(o.responseBody),
    responseText: guard.hides ? undefined : o.responseText,
  }
}

/**
 * What a throw means for the log: gw's own errors as they are; any other once the client has left
 * (a count or a scan stopped for it) is the client closing the request; else an internal error.
 */
export function failureOf(err: unknown, signal?: AbortSignal): Outcome {
  const e = err instanceof GatewayError ? err : signal?.aborted ? clientGone() : new GatewayError(500, 'gateway_error', 'Internal error')
  return failureOutcome(e.status, e.code, e.message, { rateLimitScope: e.scope })
}

/** Stage 7, then the observer. */
function record(deps: Deps, ctx: AuthedContext, input: ChatInput | undefined, o: Outcome): ReturnType<typeof recordRequest> {
  const recorded = recordRequest(deps, ctx, input, o)
  observe(deps, ctx, input, recorded.entry, o)
  return recorded
}

/** The observation of a request that is never logged (a refused credential; models, logs and usage reads). */
export function observeUnlogged(deps: Deps, ctx: RequestContext, o: Outcome): void {
  observe(deps, ctx, undefined, logEntry(deps, ctx, undefined, o), o)
}

/** Metrics, access log and trace of a finished API request. */
function observe(deps: Deps, ctx: RequestContext, input: ChatInput | undefined, entry: LogEntry, o: Outcome): void {
  deps.observer.requestFinished({
    entry,
    authenticated: 'identity' in ctx,
    ctx,
    known: o.target?.model.known,
    rateLimitScope: o.rateLimitScope,
    // A trace reads the answer's finish reasons (and text with GW_TRACE_CONTENT); without one it is not read.
    response: deps.observer.tracing ? loggedAnswer(o) : o.responseBody,
    messages: input?.view.traced(),
  })
}
