// The admin API: orgs, provider keys (masked, encrypted at rest), service keys (shown once, revocable), policy.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway'

let openai: FakeUpstream
let gw: TestGateway
let dir: string

beforeAll(async () => {
  openai = await startFake('openai')
  dir = mkdtempSync(join(tmpdir(), 'gw-admin-'))
  gw = await startTestGateway({ openai }, { GW_DB: join(dir, 'gw.db') })
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
  rmSync(dir, { recursive: true, force: true })
})

const hello = [{ role: 'user', content: 'hi' }]

test('the admin API needs the admin token', async () => {
  const none = await fetch(`${gw.url}/admin/orgs/default`)
  expect(none.status).toBe(401)
  const wrong = await fetch(`${gw.url}/admin/orgs/default`, { headers: { authorization: 'Bearer not-the-token-000000' } })
  expect(wrong.status).toBe(401)
  expect((await wrong.json()) as object).toMatchObject({ error: true, code: 'unauthorized' })
  const ok = await fetch(`${gw.url}/admin/orgs/default`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  expect(ok.status).toBe(200)
})

test('without GW_ADMIN_TOKEN /admin does not exist', async () => {
  const other = await startTestGateway({ openai }, { GW_ADMIN_TOKEN: '' })
  try {
    const res = await fetch(`${other.url}/admin/orgs/default`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(res.status).toBe(404)
  } finally {
    await other.stop()
  }
})

describe('an org set up entirely through the admin API', () => {
  test('create org, provider key, service key; chat works; revocation is immediate', async () => {
    const created = await gw.admin('POST', '/orgs', { id: 'acme', name: 'Acme' })
    expect(created.status).toBe(201)
    expect(await created.json()).toEqual({ id: 'acme', name: 'Acme' })
    expect((await gw.admin('POST', '/orgs', { id: 'acme', name: 'Again' })).status).toBe(409)

    const secretKey = 'sk-acme-very-secret-provider-key-1234'
    const prov = await gw.admin('PUT', '/orgs/acme/providers/openai', { apiKey: secretKey, baseUrl: openai.url })
    expect(prov.status).toBe(200)
    const provBody = (await prov.json()) as Record<string, unknown>
    expect(provBody.apiKey).toBe('sk-…1234')
    expect(JSON.stringify(provBody)).not.toContain(secretKey)

    const keyRes = await gw.admin('POST', '/orgs/acme/service-keys', { name: 'ci' })
    expect(keyRes.status).toBe(201)
    const { id, key } = (await keyRes.json()) as { id: string; key: string }
    expect(key).toMatch(/^gw_sk_/)

    // The org's own provider key reaches the upstream (the fake accepts only its own key, so expect 502).
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello }, { authorization: `GwKey ${key}` })
    expect(res.status).toBe(502)
    expect(openai.requests.at(-1)?.headers.authorization).toBe(`Bearer ${secretKey}`)
    const body = await res.text()
    expect(body).not.toContain(secretKey)

    const described = await (await gw.admin('GET', '/orgs/acme')).json()
    expect(JSON.stringify(described)).not.toContain(secretKey)
    expect(JSON.stringify(described)).not.toContain(key)
    expect(described).toMatchObject({ id: 'acme', providers: [{ provider: 'openai', apiKey: 'sk-…1234', enabled: true }] })

    expect((await gw.admin('DELETE', `/orgs/acme/service-keys/${id}`)).status).toBe(204)
    const after = await gw.chat({ model: 'openai/gpt-4o', messages: hello }, { authorization: `GwKey ${key}` })
    expect(after.status).toBe(401)
    expect(((await after.json()) as { message: string }).message).toContain('revoked')
    expect((await gw.admin('DELETE', `/orgs/acme/service-keys/${id}`)).status).toBe(404)
  })

  test('provider keys and service keys are not stored in clear', () => {
    const db = new Database(join(dir, 'gw.db'), { readonly: true })
    try {
      const dump = JSON.stringify(db.query('SELECT * FROM provider_keys').all()) + JSON.stringify(db.query('SELECT * FROM service_keys').all())
      expect(dump).not.toContain('sk-acme-very-secret-provider-key-1234')
      expect(dump).not.toContain(openai.apiKey)
      expect(dump).not.toContain(gw.key)
    } finally {
      db.close()
    }
  })

  test('policy is stored and validated', async () => {
    const policy = { allowedModels: ['openai/*'], maxTokens: 1000, requestsPerMinute: 60, blockedTerms: ['secret'] }
    const res = await gw.admin('PUT', '/orgs/acme/policy', policy)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual(policy)
    expect(((await (await gw.admin('GET', '/orgs/acme')).json()) as { policy: unknown }).policy).toEqual(policy)
    const bad = await gw.admin('PUT', '/orgs/acme/policy', { maxTokens: -1 })
    expect(bad.status).toBe(400)
    const unknownField = await gw.admin('PUT', '/orgs/acme/policy', { maxTokenz: 5 })
    expect(unknownField.status).toBe(400)
  })

  test('bad admin input gets clear 400s and 404s', async () => {
    expect((await gw.admin('POST', '/orgs', { id: 'Bad Id!', name: 'x' })).status).toBe(400)
    expect((await gw.admin('POST', '/orgs', {})).status).toBe(400)
    expect((await gw.admin('GET', '/orgs/nope')).status).toBe(404)
    expect((await gw.admin('PUT', '/orgs/acme/providers/acmeai', { apiKey: 'x' })).status).toBe(400)
    expect((await gw.admin('PUT', '/orgs/acme/providers/openai', { apiKey: 'x', baseUrl: 'ftp://x' })).status).toBe(400)
    const malformed = await fetch(`${gw.url}/admin/orgs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: '{"name":',
    })
    expect(malformed.status).toBe(400)
  })
})
