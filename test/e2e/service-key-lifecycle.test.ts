// Service keys that expire, rotate and stay in scope (PRODUCT §18): 401 from the moment a key expires, a rotation's
// grace honoured to the second, 403 outside a key's endpoints and models (the provider never asked), last use shown.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let openai: FakeUpstream
let gw: TestGateway

beforeAll(async () => {
  openai = await startFake('openai')
  gw = await startTestGateway({ openai })
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
})

const hello = [{ role: 'user', content: 'hi' }]
const chat = (key: string, model = 'openai/gpt-4o-mini') => gw.chat({ model, messages: hello }, { authorization: `GwKey ${key}` })

interface KeyView {
  id: string
  name: string | null
  expiresAt: string | null
  revokedAt: string | null
  lastUsedAt: string | null
  scopes: { endpoints?: string[]; models?: string[] } | null
  requestsPerMinute?: number
}

async function createKey(body: Record<string, unknown>): Promise<{ id: string; key: string }> {
  const res = await gw.admin('POST', '/orgs/default/service-keys', body)
  expect(res.status).toBe(201)
  return (await res.json()) as { id: string; key: string }
}

async function keyView(id: string): Promise<KeyView> {
  const list = (await (await gw.admin('GET', '/orgs/default/service-keys')).json()) as { data: KeyView[] }
  return list.data.find((k) => k.id === id) as KeyView
}

/** Sleeps until `at` (epoch ms). */
const until = (at: number) => Bun.sleep(Math.max(0, at - Date.now()))

describe('expiry', () => {
  test('a key works until its expiresAt and is 401 from that moment, cached or not', async () => {
    const expiresAt = new Date(Math.ceil((Date.now() + 1500) / 1000) * 1000)
    const { id, key } = await createKey({ name: 'short-lived', expiresAt: expiresAt.toISOString() })
    expect((await keyView(id)).expiresAt).toBe(expiresAt.toISOString())
    expect((await chat(key)).status).toBe(200)
    await until(expiresAt.getTime() - 250)
    expect((await chat(key)).status).toBe(200)
    await until(expiresAt.getTime() + 5)
    const sent = openai.requests.length
    const res = await chat(key)
    expect(res.status).toBe(401)
    expect(await res.json()).toMatchObject({ error: true, code: 'unauthorized', message: 'Service key has expired' })
    expect(openai.requests.length).toBe(sent)
  })

  test('an expiry in the past or not an ISO time is 400, naming the field', async () => {
    for (const expiresAt of ['2001-01-01T00:00:00Z', 'tomorrow', '1767225600000']) {
      const res = await gw.admin('POST', '/orgs/default/service-keys', { expiresAt })
      expect(res.status).toBe(400)
      expect(((await res.json()) as { message: string }).message).toContain('expiresAt')
    }
  })
})

describe('rotation', () => {
  test('the new key has the old one’s name, scopes and limits; the old one works until the grace ends, to the second', async () => {
    const old = await createKey({ name: 'deploy', requestsPerMinute: 1000, scopes: { models: ['openai/*'] } })
    expect((await chat(old.key)).status).toBe(200)
    const res = await gw.admin('POST', `/orgs/default/service-keys/${old.id}/rotate`, { graceSeconds: 2 })
    expect(res.status).toBe(201)
    const rotated = (await res.json()) as { id: string; key: string; oldKeyExpiresAt: string }
    expect(rotated.key).toMatch(/^gw_sk_/)
    expect(rotated.id).not.toBe(old.id)
    const graceEnd = Date.parse(rotated.oldKeyExpiresAt)
    expect(graceEnd - Date.now()).toBeWithin(1000, 2001)
    expect(await keyView(rotated.id)).toMatchObject({ name: 'deploy', requestsPerMinute: 1000, scopes: { models: ['openai/*'] }, expiresAt: null })
    expect(await keyView(old.id)).toMatchObject({ expiresAt: rotated.oldKeyExpiresAt, revokedAt: null })
    expect((await chat(rotated.key)).status).toBe(200)
    await until(graceEnd - 300)
    expect((await chat(old.key)).status).toBe(200)
    await until(graceEnd + 5)
    expect((await chat(old.key)).status).toBe(401)
    expect((await chat(rotated.key)).status).toBe(200)
    // An expired key cannot be rotated again.
    expect((await gw.admin('POST', `/orgs/default/service-keys/${old.id}/rotate`, {})).status).toBe(404)
  })

  test('without a grace the old key stops at once', async () => {
    const old = await createKey({ name: 'no-grace' })
    expect((await chat(old.key)).status).toBe(200) // now cached on this instance
    const res = await gw.admin('POST', `/orgs/default/service-keys/${old.id}/rotate`)
    expect(res.status).toBe(201)
    const { key } = (await res.json()) as { key: string }
    expect((await chat(old.key)).status).toBe(401)
    expect((await chat(key)).status).toBe(200)
    expect((await keyView(old.id)).revokedAt).not.toBeNull()
  })
})

describe('scopes', () => {
  test('a key scoped to models is 403 forbidden for another model or a fallback outside them, and the provider is never asked', async () => {
    const { key } = await createKey({ scopes: { models: ['openai/gpt-4o-mini', 'openai/o*'] } })
    expect((await chat(key, 'openai/gpt-4o-mini')).status).toBe(200)
    const sent = openai.requests.length
    const res = await chat(key, 'openai/gpt-4o')
    expect(res.status).toBe(403)
    const body = (await res.json()) as { code: string; message: string; requestId: string }
    expect(body).toMatchObject({ error: true, code: 'forbidden' })
    expect(body.message).toContain('openai/gpt-4o')
    const withFallback = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello, fallback_chain: [{ model: 'openai/gpt-4.1' }] }, { authorization: `GwKey ${key}` })
    expect(withFallback.status).toBe(403)
    expect(openai.requests.length).toBe(sent)
    // A refusal of an authenticated request is logged, like any other.
    expect(await gw.log(body.requestId, key)).toMatchObject({ status: 403, endpoint: '/v1/chat/completions' })
  })

  test('a key scoped to endpoints is 403 forbidden elsewhere, the logs API included', async () => {
    const { key } = await createKey({ scopes: { endpoints: ['/v1/chat/completions', '/v1/models'] } })
    expect((await chat(key)).status).toBe(200)
    expect((await gw.fetch('/v1/models', { headers: { authorization: `GwKey ${key}` } })).status).toBe(200)
    const sent = openai.requests.length
    const emb = await gw.fetch('/v1/embeddings', {
      method: 'POST',
      headers: { authorization: `GwKey ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/text-embedding-3-small', input: 'x' }),
    })
    expect(emb.status).toBe(403)
    expect(await emb.json()).toMatchObject({ error: true, code: 'forbidden' })
    expect(openai.requests.length).toBe(sent)
    const logs = await gw.fetch('/v1/logs', { headers: { authorization: `GwKey ${key}` } })
    expect(logs.status).toBe(403)
  })
})

test('the keys list shows each key’s last use', async () => {
  const { id, key } = await createKey({ name: 'watched' })
  expect((await keyView(id)).lastUsedAt).toBeNull()
  const before = Date.now()
  expect((await chat(key)).status).toBe(200)
  let seen: string | null = null
  for (let i = 0; i < 40 && !seen; i++) {
    await Bun.sleep(100)
    seen = (await keyView(id)).lastUsedAt
  }
  expect(Date.parse(seen as string)).toBeGreaterThanOrEqual(before - 1)
})
