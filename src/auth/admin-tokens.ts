// Personal admin tokens (`gw_at_<id><secret>`, PRODUCT §18): made, hashed for storage, and their id read back.

import { hashKey, randomToken } from './service-keys'

const PREFIX = 'gw_at_'
const ID_LEN = 12

export function newAdminToken(): { id: string; token: string; hash: Uint8Array } {
  const idPart = randomToken(ID_LEN)
  const token = `${PREFIX}${idPart}${randomToken(32)}`
  return { id: `at_${idPart}`, token, hash: hashKey(token) }
}

export const isAdminTokenShaped = (credential: string) => credential.startsWith(PREFIX)

/** The id a presented token is stored under; undefined when it is not shaped like one gw made. */
export function adminTokenId(token: string): string | undefined {
  const idPart = token.slice(PREFIX.length, PREFIX.length + ID_LEN)
  return token.startsWith(PREFIX) && token.length === PREFIX.length + ID_LEN + 32 && /^[a-zA-Z0-9]+$/.test(token.slice(PREFIX.length))
    ? `at_${idPart}`
    : undefined
}
