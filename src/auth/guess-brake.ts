// Slows guessing of the admin token per client address: wrong tokens are answered late, the right one at once (docs/security.md).

/** Wrong tokens a client may send before its answers are delayed. */
export const FREE_FAILURES = 5
/** The delay of the first slowed answer; it doubles with each further wrong token, up to MAX_DELAY_MS. */
const FIRST_DELAY_MS = 100
export const MAX_DELAY_MS = 1000
/** Wrong tokens from one client held (waiting for their answer) at once; further attempts wait for a place before they are checked. */
export const HELD_PER_CLIENT = 8
/** A client's count is forgotten this long after its last wrong token. */
const FORGET_MS = 15 * 60_000
/** At most one warning line per client this often. */
export const WARN_EVERY_MS = 60_000
const MAX_CLIENTS = 10_000

interface Client {
  failures: number
  lastFailure: number
  held: number
  waiting: (() => void)[]
  warnedAt: number
  unwarned: number
}

export interface GuessBrakeOptions {
  now?: () => number
  sleep?: (ms: number) => Promise<unknown>
  warn?: (line: string) => void
}

/**
 * Each wrong token from a client beyond the first FREE_FAILURES (within 15 minutes of the previous
 * one) is answered after 100 ms, then 200, 400, … up to 1 s; at most HELD_PER_CLIENT are held at a
 * time, so a client sending many at once waits for a place before its next token is even checked.
 * The right token is never refused and is answered as soon as it is checked. Repeated failures are
 * logged, one line per client a minute with their count (never the token).
 */
export class GuessBrake {
  private readonly clients = new Map<string, Client>()
  private readonly now: () => number
  private readonly sleep: (ms: number) => Promise<unknown>
  private readonly warn: (line: string) => void

  constructor(opts: GuessBrakeOptions = {}) {
    this.now = opts.now ?? Date.now
    this.sleep = opts.sleep ?? Bun.sleep
    this.warn = opts.warn ?? ((line) => console.error(line))
  }

  /** Runs `check` for an attempt from `client` on `where`; a wrong token resolves false only after the client's delay. */
  async attempt(client: string, where: string, check: () => boolean | Promise<boolean>): Promise<boolean> {
    let c = this.clients.get(client)
    while (c && c.held >= HELD_PER_CLIENT) {
      await new Promise<void>((resolve) => c?.waiting.push(resolve))
      c = this.clients.get(client)
    }
    if (await check()) return true
    const now = this.now()
    if (!c || now - c.lastFailure > FORGET_MS) {
      c = { failures: 0, lastFailure: now, held: c?.held ?? 0, waiting: c?.waiting ?? [], warnedAt: c?.warnedAt ?? -Infinity, unwarned: 0 }
      this.clients.set(client, c)
      if (this.clients.size > MAX_CLIENTS) this.sweep(now)
    }
    c.failures++
    c.lastFailure = now
    c.unwarned++
    if (c.failures >= FREE_FAILURES && now - c.warnedAt >= WARN_EVERY_MS) {
      this.warn(`gw: warning: ${c.unwarned} wrong admin tokens from ${client} (latest: ${where}); further wrong ones are answered after up to ${MAX_DELAY_MS / 1000} s`)
      c.warnedAt = now
      c.unwarned = 0
    }
    const delay = c.failures <= FREE_FAILURES ? 0 : Math.min(FIRST_DELAY_MS * 2 ** (c.failures - FREE_FAILURES - 1), MAX_DELAY_MS)
    if (delay === 0) return false
    c.held++
    try {
      await this.sleep(delay)
    } finally {
      c.held--
      c.waiting.shift()?.()
    }
    return false
  }

  /** Drops clients not heard from for FORGET_MS, then, if still too many, the oldest idle ones. */
  private sweep(now: number): void {
    for (const [k, c] of this.clients) if (now - c.lastFailure > FORGET_MS && c.held === 0) this.clients.delete(k)
    for (const [k, c] of this.clients) {
      if (this.clients.size <= MAX_CLIENTS) break
      if (c.held === 0 && c.waiting.length === 0) this.clients.delete(k)
    }
  }
}
