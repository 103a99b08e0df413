// Stage 1: verify the caller's credential (GwKey, GwSigned or OIDC Bearer) and resolve its identity and org (401 on any failure).

import { isServiceKeyShaped, keyMatches, serviceKeyId } from '../auth/service-keys'
import { verifySignedToken } from '../auth/signed-tokens'
import { echo, GatewayError, unauthorized } from '../errors'
import { globMatch } from '../policy/model-access'
import type { AuthedContext, Deps, Identity, OrgContext } from './context'

const SCHEMES = 'GwKey <service key>, GwSigned <token> or Bearer <token>'

/** Three base64url parts: what an OIDC token (a JWT) looks like before it is verified. */
const JWT_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]*$/

/** A Bearer value that is neither a service key nor a JWT: say what was expected (an `sk-…` key is a provider's). */
function notGwBearer(credential: string): string {
  const providerKey = /^(sk-|sk_|AIza)/.test(credential)
    ? ' It looks like a provider API key: those are set on the org (admin API or OPENAI_API_KEY…), not sent by clients.'
    : ''
  return `The Bearer credential is neither a gw service key (gw_sk_…) nor an OIDC token (a JWT).${providerKey}`
}

/**
 * Splits `Authorization: <scheme> <credential>`. Without that header, `x-api-key` (how the Anthropic
 * SDKs and Claude Code send a key) is read as a Bearer credential: a gw key there is a GwKey.
 */
function readAuthorization(headers: Headers): { scheme: string; credential: string } {
  const apiKey = headers.get('x-api-key')?.trim()
  const raw = headers.get('authorization') ?? (apiKey ? `Bearer ${apiKey}` : null)
  if (!raw) throw unauthorized(`Missing Authorization header (expected ${SCHEMES}, or x-api-key)`)
  const m = /^\s*(\S+)\s+(\S+)\s*$/.exec(raw)
  if (!m) throw unauthorized(`Malformed Authorization header (expected ${SCHEMES})`)
  return { scheme: (m[1] as string).toLowerCase(), credential: m[2] as string }
}

async function verifyServiceKey(deps: Deps, key: string): Promise<Identity> {
  const rec = await deps.orgs.serviceKey(serviceKeyId(key))
  if (!rec || !keyMatches(key, rec.hash)) throw unauthorized('Invalid service key')
  if (rec.revokedAt) throw unauthorized('Service key has been revoked')
  const now = Date.now()
  // Checked on every request against the clock, so a key stops at its expiry (or its rotation's grace) to the millisecond, cached or not.
  if (rec.expiresAt !== undefined && Date.parse(rec.expiresAt) <= now) throw unauthorized('Service key has expired')
  deps.store.keys.touchServiceKey(rec.id, now)
  const identity: Identity = { orgId: rec.orgId, authMode: 'GwKey', subject: rec.id }
  if (rec.scopes) identity.scopes = rec.scopes
  if (rec.limits.requestsPerMinute !== undefined || rec.limits.tokensPerMinute !== undefined) identity.keyLimits = rec.limits
  return identity
}

async function verifySigned(deps: Deps, token: string): Promise<Identity> {
  const claims = await verifySignedToken(token, async (orgId) => (await deps.orgs.get(orgId))?.signingSecrets)
  return { orgId: claims.orgId, authMode: 'GwSigned', subject: claims.sub, endUserId: claims.endUserId ?? claims.sub }
}

async function verifyOidc(deps: Deps, token: string): Promise<Identity> {
  const { orgId, sub } = await deps.oidc.verify(token)
  return { orgId, authMode: 'Bearer', subject: sub, endUserId: sub }
}

export async function authenticate(deps: Deps, headers: Headers): Promise<{ identity: Identity; org: OrgContext }> {
  const { scheme, credential } = readAuthorization(headers)
  let identity: Identity
  if (scheme === 'gwkey' || (scheme === 'bearer' && isServiceKeyShaped(credential))) identity = await verifyServiceKey(deps, credential)
  else if (scheme === 'gwsigned') identity = await verifySigned(deps, credential)
  else if (scheme === 'bearer') {
    if (!JWT_SHAPE.test(credential)) throw unauthorized(notGwBearer(credential))
    identity = await verifyOidc(deps, credential)
  }
  else throw unauthorized(`Unsupported authorization scheme (expected ${SCHEMES})`)
  const org = await deps.orgs.get(identity.orgId)
  if (!org) throw unauthorized('The credential belongs to an org that no longer exists')
  return { identity, org }
}

/**
 * A scoped service key may call only the endpoints its scope names (PRODUCT §18): each entry is an
 * endpoint's declared path, `*` standing for any run of characters (a prompt run: `/v1/prompts/` `*` `/run`);
 * 403 `forbidden` otherwise.
 */
export function checkEndpointScope(ctx: Pick<AuthedContext, 'identity' | 'endpoint'>): void {
  const allowed = ctx.identity.scopes?.endpoints
  if (allowed && !allowed.some((g) => globMatch(g, ctx.endpoint)))
    throw new GatewayError(403, 'forbidden', `This service key may not call ${ctx.endpoint.slice(0, 128)}: its scope allows ${allowed.join(', ').slice(0, 512) || 'no endpoint'}`)
}

/** A scoped service key may use only the models its scope's globs match (PRODUCT §18); 403 `forbidden` otherwise. */
export function checkModelScope(identity: Identity, model: string): void {
  const allowed = identity.scopes?.models
  if (allowed && !allowed.some((g) => globMatch(g, model)))
    throw new GatewayError(403, 'forbidden', `This service key may not use the model ${echo(model)}: its scope allows ${allowed.join(', ').slice(0, 512) || 'no model'}`)
}
