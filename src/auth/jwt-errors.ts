// Turns jose's verification errors into 401 messages that say what was wrong, never echoing the token.

import { errors } from 'jose'
import { unauthorized } from '../errors'
import type { GatewayError } from '../errors'

export function jwtFailure(what: string, err: unknown): GatewayError {
  if (err instanceof errors.JWTExpired) return unauthorized(`${what} has expired`)
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'nbf' || err.claim === 'iat') return unauthorized(`${what} is not yet valid`)
    if (err.claim === 'aud') return unauthorized(`${what} has the wrong audience`)
    if (err.claim === 'iss') return unauthorized(`${what} has the wrong issuer`)
    return unauthorized(`${what} has an invalid "${err.claim}" claim (${err.reason})`)
  }
  if (err instanceof errors.JOSEAlgNotAllowed) return unauthorized(`${what} uses a signing algorithm that is not accepted`)
  if (err instanceof errors.JWSSignatureVerificationFailed) return unauthorized(`${what} has an invalid signature`)
  if (err instanceof errors.JWKSNoMatchingKey) return unauthorized(`${what} is signed with a key the issuer does not publish`)
  if (err instanceof errors.JWKSTimeout) return unauthorized(`${what} could not be verified: the issuer's keys did not arrive in time`)
  if (err instanceof errors.JOSEError) return unauthorized(`${what} is malformed or invalid`)
  return unauthorized(`${what} could not be verified`)
}

/** Reads a JWT's header and claims without verifying them, only to find what to verify with. */
export function peekJwt(what: string, token: string): { alg: string; kid: string | undefined; claims: Record<string, unknown> } {
  const parts = token.split('.')
  if (parts.length !== 3) throw unauthorized(`${what} is malformed (expected a compact JWS: three dot-separated parts)`)
  try {
    const header = JSON.parse(Buffer.from(parts[0] as string, 'base64url').toString('utf8')) as unknown
    const claims = JSON.parse(Buffer.from(parts[1] as string, 'base64url').toString('utf8')) as unknown
    if (!isObject(header) || !isObject(claims)) throw new Error('not objects')
    const alg = typeof header.alg === 'string' ? header.alg : ''
    const kid = typeof header.kid === 'string' ? header.kid : undefined
    return { alg, kid, claims }
  } catch {
    throw unauthorized(`${what} is malformed (its header or claims are not base64url JSON objects)`)
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
