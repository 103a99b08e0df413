// Stage 1: verify the caller's credential and resolve its identity and org (401 on any failure).

import { isServiceKeyShaped, keyMatches, serviceKeyId } from '../auth/service-keys'
import { unauthorized } from '../errors'
import type { Deps, Identity, OrgContext } from './context'

/** Splits `Authorization: <scheme> <credential>`. */
function readAuthorization(headers: Headers): { scheme: string; credential: string } {
  const raw = headers.get('authorization')
  if (!raw) throw unauthorized('Missing Authorization header (expected "GwKey <service key>")')
  const m = /^\s*(\S+)\s+(\S+)\s*$/.exec(raw)
  if (!m) throw unauthorized('Malformed Authorization header (expected "<scheme> <credential>")')
  return { scheme: (m[1] as string).toLowerCase(), credential: m[2] as string }
}

async function verifyServiceKey(deps: Deps, key: string): Promise<Identity> {
  const rec = await deps.store.keys.getServiceKey(serviceKeyId(key))
  if (!rec || !keyMatches(key, rec.hash)) throw unauthorized('Invalid service key')
  if (rec.revokedAt) throw unauthorized('Service key has been revoked')
  deps.store.keys.touchServiceKey(rec.id, new Date())
  return { orgId: rec.orgId, authMode: 'GwKey', subject: rec.id }
}

export async function authenticate(deps: Deps, headers: Headers): Promise<{ identity: Identity; org: OrgContext }> {
  const { scheme, credential } = readAuthorization(headers)
  let identity: Identity
  if (scheme === 'gwkey' || (scheme === 'bearer' && isServiceKeyShaped(credential))) {
    identity = await verifyServiceKey(deps, credential)
  } else {
    throw unauthorized(`Unsupported authorization scheme "${scheme}" (expected GwKey)`)
  }
  const org = await deps.orgs.get(identity.orgId)
  if (!org) throw unauthorized('The credential belongs to an org that no longer exists')
  return { identity, org }
}
