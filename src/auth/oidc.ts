// OIDC Bearer tokens (alpha): the org's issuer config, keys from the issuer's JWKS via jose, asymmetric algorithms only.

import { createRemoteJWKSet, customFetch, type JWTVerifyGetKey, jwtVerify } from 'jose'
import { unauthorized } from '../errors'
import type { OidcConfig } from '../domain/org'
import type { AuthStore } from '../store/types'
import { readCapped } from '../http/read-capped'
import { jwtFailure, peekJwt } from './jwt-errors'

export const ASYMMETRIC_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519']
const WHAT = 'OIDC token'
const DISCOVERY_TTL_MS = 60 * 60 * 1000
/** A discovery document or key set larger than this is not read on (real ones are a few KB). */
export const OIDC_MAX_BYTES = 1_048_576

/** A failed discovery or JWKS fetch is remembered this long: forged tokens naming the issuer cause no new fetch. */
const FAILURE_TTL_MS = 30_000

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i

/**
 * Why an issuer or JWKS URL is refused, or undefined: it must be https://, except http:// on a
 * loopback host (a local identity provider).
 */
export function oidcUrlProblem(raw: string): string | undefined {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return 'not a URL'
  }
  if (url.protocol === 'https:') return undefined
  if (url.protocol === 'http:' && LOOPBACK.test(url.hostname)) return undefined
  return 'must be an https:// URL (http:// only on a loopback host)'
}

export interface OidcIdentity {
  orgId: string
  sub: string
}

export interface OidcOptions {
  /** Least time between two JWKS fetches triggered by an unknown `kid`. */
  refreshCooldownMs: number
  fetch?: typeof fetch
}

export class OidcVerifier {
  private readonly keySets = new Map<string, JWTVerifyGetKey>()
  private readonly discovered = new Map<string, { at: number; ttl: number; uri: Promise<string> }>()
  /** When each JWKS URL last failed to load. */
  private readonly jwksFailedAt = new Map<string, number>()

  constructor(
    private readonly store: AuthStore,
    private readonly options: OidcOptions,
  ) {}

  async verify(token: string): Promise<OidcIdentity> {
    const { alg, claims } = peekJwt(WHAT, token)
    if (!ASYMMETRIC_ALGORITHMS.includes(alg))
      throw unauthorized(`${WHAT} must be signed with an asymmetric algorithm (RS*, PS*, ES*, EdDSA)`)
    if (typeof claims.iss !== 'string') throw unauthorized(`${WHAT} is missing the "iss" claim`)
    const config = pickConfig(await this.store.oidcByIssuer(claims.iss), claims)
    const keys = this.keySet(await this.jwksUri(config))
    let payload: Record<string, unknown>
    try {
      const options = { issuer: config.issuer, audience: config.audience, algorithms: ASYMMETRIC_ALGORITHMS, clockTolerance: 30 }
      payload = (await jwtVerify(token, keys, { ...options, requiredClaims: ['sub', 'exp'] })).payload
    } catch (err) {
      throw jwtFailure(WHAT, err)
    }
    return { orgId: config.orgId, sub: payload.sub as string }
  }

  private keySet(uri: string): JWTVerifyGetKey {
    const problem = oidcUrlProblem(uri)
    if (problem) throw unauthorized(`${WHAT} could not be verified: the issuer's JWKS URL ${problem}`)
    let set = this.keySets.get(uri)
    if (!set) {
      const doFetch = this.options.fetch ?? fetch
      // Never follows redirects, and a recent failure answers at once without a new fetch.
      const guarded = async (url: string, init: RequestInit) => {
        const failedAt = this.jwksFailedAt.get(uri)
        if (failedAt !== undefined && Date.now() - failedAt < FAILURE_TTL_MS) throw new Error('the JWKS failed to load recently')
        try {
          const res = await doFetch(url, { ...init, redirect: 'manual' })
          // A key set past OIDC_MAX_BYTES is not read on (an answer without end would fill memory).
          const text = res.status === 200 ? await readCapped(res, OIDC_MAX_BYTES) : undefined
          if (text === undefined) {
            this.jwksFailedAt.set(uri, Date.now())
            return res.status === 200 ? new Response(null, { status: 502 }) : res
          }
          // A 200 that is not a key set (not JSON, or no "keys" list) is a failure like any other.
          if (isKeySet(text)) this.jwksFailedAt.delete(uri)
          else this.jwksFailedAt.set(uri, Date.now())
          return new Response(text, { status: 200, headers: res.headers })
        } catch (err) {
          this.jwksFailedAt.set(uri, Date.now())
          throw err
        }
      }
      set = createRemoteJWKSet(new URL(uri), {
        cooldownDuration: this.options.refreshCooldownMs,
        timeoutDuration: 5000,
        [customFetch]: guarded,
      })
      this.keySets.set(uri, set)
    }
    return set
  }

  /** The issuer's JWKS URL: configured, or discovered (kept an hour; a failure kept FAILURE_TTL_MS). */
  private jwksUri(config: OidcConfig): Promise<string> {
    if (config.jwksUri) return Promise.resolve(config.jwksUri)
    const hit = this.discovered.get(config.issuer)
    if (hit && Date.now() - hit.at < hit.ttl) return hit.uri
    const uri = this.discover(config.issuer)
    const entry = { at: Date.now(), ttl: DISCOVERY_TTL_MS, uri }
    this.discovered.set(config.issuer, entry)
    uri.catch(() => {
      entry.at = Date.now()
      entry.ttl = FAILURE_TTL_MS
    })
    return uri
  }

  private async discover(issuer: string): Promise<string> {
    const problem = oidcUrlProblem(issuer)
    if (problem) throw unauthorized(`${WHAT} could not be verified: the issuer URL ${problem}`)
    const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`
    const doFetch = this.options.fetch ?? fetch
    let res: Response
    try {
      res = await doFetch(url, { signal: AbortSignal.timeout(5000), redirect: 'manual' })
    } catch {
      throw unauthorized(`${WHAT} could not be verified: the issuer's discovery document could not be fetched (no answer)`)
    }
    if (res.status !== 200) throw unauthorized(`${WHAT} could not be verified: the issuer's discovery document answered HTTP ${res.status}`)
    const text = await readCapped(res, OIDC_MAX_BYTES)
    if (text === undefined) throw unauthorized(`${WHAT} could not be verified: the issuer's discovery document is larger than ${OIDC_MAX_BYTES} bytes`)
    let doc: { jwks_uri?: unknown } = {}
    try {
      doc = JSON.parse(text) ?? {}
    } catch {}
    if (typeof doc.jwks_uri === 'string') return doc.jwks_uri
    throw unauthorized(`${WHAT} could not be verified: the issuer's discovery document names no JWKS`)
  }
}

/** Whether a JWKS answer's body is a JSON object with a list of key objects. */
function isKeySet(text: string): boolean {
  try {
    const doc = JSON.parse(text) as { keys?: unknown }
    return Array.isArray(doc?.keys) && doc.keys.every((k) => typeof k === 'object' && k !== null)
  } catch {
    return false
  }
}

/**
 * The config a token is checked against: an org named by a configured org claim, else the one
 * org the issuer is bound to.
 */
function pickConfig(configs: OidcConfig[], claims: Record<string, unknown>): OidcConfig {
  if (configs.length === 0) throw unauthorized(`${WHAT} comes from an issuer no org accepts`)
  const claimed = configs.find((c) => c.orgClaim !== undefined && claims[c.orgClaim] === c.orgId)
  if (claimed) return claimed
  const bound = configs.filter((c) => c.orgClaim === undefined)
  if (bound.length === 1) return bound[0] as OidcConfig
  throw unauthorized(`${WHAT} does not name an org that accepts its issuer`)
}
