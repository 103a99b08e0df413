// Dashboard sessions: signed, expiring cookies minted for the admin token or a user and kept in the store, their CSRF tokens.

import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import type { SessionStore } from '../store/types'

export const SESSION_COOKIE = 'gw_session'
export const CSRF_HEADER = 'x-gw-csrf'
/** A session lasts this long, then the dashboard asks for the token again. */
export const SESSION_TTL_MS = 12 * 3_600_000

export interface Session {
  id: string
  expiresAt: number
  /** Sent back by the page in `x-gw-csrf` on every state change. */
  csrf: string
  /** The signed-in user; undefined: signed in with the admin token. */
  userId: string | undefined
}

/** Compares two secrets in time that does not depend on where they differ. */
export const sameSecret = (a: string, b: string) => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

const idHash = (id: string) => createHash('sha256').update(id).digest('base64url')

/**
 * The cookie is `<expiry>.<id>.<mac>`, signed with a key derived from the admin token (changing the
 * token ends every session), and each session is a row in the store under a hash of its id, shared
 * by every instance: signing out deletes the row, so the cookie stays refused everywhere and across
 * restarts.
 */
export class SessionKeeper {
  private readonly key: Buffer

  constructor(
    adminToken: string,
    private readonly store: SessionStore,
    private readonly ttlMs = SESSION_TTL_MS,
    private readonly now = Date.now,
  ) {
    this.key = createHmac('sha256', 'gw dashboard sessions').update(adminToken).digest()
  }

  private mac(text: string): string {
    return createHmac('sha256', this.key).update(text).digest('base64url')
  }

  private session(id: string, expiresAt: number, userId: string | undefined): Session {
    return { id, expiresAt, csrf: this.mac(`csrf.${id}`), userId }
  }

  /** A session for `userId`, or (none) for the admin token. */
  async create(userId?: string): Promise<{ session: Session; cookie: string }> {
    const id = randomBytes(18).toString('base64url')
    const now = this.now()
    const expiresAt = now + this.ttlMs
    await this.store.createSession(idHash(id), expiresAt, now, userId)
    const body = `${expiresAt}.${id}`
    return { session: this.session(id, expiresAt, userId), cookie: `${body}.${this.mac(body)}` }
  }

  /** The session a cookie value stands for; undefined when forged, expired or signed out. */
  async verify(cookie: string | undefined): Promise<Session | undefined> {
    const m = cookie ? /^(\d{1,15})\.([\w-]{24})\.([\w-]{43})$/.exec(cookie) : null
    if (!m) return undefined
    const [, at, id, mac] = m as unknown as [string, string, string, string]
    if (!sameSecret(mac, this.mac(`${at}.${id}`))) return undefined
    const expiresAt = Number(at)
    const now = this.now()
    const row = expiresAt > now ? await this.store.session(idHash(id), now) : undefined
    return row && this.session(id, expiresAt, row.userId)
  }

  /** Signs the session out on every instance. */
  async revoke(s: Session): Promise<void> {
    await this.store.deleteSession(idHash(s.id))
  }

  checkCsrf(s: Session, given: string | null): boolean {
    return given !== null && sameSecret(given, s.csrf)
  }
}
