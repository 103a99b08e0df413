// The MCP gateway's sessions on this instance (PRODUCT §20): by id, bounded in all and per credential, swept when idle.

import type { McpSession } from './session'

/** Sessions one instance keeps (past it a new one is refused with 503), and one credential (past it its least recently used is closed). */
export const SESSION_LIMITS = { total: 10_000, perCaller: 1000 }
/** A session unused for this long is closed (its upstream connections with it). */
export const IDLE_MS = 30 * 60_000

const callerOf = (s: McpSession) => `${s.owner.ctx.identity.orgId}\n${s.owner.ctx.identity.subject}`

/** The sessions of this instance by id, at most SESSION_LIMITS.perCaller per credential. */
export class SessionRegistry {
  private readonly byId = new Map<string, McpSession>()
  /** Each credential's sessions (org and subject), oldest first. */
  private readonly byCaller = new Map<string, Set<McpSession>>()

  constructor(private readonly inFlight: Set<() => void>) {}

  /**
   * A session is also one of the instance's open streams: ended at shutdown after the drain time
   * (GW_DRAIN_MS). A caller past its share loses its least recently used session, so one credential
   * opening sessions in a loop never takes the instance's room from the others.
   */
  add(id: string, s: McpSession): void {
    this.byId.set(id, s)
    this.inFlight.add(s.end)
    const caller = callerOf(s)
    const mine = this.byCaller.get(caller) ?? new Set()
    this.byCaller.set(caller, mine.add(s))
    const excess = mine.size - SESSION_LIMITS.perCaller
    if (excess > 0) for (const lru of [...mine].sort((x, y) => x.lastUsed - y.lastUsed).slice(0, excess)) void lru.close()
  }

  get(id: string): McpSession | undefined {
    return this.byId.get(id)
  }

  remove(s: McpSession): void {
    this.inFlight.delete(s.end)
    const caller = callerOf(s)
    const mine = this.byCaller.get(caller)
    if (mine?.delete(s) && mine.size === 0) this.byCaller.delete(caller)
    const id = s.transport.sessionId
    if (id && this.byId.get(id) === s) this.byId.delete(id)
  }

  /** Tells the clients of `endUser`'s sessions in the org that the tool list changed. */
  toolsChangedFor(orgId: string, endUser: string): void {
    for (const s of this.byId.values())
      if (s.owner.ctx.identity.orgId === orgId && s.owner.endUserId === endUser) void s.server.sendToolListChanged().catch(() => {})
  }

  get size(): number {
    return this.byId.size
  }

  /** Closes the sessions idle since before `before` (epoch ms); all of them when not given. */
  async closeIdle(before = Number.POSITIVE_INFINITY): Promise<void> {
    await Promise.allSettled([...this.byId.values()].filter((s) => s.lastUsed < before).map((s) => s.close()))
  }
}
