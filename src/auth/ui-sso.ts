// Single sign-on to the dashboard (PRODUCT §18): OIDC authorization code flow with PKCE, `state` and `nonce`
// checked, the ID token verified by jose against the provider's JWKS, the verified email naming the user.

import { createHash, createHmac, randomBytes } from 'node:crypto'
import { createRemoteJWKSet, customFetch, type JWTVerifyGetKey, jwtVerify } from 'jose'
import { sameSecret } from '../ui/session'
import { cappedFetch } from '../http/read-capped'
import { ASYMMETRIC_ALGORITHMS, OIDC_MAX_BYTES } from './oidc'

export interface SsoSettings {
  issuer: string
  clientId: string
  clientSecret: string
}

/** A sign-in that did not go through; its message is shown on the sign-in page (never a secret). */
export class SsoError extends Error {}

/** The cookie holding one sign-in's state, nonce and PKCE verifier between the redirect and the callback. */
export const SSO_COOKIE = 'gw_sso'
/** How long a started sign-in may take at the provider. */
export const SSO_TTL_MS = 10 * 60_000

interface Discovery {
  issuer: string
  authorization_endpoint: string
  token_endpoint: string
  jwks_uri: string
}

interface Pending {
  state: string
  nonce: string
  verifier: string
  expiresAt: number
}

const b64 = (b: Buffer) => b.toString('base64url')

export class DashboardSso {
  private discovered: Promise<Discovery> | undefined
  private keys: JWTVerifyGetKey | undefined
  /** The provider's answers (discovery, tokens, keys), each read up to OIDC_MAX_BYTES. */
  private readonly fetch: ReturnType<typeof cappedFetch>

  constructor(
    private readonly settings: SsoSettings,
    /** Signs the sign-in cookie (derived from the admin token, like the session cookie). */
    private readonly key: Buffer,
    fetchImpl: typeof fetch = fetch,
    private readonly now = Date.now,
  ) {
    this.fetch = cappedFetch(fetchImpl, OIDC_MAX_BYTES)
  }

  private mac(text: string): string {
    return createHmac('sha256', this.key).update(`sso.${text}`).digest('base64url')
  }

  /** The provider's discovery document (fetched once; a failure is asked again next time). */
  private discovery(): Promise<Discovery> {
    this.discovered ??= (async () => {
      const url = `${this.settings.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`
      const res = await this.fetch(url, { signal: AbortSignal.timeout(10_000) })
      if (!res.ok) throw new SsoError(`The sign-in provider's discovery document answered ${res.status}`)
      const doc = (await res.json().catch(() => ({}))) as Partial<Discovery>
      if (doc.issuer !== this.settings.issuer.replace(/\/+$/, '') && doc.issuer !== this.settings.issuer)
        throw new SsoError("The sign-in provider's discovery document names another issuer")
      for (const k of ['authorization_endpoint', 'token_endpoint', 'jwks_uri'] as const)
        if (typeof doc[k] !== 'string') throw new SsoError(`The sign-in provider's discovery document has no ${k}`)
      return doc as Discovery
    })()
    this.discovered.catch(() => {
      this.discovered = undefined
    })
    return this.discovered
  }

  /** Where to send the browser, and the cookie value that remembers this sign-in until its callback. */
  async start(redirectUri: string): Promise<{ location: string; cookie: string }> {
    const d = await this.discovery()
    const pending: Pending = { state: b64(randomBytes(24)), nonce: b64(randomBytes(24)), verifier: b64(randomBytes(32)), expiresAt: this.now() + SSO_TTL_MS }
    const url = new URL(d.authorization_endpoint)
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: this.settings.clientId,
      redirect_uri: redirectUri,
      scope: 'openid email profile',
      state: pending.state,
      nonce: pending.nonce,
      code_challenge: b64(createHash('sha256').update(pending.verifier).digest()),
      code_challenge_method: 'S256',
    }).toString()
    const body = b64(Buffer.from(JSON.stringify(pending)))
    return { location: url.toString(), cookie: `${body}.${this.mac(body)}` }
  }

  /**
   * The callback: checks `state` against the cookie's, trades the code (with the PKCE verifier) for
   * tokens, verifies the ID token (signature by the provider's JWKS, issuer, audience, expiry, nonce)
   * and returns its verified email. Throws SsoError saying what failed.
   */
  async finish(params: URLSearchParams, cookie: string | undefined, redirectUri: string): Promise<{ email: string; name: string | undefined }> {
    const error = params.get('error')
    if (error) throw new SsoError(`The sign-in provider refused: ${error.slice(0, 100)}`)
    const pending = this.pendingOf(cookie)
    const state = params.get('state') ?? ''
    if (!sameSecret(state, pending.state)) throw new SsoError('The sign-in came back with another state: start again')
    const code = params.get('code')
    if (!code) throw new SsoError('The sign-in provider sent no code')
    const d = await this.discovery()
    const res = await this.fetch(d.token_endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
        authorization: `Basic ${Buffer.from(`${encodeURIComponent(this.settings.clientId)}:${encodeURIComponent(this.settings.clientSecret)}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: pending.verifier }),
      signal: AbortSignal.timeout(10_000),
    })
    const tokens = (await res.json().catch(() => ({}))) as { id_token?: unknown; error?: unknown }
    if (!res.ok || typeof tokens.id_token !== 'string')
      throw new SsoError(`The sign-in provider did not give an ID token (${typeof tokens.error === 'string' ? tokens.error.slice(0, 100) : `HTTP ${res.status}`})`)
    this.keys ??= createRemoteJWKSet(new URL(d.jwks_uri), { [customFetch]: this.fetch, cooldownDuration: 30_000 })
    let claims: Record<string, unknown>
    try {
      claims = (await jwtVerify(tokens.id_token, this.keys, { issuer: d.issuer, audience: this.settings.clientId, algorithms: ASYMMETRIC_ALGORITHMS, clockTolerance: 30 }))
        .payload
    } catch (err) {
      throw new SsoError(`The ID token was refused (${err instanceof Error ? (err as Error & { code?: string }).code ?? err.name : 'invalid'})`)
    }
    if (typeof claims.nonce !== 'string' || !sameSecret(claims.nonce, pending.nonce)) throw new SsoError('The ID token carries another nonce')
    if (typeof claims.email !== 'string' || !claims.email.includes('@')) throw new SsoError('The ID token names no email')
    if (claims.email_verified !== true) throw new SsoError(`The email ${claims.email.slice(0, 128)} is not verified at the sign-in provider`)
    return { email: claims.email.toLowerCase(), name: typeof claims.name === 'string' ? claims.name.slice(0, 200) : undefined }
  }

  private pendingOf(cookie: string | undefined): Pending {
    const [body = '', mac = ''] = (cookie ?? '').split('.')
    if (!body || !sameSecret(mac, this.mac(body))) throw new SsoError('No sign-in was started in this browser (or it was tampered with): start again')
    const pending = JSON.parse(Buffer.from(body, 'base64url').toString()) as Pending
    if (pending.expiresAt <= this.now()) throw new SsoError('The sign-in took too long: start again')
    return pending
  }
}
