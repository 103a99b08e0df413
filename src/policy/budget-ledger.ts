// Budget counters (PRODUCT §11): spent and reserved USD per org/key/end-user and period, the
// BudgetLedger interface and its in-process implementation. A shared (Redis) implementation plugs
// in behind the same interface.

/** One budget a request must fit under. */
export interface BudgetCheck {
  /** Identifies the budget and its current period, e.g. `org:acme:day:2026-11-23`. */
  key: string
  limitUsd: number
  /** The period's spend already recorded in the store (the log's roll-ups), read once per key. */
  loadSpent: () => Promise<number>
}

export type Reservation = { ok: true } | { ok: false; key: string; spentUsd: number; reservedUsd: number }

export interface BudgetState {
  spentUsd: number
  reservedUsd: number
}

export interface BudgetLedger {
  /** Reserves `amountUsd` on every budget, atomically: only when it fits under all of them. */
  reserve(checks: readonly BudgetCheck[], amountUsd: number): Promise<Reservation>
  /** Replaces a reservation by the real cost (0 for a request that cost nothing). */
  settle(keys: readonly string[], reservedUsd: number, actualUsd: number): Promise<void>
  /** What a budget has spent and holds reserved in its period (undefined: not loaded here yet). */
  state(key: string): Promise<BudgetState | undefined>
}

interface Counter extends BudgetState {
  ready: Promise<void>
  usedAt: number
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

  constructor(private readonly now: () => number = Date.now) {}

  private counter(c: BudgetCheck): Counter {
    let counter = this.counters.get(c.key)
    if (!counter) {
      if (this.counters.size >= MAX_COUNTERS) this.evictIdle()
      const fresh: Counter = { spentUsd: 0, reservedUsd: 0, usedAt: this.now(), ready: Promise.resolve() }
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
    for (const [k, c] of this.counters) if (c.reservedUsd <= 0 && c.usedAt < cutoff) this.counters.delete(k)
  }

  async reserve(checks: readonly BudgetCheck[], amountUsd: number): Promise<Reservation> {
    const counters = checks.map((c) => this.counter(c))
    await Promise.all(counters.map((c) => c.ready))
    // From here to the end: no await, so the check and the charge are one step.
    for (const [i, c] of counters.entries()) {
      const check = checks[i] as BudgetCheck
      if (c.spentUsd + c.reservedUsd + amountUsd > check.limitUsd)
        return { ok: false, key: check.key, spentUsd: c.spentUsd, reservedUsd: c.reservedUsd }
    }
    for (const c of counters) c.reservedUsd += amountUsd
    return { ok: true }
  }

  async settle(keys: readonly string[], reservedUsd: number, actualUsd: number): Promise<void> {
    for (const k of keys) {
      const c = this.counters.get(k)
      if (!c) continue
      c.reservedUsd = Math.max(0, c.reservedUsd - reservedUsd)
      c.spentUsd += actualUsd
    }
  }

  async state(key: string): Promise<BudgetState | undefined> {
    const c = this.counters.get(key)
    if (!c) return undefined
    await c.ready
    return { spentUsd: c.spentUsd, reservedUsd: c.reservedUsd }
  }
}
