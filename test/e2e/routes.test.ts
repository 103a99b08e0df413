// Routes (PRODUCT §13): an org's own model names mapping to weighted targets, through the admin API
// and the CLI, chosen by weight or lowest latency among healthy targets, then falling back.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { type FakeUpstream, startFake } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let openai: FakeUpstream
let mistral: FakeUpstream
let gw: TestGateway

beforeAll(async () => {
  openai = await startFake('openai')
  mistral = await startFake('mistral')
  gw = await startTestGateway({ openai, mistral })
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
  await mistral.stop()
})
beforeEach(() => {
  openai.reset()
  mistral.reset()
})

const hello = [{ role: 'user', content: 'Say hi please' }]
const putRoute = (name: string, body: unknown, org = 'default') => gw.admin('PUT', `/orgs/${org}/routes/${name}`, body)

async function ask(model: string, extra: object = {}) {
  const res = await gw.chat({ model, messages: hello, ...extra })
  const body = (await res.json()) as Record<string, any>
  return { res, body, log: async () => (await gw.log(res.headers.get('x-gw-request-id') as string)) as Record<string, any> }
}

describe('admin API', () => {
  test('a route is created, listed, shown on the org, replaced and deleted', async () => {
    const res = await putRoute('fast', { targets: [{ model: 'openai/gpt-4o-mini', weight: 3 }, { model: 'mistral/mistral-small-latest' }] })
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({
      name: 'fast',
      targets: [
        { model: 'openai/gpt-4o-mini', weight: 3 },
        { model: 'mistral/mistral-small-latest', weight: 1 },
      ],
      strategy: 'weighted',
      fallback: [],
      updatedAt: expect.any(String),
    })
    expect(((await (await gw.admin('GET', '/orgs/default/routes')).json()) as { data: { name: string }[] }).data.map((r) => r.name)).toContain('fast')
    expect(((await (await gw.admin('GET', '/orgs/default')).json()) as { routes: { name: string }[] }).routes.map((r) => r.name)).toContain('fast')
    expect((await putRoute('fast', { targets: [{ model: 'openai/gpt-4o' }], strategy: 'lowest-latency' })).status).toBe(200)
    expect((await gw.admin('DELETE', '/orgs/default/routes/fast')).status).toBe(204)
    expect((await gw.admin('DELETE', '/orgs/default/routes/fast')).status).toBe(404)
    expect((await putRoute('fast', { targets: [{ model: 'openai/gpt-4o' }] }, 'no-such-org')).status).toBe(404)
  })

  test.each([
    ['bad%2Fname', { targets: [{ model: 'openai/gpt-4o' }] }, /Invalid route name/],
    ['r1', { targets: [] }, /targets/],
    ['r1', { targets: [{ model: 'gpt-4o' }] }, /targets\[0\]\.model/],
    ['r1', { targets: [{ model: 'openai/gpt-4o', weight: 0 }] }, /weight/],
    ['r1', { targets: [{ model: 'openai/gpt-4o' }], strategy: 'fastest' }, /strategy/],
    ['r1', { targets: [{ model: 'openai/gpt-4o' }], fallback: [{ model: 'acme/x' }] }, /fallback\[0\]\.model/],
    ['r1', { targets: [{ model: 'openai/gpt-4o' }], fallback: [{ model: 'openai/gpt-4o-mini', triggers: ['boom'] }] }, /fallback\[0\]\.triggers/],
  ])('a bad route is a 400 naming what is wrong (%s %#)', async (name, body, why) => {
    const res = await putRoute(name, body)
    expect(res.status).toBe(400)
    const err = (await res.json()) as { error: boolean; message: string; requestId: string }
    expect(err).toMatchObject({ error: true, requestId: res.headers.get('x-gw-request-id') })
    expect(err.message).toMatch(why)
  })
})

describe('requests', () => {
  test('a route name, or a bare model id made a route, answers from its target; the log names the route', async () => {
    await putRoute('gpt-4o-mini', { targets: [{ model: 'openai/gpt-4o-mini' }] })
    const r = await ask('gpt-4o-mini')
    expect(r.res.status).toBe(200)
    expect(r.body.model).toBe('openai/gpt-4o-mini')
    expect(r.res.headers.get('x-gw-model')).toBe('openai/gpt-4o-mini')
    expect((openai.requests[0]?.body as Record<string, unknown>).model).toBe('gpt-4o-mini')
    expect(await r.log()).toMatchObject({ requestedModel: 'gpt-4o-mini', route: 'gpt-4o-mini', model: 'openai/gpt-4o-mini' })
    // Routes are listed with the models, so apps that pick a model from /v1/models find them.
    const models = (await (await gw.fetch('/v1/models')).json()) as { data: { id: string; owned_by: string }[] }
    expect(models.data.find((m) => m.id === 'gpt-4o-mini')).toMatchObject({ owned_by: 'gw', route: { targets: ['openai/gpt-4o-mini'] } })
    expect(await (await gw.fetch('/v1/models/gpt-4o-mini')).json()).toMatchObject({ id: 'gpt-4o-mini', owned_by: 'gw' })
    // Without a route, a bare id is still a clear 400.
    const bare = await ask('gpt-4.1')
    expect(bare.res.status).toBe(400)
    expect(bare.body.message).toContain('expected provider/model-name')
  })

  test('weighted targets share the traffic by weight', async () => {
    await putRoute('spread', { targets: [{ model: 'openai/gpt-4o-mini', weight: 3 }, { model: 'mistral/mistral-small-latest', weight: 1 }] })
    const n = 400
    for (let i = 0; i < n; i++) expect((await ask('spread')).res.status).toBe(200)
    const share = openai.requests.length / n
    expect(openai.requests.length + mistral.requests.length).toBe(n)
    // 3:1 → 75 %; 400 draws stay within ±10 points (4.6 standard deviations) but once in 250,000 runs.
    expect(share).toBeGreaterThan(0.65)
    expect(share).toBeLessThan(0.85)
  })

  test('a target cooling down after a 429 gets no traffic while another is healthy; the route falls back as §4a', async () => {
    await putRoute('careful', {
      targets: [{ model: 'openai/gpt-4o', weight: 1000 }, { model: 'mistral/mistral-large-latest', weight: 1 }],
      fallback: [{ model: 'mistral/mistral-small-latest' }],
    })
    // openai answers 429 with Retry-After: the request falls back to the route's fallback entry.
    openai.enqueue({ kind: 'error', status: 429, errorType: 'rate_limit', retryAfter: '30' })
    // Weight 1000:1 makes openai the first pick (the draw is random; retry until it is).
    let first = await ask('careful')
    while (openai.requests.length === 0) first = await ask('careful')
    expect(first.res.status).toBe(200)
    expect(await first.log()).toMatchObject({
      route: 'careful',
      model: 'mistral/mistral-small-latest',
      fallback: { used: true, reason: 'rate_limit', model: 'mistral/mistral-small-latest' },
    })
    // While openai cools down, every request goes to the healthy target.
    const before = openai.requests.length
    for (let i = 0; i < 10; i++) expect((await ask('careful')).body.model).toBe('mistral/mistral-large-latest')
    expect(openai.requests.length).toBe(before)
  })

  test('lowest-latency takes the faster target once both are measured', async () => {
    // Models no other test uses, so neither has a latency on record yet.
    await putRoute('quick', {
      targets: [{ model: 'openai/gpt-4.1-nano' }, { model: 'mistral/ministral-3b-2512' }],
      strategy: 'lowest-latency',
    })
    for (let i = 0; i < 40; i++) openai.enqueue({ kind: 'reply', delayMs: 60 })
    // Unmeasured targets go first, so the first two requests measure both.
    const firsts = [await ask('quick'), await ask('quick')].map((r) => r.body.model)
    expect(new Set(firsts)).toEqual(new Set(['openai/gpt-4.1-nano', 'mistral/ministral-3b-2512']))
    for (let i = 0; i < 8; i++) expect((await ask('quick')).body.model).toBe('mistral/ministral-3b-2512')
  })

  test('the org policy applies to the target chosen', async () => {
    const org = 'routes-policy'
    await gw.admin('POST', '/orgs', { id: org, name: org })
    await gw.admin('PUT', `/orgs/${org}/providers/openai`, { apiKey: openai.apiKey, baseUrl: openai.url })
    await gw.admin('PUT', `/orgs/${org}/policy`, { allowedModels: ['openai/gpt-4o-mini'] })
    await putRoute('big', { targets: [{ model: 'openai/gpt-4o' }] }, org)
    const { key } = (await (await gw.admin('POST', `/orgs/${org}/service-keys`, {})).json()) as { key: string }
    const res = await gw.chat({ model: 'big', messages: hello }, { authorization: `GwKey ${key}` })
    expect(res.status).toBe(403)
    expect(((await res.json()) as { code: string }).code).toBe('model_not_allowed')
    // A target the org has no key for (mistral) or may not use is never drawn while another can be.
    await putRoute('mixed', { targets: [{ model: 'openai/gpt-4o-mini' }, { model: 'mistral/mistral-small-latest', weight: 1000 }, { model: 'openai/gpt-4o', weight: 1000 }] }, org)
    for (let i = 0; i < 10; i++) {
      const r = await gw.chat({ model: 'mixed', messages: hello }, { authorization: `GwKey ${key}` })
      expect(r.status).toBe(200)
      expect(((await r.json()) as { model: string }).model).toBe('openai/gpt-4o-mini')
    }
  })
})
