// Vertex service-account tokens (src/providers/vertex/token-source.ts) against the fake Google token endpoint over a real socket.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { exportPKCS8, generateKeyPair } from 'jose'
import { GatewayError } from '../../src/errors'
import { CLOUD_PLATFORM_SCOPE, parseServiceAccountKey, type ServiceAccountKey, ServiceAccountTokenSource, type TokenFetch } from '../../src/providers/vertex/token-source'
import { type FakeGoogleOAuth, startFakeGoogleOAuth } from '../fakes/google-oauth'

const EMAIL = 'gw-test@example-project.iam.gserviceaccount.com'
const KEY_ID = 'f1e2d3c4b5a6978812345678'
let pem = ''
let foreignPem = ''
let publicKey: CryptoKey
const clock = { ms: Date.now() }
const now = () => clock.ms
let fake: FakeGoogleOAuth

beforeAll(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true })
  pem = await exportPKCS8(pair.privateKey)
  publicKey = pair.publicKey
  foreignPem = await exportPKCS8((await generateKeyPair('RS256', { extractable: true })).privateKey)
  fake = startFakeGoogleOAuth({ clientEmail: EMAIL, publicKey, keyId: KEY_ID, expiresIn: 3600, now, delayMs: 30 })
})
afterAll(() => fake.stop())

const keyFor = (privateKey: string, tokenUri = fake.tokenUri): ServiceAccountKey => ({ client_email: EMAIL, private_key: privateKey, private_key_id: KEY_ID, token_uri: tokenUri })

/** `fetch`, counted. */
function countingFetch(): { fetch: TokenFetch; calls: () => number } {
  let n = 0
  return { fetch: (url, init) => ((n += 1), fetch(url, init)), calls: () => n }
}

/** Every string form of an error and its causes: where a secret could leak. */
function everyText(err: unknown): string {
  const parts: string[] = []
  let e: unknown = err
  for (let depth = 0; e !== undefined && depth < 5; depth++) {
    parts.push(String(e), JSON.stringify(e) ?? '', e instanceof Error ? `${e.message}\n${e.stack ?? ''}` : '')
    e = e instanceof Error ? e.cause : undefined
  }
  return parts.join('\n')
}

async function rejection(p: Promise<unknown>): Promise<GatewayError> {
  try {
    await p
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError)
    return err as GatewayError
  }
  throw new Error('expected a rejection')
}

function expectNoKeyIn(err: unknown, ...keys: string[]) {
  const all = everyText(err)
  for (const k of keys) {
    const body = k.split('\n').filter((l) => l && !l.startsWith('-----'))
    for (const line of body) expect(all).not.toContain(line)
  }
  expect(all).not.toContain('PRIVATE KEY')
}

describe('Vertex service-account token source', () => {
  test('many concurrent callers share one token request; the grant is what Google expects', async () => {
    clock.ms = Date.now()
    const before = fake.grants.length
    const f = countingFetch()
    const src = new ServiceAccountTokenSource({ key: keyFor(pem), fetch: f.fetch, now })
    const tokens = await Promise.all(Array.from({ length: 50 }, () => src.token()))
    expect(f.calls()).toBe(1)
    expect(new Set(tokens).size).toBe(1)
    expect(tokens[0]).toBe(fake.issued.at(-1) ?? '')
    const g = fake.grants[before]
    expect(g?.status).toBe(200)
    expect(g?.contentType).toBe('application/x-www-form-urlencoded')
    expect(g?.form.grant_type).toBe('urn:ietf:params:oauth:grant-type:jwt-bearer')
    expect(g?.header).toEqual({ alg: 'RS256', typ: 'JWT', kid: KEY_ID })
    expect(g?.claims).toMatchObject({ iss: EMAIL, aud: fake.tokenUri, scope: CLOUD_PLATFORM_SCOPE })
    expect((g?.claims?.exp ?? 0) - (g?.claims?.iat ?? 0)).toBe(3600)
    expect(g?.claims?.iat).toBe(Math.floor(clock.ms / 1000))
  })

  test('the token is reused until 5 minutes before it expires, then refreshed once', async () => {
    clock.ms = Date.now()
    const f = countingFetch()
    const src = new ServiceAccountTokenSource({ key: keyFor(pem), fetch: f.fetch, now })
    const first = await src.token()
    clock.ms += 54 * 60_000
    expect(await src.token()).toBe(first)
    clock.ms += 59_000
    expect(await src.token()).toBe(first)
    expect(f.calls()).toBe(1)
    clock.ms += 2_000 // 55 min 1 s after: inside the last 5 minutes of the hour
    const [a, b] = await Promise.all([src.token(), src.token()])
    expect(a).not.toBe(first)
    expect(b).toBe(a)
    expect(f.calls()).toBe(2)
    expect(fake.grants.at(-1)?.status).toBe(200)
  })

  test('invalidate() makes the next call fetch a new token', async () => {
    clock.ms = Date.now()
    const f = countingFetch()
    const src = new ServiceAccountTokenSource({ key: keyFor(pem), fetch: f.fetch, now })
    const first = await src.token()
    src.invalidate()
    expect(await src.token()).not.toBe(first)
    expect(f.calls()).toBe(2)
  })

  test('a grant signed with a foreign key is refused (invalid_grant); the error names it without the key', async () => {
    clock.ms = Date.now()
    const src = new ServiceAccountTokenSource({ key: keyFor(foreignPem), fetch, now })
    const results = await Promise.allSettled([src.token(), src.token()])
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected'])
    expect(fake.grants.at(-1)).toMatchObject({ status: 400 })
    const err = await rejection(src.token())
    expect(err.status).toBe(502)
    expect(err.code).toBe('provider_error')
    expect(err.message).toBe('vertex: the token endpoint refused the service account grant (HTTP 400 invalid_grant: Invalid JWT Signature.)')
    expectNoKeyIn(err, foreignPem, pem)
    expect(everyText(err)).not.toContain(fake.grants.at(-1)?.form.assertion ?? '--none--')
  })

  test('a failure is not cached: the next call asks again', async () => {
    clock.ms = Date.now()
    let fails = true
    const flaky: TokenFetch = (url, init) => (fails ? Promise.resolve(Response.json({ error: 'internal_failure' }, { status: 503 })) : fetch(url, init))
    const src = new ServiceAccountTokenSource({ key: keyFor(pem), fetch: flaky, now })
    expect((await rejection(src.token())).message).toContain('HTTP 503 internal_failure')
    fails = false
    expect(await src.token()).toStartWith('ya29.fake-')
  })

  test('an expired grant clock is refused by the endpoint', async () => {
    clock.ms = Date.now()
    const src = new ServiceAccountTokenSource({ key: keyFor(pem), fetch, now: () => clock.ms - 2 * 3600_000 })
    expect((await rejection(src.token())).message).toContain('invalid_grant: Invalid JWT: Token must be a short-lived token')
  })

  test('an unusable private key or an unreachable endpoint fails clearly, without the key', async () => {
    const broken = pem.replace(/[A-Za-z]{20}/, 'AAAAAAAAAAAAAAAAAAAA')
    const e1 = await rejection(new ServiceAccountTokenSource({ key: keyFor(broken), fetch, now }).token())
    expect(e1.message).toBe("vertex: the service account's private_key is not a usable RSA key (PKCS#8 PEM)")
    expectNoKeyIn(e1, broken, pem)
    const closed = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') })
    const port = closed.port
    const dead = `http://127.0.0.1:${port}/token`
    await closed.stop(true)
    const e2 = await rejection(new ServiceAccountTokenSource({ key: keyFor(pem, dead), fetch, now }).token())
    expect(e2.message).toBe(`vertex: the token endpoint 127.0.0.1:${port} could not be reached (ECONNREFUSED)`)
    expectNoKeyIn(e2, pem)
  })

  test('an answer without access_token is an error, not a cached empty token', async () => {
    const odd: TokenFetch = () => Promise.resolve(Response.json({ token_type: 'Bearer' }))
    expect((await rejection(new ServiceAccountTokenSource({ key: keyFor(pem), fetch: odd, now }).token())).message).toContain('without an access_token')
  })

  test('parseServiceAccountKey checks the fields and never repeats a value', () => {
    const good = { type: 'service_account', client_email: EMAIL, private_key: pem, private_key_id: KEY_ID, token_uri: 'https://oauth2.googleapis.com/token' }
    expect(parseServiceAccountKey(good)).toEqual({ client_email: EMAIL, private_key: pem, private_key_id: KEY_ID, token_uri: 'https://oauth2.googleapis.com/token' })
    expect(() => parseServiceAccountKey({ ...good, private_key: undefined })).toThrow('the service account key has no "private_key"')
    const notPem = 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7'
    let err: unknown
    try {
      parseServiceAccountKey({ ...good, private_key: notPem })
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(GatewayError)
    expect(everyText(err)).not.toContain(notPem)
    expect(() => parseServiceAccountKey([])).toThrow('is not a JSON object')
  })
})
