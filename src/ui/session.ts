// Dashboard sessions: signed, expiring cookies minted for the admin token, their CSRF tokens, and sign-in throttling.

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

export const SESSION_COOKIE = 'gw_session'
export const CSRF_HEADER = 'x-gw-csrf'
/** A session lasts this long, then the dashboard asks for the token again. */
export const SESSION_TTL_MS = 12 * 3_600_000

export interface Session {
  id: string
  expiresAt: number
  /** Sent back by the page in `x-gw-csrf` on every state change. */
  csrf: string
}

const equal = (a: string, b: string) => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/**
 * Sessions need no storage: the cookie is `<expiry>.<id>.<mac>`, signed with a key derived from the
 * admin token (changing the token ends every session, on every instance). Signing out revokes the
 * id on this instance until it would have expired; the browser's cookie is cleared as well.
 */
export class SessionKeeper {
  private readonly key: Buffer
  private readonly revoked = new Map<string, number>()

  constructor(
    adminToken: string,
    private readonly ttlMs = SESSION_TTL_MS,
    private readonly now = Date.now,
  ) {
    this.key = createHmac('sha256', 'gw dashboard sessions').update(adminToken).digest()
  }

  private mac(text: string): string {
    return createHmac('sha256', this.key).update(text).digest('base64url')
  }

  private session(id: string, expiresAt: number): Session {
    return { id, expiresAt, csrf: this.mac(`csrf.${id}`) }
  }

  create(): { session: Session; cookie: string } {
    const id = randomBytes(18).toString('base64url')
    const expiresAt = this.now() + this.ttlMs
    const body = `${expiresAt}.${id}`
    return { session: this.session(id, expiresAt), cookie: `${body}.${this.mac(body)}` }
  }

  /** The session a cookie value stands for; undefined when forged, expired or signed out. */
  verify(cookie: string | undefined): Session | undefined {
    const m = cookie ? /^(\d{1,15})\.([\w-]{24})\.([\w-]{43})$/.exec(cookie) : null
    if (!m) return undefined
    const [, at, id, mac] = m as unknown as [string, string, string, string]
    if (!equal(mac, this.mac(`${at}.${id}`))) return undefined
    const expiresAt = Number(at)
    if (expiresAt <= this.now() || this.revoked.has(id)) return undefined
    return this.session(id, expiresAt)
  }

  revoke(s: Session): void {
    const now = this.now()
    for (const [id, until] of this.revoked) if (until <= now) this.revoked.delete(id)
    this.revoked.set(s.id, s.expiresAt)
  }

  checkCsrf(s: Session, given: string | null): boolean {
    return given !== null && equal(given, s.csrf)
  }
}

/** How many wrong tokens a client may send before it has to wait. */
const FREE_FAILURES = 5
const WINDOW_MS = 15 * 60_000
const MAX_LOCK_MS = 15 * 60_000

/**
 * Slows guessing: after 5 wrong tokens from one client within 15 minutes, sign-in is refused for
 * 1 s, then 2, 4, … (doubling with each further failure, at most 15 minutes), even with the right token.
 */
export class SignInThrottle {
  private readonly clients = new Map<string, { failures: number; first: number; lockedUntil: number }>()

  constructor(private readonly now = Date.now) {}

  /** Milliseconds the client must still wait (0: it may try). */
  waitMs(client: string): number {
    const c = this.clients.get(client)
    return c ? Math.max(0, c.lockedUntil - this.now()) : 0
  }

  fail(client: string): void {
    const now = this.now()
    let c = this.clients.get(client)
    if (!c || now - c.first > WINDOW_MS) {
      c = { failures: 0, first: now, lockedUntil: 0 }
      this.clients.set(client, c)
    }
    c.failures++
    if (c.failures >= FREE_FAILURES) c.lockedUntil = now + Math.min(1000 * 2 ** (c.failures - FREE_FAILURES), MAX_LOCK_MS)
    if (this.clients.size > 10_000) this.sweep(now)
  }

  succeed(client: string): void {
    this.clients.delete(client)
  }

  private sweep(now: number): void {
    for (const [k, c] of this.clients) if (now - c.first > WINDOW_MS && c.lockedUntil <= now) this.clients.delete(k)
  }
}
