// Budget counters (PRODUCT §11): spent and reserved USD per org/key/end-user and period, the
// BudgetLedger interface and its in-process implementation. A shared (Redis) implementation plugs
// in behind the same interface. Every reservation is a hold with a lease: it lapses on its own
// unless its request renews it or settles it (docs/spend.md).

/** One budget a request must fit under. */
export interface BudgetCheck {
  /** Identifies the budget and its current period, e.g. `org:acme:day:2026-11-23`. */
  key: string
  limitUsd: number
  /** The period's spend already recorded in the store (the log's roll-ups), read once per key. */
  loadSpent: () => Promise<number>
}

/** One request's reservation on its budgets, until it is settled or its lease lapses. */
export interface LedgerHold {
  /** Unique across instances. */
  id: string
  keys: readonly string[]
  amountUsd: number
  /** How long the hold lives after it is made or renewed. */
  leaseMs: number
}

export type Reservation = { ok: true; hold: LedgerHold } | { ok: false; key: string; spentUsd: number; reservedUsd: number }

export interface BudgetState {
  spentUsd: number
  reservedUsd: number
}

export interface BudgetLedger {
  /** Reserves `amountUsd` on every budget, atomically: only when it fits under all of them. */
  reserve(checks: readonly BudgetCheck[], amountUsd: number, leaseMs: number): Promise<Reservation>
  /** Extends a hold's lease to `leaseMs` from now; a hold that has lapsed stays lapsed. Never throws. */
  renew(hold: LedgerHold): Promise<void>
  /** Gives the hold back (unless it lapsed already) and adds the real cost (0 for a request that cost nothing). */
  settle(hold: LedgerHold, actualUsd: number): Promise<void>
  /** What a budget has spent and holds reserved in its period (undefined: not loaded here yet). */
  state(key: string): Promise<BudgetState | undefined>
}

interface Counter extends BudgetState {
  ready: Promise<void>
  usedAt: number
  /** Live holds on this counter; with none, `reservedUsd` is exactly 0. */
  holds: number
}

interface LiveHold {
  hold: LedgerHold
  counters: Counter[]
  expiresAt: number
}

/** Counters idle this long with nothing reserved may be dropped (they reload from the store). */
const IDLE_MS = 5 * 60_000
const MAX_COUNTERS = 50_000

/**
 * One instance: counters live in memory, loaded from the store on first use, so spend survives
 * restarts. Reserving checks and charges every budget with no await in between, so concurrent
 * requests never overspend.
 */
export class MemoryBudgetLedger implements BudgetLedger {
  private readonly counters = new Map<string, Counter>()
  private readonly holds = new Map<string, LiveHold>()
  /** No hold expires before this (a lower bound: renewals only move expiries later). */
  private nextExpiry = Infinity
  private seq = 0

  constructor(private readonly now: () => number = Date.now) {}

  private counter(c: BudgetCheck): Counter {
    let counter = this.counters.get(c.key)
    if (!counter) {
      if (this.counters.size >= MAX_COUNTERS) this.evictIdle()
      const fresh: Counter = { spentUsd: 0, reservedUsd: 0, holds: 0, usedAt: this.now(), ready: Promise.resolve() }
      fresh.ready = c.loadSpent().then(
        (spent) => {
          fresh.spentUsd += spent
        },
        (err) => {
          this.counters.delete(c.key) // try again with the next request
          throw err
        },
      )
      this.counters.set(c.key, fresh)
      counter = fresh
    }
    counter.usedAt = this.now()
    return counter
  }

  private evictIdle(): void {
    const cutoff = this.now() - IDLE_MS
    for (const [k, c] of this.counters) if (c.holds === 0 && c.usedAt < cutoff) this.counters.delete(k)
  }

  /** Takes a hold's amount off its counters. */
  private release(h: LiveHold): void {
    this.holds.delete(h.hold.id)
    for (const c of h.counters) {
      c.holds--
      c.reservedUsd = c.holds > 0 ? Math.max(0, c.reservedUsd - h.hold.amountUsd) : 0
    }
  }

  /** Releases every hold whose lease has run out. */
  private lapse(): void {
    const now = this.now()
    if (now < this.nextExpiry) return
    let next = Infinity
    for (const h of this.holds.values()) {
      if (h.expiresAt <= now) this.release(h)
      else next = Math.min(next, h.expiresAt)
    }
    this.nextExpiry = next
  }

  async reserve(checks: readonly BudgetCheck[], amountUsd: number, leaseMs: number): Promise<Reservation> {
    const counters = checks.map((c) => this.counter(c))
    await Promise.all(counters.map((c) => c.ready))
    // From here to the end: no await, so the check and the charge are one step.
    this.lapse()
    for (const [i, c] of counters.entries()) {
      const check = checks[i] as BudgetCheck
      if (c.spentUsd + c.reservedUsd + amountUsd > check.limitUsd)
        return { ok: false, key: check.key, spentUsd: c.spentUsd, reservedUsd: c.reservedUsd }
    }
    for (const c of counters) {
      c.reservedUsd += amountUsd
      c.holds++
    }
    const hold: LedgerHold = { id: `h${++this.seq}`, keys: checks.map((c) => c.key), amountUsd, leaseMs }
    const expiresAt = this.now() + leaseMs
    this.holds.set(hold.id, { hold, counters, expiresAt })
    this.nextExpiry = Math.min(this.nextExpiry, expiresAt)
    return { ok: true, hold }
  }

  async renew(hold: LedgerHold): Promise<void> {
    this.lapse()
    const h = this.holds.get(hold.id)
    if (h) h.expiresAt = this.now() + hold.leaseMs
  }

  async settle(hold: LedgerHold, actualUsd: number): Promise<void> {
    const h = this.holds.get(hold.id)
    if (h) this.release(h)
    for (const k of hold.keys) {
      const c = this.counters.get(k)
      if (c) c.spentUsd += actualUsd
    }
  }

  async state(key: string): Promise<BudgetState | undefined> {
    const c = this.counters.get(key)
    if (!c) return undefined
    await c.ready
    this.lapse()
    return { spentUsd: c.spentUsd, reservedUsd: c.reservedUsd }
  }
}
