// Each provider's real failure answers map to the right failure kind, and the chain reacts to it.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { type FakeProvider, type FakeUpstream, startFake } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

const MODELS: Record<FakeProvider, string> = {
  openai: 'openai/gpt-4o',
  anthropic: 'anthropic/claude-haiku-4-5',
  google: 'google/gemini-2.5-flash',
  mistral: 'mistral/mistral-small-latest',
}
const fakes = {} as Record<FakeProvider, FakeUpstream>
let gw: TestGateway
const TIMEOUT_MS = 300

beforeAll(async () => {
  for (const p of Object.keys(MODELS) as FakeProvider[]) fakes[p] = await startFake(p)
  gw = await startTestGateway(fakes, { GW_UPSTREAM_TIMEOUT_MS: String(TIMEOUT_MS) }, { health: { failureThreshold: 1000 } })
})
afterAll(async () => {
  await gw.stop()
  for (const f of Object.values(fakes)) await f.stop()
})
beforeEach(() => {
  for (const f of Object.values(fakes)) f.reset()
})

const hello = [{ role: 'user', content: 'Say hi please' }]

describe.each(Object.keys(MODELS) as FakeProvider[])('%s', (provider) => {
  const model = MODELS[provider]
  // A different provider answers for it.
  const backup = provider === 'openai' ? MODELS.mistral : MODELS.openai
  const backupFake = () => fakes[provider === 'openai' ? 'mistral' : 'openai']
  const ask = (triggers: string[], extra: Record<string, unknown> = {}) =>
    gw.chat({ model, messages: hello, fallback_chain: [{ model: backup, triggers }], ...extra })

  async function expectFellBack(res: Response, reason: string, status: number | null, from = model) {
    expect(res.status).toBe(200)
    expect(res.headers.get('x-gw-fallback-reason')).toBe(reason)
    expect(res.headers.get('x-gw-model')).toBe(backup)
    const log = await gw.log(res.headers.get('x-gw-request-id') as string)
    expect((log.attempts as any[])[0]).toMatchObject({ model: from, outcome: reason, status })
  }

  test('429 → rate_limit', async () => {
    // Its own model id: a 429 with a retry delay (Gemini always sends one) cools the model down.
    const limited = `${model}-rl`
    fakes[provider].enqueue({ kind: 'error', status: 429, errorType: 'rate_limit' })
    const res = await ask(['rate_limit'], { model: limited })
    await expectFellBack(res, 'rate_limit', 429, limited)
  })

  test('500 → provider_error', async () => {
    fakes[provider].enqueue({ kind: 'error', status: 500, errorType: 'server' })
    await expectFellBack(await ask(['provider_error']), 'provider_error', 500)
  })

  test('overloaded (529 on Anthropic, 503 elsewhere) → provider_error', async () => {
    const status = provider === 'anthropic' ? 529 : 503
    fakes[provider].enqueue({ kind: 'error', status, errorType: 'overloaded' })
    await expectFellBack(await ask(['provider_error']), 'provider_error', status)
  })

  test('bad upstream key (401; Gemini: 400 API_KEY_INVALID) → provider_error, class key', async () => {
    // Its own model id: the key now sits out for this model (PRODUCT §4a).
    const benched = `${model}-key`
    fakes[provider].enqueue({ kind: 'error', status: provider === 'google' ? 400 : 401, errorType: 'auth' })
    const res = await ask(['provider_error'], { model: benched })
    expect(res.headers.get('x-gw-fallback-reason')).toBe('provider_error')
    const log = await gw.log(res.headers.get('x-gw-request-id') as string)
    expect((log.attempts as any[])[0]).toMatchObject({ model: benched, outcome: 'provider_error', class: 'key' })
  })

  test('the context-length error → context_limit', async () => {
    fakes[provider].enqueue({ kind: 'error', status: 400, errorType: 'context_length' })
    await expectFellBack(await ask(['context_limit']), 'context_limit', 400)
  })

  test('a plain 400 is not mistaken for a context-length error', async () => {
    fakes[provider].enqueue({ kind: 'error', status: 400, errorType: 'bad_request' })
    const res = await ask(['context_limit'])
    expect(res.status).toBe(502)
    expect(backupFake().requests).toHaveLength(0)
  })

  test('a stall → timeout, the upstream request aborted', async () => {
    fakes[provider].enqueue({ kind: 'stall-headers' })
    await expectFellBack(await ask(['timeout']), 'timeout', null)
    expect(await fakes[provider].waitForAbort(0)).toBe(true)
  })

  test('an error event before content in a stream → provider_error, fallback', async () => {
    // Gemini's first event already carries text; the others open with a content-free event.
    fakes[provider].enqueue({ kind: 'error-event-after', events: provider === 'google' ? 0 : 1, errorType: 'overloaded' })
    const res = await ask(['provider_error'], { stream: true })
    expect(res.headers.get('x-gw-fallback-reason')).toBe('provider_error')
    expect(await res.text()).toContain('data: [DONE]')
  })

  test('a refusal → refusal_detected only where named', async () => {
    if (provider === 'mistral') return // Mistral has no refusal signal (docs/providers.md)
    fakes[provider].enqueue({ kind: 'reply', finish: 'refusal' }, { kind: 'reply', finish: 'refusal' })
    const kept = await ask(['provider_error'])
    expect(kept.headers.get('x-gw-fallback')).toBeNull()
    const body = (await kept.json()) as any
    expect(body.choices[0].finish_reason === 'content_filter' || body.choices[0].message.refusal !== null).toBe(true)
    await expectFellBack(await ask(['refusal_detected']), 'refusal_detected', 200)
  })
})
