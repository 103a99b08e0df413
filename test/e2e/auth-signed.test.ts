// GwSigned tokens end to end: a caller's backend signs with jose, gw verifies; every way a token can be wrong is a 401.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generateKeyPair, SignJWT } from 'jose'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let openai: FakeUpstream
let gw: TestGateway
let acmeKey: string
const ACME_SECRET = 'acme-signing-secret-0123456789-abcdefghij'
const OTHER_SECRET = 'other-signing-secret-0123456789-abcdefghi'
const hello = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }
const now = () => Math.floor(Date.now() / 1000)

beforeAll(async () => {
  openai = await startFake('openai')
  gw = await startTestGateway({ openai })
  for (const id of ['acme', 'other']) {
    expect((await gw.admin('POST', '/orgs', { id, name: id })).status).toBe(201)
    await gw.admin('PUT', `/orgs/${id}/providers/openai`, { apiKey: openai.apiKey, baseUrl: openai.url })
  }
  expect((await gw.admin('POST', '/orgs/acme/signing-secrets', { kid: 'k1', secret: ACME_SECRET })).status).toBe(201)
  await gw.admin('POST', '/orgs/other/signing-secrets', { kid: 'k-other', secret: OTHER_SECRET })
  acmeKey = ((await (await gw.admin('POST', '/orgs/acme/service-keys', {})).json()) as { key: string }).key
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
})

/** What a caller's backend does: a few lines of jose. */
function sign(claims: Record<string, unknown>, opts: { secret?: string; kid?: string | null; alg?: string } = {}) {
  const header: Record<string, string> = { alg: opts.alg ?? 'HS256', typ: 'JWT' }
  if (opts.kid !== null) header.kid = opts.kid ?? 'k1'
  return new SignJWT(claims).setProtectedHeader(header as { alg: string }).sign(new TextEncoder().encode(opts.secret ?? ACME_SECRET))
}
const valid = (extra: Record<string, unknown> = {}) => ({ sub: 'user-42', orgId: 'acme', iat: now(), ttl: 600, ...extra })

async function chatAs(token: string, headers: Record<string, string> = {}, body: object = hello) {
  const res = await gw.chat(body, { authorization: `GwSigned ${token}`, ...headers })
  return { res, body: (await res.json()) as Record<string, unknown> }
}

async function expect401(token: string, message: RegExp) {
  const { res, body } = await chatAs(token)
  expect(res.status).toBe(401)
  expect(body).toMatchObject({ error: true, code: 'unauthorized', requestId: res.headers.get('x-gw-request-id') })
  expect(body.message as string).toMatch(message)
  expect(JSON.stringify(body)).not.toContain(token)
  expect(JSON.stringify(body)).not.toContain(ACME_SECRET)
}

test('a valid token is accepted; auth mode, subject and end user are on the response and log entry', async () => {
  const sent = openai.requests.length
  const { res, body } = await chatAs(await sign(valid({ endUserId: 'end-user-7' })), { 'x-gw-end-user-id': 'from-header' })
  expect(res.status).toBe(200)
  expect(res.headers.get('x-gw-auth-mode')).toBe('GwSigned')
  expect(body.object).toBe('chat.completion')
  expect(openai.requests.length).toBe(sent + 1)
  const entry = await gw.log(res.headers.get('x-gw-request-id') as string, acmeKey)
  expect(entry).toMatchObject({ orgId: 'acme', authMode: 'GwSigned', subject: 'user-42', endUserId: 'end-user-7' })
})

test('without an endUserId claim the logged end user is sub, ahead of the header and the body user', async () => {
  const { res } = await chatAs(await sign(valid()), { 'x-gw-end-user-id': 'from-header' }, { ...hello, user: 'from-body' })
  expect(res.status).toBe(200)
  const entry = await gw.log(res.headers.get('x-gw-request-id') as string, acmeKey)
  expect(entry).toMatchObject({ endUserId: 'user-42', user: 'from-body' })
})

test('a token with exp and no ttl is accepted; 30 s of clock leeway', async () => {
  expect((await chatAs(await sign({ sub: 's', orgId: 'acme', iat: now(), exp: now() + 60 }))).res.status).toBe(200)
  expect((await chatAs(await sign(valid({ iat: now() - 620 })))).res.status).toBe(200) // expired 20 s ago
  expect((await chatAs(await sign(valid({ iat: now() + 20 })))).res.status).toBe(200) // clock 20 s ahead
})

describe('every way a signed token can be wrong is a 401 that says which', () => {
  test('expired (ttl, and exp earlier than iat + ttl)', async () => {
    await expect401(await sign(valid({ iat: now() - 700 })), /expired/)
    await expect401(await sign(valid({ exp: now() - 40 })), /expired/)
  })
  test('not yet valid', async () => {
    await expect401(await sign(valid({ iat: now() + 120 })), /not yet valid/)
    await expect401(await sign(valid({ nbf: now() + 120 })), /not yet valid/)
  })
  test('wrong secret, another org’s secret, tampered payload', async () => {
    await expect401(await sign(valid(), { secret: 'a-completely-different-secret-of-40-chars' }), /invalid signature/)
    await expect401(await sign(valid(), { secret: OTHER_SECRET, kid: 'k-other' }), /kid/)
    await expect401(await sign(valid(), { secret: OTHER_SECRET, kid: null }), /invalid signature/)
    const [h, , s] = (await sign(valid())).split('.')
    const forged = Buffer.from(JSON.stringify({ ...valid(), sub: 'admin' })).toString('base64url')
    await expect401(`${h}.${forged}.${s}`, /invalid signature/)
  })
  test('alg none and an RS256 token are refused (algorithm confusion)', async () => {
    const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify(valid())).toString('base64url')}.`
    await expect401(none, /HS256/)
    const { privateKey } = await generateKeyPair('RS256')
    const rs = await new SignJWT(valid()).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).sign(privateKey)
    await expect401(rs, /HS256/)
  })
  test('missing claims', async () => {
    const { sub, orgId, iat, ...rest } = valid()
    await expect401(await sign({ orgId, iat, ttl: 60 }), /"sub"/)
    await expect401(await sign({ sub, iat, ttl: 60 }), /"orgId"/)
    await expect401(await sign({ sub, orgId, ttl: 60 }), /"iat"/)
    await expect401(await sign({ sub, orgId, iat, ...rest, ttl: undefined }), /"ttl" or an "exp"/)
  })
  test('unknown kid, unknown org, ttl over 24 h', async () => {
    await expect401(await sign(valid(), { kid: 'k9' }), /kid/)
    await expect401(await sign(valid({ orgId: 'nobody' })), /org that does not exist/)
    await expect401(await sign(valid({ ttl: 86_401 })), /over 24 h/)
    await expect401(await sign(valid({ exp: now() + 90_000, ttl: undefined })), /over 24 h/)
  })
  test('malformed tokens and unknown schemes', async () => {
    await expect401('not-a-jwt', /malformed/)
    await expect401('a.b.c', /malformed/)
    const res = await gw.chat(hello, { authorization: 'Basic dXNlcjpwYXNz' })
    expect(res.status).toBe(401)
    expect(((await res.json()) as { message: string }).message).toMatch(/Unsupported authorization scheme/)
  })
})

test('secrets rotate: two kids work side by side, a deleted one stops at once', async () => {
  const created = await gw.admin('POST', '/orgs/acme/signing-secrets', {})
  expect(created.status).toBe(201)
  const k2 = (await created.json()) as { kid: string; secret: string }
  expect(k2.secret.length).toBeGreaterThanOrEqual(32)
  const oldToken = await sign(valid())
  const newToken = await sign(valid(), { kid: k2.kid, secret: k2.secret })
  expect((await chatAs(oldToken)).res.status).toBe(200)
  expect((await chatAs(newToken)).res.status).toBe(200)
  // The org description lists kids, never secrets.
  const org = await (await gw.admin('GET', '/orgs/acme')).text()
  expect(org).toContain(k2.kid)
  expect(org).not.toContain(k2.secret)
  expect(org).not.toContain(ACME_SECRET)

  expect((await gw.admin('DELETE', '/orgs/acme/signing-secrets/k1')).status).toBe(204)
  await expect401(oldToken, /kid/)
  expect((await chatAs(newToken)).res.status).toBe(200)
  await gw.admin('POST', '/orgs/acme/signing-secrets', { kid: 'k1', secret: ACME_SECRET })
})

test('signing secrets are at least 32 characters and kids are unique', async () => {
  const short = await gw.admin('POST', '/orgs/acme/signing-secrets', { secret: 'too-short' })
  expect(short.status).toBe(400)
  expect(await short.text()).not.toContain('too-short"')
  const dup = await gw.admin('POST', '/orgs/other/signing-secrets', { kid: 'k-other', secret: OTHER_SECRET })
  expect(dup.status).toBe(409)
})

test('a signed token may not read logs (403 forbidden), a service key of the org may', async () => {
  const token = await sign(valid())
  const { res } = await chatAs(token)
  const id = res.headers.get('x-gw-request-id') as string
  const denied = await fetch(`${gw.url}/v1/logs/${id}`, { headers: { authorization: `GwSigned ${token}` } })
  expect(denied.status).toBe(403)
  expect((await denied.json()) as object).toMatchObject({ error: true, code: 'forbidden' })
  const list = await fetch(`${gw.url}/v1/logs`, { headers: { authorization: `GwSigned ${token}` } })
  expect(list.status).toBe(403)
  const entry = await gw.log(id, acmeKey)
  expect(JSON.stringify(entry)).not.toContain(token)
})
