// Several keys per provider (PRODUCT §13): weights spread the traffic, a key that met a 429 sits
// out its own cool-down and one that met a 401/403 sits out until its record changes, while another
// serves (the request retried at once, no failure seen, PRODUCT §4a), a key that keeps failing sits
// out its own breaker, and the log names the key that answered.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { type FakeUpstream, startFake } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

// Two OpenAI accounts: each key is only accepted by its own fake.
let a: FakeUpstream
let b: FakeUpstream
let gw: TestGateway
let orgSeq = 0

beforeAll(async () => {
  a = await startFake('openai', { apiKey: 'sk-account-a-000000000001' })
  b = await startFake('openai', { apiKey: 'sk-account-b-000000000002' })
  gw = await startTestGateway({}, {}, { health: { failureThreshold: 2, openMs: 60_000 } })
})
afterAll(async () => {
  await gw.stop()
  await a.stop()
  await b.stop()
})
beforeEach(() => {
  a.reset()
  b.reset()
})

const hello = [{ role: 'user', content: 'Say hi please' }]

/** A fresh org with keys "a" and "b" (weights given) and a service key; returns a chat function. */
async function orgWith(weightA: number, weightB: number) {
  const org = `keys-${++orgSeq}`
  await gw.admin('POST', '/orgs', { id: org, name: org })
  for (const [name, fake, weight] of [['a', a, weightA], ['b', b, weightB]] as const) {
    const res = await gw.admin('PUT', `/orgs/${org}/providers/openai/keys/${name}`, { apiKey: fake.apiKey, baseUrl: fake.url, weight })
    expect(res.status).toBe(200)
  }
  const { key } = (await (await gw.admin('POST', `/orgs/${org}/service-keys`, {})).json()) as { key: string }
  const chat = async () => {
    const res = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello }, { authorization: `GwKey ${key}` })
    const body = (await res.json()) as Record<string, any>
    return { res, body, log: async () => (await gw.log(res.headers.get('x-gw-request-id') as string, key)) as Record<string, any> }
  }
  return { org, chat }
}

/** A fresh org with the given keys (name, secret, fake it goes to, weight) and a service key; returns a chat function. */
async function orgWithKeys(keys: readonly (readonly [string, string, FakeUpstream, number])[]) {
  const org = `keys-${++orgSeq}`
  await gw.admin('POST', '/orgs', { id: org, name: org })
  const put = async (name: string, apiKey: string, fake: FakeUpstream, weight: number) =>
    expect((await gw.admin('PUT', `/orgs/${org}/providers/openai/keys/${name}`, { apiKey, baseUrl: fake.url, weight })).status).toBe(200)
  for (const [name, apiKey, fake, weight] of keys) await put(name, apiKey, fake, weight)
  const { key } = (await (await gw.admin('POST', `/orgs/${org}/service-keys`, {})).json()) as { key: string }
  const chat = async () => {
    const res = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello }, { authorization: `GwKey ${key}` })
    return { res, log: async () => (await gw.log(res.headers.get('x-gw-request-id') as string, key)) as Record<string, any> }
  }
  return { chat, put }
}

describe('admin API', () => {
  test('keys are set masked with name and weight, listed on the org, removed; the single key is "default"', async () => {
    const org = `keys-${++orgSeq}`
    await gw.admin('POST', '/orgs', { id: org, name: org })
    const put = await gw.admin('PUT', `/orgs/${org}/providers/openai/keys/backup`, { apiKey: 'sk-secret-backup-9876', weight: 2 })
    expect(await put.json()).toMatchObject({ provider: 'openai', name: 'backup', apiKey: 'sk-…9876', weight: 2, enabled: true })
    await gw.admin('PUT', `/orgs/${org}/providers/openai`, { apiKey: 'sk-secret-main-1234' })
    const shown = (await (await gw.admin('GET', `/orgs/${org}`)).json()) as { providers: Record<string, unknown>[] }
    expect(shown.providers.map((p) => [p.name, p.apiKey, p.weight])).toEqual([
      ['backup', 'sk-…9876', 2],
      ['default', 'sk-…1234', 1],
    ])
    expect(JSON.stringify(shown)).not.toContain('sk-secret')
    expect((await gw.admin('DELETE', `/orgs/${org}/providers/openai/keys/backup`)).status).toBe(204)
    expect((await gw.admin('DELETE', `/orgs/${org}/providers/openai/keys/backup`)).status).toBe(404)
    for (const [path, body] of [
      ['keys/bad%20name', { apiKey: 'sk-x-123456789012' }],
      ['keys/w0', { apiKey: 'sk-x-123456789012', weight: 0 }],
    ] as const) {
      const res = await gw.admin('PUT', `/orgs/${org}/providers/openai/${path}`, body)
      expect(res.status).toBe(400)
    }
  })
})

describe('requests', () => {
  test('weights spread the traffic over the keys; the log names the key that answered', async () => {
    const { chat } = await orgWith(3, 1)
    const n = 400
    const names: string[] = []
    for (let i = 0; i < n; i++) {
      const r = await chat()
      expect(r.res.status).toBe(200)
      if (i < 10) names.push((await r.log()).providerKey)
    }
    expect(a.requests.length + b.requests.length).toBe(n)
    // 3:1 → 75 % on "a"; 400 draws stay within ±10 points (4.6 standard deviations) but once in 250,000 runs.
    expect(a.requests.length / n).toBeGreaterThan(0.65)
    expect(a.requests.length / n).toBeLessThan(0.85)
    expect(names.every((x) => x === 'a' || x === 'b')).toBe(true)
  })

  test('a provider whose one key is disabled is not called: the request is refused (403 model_not_allowed, the seed error shape); enabled again, it serves', async () => {
    const { chat, put } = await orgWithKeys([['only', a.apiKey, a, 1]])
    const org = `keys-${orgSeq}`
    expect((await chat()).res.status).toBe(200)
    expect((await gw.admin('PUT', `/orgs/${org}/providers/openai/keys/only`, { apiKey: a.apiKey, baseUrl: a.url, enabled: false })).status).toBe(200)
    const before = a.requests.length
    const refused = await chat()
    expect(refused.res.status).toBe(403)
    const body = (await refused.res.json()) as Record<string, unknown>
    expect(body).toMatchObject({ error: true, code: 'model_not_allowed', requestId: refused.res.headers.get('x-gw-request-id') })
    expect(String(body.message)).toContain('provider "openai" is disabled')
    expect(a.requests.length).toBe(before)
    await put('only', a.apiKey, a, 1)
    expect((await chat()).res.status).toBe(200)
    expect(a.requests.length).toBe(before + 1)
  })

  test('a 429 on one key is retried at once on the other: the client sees an answer, the key sits out its cool-down', async () => {
    const { chat } = await orgWith(1000, 1)
    a.enqueue({ kind: 'error', status: 429, errorType: 'rate_limit', retryAfter: '30' })
    let r = await chat()
    // Weight 1000:1 makes "a" the first pick (retry until it was).
    while (a.requests.length === 0) r = await chat()
    expect(r.res.status).toBe(200)
    expect(r.res.headers.get('x-gw-fallback')).toBeNull()
    const log = await r.log()
    expect(log).toMatchObject({ status: 200, providerKey: 'b', fallback: { used: false } })
    expect(log.attempts).toEqual([
      expect.objectContaining({ model: 'openai/gpt-4o-mini', key: 'a', outcome: 'rate_limit', status: 429 }),
      expect.objectContaining({ model: 'openai/gpt-4o-mini', key: 'b', outcome: 'ok' }),
    ])
    // While "a" cools down, "b" serves everything.
    const before = a.requests.length
    for (let i = 0; i < 10; i++) expect((await chat()).res.status).toBe(200)
    expect(a.requests.length).toBe(before)
  })

  test('a key that keeps failing sits out its own breaker while the other serves', async () => {
    const { chat } = await orgWith(1000, 1)
    for (let i = 0; i < 5; i++) a.enqueue({ kind: 'error', status: 500 })
    // Failures on "a" (no other key is tried for a 500) until its breaker opens after two.
    let failures = 0
    for (let i = 0; i < 20 && failures < 2; i++) if ((await chat()).res.status === 502) failures++
    expect(failures).toBe(2)
    const before = a.requests.length
    for (let i = 0; i < 10; i++) {
      const r = await chat()
      expect(r.res.status).toBe(200)
      expect((await r.log()).providerKey).toBe('b')
    }
    expect(a.requests.length).toBe(before)
  })

  for (const status of [401, 403] as const) {
    test(`one key of five answered ${status}: every request is answered, the failed attempt retried at once on another key, the key sits out until its record changes`, async () => {
      // "bad" carries the heaviest weight; for 403 its fake refuses every request, for 401 its secret is wrong.
      const refuser = await startFake('openai')
      refuser.setDefault({ kind: 'error', status: 403 })
      try {
        const bad = status === 401 ? (['bad', 'sk-wrong-key-000000000009', a, 6] as const) : (['bad', refuser.apiKey, refuser, 6] as const)
        const { chat, put } = await orgWithKeys([bad, ['k1', a.apiKey, a, 1], ['k2', b.apiKey, b, 2], ['k3', a.apiKey, a, 3], ['k4', b.apiKey, b, 4]])
        const badFake = status === 401 ? a : refuser
        const badCalls = () => badFake.requests.filter((r) => JSON.stringify(r.headers).includes(bad[1])).length
        let retried: Record<string, any> | undefined
        for (let i = 0; i < 40; i++) {
          const r = await chat()
          expect(r.res.status).toBe(200)
          const log = await r.log()
          if (log.attempts.length > 1) retried = log
        }
        // The one failed attempt on "bad" (then it sat out) went on at once to another key of the provider.
        expect(badCalls()).toBe(1)
        expect(retried?.attempts).toEqual([
          expect.objectContaining({ key: 'bad', outcome: 'provider_error', status, class: 'key' }),
          expect.objectContaining({ key: expect.stringMatching(/^k[1-4]$/), outcome: 'ok' }),
        ])
        expect(retried?.fallback).toEqual({ used: false, reason: null, model: null })

        // Its record changes (the right secret now): it serves again at once. Weight 1000 of 1,010
        // draws it 99 % of the time, so one of five requests (not the first, which failed one run in
        // a hundred) proves it is back in the pool; sitting out, it would serve none.
        await put('bad', status === 401 ? a.apiKey : b.apiKey, status === 401 ? a : b, 1000)
        const servedBy: string[] = []
        for (let i = 0; i < 5 && !servedBy.includes('bad'); i++) {
          const r = await chat()
          expect(r.res.status).toBe(200)
          servedBy.push((await r.log()).providerKey)
        }
        expect(servedBy).toContain('bad')
      } finally {
        await refuser.stop()
      }
    })
  }
})
