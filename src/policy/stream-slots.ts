// Concurrent streams per org and per credential, counted in memory per instance (docs/security.md).

/** Streams an org may have open at once unless its policy says otherwise. */
export const DEFAULT_MAX_STREAMS_PER_ORG = 4_096
/** Streams one credential (service key, or a token's subject) may have open at once unless the policy says otherwise. */
export const DEFAULT_MAX_STREAMS_PER_KEY = 1_024

interface SlotClaim {
  key: string
  limit: number
}

/** Counts open streams by key; a key is forgotten when its count falls back to 0, so the map holds only open streams. */
export class StreamSlots {
  private readonly open = new Map<string, number>()

  /** Takes one slot under every claim, or none: the release function, or the claim that is full. */
  acquire(claims: readonly SlotClaim[]): { release: () => void } | { full: SlotClaim } {
    for (const c of claims) if ((this.open.get(c.key) ?? 0) >= c.limit) return { full: c }
    for (const c of claims) this.open.set(c.key, (this.open.get(c.key) ?? 0) + 1)
    let released = false
    return {
      release: () => {
        if (released) return
        released = true
        for (const c of claims) {
          const n = (this.open.get(c.key) ?? 1) - 1
          if (n <= 0) this.open.delete(c.key)
          else this.open.set(c.key, n)
        }
      },
    }
  }

  /** Open streams under a key (for tests and diagnostics). */
  count(key: string): number {
    return this.open.get(key) ?? 0
  }
}
