// Upstream health every instance sees (PRODUCT §10, §4a): a cool-down, a benched key or an open breaker
// is published to the instances running and kept in Redis until it runs out, so an instance started
// later (or restarted) holds it too.

import type { SharedHealthEvent } from '../pipeline/upstream-health'
import type { ChangeNotices } from './change-notices'
import type { RedisLink } from './redis-link'

/** Keys read per SCAN step at start. */
const SCAN_COUNT = '500'

export class SharedHealth {
  private readonly prefix: string

  constructor(
    private readonly link: RedisLink,
    private readonly notices: ChangeNotices,
    prefix = 'gw:',
  ) {
    this.prefix = `${prefix}health:`
  }

  /** Tells the running instances, and keeps the state for later ones until its time runs out (best effort). */
  share(e: SharedHealthEvent): void {
    void this.notices.publish({ kind: 'health', event: e })
    const key = this.prefix + Buffer.from(JSON.stringify([e.orgId, e.model, e.key])).toString('base64url')
    const kept =
      e.kind === 'recovered' ? this.link.send('DEL', [key]) : e.until > Date.now() ? this.link.send('SET', [key, JSON.stringify(e), 'PX', String(Math.ceil(e.until - Date.now()))]) : undefined
    kept?.catch(() => {})
  }

  /** What other instances saw and still holds, for an instance that starts; nothing when Redis is away. */
  async recall(): Promise<SharedHealthEvent[]> {
    const out: SharedHealthEvent[] = []
    try {
      let cursor = '0'
      do {
        const [next, keys] = (await this.link.send('SCAN', [cursor, 'MATCH', `${this.prefix}*`, 'COUNT', SCAN_COUNT])) as [string, string[]]
        cursor = String(next)
        if (keys.length) {
          const values = (await this.link.send('MGET', keys)) as (string | null)[]
          for (const v of values) {
            if (!v) continue
            try {
              out.push(JSON.parse(v) as SharedHealthEvent)
            } catch {}
          }
        }
      } while (cursor !== '0')
    } catch {
      // Redis away at start: what the others saw reaches this instance with their next notices.
    }
    return out
  }
}
