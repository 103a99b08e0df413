// The admin API's listings and reports for the dashboard: orgs, keys, secrets, prompts, logs, usage, stats.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let openai: FakeUpstream
let anthropic: FakeUpstream
let gw: TestGateway

beforeAll(async () => {
  openai = await startFake('openai')
  anthropic = await startFake('anthropic')
  gw = await startTestGateway({ openai, anthropic })
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
  await anthropic.stop()
})

const hello = [{ role: 'user', content: 'Say hi please' }]
const body = async (res: Response) => {
  expect(res.headers.get('x-gw-request-id')).toBeTruthy()
  return (await res.json()) as Record<string, any>
}

test('GET /admin/orgs lists every org; keys, secrets and prompts are listed per org without secrets', async () => {
  expect((await gw.admin('POST', '/orgs', { id: 'zeta', name: 'Zeta' })).status).toBe(201)
  const orgs = await body(await gw.admin('GET', '/orgs'))
  expect(orgs.data.map((o: { id: string }) => o.id)).toEqual(['default', 'zeta'])
  expect(orgs.data[1]).toMatchObject({ id: 'zeta', name: 'Zeta' })

  const created = await body(await gw.admin('POST', '/orgs/zeta/service-keys', { name: 'ci' }))
  const keys = await body(await gw.admin('GET', '/orgs/zeta/service-keys'))
  expect(keys.data).toEqual([expect.objectContaining({ id: created.id, name: 'ci', revokedAt: null })])
  expect(JSON.stringify(keys)).not.toContain(created.key)

  const secret = await body(await gw.admin('POST', '/orgs/zeta/signing-secrets', { kid: 'k1' }))
  const secrets = await body(await gw.admin('GET', '/orgs/zeta/signing-secrets'))
  expect(secrets.data).toEqual([{ kid: 'k1', createdAt: expect.any(String) }])
  expect(JSON.stringify(secrets)).not.toContain(secret.secret)

  await gw.admin('POST', '/orgs/zeta/prompts', { slug: 'greet', name: 'Greeting' })
  await gw.admin('POST', '/orgs/zeta/prompts/greet/versions', { userTemplate: 'Hi {{who}}', model: 'openai/gpt-4o-mini', publish: true })
  const prompts = await body(await gw.admin('GET', '/orgs/zeta/prompts'))
  expect(prompts.data).toEqual([expect.objectContaining({ slug: 'greet', name: 'Greeting', publishedVersion: 1, currentVersion: 1 })])

  for (const path of ['/orgs/nope/service-keys', '/orgs/nope/logs', '/orgs/nope/usage', '/orgs/nope/stats', '/orgs/nope/prompts'])
    expect((await gw.admin('GET', path)).status).toBe(404)
})

test('GET /admin/orgs/:org/logs pages and filters like /v1/logs, adds a provider filter, and /logs/:id has the bodies', async () => {
  const ids: string[] = []
  for (const model of ['openai/gpt-4o-mini', 'anthropic/claude-sonnet-4-5', 'openai/gpt-4o-mini']) {
    const res = await gw.chat({ model, messages: hello, metadata: { team: model.startsWith('openai') ? 'a' : 'b' } })
    expect(res.status).toBe(200)
    ids.push(res.headers.get('x-gw-request-id') as string)
  }
  const page1 = await body(await gw.admin('GET', '/orgs/default/logs?limit=2'))
  expect(page1.data.map((e: { requestId: string }) => e.requestId)).toEqual([ids[2], ids[1]])
  const page2 = await body(await gw.admin('GET', `/orgs/default/logs?limit=2&cursor=${page1.nextCursor}`))
  expect(page2.data.map((e: { requestId: string }) => e.requestId)).toEqual([ids[0]])
  expect(page2.nextCursor).toBeNull()

  const byProvider = await body(await gw.admin('GET', '/orgs/default/logs?provider=anthropic'))
  expect(byProvider.data.map((e: { requestId: string }) => e.requestId)).toEqual([ids[1]])
  const byMeta = await body(await gw.admin('GET', '/orgs/default/logs?metadata=team=a'))
  expect(byMeta.data).toHaveLength(2)
  expect((await gw.admin('GET', '/orgs/default/logs?limit=0')).status).toBe(400)

  const one = await body(await gw.admin('GET', `/orgs/default/logs/${ids[1]}`))
  expect(one).toMatchObject({ requestId: ids[1], provider: 'anthropic', attempts: [{ outcome: 'ok' }] })
  expect(one.requestBody).toMatchObject({ messages: hello })
  expect((await gw.admin('GET', `/orgs/zeta/logs/${ids[1]}`)).status).toBe(404)
})

test('GET /admin/orgs/:org/stats buckets requests, errors, tokens and cost per model, with latency percentiles', async () => {
  openai.enqueue({ kind: 'error', status: 400 })
  expect((await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello })).status).toBe(502)
  const until = Date.now() + 1000
  const since = until - 3_600_000
  const stats = await body(await gw.admin('GET', `/orgs/default/stats?since=${since}&until=${until}&buckets=6`))
  expect(stats).toMatchObject({ since, until, bucketMs: 600_000, by: 'model' })
  expect(stats.buckets).toHaveLength(6)
  const mini = stats.series.find((s: { key: string }) => s.key === 'openai/gpt-4o-mini')
  expect(mini.requests.reduce((a: number, b: number) => a + b, 0)).toBe(3)
  expect(mini.errors.reduce((a: number, b: number) => a + b, 0)).toBe(1)
  expect(mini.requests[5]).toBe(3) // everything happened in the last bucket
  const entries = (await body(await gw.admin('GET', '/orgs/default/logs'))).data as any[]
  const latencies = entries.map((e) => e.latencyMs).sort((a, b) => a - b)
  expect(stats.latencyMs.p50.slice(0, 5)).toEqual([null, null, null, null, null])
  const p95 = stats.latencyMs.p95[5]
  const max = latencies.at(-1) as number
  expect(p95).toBeGreaterThanOrEqual(Math.floor(max / 1.1) - 1)
  expect(p95).toBeLessThanOrEqual(Math.ceil(max * 1.1) + 1)
  const byProvider = await body(await gw.admin('GET', '/orgs/default/stats?by=provider'))
  expect(byProvider.series.map((s: { key: string }) => s.key).sort()).toEqual(['anthropic', 'openai'])
  expect((await gw.admin('GET', '/orgs/default/stats?buckets=9999')).status).toBe(400)
  expect((await gw.admin('GET', '/orgs/default/stats?by=colour')).status).toBe(400)
})

test('POST /admin/orgs/:org/prompts/:prompt/run runs a version with variables (the playground), streamed, and logs it as Admin', async () => {
  await gw.admin('POST', '/orgs/default/prompts', { slug: 'play' })
  await gw.admin('POST', '/orgs/default/prompts/play/versions', {
    userTemplate: 'Greet {{who}}', model: 'openai/gpt-4o-mini', variables: [{ name: 'who', type: 'string', required: true }],
  })
  const res = await gw.admin('POST', '/orgs/default/prompts/play/run?version=1', { variables: { who: 'Ada' }, stream: true })
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toContain('text/event-stream')
  const text = await res.text()
  expect(text).toContain('Hello')
  expect(text.trim().endsWith('data: [DONE]')).toBe(true)
  const sent = openai.requests.at(-1)?.body as { messages: { content: string }[] }
  expect(sent.messages.at(-1)?.content).toBe('Greet Ada')
  const id = res.headers.get('x-gw-request-id') as string
  await Bun.sleep(10)
  const entry = await body(await gw.admin('GET', `/orgs/default/logs/${id}`))
  expect(entry).toMatchObject({ authMode: 'Admin', subject: 'dashboard', promptSlug: 'play', promptVersion: 1 })
  const missing = await gw.admin('POST', '/orgs/default/prompts/play/run?version=1', { variables: {} })
  expect(missing.status).toBe(400)
  expect(((await missing.json()) as { message: string }).message).toContain('who')
})
