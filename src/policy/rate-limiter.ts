// Per-minute request and token limits: the RateLimiter interface and its in-memory (one instance) implementation.

/** One counter to check: admitted while `need` more units fit under `limit` per 60 s, then charged `cost`. */
export interface LimitCheck {
  key: string
  limit: number
  cost: number
  /** What must fit (default: `cost`). A token limit needs 1: it admits while the window is below it (PRODUCT §10). */
  need?: number
  /**
   * A limit of gw's own (log reads), not of an org's policy: with Redis away it is counted by this
   * instance even under GW_REDIS_REQUIRED, whose "limited requests" are the policy's (PRODUCT §10).
   */
  own?: true
}

export type Admission = { ok: true } | { ok: false; key: string; retryAfterSeconds: number }

/**
 * Sliding 60-second windows. `admit` checks every counter and, only when all have room, charges
 * them all: atomically, so concurrent requests never overshoot a limit. A Redis implementation
 * (several instances) plugs in behind the same interface.
 */
export interface RateLimiter {
  admit(checks: readonly LimitCheck[], now?: number): Promise<Admission>
  /**
   * Corrects a charge made at `at` once the real cost is known (may be negative). Done at once in
   * memory (undefined); a promise while the correction is written to shared counters, settled once
   * every instance counts it (or, their store being away, this one does). It never rejects.
   */
  adjust(keys: readonly string[], delta: number, at: number, now?: number): Promise<void> | undefined
}

const WINDOW_SECONDS = 60

/**
 * 60 one-second buckets per key: what was charged in second s counts during seconds s … s + 59, so
 * a refused client is told to come back in 1..60 s (a per-minute limit never says 61).
 */
class Window {
  readonly counts = new Float64Array(WINDOW_SECONDS)
  readonly seconds = new Float64Array(WINDOW_SECONDS).fill(-1)
  lastSecond = -1

  /** Units still counted at second `now`. */
  used(now: number): number {
    let sum = 0
    for (let i = 0; i < WINDOW_SECONDS; i++) if ((this.seconds[i] as number) > now - WINDOW_SECONDS) sum += this.counts[i] as number
    return sum
  }

  add(second: number, n: number): void {
    const i = second % WINDOW_SECONDS
    if (this.seconds[i] !== second) {
      this.seconds[i] = second
      this.counts[i] = 0
    }
    this.counts[i] = (this.counts[i] as number) + n
    this.lastSecond = Math.max(this.lastSecond, second)
  }

  /** Seconds from `nowMs` until `need` units are free. */
  retryAfter(nowMs: number, need: number, limit: number): number {
    const now = Math.floor(nowMs / 1000)
    const live: [number, number][] = []
    for (let i = 0; i < WINDOW_SECONDS; i++) {
      const s = this.seconds[i] as number
      if (s > now - WINDOW_SECONDS) live.push([s, this.counts[i] as number])
    }
    live.sort((a, b) => a[0] - b[0])
    let used = live.reduce((n, [, c]) => n + c, 0)
    for (const [s, c] of live) {
      used -= c
      // Bucket of second s stops counting at the start of second s + 60: at most 60 s from now.
      if (used + need <= limit) return Math.max(1, Math.ceil(((s + WINDOW_SECONDS) * 1000 - nowMs) / 1000))
    }
    return WINDOW_SECONDS
  }
}

export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, Window>()
  private sweptAt = 0

  async admit(checks: readonly LimitCheck[], nowMs = Date.now()): Promise<Admission> {
    const second = Math.floor(nowMs / 1000)
    this.sweep(second)
    for (const c of checks) {
      const w = this.windows.get(c.key)
      const used = w ? w.used(second) : 0
      const need = c.need ?? c.cost
      if (used + need > c.limit) {
        const retryAfterSeconds = need > c.limit ? WINDOW_SECONDS : (w as Window).retryAfter(nowMs, need, c.limit)
        return { ok: false, key: c.key, retryAfterSeconds }
      }
    }
    for (const c of checks) this.window(c.key).add(second, c.cost)
    return { ok: true }
  }

  adjust(keys: readonly string[], delta: number, atMs: number, nowMs = Date.now()): undefined {
    if (delta === 0) return
    const second = Math.floor(atMs / 1000)
    if (second < Math.floor(nowMs / 1000) - WINDOW_SECONDS) return
    for (const k of keys) this.window(k).add(second, delta)
  }

  private window(key: string): Window {
    let w = this.windows.get(key)
    if (!w) {
      w = new Window()
      this.windows.set(key, w)
    }
    return w
  }

  /** Drops windows idle for over a minute, at most once a minute. */
  private sweep(second: number): void {
    if (second - this.sweptAt < WINDOW_SECONDS) return
    this.sweptAt = second
    for (const [k, w] of this.windows) if (w.lastSecond <= second - WINDOW_SECONDS) this.windows.delete(k)
  }
}
