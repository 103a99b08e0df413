// Encrypts secrets at rest (provider keys, signing secrets) with AES-256-GCM under GW_SECRET.

import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

export class SecretBox {
  private readonly key: Buffer

  /** Any string works as a secret: it is hashed to a 256-bit key. */
  constructor(secret: string) {
    this.key = createHash('sha256').update(`gw-secret-box:${secret}`).digest()
  }

  seal(plain: string): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.key, iv)
    const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
    return `v1:${iv.toString('base64')}:${cipher.getAuthTag().toString('base64')}:${ct.toString('base64')}`
  }

  open(sealed: string): string {
    const [v, iv, tag, ct] = sealed.split(':')
    if (v !== 'v1' || !iv || !tag || ct === undefined) throw new Error('sealed value has an unknown format')
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'))
    decipher.setAuthTag(Buffer.from(tag, 'base64'))
    try {
      return Buffer.concat([decipher.update(Buffer.from(ct, 'base64')), decipher.final()]).toString('utf8')
    } catch {
      throw new Error('cannot decrypt a stored secret: GW_SECRET differs from the one it was stored with')
    }
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
