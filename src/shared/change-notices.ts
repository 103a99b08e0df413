// Change notices over Redis pub/sub: an admin change on any instance (or the CLI) drops that org from every instance's cache at once; cool-downs and open breakers are shared the same way.

import type { SharedHealthEvent } from '../pipeline/upstream-health'
import type { RedisLink } from './redis-link'

export type Notice = { kind: 'org'; orgId: string } | { kind: 'health'; event: SharedHealthEvent }

interface Envelope {
  /** The instance that sent it: it has applied the change already. */
  from: string
  notice: Notice
}

export interface NoticeHandlers {
  /** An org changed (policy, keys, secrets, providers): drop it from the caches. */
  org(orgId: string): void
  health(event: SharedHealthEvent): void
  /** Notices may have been missed (the subscription was down): drop every cached org. */
  missed(): void
}

export class ChangeNotices {
  readonly instance = Bun.randomUUIDv7()
  private readonly channel: string

  constructor(
    private readonly link: RedisLink,
    prefix = 'gw:',
  ) {
    this.channel = `${prefix}changes`
  }

  /** Starts listening; every notice from another instance goes to `handlers`. */
  async listen(handlers: NoticeHandlers): Promise<void> {
    this.link.onReconnect(() => handlers.missed())
    await this.link.subscribe(this.channel, (message) => {
      let env: Envelope
      try {
        env = JSON.parse(message) as Envelope
      } catch {
        return
      }
      if (env.from === this.instance) return
      if (env.notice.kind === 'org') handlers.org(env.notice.orgId)
      else if (env.notice.kind === 'health') handlers.health(env.notice.event)
    })
  }

  /** Tells the other instances; best effort (without Redis they see the change when their cache expires). */
  publish(notice: Notice): Promise<void> {
    const env: Envelope = { from: this.instance, notice }
    return this.link.publish(this.channel, JSON.stringify(env)).catch(() => {})
  }
}
