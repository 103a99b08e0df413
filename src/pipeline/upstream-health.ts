// Per org and model: cool-down after an upstream 429 with Retry-After, and a circuit breaker that
// opens after consecutive provider errors or timeouts and lets one probe through to recover.

import type { FailureKind } from '../providers/adapter'

export interface HealthOptions {
  /** Consecutive provider_error/timeout failures that open the breaker. */
  failureThreshold?: number
  /** How long an open breaker rejects before letting a probe through. */
  openMs?: number
  /** Told when a cool-down starts, a breaker opens or an upstream recovers, to tell the other instances. */
  onShared?: (e: SharedHealthEvent) => void
}

/** What one instance tells the others (over Redis) about an org's model. */
export type SharedHealthEvent =
  | { orgId: string; model: string; kind: 'cooldown'; until: number }
  | { orgId: string; model: string; kind: 'open'; until: number }
  | { orgId: string; model: string; kind: 'recovered' }

interface State {
  cooldownUntil: number
  failures: number
  openUntil: number
  probing: boolean
}

export type Admission =
  | { ok: true; probe: boolean }
  | { ok: false; kind: FailureKind; message: string; retryAfterMs: number }

/** Models tracked at most; the longest-tracked is forgotten first. Model names come from clients, so
 * without a bound every failing made-up name would stay in memory for good. */
export const MAX_TRACKED_MODELS = 10_000

const DEFAULT_KEY = 'default'
/** One record per org, model and provider key: a key that met a 429 or keeps failing sits out alone (PRODUCT §13). */
const stateKey = (orgId: string, model: string, key: string) => `${orgId}\u0000${model}\u0000${key}`

export class UpstreamHealth {
  private readonly states = new Map<string, State>()
  private readonly threshold: number
  private readonly openMs: number

  constructor(private readonly opts: HealthOptions = {}, private readonly now: () => number = Date.now) {
    this.threshold = opts.failureThreshold ?? 5
    this.openMs = opts.openMs ?? 30_000
  }

  /** Would `admit` let a request through now? (Changes nothing: for choosing among targets and keys.) */
  available(orgId: string, model: string, key = DEFAULT_KEY): boolean {
    const s = this.states.get(stateKey(orgId, model, key))
    if (!s) return true
    const now = this.now()
    return s.cooldownUntil <= now && (s.failures < this.threshold || (s.openUntil <= now && !s.probing))
  }

  /** May a request be sent to this org's model with this provider key now? */
  admit(orgId: string, model: string, key = DEFAULT_KEY): Admission {
    const s = this.states.get(stateKey(orgId, model, key))
    if (!s) return { ok: true, probe: false }
    const now = this.now()
    if (s.cooldownUntil > now)
      return {
        ok: false,
        kind: 'rate_limit',
        message: `cooling down after an upstream 429 until ${new Date(s.cooldownUntil).toISOString()}`,
        retryAfterMs: s.cooldownUntil - now,
      }
    if (s.failures >= this.threshold) {
      if (s.openUntil > now || s.probing)
        return {
          ok: false,
          kind: 'provider_error',
          message: `circuit open after ${s.failures} consecutive failures`,
          retryAfterMs: Math.max(0, s.openUntil - now),
        }
      s.probing = true
      return { ok: true, probe: true }
    }
    return { ok: true, probe: false }
  }

  record(orgId: string, model: string, outcome: FailureKind | 'ok', retryAfterMs?: number, providerKey = DEFAULT_KEY): void {
    const key = stateKey(orgId, model, providerKey)
    let s = this.states.get(key)
    if (outcome === 'ok' || outcome === 'refusal_detected' || outcome === 'context_limit') {
      if (s) {
        this.states.delete(key)
        if (s.cooldownUntil || s.failures >= this.threshold) this.opts.onShared?.({ orgId, model, kind: 'recovered' })
      }
      return
    }
    if (!s) {
      if (this.states.size >= MAX_TRACKED_MODELS) this.states.delete(this.states.keys().next().value as string)
      s = { cooldownUntil: 0, failures: 0, openUntil: 0, probing: false }
      this.states.set(key, s)
    }
    s.probing = false
    if (outcome === 'rate_limit') {
      if (retryAfterMs !== undefined && retryAfterMs > 0) {
        s.cooldownUntil = this.now() + retryAfterMs
        this.opts.onShared?.({ orgId, model, kind: 'cooldown', until: s.cooldownUntil })
      }
      return
    }
    s.failures++
    if (s.failures >= this.threshold) {
      s.openUntil = this.now() + this.openMs
      this.opts.onShared?.({ orgId, model, kind: 'open', until: s.openUntil })
    }
  }

  /** Applies what another instance saw: its cool-down or open breaker holds here too, its recovery too. */
  applyShared(e: SharedHealthEvent): void {
    const key = `${e.orgId}\u0000${e.model}`
    if (e.kind === 'recovered') {
      this.states.delete(key)
      return
    }
    let s = this.states.get(key)
    if (!s) {
      if (this.states.size >= MAX_TRACKED_MODELS) this.states.delete(this.states.keys().next().value as string)
      s = { cooldownUntil: 0, failures: 0, openUntil: 0, probing: false }
      this.states.set(key, s)
    }
    if (e.kind === 'cooldown') s.cooldownUntil = Math.max(s.cooldownUntil, e.until)
    else {
      s.failures = Math.max(s.failures, this.threshold)
      s.openUntil = Math.max(s.openUntil, e.until)
    }
  }

  /** How many org/model pairs have a failure, cool-down or open breaker on record. */
  get tracked(): number {
    return this.states.size
  }

  /** Models with an open (or half-open) breaker, with how many org keys have it open. */
  *openCircuits(): Iterable<[string, number]> {
    const open = new Map<string, number>()
    for (const [key, s] of this.states)
      if (s.failures >= this.threshold) {
        const model = key.split('\u0000')[1] as string
        open.set(model, (open.get(model) ?? 0) + 1)
      }
    yield* open
  }

  /** An admitted attempt ended without telling anything about the upstream (the client left). */
  release(orgId: string, model: string, key = DEFAULT_KEY): void {
    const s = this.states.get(stateKey(orgId, model, key))
    if (s) s.probing = false
  }
}
