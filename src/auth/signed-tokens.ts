// GwSigned tokens (PRODUCT §8): HS256 compact JWS made and checked with jose against an org's signing secrets.

import { jwtVerify, SignJWT } from 'jose'
import { unauthorized } from '../errors'
import type { SigningSecretRecord } from '../domain/org'
import { jwtFailure, peekJwt } from './jwt-errors'

export const MAX_TTL_SECONDS = 24 * 60 * 60
export const LEEWAY_SECONDS = 30
const WHAT = 'Signed token'

export interface SignedClaims {
  sub: string
  orgId: string
  endUserId: string | undefined
  /** Expiry, epoch seconds. */
  expiresAt: number
}

export interface SignInput {
  sub: string
  orgId: string
  ttl: number
  endUserId?: string
  /** Epoch seconds; now by default. */
  iat?: number
}

const keyOf = (secret: string) => new TextEncoder().encode(secret)

/** Signs a token the way a caller's backend does (used by `gw token sign`, tests and docs). */
export function signToken(secret: SigningSecretRecord, input: SignInput): Promise<string> {
  const claims: Record<string, unknown> = { orgId: input.orgId, ttl: input.ttl }
  if (input.endUserId !== undefined) claims.endUserId = input.endUserId
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: secret.kid })
    .setSubject(input.sub)
    .setIssuedAt(input.iat ?? Math.floor(Date.now() / 1000))
    .sign(keyOf(secret.secret))
}

/** Finds an org's signing secrets; undefined when the org does not exist. */
export type SecretsOf = (orgId: string) => Promise<readonly SigningSecretRecord[] | undefined>

/**
 * Reads the claimed org and `kid` (unverified) to pick the secret, verifies the signature with it
 * (or with each of the org's secrets when there is no `kid`), then checks the claims.
 */
export async function verifySignedToken(token: string, secretsOf: SecretsOf, now = Date.now()): Promise<SignedClaims> {
  const { alg, kid, claims } = peekJwt(WHAT, token)
  if (alg !== 'HS256') throw unauthorized(`${WHAT} must be signed with HS256`)
  if (typeof claims.orgId !== 'string' || claims.orgId === '') throw unauthorized(`${WHAT} is missing the "orgId" claim`)
  const secrets = await secretsOf(claims.orgId)
  if (!secrets) throw unauthorized(`${WHAT} names an org that does not exist`)
  if (secrets.length === 0) throw unauthorized(`${WHAT} cannot be checked: its org has no signing secrets`)
  const candidates = kid === undefined ? secrets : secrets.filter((s) => s.kid === kid)
  if (candidates.length === 0) throw unauthorized(`${WHAT} names a signing key id (kid) its org does not have`)
  let payload: Record<string, unknown> | undefined
  let failure: unknown
  for (const s of candidates) {
    try {
      const options = { algorithms: ['HS256'], clockTolerance: LEEWAY_SECONDS, currentDate: new Date(now) }
      payload = (await jwtVerify(token, keyOf(s.secret), options)).payload
      break
    } catch (err) {
      failure = err
    }
  }
  if (!payload) throw jwtFailure(WHAT, failure)
  return checkClaims(payload, Math.floor(now / 1000))
}

function checkClaims(c: Record<string, unknown>, nowSec: number): SignedClaims {
  for (const name of ['sub', 'orgId'] as const)
    if (typeof c[name] !== 'string' || c[name] === '') throw unauthorized(`${WHAT} is missing the "${name}" claim`)
  if (typeof c.iat !== 'number') throw unauthorized(`${WHAT} is missing the "iat" claim`)
  const iat = c.iat
  if (c.ttl !== undefined && (typeof c.ttl !== 'number' || !(c.ttl > 0)))
    throw unauthorized(`${WHAT} has an invalid "ttl" claim (positive seconds expected)`)
  if (c.ttl === undefined && typeof c.exp !== 'number') throw unauthorized(`${WHAT} needs a "ttl" or an "exp" claim`)
  if (typeof c.ttl === 'number' && c.ttl > MAX_TTL_SECONDS) throw unauthorized(`${WHAT} ttl is over 24 h`)
  const ends = [typeof c.ttl === 'number' ? iat + c.ttl : Infinity, typeof c.exp === 'number' ? c.exp : Infinity]
  const expiresAt = Math.min(...ends)
  if (expiresAt - iat > MAX_TTL_SECONDS) throw unauthorized(`${WHAT} lifetime is over 24 h`)
  if (iat > nowSec + LEEWAY_SECONDS) throw unauthorized(`${WHAT} is not yet valid (issued in the future)`)
  if (nowSec > expiresAt + LEEWAY_SECONDS) throw unauthorized(`${WHAT} has expired`)
  const endUserId = typeof c.endUserId === 'string' && c.endUserId !== '' ? c.endUserId : undefined
  return { sub: c.sub as string, orgId: c.orgId as string, endUserId, expiresAt }
}
