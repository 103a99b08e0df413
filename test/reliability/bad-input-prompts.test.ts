// Bad input on the prompt-run endpoint: fuzzed bodies and version selectors never get a 500.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let openai: FakeUpstream
let gw: TestGateway

beforeAll(async () => {
  openai = await startFake('openai')
  gw = await startTestGateway({ openai })
  await gw.admin('POST', '/orgs/default/prompts', { slug: 'fuzz' })
  await gw.admin('POST', '/orgs/default/prompts/fuzz/versions', {
    userTemplate: '{{a}} {{b}} {{> p}}',
    model: 'openai/gpt-4o-mini',
    variables: [{ name: 'a', type: 'number', required: true }, { name: 'b', type: 'json' }],
    publish: true,
  })
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
})

test('arbitrary run bodies and selectors: 200, or a 4xx / provider_error in the seed shape', async () => {
  const body = fc.oneof(
    fc.jsonValue(),
    fc.record(
      {
        variables: fc.oneof(fc.dictionary(fc.string(), fc.jsonValue()), fc.jsonValue()),
        overrides: fc.oneof(fc.record({ model: fc.string(), temperature: fc.jsonValue(), max_tokens: fc.jsonValue() }, { requiredKeys: [] }), fc.jsonValue()),
        stream: fc.jsonValue(),
        temperature: fc.jsonValue(),
        metadata: fc.jsonValue(),
      },
      { requiredKeys: [] },
    ),
  )
  const query = fc.constantFrom('', '?version=current', '?version=0', '?version=99999999999', '?version=%00', '?version=1&version=2')
  await fc.assert(
    fc.asyncProperty(body, query, async (b, q) => {
      const res = await gw.fetch(`/v1/prompts/fuzz/run${q}`, { method: 'POST', body: JSON.stringify(b) })
      const text = await res.text()
      expect(res.status).not.toBe(500)
      expect(res.headers.get('x-gw-request-id')).toBeTruthy()
      if (res.status === 200) return
      const err = JSON.parse(text) as Record<string, unknown>
      expect(err).toMatchObject({ error: true, requestId: res.headers.get('x-gw-request-id') })
      if (res.status >= 500) expect(err.code).toBe('provider_error')
    }),
    { numRuns: 200 },
  )
  expect((await fetch(`${gw.url}/health`)).status).toBe(200)
}, 60_000)

test('huge identifiers, long runs and special tokens in a run: a short 4xx or an answer, quickly, never a 500', async () => {
  const huge = fc.integer({ min: 257, max: 100_000 }).map((n) => 'm'.repeat(n))
  const nasty = fc.oneof(
    fc.constantFrom('<|endoftext|>', '<|im_start|>system', '<|fim_middle|>'),
    fc.integer({ min: 1_000, max: 50_000 }).map((n) => 'z'.repeat(n)),
  )
  const body = fc.record(
    {
      variables: fc.record({ a: fc.constant(1), b: nasty }),
      user: fc.oneof(fc.constant('u'), huge),
      overrides: fc.record({ model: fc.oneof(fc.constant('openai/gpt-4o-mini'), huge.map((m) => `openai/${m}`)) }),
    },
    { requiredKeys: ['variables'] },
  )
  await fc.assert(
    fc.asyncProperty(body, async (b) => {
      const started = performance.now()
      const res = await gw.fetch('/v1/prompts/fuzz/run', { method: 'POST', body: JSON.stringify(b) })
      const text = await res.text()
      expect(res.status === 200 || (res.status >= 400 && res.status < 500)).toBe(true)
      if (res.status !== 200) expect(text.length).toBeLessThan(600)
      const tooLong = (b.user?.length ?? 0) > 256 || (b.overrides?.model.length ?? 0) > 256
      if (tooLong) expect(res.status).toBe(400)
      expect(performance.now() - started).toBeLessThan(5_000)
    }),
    { numRuns: 60 },
  )
}, 60_000)
