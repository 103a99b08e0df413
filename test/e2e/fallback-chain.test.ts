// Fallback chains: which entry fires for which failure kind, what the client sees, what the log says.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let openai: FakeUpstream
let mistral: FakeUpstream
let gw: TestGateway

beforeAll(async () => {
  openai = await startFake('openai')
  mistral = await startFake('mistral')
  // A generous breaker so that the failures these tests provoke never open it.
  gw = await startTestGateway({ openai, mistral }, {}, { health: { failureThreshold: 1000 } })
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

async function json(res: Response) {
  return (await res.json()) as Record<string, any>
}

describe('a fallback that answers', () => {
  test('upstream 500 → the next model answers; headers and log say so', async () => {
    openai.enqueue({ kind: 'error', status: 500, errorType: 'server' })
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, fallback_chain: [{ model: MISTRAL }] })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-gw-fallback')).toBe('true')
    expect(res.headers.get('x-gw-fallback-reason')).toBe('provider_error')
    expect(res.headers.get('x-gw-fallback-model')).toBe(MISTRAL)
    expect(res.headers.get('x-gw-model')).toBe(MISTRAL)
    const body = await json(res)
    expect(body.model).toBe(MISTRAL)
    expect(body.choices[0].message.content).toBe('Hello from fake-mistral (mistral-small-latest).')
    const log = await gw.log(res.headers.get('x-gw-request-id') as string)
    expect(log).toMatchObject({
      requestedModel: 'openai/gpt-4o',
      model: MISTRAL,
      status: 200,
      fallback: { used: true, reason: 'provider_error', model: MISTRAL },
      attempts: [
        { model: 'openai/gpt-4o', outcome: 'provider_error', status: 500 },
        { model: MISTRAL, outcome: 'ok', status: 200 },
      ],
    })
    expect((log.attempts as any[])[0].latencyMs).toBeGreaterThanOrEqual(0)
    // The fallback got the same conversation, in its own format.
    expect((mistral.requests[0]?.body as any).messages).toEqual(hello)
  })

  test('upstream 429 → rate_limit', async () => {
    openai.enqueue({ kind: 'error', status: 429, errorType: 'rate_limit' })
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, fallback_chain: [{ model: MISTRAL }] })
    expect(res.headers.get('x-gw-fallback-reason')).toBe('rate_limit')
  })

  test('the x-gw- spelling is accepted and wins over the plain one', async () => {
    openai.enqueue({ kind: 'error', status: 503, errorType: 'unavailable' })
    const res = await gw.chat({
      model: 'openai/gpt-4o',
      messages: hello,
      fallback_chain: [{ model: 'openai/gpt-4o-mini' }],
      'x-gw-fallback-chain': [{ model: MISTRAL }],
    })
    expect(res.headers.get('x-gw-fallback-model')).toBe(MISTRAL)
    expect(openai.requests).toHaveLength(1)
  })

  test('a streamed request falls back before its first byte and streams the fallback', async () => {
    openai.enqueue({ kind: 'error', status: 500, errorType: 'server' })
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, stream: true, fallback_chain: [{ model: MISTRAL }] })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/event-stream')
    expect(res.headers.get('x-gw-fallback-model')).toBe(MISTRAL)
    const text = await res.text()
    expect(text).toContain('fake-mistral')
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true)
  })
})

describe('triggers', () => {
  test('an entry whose triggers do not match is skipped; the next one fires', async () => {
    openai.enqueue({ kind: 'error', status: 500, errorType: 'server' })
    const res = await gw.chat({
      model: 'openai/gpt-4o',
      messages: hello,
      fallback_chain: [
        { model: 'openai/gpt-4o-mini', triggers: ['timeout', 'rate_limit'] },
        { model: MISTRAL, triggers: ['provider_error'] },
      ],
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-gw-fallback-model')).toBe(MISTRAL)
    expect(openai.requests.map((r) => (r.body as any).model)).toEqual(['gpt-4o'])
    const log = await gw.log(res.headers.get('x-gw-request-id') as string)
    expect((log.attempts as any[]).map((a) => [a.model, a.outcome])).toEqual([
      ['openai/gpt-4o', 'provider_error'],
      ['openai/gpt-4o-mini', 'skipped'],
      [MISTRAL, 'ok'],
    ])
  })

  test('a chain of three: each failure kind is matched against the next entry', async () => {
    openai.enqueue(
      { kind: 'error', status: 429, errorType: 'rate_limit' },
      { kind: 'error', status: 500, errorType: 'server' },
    )
    const res = await gw.chat({
      model: 'openai/gpt-4o',
      messages: hello,
      fallback_chain: [
        { model: 'openai/gpt-4o-mini', triggers: ['rate_limit'] },
        { model: 'openai/o3-mini', triggers: ['rate_limit'] },
        { model: MISTRAL, triggers: ['provider_error'] },
      ],
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-gw-fallback-model')).toBe(MISTRAL)
    expect(res.headers.get('x-gw-fallback-reason')).toBe('provider_error')
    const log = await gw.log(res.headers.get('x-gw-request-id') as string)
    expect((log.attempts as any[]).map((a) => [a.model, a.outcome])).toEqual([
      ['openai/gpt-4o', 'rate_limit'],
      ['openai/gpt-4o-mini', 'provider_error'],
      ['openai/o3-mini', 'skipped'],
      [MISTRAL, 'ok'],
    ])
  })

  test('context_limit: an upstream context-length error fires a context_limit entry', async () => {
    openai.enqueue({ kind: 'error', status: 400, errorType: 'context_length' })
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, fallback_chain: [{ model: MISTRAL, triggers: ['context_limit'] }] })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-gw-fallback-reason')).toBe('context_limit')
  })

  test('context_limit before sending: a prompt over the catalog window goes straight to the chain', async () => {
    const huge = [{ role: 'user', content: 'word '.repeat(140_000) }] // ~700k chars, over gpt-4o's 128k tokens
    // A model the catalog does not know has no known window: it is tried.
    const big = 'mistral/a-model-the-catalog-lacks'
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: huge, fallback_chain: [{ model: big, triggers: ['context_limit'] }] })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-gw-fallback-model')).toBe(big)
    expect(res.headers.get('x-gw-fallback-reason')).toBe('context_limit')
    expect(openai.requests).toHaveLength(0)
    const log = await gw.log(res.headers.get('x-gw-request-id') as string)
    expect((log.attempts as any[])[0]).toMatchObject({ model: 'openai/gpt-4o', outcome: 'context_limit', status: null })
  })
})

describe('refusals', () => {
  test('a refusal is an answer: an entry without triggers does not fire on it', async () => {
    openai.enqueue({ kind: 'reply', finish: 'refusal' })
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, fallback_chain: [{ model: MISTRAL }] })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-gw-fallback')).toBeNull()
    const body = await json(res)
    expect(body.choices[0].message.refusal).toBeTruthy()
    expect(body.choices[0].message.content).toBeNull()
    expect(mistral.requests).toHaveLength(0)
    const log = await gw.log(res.headers.get('x-gw-request-id') as string)
    expect(log).toMatchObject({
      refusal: true,
      attempts: [{ outcome: 'refusal_detected', status: 200 }, { model: MISTRAL, outcome: 'skipped' }],
    })
  })

  test('an entry that names refusal_detected routes around it', async () => {
    openai.enqueue({ kind: 'reply', finish: 'refusal' })
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, fallback_chain: [{ model: MISTRAL, triggers: ['refusal_detected'] }] })
    expect(res.headers.get('x-gw-fallback-reason')).toBe('refusal_detected')
    expect((await json(res)).choices[0].message.content).toContain('fake-mistral')
  })

  test('a content_filter finish counts as a refusal', async () => {
    openai.enqueue({ kind: 'reply', finish: 'content_filter' })
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, fallback_chain: [{ model: MISTRAL, triggers: ['refusal_detected'] }] })
    expect(res.headers.get('x-gw-fallback-reason')).toBe('refusal_detected')
  })

  test('a streamed refusal is caught at its first content byte', async () => {
    openai.enqueue({ kind: 'reply', finish: 'refusal' })
    const res = await gw.chat({
      model: 'openai/gpt-4o',
      messages: hello,
      stream: true,
      fallback_chain: [{ model: MISTRAL, triggers: ['refusal_detected'] }],
    })
    expect(res.headers.get('x-gw-fallback-reason')).toBe('refusal_detected')
    expect(await res.text()).toContain('fake-mistral')
  })

  test('a streamed refusal kept while a slow fallback is tried is not cut by its own stall limit: the refusal is the answer, whole', async () => {
    await gw.admin('PUT', '/orgs/default/policy', { upstreamTimeoutMs: 1000 })
    try {
      openai.enqueue({ kind: 'reply', finish: 'refusal', chunkDelayMs: 100 })
      mistral.enqueue({ kind: 'stall-headers' })
      const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, stream: true, fallback_chain: [{ model: MISTRAL, triggers: ['refusal_detected'] }] })
      expect(res.status).toBe(200)
      const text = await res.text()
      expect(text).not.toContain('"error":true')
      expect(text).toContain('"refusal":" request."')
      expect(text).toContain('"finish_reason":"stop"')
      expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true)
      const log = await gw.log(res.headers.get('x-gw-request-id') as string)
      expect(log).toMatchObject({ status: 200, incomplete: false, refusal: true })
      expect((log.attempts as any[]).map((a) => a.outcome)).toEqual(['refusal_detected', 'timeout'])
    } finally {
      await gw.admin('PUT', '/orgs/default/policy', {})
    }
  })

  test('when the fallback fails too, the refusal is still the answer', async () => {
    openai.enqueue({ kind: 'reply', finish: 'refusal' })
    mistral.enqueue({ kind: 'error', status: 500, errorType: 'server' })
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, fallback_chain: [{ model: MISTRAL, triggers: ['refusal_detected'] }] })
    expect(res.status).toBe(200)
    expect((await json(res)).choices[0].message.refusal).toBeTruthy()
  })
})

describe('skipping and exhaustion', () => {
  test('an entry whose provider is disabled for the org is skipped', async () => {
    await gw.admin('PUT', '/orgs/default/policy', { disabledProviders: ['mistral'] })
    try {
      openai.enqueue({ kind: 'error', status: 500, errorType: 'server' })
      const res = await gw.chat({
        model: 'openai/gpt-4o',
        messages: hello,
        fallback_chain: [{ model: MISTRAL }, { model: 'openai/gpt-4o-mini' }],
      })
      expect(res.status).toBe(200)
      expect(res.headers.get('x-gw-fallback-model')).toBe('openai/gpt-4o-mini')
      expect(mistral.requests).toHaveLength(0)
      const log = await gw.log(res.headers.get('x-gw-request-id') as string)
      expect((log.attempts as any[])[1]).toMatchObject({ model: MISTRAL, outcome: 'skipped' })
    } finally {
      await gw.admin('PUT', '/orgs/default/policy', {})
    }
  })

  test('an entry for a provider without a key is skipped', async () => {
    openai.enqueue({ kind: 'error', status: 500, errorType: 'server' })
    const res = await gw.chat({
      model: 'openai/gpt-4o',
      messages: hello,
      fallback_chain: [{ model: 'anthropic/claude-haiku-4-5' }, { model: MISTRAL }],
    })
    expect(res.headers.get('x-gw-fallback-model')).toBe(MISTRAL)
  })

  test('a used-up chain returns the last failure as 502, naming every attempt', async () => {
    openai.enqueue({ kind: 'error', status: 500, errorType: 'server' })
    mistral.enqueue({ kind: 'error', status: 503, errorType: 'unavailable' })
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, fallback_chain: [{ model: MISTRAL }] })
    expect(res.status).toBe(502)
    const body = await json(res)
    expect(body.code).toBe('provider_error')
    expect(body.message).toContain('openai/gpt-4o → HTTP 500')
    expect(body.message).toContain(`${MISTRAL} → HTTP 503`)
    const log = await gw.log(body.requestId)
    expect(log).toMatchObject({ status: 502, errorCode: 'provider_error', attempts: [{ status: 500 }, { status: 503 }] })
  })

  test('no chain entry fires when the primary succeeds', async () => {
    const res = await gw.chat({ model: 'openai/gpt-4o', messages: hello, fallback_chain: [{ model: MISTRAL }] })
    expect(res.headers.get('x-gw-fallback')).toBeNull()
    expect(mistral.requests).toHaveLength(0)
  })
})
