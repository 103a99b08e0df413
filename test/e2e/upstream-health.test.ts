// Cool-down after an upstream 429 with Retry-After, and the circuit breaker with its half-open probe.

import { afterAll, beforeAll, beforeEach, expect, test } from 'bun:test'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let openai: FakeUpstream
let mistral: FakeUpstream
let gw: TestGateway
const OPEN_MS = 300

beforeAll(async () => {
  openai = await startFake('openai')
  mistral = await startFake('mistral')
  gw = await startTestGateway({ openai, mistral }, {}, { health: { failureThreshold: 3, openMs: OPEN_MS } })
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
const MISTRAL = 'mistral/mistral-small-latest'

test('Retry-After on a 429 keeps the org off that model until the named time', async () => {
  openai.enqueue({ kind: 'error', status: 429, errorType: 'rate_limit', retryAfter: '1' })
  const first = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello, fallback_chain: [{ model: MISTRAL }] })
  expect(first.headers.get('x-gw-fallback-reason')).toBe('rate_limit')
  expect(openai.requests).toHaveLength(1)

  // During the cool-down the primary is not called at all: straight to the chain…
  const second = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello, fallback_chain: [{ model: MISTRAL }] })
  expect(second.status).toBe(200)
  expect(second.headers.get('x-gw-fallback-reason')).toBe('rate_limit')
  expect(openai.requests).toHaveLength(1)
  const log = await gw.log(second.headers.get('x-gw-request-id') as string)
  expect((log.attempts as any[])[0]).toMatchObject({ model: 'openai/gpt-4o-mini', outcome: 'rate_limit', status: null })
  expect((log.attempts as any[])[0].message).toContain('cooling down')

  // …or, without a chain, a fast failure that says when to come back.
  const third = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello })
  expect(third.status).toBe(502)
  expect(Number(third.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
  expect(openai.requests).toHaveLength(1)

  // Other models of the same provider are not affected.
  expect((await gw.chat({ model: 'openai/gpt-4o', messages: hello })).status).toBe(200)

  await Bun.sleep(1100)
  const after = await gw.chat({ model: 'openai/gpt-4o-mini', messages: hello })
  expect(after.status).toBe(200)
}, 10_000)

test('a 429 without Retry-After falls back but does not cool the model down', async () => {
  openai.enqueue({ kind: 'error', status: 429, errorType: 'rate_limit' })
  const first = await gw.chat({ model: 'openai/o4-mini', messages: hello, fallback_chain: [{ model: MISTRAL }] })
  expect(first.headers.get('x-gw-fallback-reason')).toBe('rate_limit')
  const second = await gw.chat({ model: 'openai/o4-mini', messages: hello, fallback_chain: [{ model: MISTRAL }] })
  expect(second.headers.get('x-gw-fallback')).toBeNull()
  expect(openai.requests).toHaveLength(2)
})

test('the circuit opens after consecutive failures, then a single probe closes it', async () => {
  const model = 'openai/gpt-4.1'
  openai.setDefault({ kind: 'error', status: 500, errorType: 'server' })
  for (let i = 0; i < 3; i++) expect((await gw.chat({ model, messages: hello })).status).toBe(502)
  expect(openai.requests).toHaveLength(3)

  // Open: no upstream call, straight to the chain.
  const open = await gw.chat({ model, messages: hello, fallback_chain: [{ model: MISTRAL }] })
  expect(open.status).toBe(200)
  expect(openai.requests).toHaveLength(3)
  const log = await gw.log(open.headers.get('x-gw-request-id') as string)
  expect((log.attempts as any[])[0].message).toContain('circuit open')

  // After openMs one probe goes through; the upstream has recovered, so the circuit closes.
  await Bun.sleep(OPEN_MS + 50)
  openai.setDefault({ kind: 'reply' })
  expect((await gw.chat({ model, messages: hello })).status).toBe(200)
  expect(openai.requests).toHaveLength(4)
  expect((await gw.chat({ model, messages: hello })).status).toBe(200)
  expect(openai.requests).toHaveLength(5)
})

test('a failed probe re-opens the circuit', async () => {
  const model = 'openai/gpt-4.1-mini'
  openai.setDefault({ kind: 'error', status: 503, errorType: 'unavailable' })
  for (let i = 0; i < 3; i++) await gw.chat({ model, messages: hello })
  await Bun.sleep(OPEN_MS + 50)
  expect((await gw.chat({ model, messages: hello })).status).toBe(502) // the probe, failing
  expect(openai.requests).toHaveLength(4)
  expect((await gw.chat({ model, messages: hello })).status).toBe(502) // open again: not sent
  expect(openai.requests).toHaveLength(4)
})
