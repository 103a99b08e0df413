// Real upstream faults — refused and reset connections, stalls, cut streams, error events — and what
// the client and the log see before and after the first streamed byte.

import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { readSse, startTestGateway, type TestGateway } from '../helpers/gateway'

const TIMEOUT_MS = 400
let openai: FakeUpstream
let mistral: FakeUpstream
let gw: TestGateway

beforeAll(async () => {
  openai = await startFake('openai')
  mistral = await startFake('mistral')
  gw = await startTestGateway({ openai, mistral }, { GW_UPSTREAM_TIMEOUT_MS: String(TIMEOUT_MS) }, { health: { failureThreshold: 1000 } })
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
const chain = [{ model: MISTRAL }]
const ask = (extra: Record<string, unknown> = {}) => gw.chat({ model: 'openai/gpt-4o', messages: hello, ...extra })
const logOf = (res: Response) => gw.log(res.headers.get('x-gw-request-id') as string)

describe('before the first byte: fall back', () => {
  test('connection reset before headers → provider_error', async () => {
    openai.enqueue({ kind: 'reset' })
    const res = await ask({ fallback_chain: chain })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-gw-fallback-reason')).toBe('provider_error')
    const log = await logOf(res)
    expect((log.attempts as any[])[0]).toMatchObject({ outcome: 'provider_error', status: null })
  })

  test('headers never come → timeout after GW_UPSTREAM_TIMEOUT_MS, and the upstream request is aborted', async () => {
    openai.enqueue({ kind: 'stall-headers' })
    const started = performance.now()
    const res = await ask({ fallback_chain: chain })
    const took = performance.now() - started
    expect(res.status).toBe(200)
    expect(res.headers.get('x-gw-fallback-reason')).toBe('timeout')
    expect(took).toBeGreaterThanOrEqual(TIMEOUT_MS - 20)
    expect(await openai.waitForAbort(0)).toBe(true)
  })

  test('a stream that stalls before any content → timeout, aborted, fallback streams instead', async () => {
    openai.enqueue({ kind: 'stall-after', events: 1 }) // the role chunk only
    const res = await ask({ stream: true, fallback_chain: chain })
    expect(res.headers.get('x-gw-fallback-reason')).toBe('timeout')
    const events = await readSse(res)
    expect(events.at(-1)).toBe('[DONE]')
    expect(JSON.stringify(events)).toContain('fake-mistral')
    expect(await openai.waitForAbort(0)).toBe(true)
  })

  test('a stream cut before any content → provider_error, fallback', async () => {
    openai.enqueue({ kind: 'cut-after', events: 1 })
    const res = await ask({ stream: true, fallback_chain: chain })
    expect(res.headers.get('x-gw-fallback-reason')).toBe('provider_error')
    expect(await res.text()).toContain('fake-mistral')
  })

  test('an error event before any content → provider_error, fallback', async () => {
    openai.enqueue({ kind: 'error-event-after', events: 1, errorType: 'server' })
    const res = await ask({ stream: true, fallback_chain: chain })
    expect(res.headers.get('x-gw-fallback-reason')).toBe('provider_error')
  })

  test('a malformed non-streamed answer → provider_error, fallback', async () => {
    openai.enqueue({ kind: 'malformed-after', events: 0 })
    const res = await ask({ fallback_chain: chain })
    expect(res.headers.get('x-gw-fallback-reason')).toBe('provider_error')
  })

  test('a 200 that is not an event stream for a streamed request → provider_error', async () => {
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/html' }, body: '<html>maintenance</html>' })
    const res = await ask({ stream: true, fallback_chain: chain })
    expect(res.headers.get('x-gw-fallback-reason')).toBe('provider_error')
  })

  test('with no chain, a timeout is 504 provider_error', async () => {
    openai.enqueue({ kind: 'stall-headers' })
    const res = await ask()
    expect(res.status).toBe(504)
    const body = (await res.json()) as Record<string, string>
    expect(body.code).toBe('provider_error')
    expect(body.message).toContain('timeout')
    expect((await gw.log(body.requestId as string)).status).toBe(504)
  })

  test('an org policy can shorten the upstream timeout', async () => {
    await gw.admin('PUT', '/orgs/default/policy', { upstreamTimeoutMs: 100 })
    try {
      openai.enqueue({ kind: 'stall-headers' })
      const started = performance.now()
      const res = await ask()
      expect(res.status).toBe(504)
      expect(performance.now() - started).toBeLessThan(TIMEOUT_MS - 100)
    } finally {
      await gw.admin('PUT', '/orgs/default/policy', {})
    }
  })

  test('connection refused → provider_error (502 without a chain)', async () => {
    const other = await startTestGateway({}, { OPENAI_API_KEY: 'k', GW_OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' })
    try {
      const res = await other.chat({ model: 'openai/gpt-4o', messages: hello })
      expect(res.status).toBe(502)
      // The provider and what happened, nothing of the runtime's own wording ("pass `verbose: true`…").
      const { message } = (await res.json()) as { message: string }
      expect(message).toBe('Upstream openai/gpt-4o → provider_error: the connection to openai failed: connection refused')
    } finally {
      await other.stop()
    }
  })
})

describe('after the first byte: an error event and [DONE], never a clean end', () => {
  test('an error event mid-stream', async () => {
    openai.enqueue({ kind: 'error-event-after', events: 3, errorType: 'server' })
    const res = await ask({ stream: true, fallback_chain: chain })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-gw-fallback')).toBeNull()
    const events = await readSse(res)
    expect(events.at(-1)).toBe('[DONE]')
    const error = events.at(-2) as Record<string, unknown>
    expect(error).toMatchObject({ error: true, code: 'provider_error', requestId: res.headers.get('x-gw-request-id') })
    expect(error.message).toContain('after the answer had started')
    expect(events.some((e) => e !== '[DONE]' && Array.isArray((e as any).choices) && (e as any).choices[0]?.delta?.content)).toBe(true)
    expect(mistral.requests).toHaveLength(0)
    const log = await logOf(res)
    expect(log).toMatchObject({ status: 200, errorCode: 'provider_error', incomplete: true, attempts: [{ outcome: 'provider_error' }] })
  })

  test('a stream cut after content', async () => {
    openai.enqueue({ kind: 'cut-after', events: 3 })
    const res = await ask({ stream: true })
    const events = await readSse(res)
    expect(events.at(-1)).toBe('[DONE]')
    expect(events.at(-2)).toMatchObject({ error: true, code: 'provider_error' })
    expect((await logOf(res)).incomplete).toBe(true)
  })

  test('a stream that stalls after content is ended after the silence limit, and aborted upstream', async () => {
    openai.enqueue({ kind: 'stall-after', events: 3 })
    const res = await ask({ stream: true })
    const events = await readSse(res)
    expect(events.at(-2)).toMatchObject({ error: true, code: 'provider_error' })
    expect(((events.at(-2) as any).message as string)).toContain('timeout')
    expect(await openai.waitForAbort(0)).toBe(true)
    expect(await logOf(res)).toMatchObject({ incomplete: true, attempts: [{ outcome: 'timeout' }] })
  })

  test('a malformed chunk after content ends the stream with an error', async () => {
    openai.enqueue({ kind: 'malformed-after', events: 3 })
    const res = await ask({ stream: true })
    const events = await readSse(res)
    expect(events.at(-2)).toMatchObject({ error: true, code: 'provider_error' })
  })

  test('a slow but steady stream is not cut: silence is per gap, not total', async () => {
    openai.enqueue({ kind: 'reply', text: 'a b c d e f', chunkDelayMs: TIMEOUT_MS / 2 })
    const res = await ask({ stream: true })
    const events = await readSse(res)
    expect(events.at(-1)).toBe('[DONE]')
    expect(events.some((e) => e !== '[DONE]' && 'error' in e)).toBe(false)
  })
})

test('a quiet stream is not cut by the server idle timeout', async () => {
  const slow = await startTestGateway({ openai }, { GW_UPSTREAM_TIMEOUT_MS: '5000' }, { idleTimeoutSeconds: 1 })
  try {
    openai.enqueue({ kind: 'reply', text: 'one', chunkDelayMs: 1600 })
    const res = await slow.chat({ model: 'openai/gpt-4o', messages: hello, stream: true })
    const events = await readSse(res)
    expect(events.at(-1)).toBe('[DONE]')
    expect(events.some((e) => e !== '[DONE]' && 'error' in e)).toBe(false)
  } finally {
    await slow.stop()
  }
}, 15_000)
