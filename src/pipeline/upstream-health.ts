// Per org, model and provider key: cool-down after an upstream 429 with Retry-After, a key benched
// after an upstream 401/403, and a circuit breaker that opens after consecutive provider failures and
// lets one probe through to recover. What counts is the failure's class (PRODUCT §4a): the caller's
// own bad requests never count.

import { type FailureClass, type FailureKind, failureClass, type UpstreamFailure } from '../providers/adapter'

export interface HealthOptions {
  /** Consecutive provider failures (class `provider`) that open the breaker. */
  failureThreshold?: number
  /** How long an open breaker rejects before letting a probe through. */
  openMs?: number
  /** How long a key sits out after an upstream 401/403, unless its record changes first. */
  keyOutMs?: number
  /** Told when a cool-down starts, a key is benched, a breaker opens or an upstream recovers, to tell the other instances. */
  onShared?: (e: SharedHealthEvent) => void
}

/** One of the org's keys for a provider: its name, and when its record last changed (unknown to callers that name none). */
export interface HealthKey {
  name: string
  revision?: string
}

/** What one instance tells the others (over Redis) about an org's model with one of its keys. */
export type SharedHealthEvent = { orgId: string; model: string; key: string } & (
  | { kind: 'cooldown'; until: number }
  | { kind: 'key-out'; until: number; revision: string; status: number }
  | { kind: 'open'; until: number }
  | { kind: 'recovered' }
)

interface State {
  cooldownUntil: number
  /** Benched after an upstream 401/403 until then, while the key's record is still `keyOutRevision`. */
  keyOutUntil: number
  keyOutRevision: string
  keyOutStatus: number
  failures: number
  openUntil: number
  probing: boolean
}

export type Admission =
  | { ok: true; probe: boolean }
  | { ok: false; kind: FailureKind; class: FailureClass; message: string; retryAfterMs: number }

/** Models tracked at most; the longest-tracked is forgotten first. Model names come from clients, so
 * without a bound every failing made-up name would stay in memory for good. */
export const MAX_TRACKED_MODELS = 10_000

/** The key of an org whose provider has a single key, and of callers that name none. */
export const DEFAULT_KEY: HealthKey = Object.freeze({ name: 'default' })
/** How long a key sits out after an upstream 401/403 when its record does not change (PRODUCT §4a). */
export const KEY_OUT_MS = 5 * 60_000
/** One record per org, model and provider key: a key that met a 429 or keeps failing sits out alone (PRODUCT §13). */
const stateKey = (orgId: string, model: string, key: string) => `${orgId}\u0000${model}\u0000${key}`
/** The admission of a model and key with no trouble behind them (shared: admissions are only read). */
const ADMITTED: Admission = { ok: true, probe: false }

export class UpstreamHealth {
  private readonly states = new Map<string, State>()
  private readonly threshold: number
  private readonly openMs: number
  private readonly keyOutMs: number

  constructor(private readonly opts: HealthOptions = {}, private readonly now: () => number = Date.now) {
    this.threshold = opts.failureThreshold ?? 5
    this.openMs = opts.openMs ?? 30_000
    this.keyOutMs = opts.keyOutMs ?? KEY_OUT_MS
  }

  /**
   * The state of a model and key, when it has had trouble; none otherwise. A healthy gateway tracks
   * nothing, so most requests make no key to look theirs up.
   */
  private stateOf(orgId: string, model: string, key: string): State | undefined {
    return this.states.size ? this.states.get(stateKey(orgId, model, key)) : undefined
  }

  /** Would `admit` let a request through now? (Changes nothing: for choosing among targets and keys.) */
  available(orgId: string, model: string, key: HealthKey = DEFAULT_KEY): boolean {
    const s = this.stateOf(orgId, model, key.name)
    if (!s) return true
    const now = this.now()
    return s.cooldownUntil <= now && !benched(s, key, now) && (s.failures < this.threshold || (s.openUntil <= now && !s.probing))
  }

  /** May a request be sent to this org's model with this provider key now? */
  admit(orgId: string, model: string, key: HealthKey = DEFAULT_KEY): Admission {
    const s = this.stateOf(orgId, model, key.name)
    if (!s) return ADMITTED
    const now = this.now()
    if (s.cooldownUntil > now)
      return {
        ok: false,
        kind: 'rate_limit',
        class: 'key',
        message: `key "${key.name}" cooling down after an upstream 429 until ${new Date(s.cooldownUntil).toISOString()}`,
        retryAfterMs: s.cooldownUntil - now,
      }
    if (benched(s, key, now))
      return {
        ok: false,
        kind: 'provider_error',
        class: 'key',
        message: `key "${key.name}" sits out after an upstream ${s.keyOutStatus} until ${new Date(s.keyOutUntil).toISOString()} or until its record changes`,
        retryAfterMs: s.keyOutUntil - now,
      }
    if (s.failures >= this.threshold) {
      if (s.openUntil > now || s.probing)
        return {
          ok: false,
          kind: 'provider_error',
          class: 'provider',
          message: `circuit open after ${s.failures} consecutive failures`,
          // While one request probes the upstream (half-open), the others are told to come back in a second.
          retryAfterMs: Math.max(1000, s.openUntil - now),
        }
      s.probing = true
      return { ok: true, probe: true }
    }
    return ADMITTED
  }

  /** How an admitted attempt ended: an answer, or a failure remembered according to its class. */
  record(orgId: string, model: string, outcome: UpstreamFailure | 'ok', key: HealthKey = DEFAULT_KEY): void {
    // An answer from a model and key with no trouble behind them changes nothing (most requests).
    if (outcome === 'ok' && !this.states.size) return
    const id = stateKey(orgId, model, key.name)
    let s = this.states.get(id)
    const cls = outcome === 'ok' ? undefined : failureClass(outcome)
    if (outcome === 'ok' || outcome.kind === 'refusal_detected') {
      if (s) {
        const troubled = s.cooldownUntil > 0 || s.failures >= this.threshold
        this.recover(id, s)
        if (troubled) this.opts.onShared?.({ orgId, model, key: key.name, kind: 'recovered' })
      }
      return
    }
    // The caller's own request: it tells nothing about the upstream or the key (PRODUCT §4a).
    if (cls === 'request') {
      if (s) s.probing = false
      return
    }
    s ??= this.track(id)
    s.probing = false
    if (cls === 'key') {
      if (outcome.kind === 'rate_limit') {
        if (outcome.retryAfterMs !== undefined && outcome.retryAfterMs > 0) {
          s.cooldownUntil = this.now() + outcome.retryAfterMs
          this.opts.onShared?.({ orgId, model, key: key.name, kind: 'cooldown', until: s.cooldownUntil })
        }
        return
      }
      s.keyOutUntil = this.now() + this.keyOutMs
      s.keyOutRevision = key.revision ?? ''
      s.keyOutStatus = outcome.status ?? 0
      this.opts.onShared?.({ orgId, model, key: key.name, kind: 'key-out', until: s.keyOutUntil, revision: s.keyOutRevision, status: s.keyOutStatus })
      return
    }
    s.failures++
    if (s.failures >= this.threshold) {
      s.openUntil = this.now() + this.openMs
      this.opts.onShared?.({ orgId, model, key: key.name, kind: 'open', until: s.openUntil })
    }
  }

  /** Applies what another instance saw: its cool-down, benched key or open breaker holds here too, its recovery too. */
  applyShared(e: SharedHealthEvent): void {
    const id = stateKey(e.orgId, e.model, e.key)
    if (e.kind === 'recovered') {
      const s = this.states.get(id)
      if (s) this.recover(id, s)
      return
    }
    const s = this.states.get(id) ?? this.track(id)
    if (e.kind === 'cooldown') s.cooldownUntil = Math.max(s.cooldownUntil, e.until)
    else if (e.kind === 'key-out') {
      s.keyOutUntil = Math.max(s.keyOutUntil, e.until)
      s.keyOutRevision = e.revision
      s.keyOutStatus = e.status
    } else {
      s.failures = Math.max(s.failures, this.threshold)
      s.openUntil = Math.max(s.openUntil, e.until)
    }
  }

  /**
   * An answer came: the breaker closes. A benched key stays benched and a cool-down lasts its
   * Retry-After: only the key's record changing or their time running out lifts them (PRODUCT §4a: gw
   * sends nothing to the model before the time a 429 names). A success during either can only come
   * from an attempt admitted before it began (neither admits one), so it says nothing about now.
   */
  private recover(id: string, s: State): void {
    const now = this.now()
    if (s.keyOutUntil <= now && s.cooldownUntil <= now) {
      this.states.delete(id)
      return
    }
    s.failures = 0
    s.openUntil = 0
    s.probing = false
  }

  private track(id: string): State {
    if (this.states.size >= MAX_TRACKED_MODELS) this.states.delete(this.states.keys().next().value as string)
    const s: State = { cooldownUntil: 0, keyOutUntil: 0, keyOutRevision: '', keyOutStatus: 0, failures: 0, openUntil: 0, probing: false }
    this.states.set(id, s)
    return s
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
  release(orgId: string, model: string, key: HealthKey = DEFAULT_KEY): void {
    const s = this.states.get(stateKey(orgId, model, key.name))
    if (s) s.probing = false
  }
}

/** Is this key benched after a 401/403 now? Not once its record has changed since (a new secret, re-enabled). */
function benched(s: State, key: HealthKey, now: number): boolean {
  return s.keyOutUntil > now && (key.revision === undefined || s.keyOutRevision === key.revision)
}
