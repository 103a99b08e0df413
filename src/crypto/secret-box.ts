// Encrypts secrets at rest (provider keys, signing secrets) with AES-256-GCM under a key derived from GW_SECRET; format in docs/security.md.

import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

/** A GW_SECRET given by the operator must be at least this long (generated ones are 43 characters). */
export const MIN_SECRET_CHARS = 32

const HKDF_INFO = 'gw-secret-box v2 aes-256-gcm'
const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64')

/**
 * What a sealed value is bound to (AES-GCM associated data): the row it belongs in. A value copied
 * into another row (another org, another provider, another kid) does not decrypt.
 */
export const sealedFor = {
  /** The key named `default` keeps the binding it had before keys had names. */
  providerKey: (orgId: string, provider: string, name = 'default') =>
    `provider_keys/${orgId}/${provider}${name === 'default' ? '' : `/${name}`}`,
  signingSecret: (orgId: string, kid: string) => `signing_secrets/${orgId}/${kid}`,
}

/**
 * `v2:<salt>:<iv>:<tag>:<ciphertext>` (base64 fields): the key is HKDF-SHA256 of the secret with a
 * random 16-byte salt stored in the value itself, and the row's identity is the associated data.
 * `v1:<iv>:<tag>:<ciphertext>` values (one SHA-256 of the secret, no associated data) are still
 * read; stores rewrite them as v2 when they open (isLegacy).
 */
export class SecretBox {
  private readonly secret: Buffer
  private readonly legacyKey: Buffer

  constructor(secret: string) {
    this.secret = Buffer.from(secret, 'utf8')
    this.legacyKey = createHash('sha256').update(`gw-secret-box:${secret}`).digest()
  }

  seal(plain: string, boundTo: string): string {
    const salt = randomBytes(16)
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.keyFor(salt), iv)
    cipher.setAAD(Buffer.from(boundTo, 'utf8'))
    const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
    return `v2:${b64(salt)}:${b64(iv)}:${b64(cipher.getAuthTag())}:${b64(ct)}`
  }

  open(sealed: string, boundTo: string): string {
    const parts = sealed.split(':')
    let key: Buffer
    let fields: string[]
    if (parts[0] === 'v2' && parts.length === 5) {
      key = this.keyFor(Buffer.from(parts[1] as string, 'base64'))
      fields = parts.slice(2)
    } else if (parts[0] === 'v1' && parts.length === 4) {
      key = this.legacyKey
      fields = parts.slice(1)
    } else {
      throw new Error('sealed value has an unknown format')
    }
    const [iv, tag, ct] = fields as [string, string, string]
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'))
    if (parts[0] === 'v2') decipher.setAAD(Buffer.from(boundTo, 'utf8'))
    decipher.setAuthTag(Buffer.from(tag, 'base64'))
    try {
      return Buffer.concat([decipher.update(Buffer.from(ct, 'base64')), decipher.final()]).toString('utf8')
    } catch {
      throw new Error('cannot decrypt a stored secret: GW_SECRET differs from the one it was stored with, or the value was moved from another row')
    }
  }

  /** A value in the old format, to be rewritten with seal(). */
  static isLegacy(sealed: string): boolean {
    return sealed.startsWith('v1:')
  }

  private keyFor(salt: Uint8Array): Buffer {
    return Buffer.from(hkdfSync('sha256', this.secret, salt, HKDF_INFO, 32))
  }
}

/**
 * GW_SECRET when set; otherwise the secret file beside the database (created with mode 0600 on
 * first start). An in-memory database gets a throwaway secret.
 */
export function resolveSecret(envSecret: string | undefined, dbPath: string): string {
  if (envSecret) return envSecret
  if (dbPath === ':memory:') return randomBytes(32).toString('base64url')
  const file = join(dirname(dbPath), 'gw.secret')
  if (existsSync(file)) {
    const secret = readFileSync(file, 'utf8').trim()
    // Never derive the key from an empty string: that secret would be no secret at all.
    if (!secret)
      throw new Error(`the secret file ${file} is empty; restore it, or delete it if no provider keys are stored yet`)
    return secret
  }
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
  const secret = randomBytes(32).toString('base64url')
  // Written whole or not at all: a full disk must not leave an empty secret file behind.
  const partial = `${file}.${process.pid}.tmp`
  try {
    writeFileSync(partial, `${secret}\n`, { mode: 0o600 })
    chmodSync(partial, 0o600)
    renameSync(partial, file)
  } finally {
    rmSync(partial, { force: true })
  }
  return secret
}
