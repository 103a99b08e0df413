// Service keys: how they are made (`gw_sk_<id><secret>`), hashed for storage and checked.

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

const PREFIX = 'gw_sk_'
const ID_LEN = 12
const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'

/** `n` random characters of [a-zA-Z0-9]. */
export function randomToken(n: number): string {
  const bytes = randomBytes(n)
  let out = ''
  for (const b of bytes) out += ALPHABET[b % 62]
  return out
}

export function hashKey(key: string): Uint8Array {
  return Bun.SHA256.hash(key) as Uint8Array
}

/** A new key; `id` is its public part (shown in listings and used to revoke it). */
export function newServiceKey(): { id: string; key: string; hash: Uint8Array } {
  const idPart = randomToken(ID_LEN)
  const key = `${PREFIX}${idPart}${randomToken(32)}`
  return { id: `sk_${idPart}`, key, hash: hashKey(key) }
}

/**
 * The id a presented key is stored under: the embedded id for keys gw made, a hash-derived one
 * for operator-chosen keys (GW_SERVICE_KEY may have any shape).
 */
export function serviceKeyId(key: string): string {
  const idPart = key.slice(PREFIX.length, PREFIX.length + ID_LEN)
  if (key.startsWith(PREFIX) && key.length === PREFIX.length + ID_LEN + 32 && /^[a-zA-Z0-9]+$/.test(idPart))
    return `sk_${idPart}`
  return `sk_h${createHash('sha256').update(key).digest('hex').slice(0, ID_LEN - 1)}`
}

export function isServiceKeyShaped(credential: string): boolean {
  return credential.startsWith(PREFIX)
}

/** Constant-time comparison of a presented key against a stored hash. */
export function keyMatches(key: string, hash: Uint8Array): boolean {
  const h = hashKey(key)
  return h.length === hash.length && timingSafeEqual(h, hash)
}
