// Concurrent streams on this instance, per org and per credential, counted in memory (docs/security.md).

/** Upstream requests Bun lets be in flight at once when BUN_CONFIG_MAX_HTTP_REQUESTS is unset or not a value it takes. */
export const BUN_DEFAULT_UPSTREAM_POOL = 256

/**
 * The size of Bun's pool of upstream requests, as Bun itself reads it once at start (a whole number
 * from 1 to 65535; anything else leaves its default). Setting the variable later changes nothing.
 */
export function upstreamPoolSize(raw: string | undefined): number {
  const n = raw !== undefined && /^\+?\d+$/.test(raw.trim()) ? Number(raw.trim()) : 0
  return n >= 1 && n <= 65_535 ? n : BUN_DEFAULT_UPSTREAM_POOL
}

/** Most streams that may be open at once, on the instance and (unless the org's policy says otherwise) per org and per credential. */
export interface StreamCaps {
  instance: number
  org: number
  key: number
}

/**
 * Caps that fit the upstream pool: open streams take at most three quarters of it (the rest is left
 * to requests that are not streamed), one org at most half of those and one credential a quarter,
 * so an org or a key holding every stream it may still leaves the others streams and connections.
 */
export function streamCaps(pool: number): StreamCaps {
  const instance = Math.max(1, Math.floor((pool * 3) / 4))
  return { instance, org: Math.max(1, Math.floor(instance / 2)), key: Math.max(1, Math.floor(instance / 4)) }
}

interface SlotClaim {
  key: string
  limit: number
}

/** The claim every stream makes on the instance's cap; `full` names it when the instance is at its cap. */
export const INSTANCE_CLAIM = 'instance'

/** Counts open streams by key; a key is forgotten when its count falls back to 0, so the map holds only open streams. */
export class StreamSlots {
  private readonly open = new Map<string, number>()
  readonly caps: StreamCaps

  /** `pool`: the upstream pool Bun was started with (`upstreamPoolSize`). */
  constructor(pool = BUN_DEFAULT_UPSTREAM_POOL) {
    this.caps = streamCaps(pool)
  }

  /** Takes one slot on the instance and under every claim, or none: the release function, or the claim that is full. */
  acquire(claims: readonly SlotClaim[]): { release: () => void } | { full: SlotClaim } {
    const all = [{ key: INSTANCE_CLAIM, limit: this.caps.instance }, ...claims]
    for (const c of all) if ((this.open.get(c.key) ?? 0) >= c.limit) return { full: c }
    for (const c of all) this.open.set(c.key, (this.open.get(c.key) ?? 0) + 1)
    let released = false
    return {
      release: () => {
        if (released) return
        released = true
        for (const c of all) {
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
