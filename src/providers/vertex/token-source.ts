// Vertex AI access tokens from a service-account key: the RS256 JWT grant (jose), exchanged at the key's token_uri, reused until near expiry.
//
// One token request at a time per key (concurrent callers share it); a failure is not remembered, so
// the next call asks again. The fetch is injected: the caller owns the I/O (timeouts, proxies). No
// message ever contains the private key or the signed grant.

import { importPKCS8, SignJWT } from 'jose'
import { GatewayError } from '../../errors'

/** The fields gw reads from a Google service-account JSON key. */
export interface ServiceAccountKey {
  client_email: string
  private_key: string
  private_key_id?: string
  token_uri: string
}

/** How the token request goes out: `fetch`, or a wrapper adding a timeout. */
export type TokenFetch = (url: string, init: { method: 'POST'; headers: Record<string, string>; body: string }) => Promise<Response>

export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform'
/** A token is replaced this long before it expires (PRODUCT §17: 5 minutes). */
export const REFRESH_BEFORE_MS = 5 * 60_000
/** Lifetime of the signed grant; Google accepts at most one hour. */
const GRANT_SECONDS = 3600
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer'

export interface TokenSourceOptions {
  key: ServiceAccountKey
  fetch: TokenFetch
  /** Epoch milliseconds; default Date.now. */
  now?: () => number
  refreshBeforeMs?: number
  scope?: string
}

/** How a refused grant's message begins (a foreign or revoked key: the key's failure, PRODUCT §4a). */
export const GRANT_REFUSED = 'the token endpoint refused the service account grant'

const fail = (message: string) => new GatewayError(502, 'provider_error', `vertex: ${message}`)

const clip = (s: string, max = 200) => (s.length > max ? `${s.slice(0, max)}…` : s)

/** A service-account key checked for the fields gw needs; the message never repeats a value. */
export function parseServiceAccountKey(json: unknown): ServiceAccountKey {
  const bad = (why: string) => new GatewayError(400, 'gateway_error', `the service account key ${why}`)
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw bad('is not a JSON object')
  const o = json as Record<string, unknown>
  for (const field of ['client_email', 'private_key', 'token_uri'] as const) {
    if (typeof o[field] !== 'string' || o[field] === '') throw bad(`has no "${field}"`)
  }
  if (!String(o.private_key).includes('-----BEGIN PRIVATE KEY-----')) throw bad('has a "private_key" that is not a PKCS#8 PEM key')
  if (!URL.canParse(String(o.token_uri))) throw bad('has a "token_uri" that is not a URL')
  const key: ServiceAccountKey = { client_email: String(o.client_email), private_key: String(o.private_key), token_uri: String(o.token_uri) }
  if (typeof o.private_key_id === 'string') key.private_key_id = o.private_key_id
  return key
}

export class ServiceAccountTokenSource {
  private readonly key: ServiceAccountKey
  private readonly fetch: TokenFetch
  private readonly now: () => number
  private readonly refreshBeforeMs: number
  private readonly scope: string
  private signingKey: Promise<CryptoKey> | undefined
  private cached: { token: string; refreshAt: number } | undefined
  private inflight: Promise<string> | undefined

  constructor(opts: TokenSourceOptions) {
    this.key = opts.key
    this.fetch = opts.fetch
    this.now = opts.now ?? Date.now
    this.refreshBeforeMs = opts.refreshBeforeMs ?? REFRESH_BEFORE_MS
    this.scope = opts.scope ?? CLOUD_PLATFORM_SCOPE
  }

  /** A valid access token: the cached one, the one being fetched, or a new one. */
  token(): Promise<string> {
    if (this.cached && this.now() < this.cached.refreshAt) return Promise.resolve(this.cached.token)
    if (!this.inflight) {
      this.inflight = this.exchange().finally(() => {
        this.inflight = undefined
      })
    }
    return this.inflight
  }

  /** Forgets the cached token (e.g. after the upstream answered 401 with it). */
  invalidate(): void {
    this.cached = undefined
  }

  private async grant(): Promise<string> {
    this.signingKey ??= importPKCS8(this.key.private_key, 'RS256').catch(() => {
      this.signingKey = undefined
      throw fail("the service account's private_key is not a usable RSA key (PKCS#8 PEM)")
    })
    const pk = await this.signingKey
    const iat = Math.floor(this.now() / 1000)
    const header = this.key.private_key_id ? { alg: 'RS256', typ: 'JWT', kid: this.key.private_key_id } : { alg: 'RS256', typ: 'JWT' }
    return new SignJWT({ scope: this.scope })
      .setProtectedHeader(header)
      .setIssuer(this.key.client_email)
      .setAudience(this.key.token_uri)
      .setIssuedAt(iat)
      .setExpirationTime(iat + GRANT_SECONDS)
      .sign(pk)
  }

  private async exchange(): Promise<string> {
    const assertion = await this.grant()
    const started = this.now()
    let res: Response
    try {
      res = await this.fetch(this.key.token_uri, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({ grant_type: JWT_BEARER, assertion }).toString(),
      })
    } catch (err) {
      const why = typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' ? err.code : err instanceof Error ? err.name : 'error'
      throw fail(`the token endpoint ${new URL(this.key.token_uri).host} could not be reached (${why})`)
    }
    const text = await res.text().catch(() => '')
    let body: Record<string, unknown> = {}
    try {
      const parsed: unknown = JSON.parse(text)
      if (typeof parsed === 'object' && parsed !== null) body = parsed as Record<string, unknown>
    } catch {
      // A non-JSON answer: reported below by status.
    }
    if (!res.ok) {
      const what = [body.error, body.error_description].filter((v) => typeof v === 'string').join(': ')
      throw fail(`${GRANT_REFUSED} (HTTP ${res.status}${what ? ` ${clip(what)}` : ''})`)
    }
    const token = body.access_token
    const expiresIn = Number(body.expires_in)
    if (typeof token !== 'string' || token === '' || !Number.isFinite(expiresIn) || expiresIn <= 0) {
      throw fail(`the token endpoint answered HTTP ${res.status} without an access_token and expires_in`)
    }
    const lifetime = expiresIn * 1000
    // Reused until refreshBeforeMs before expiry; a token shorter-lived than that, for half its life.
    this.cached = { token, refreshAt: started + Math.max(lifetime - this.refreshBeforeMs, lifetime / 2) }
    return token
  }
}
