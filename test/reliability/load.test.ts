// Concurrent load with upstream faults: one log entry per request, answers never mixed up, no crash.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startFake, type Behavior, type FakeUpstream } from '../fakes/upstream'
import { startTestGateway, type TestGateway } from '../helpers/gateway'

let openai: FakeUpstream
let anthropic: FakeUpstream
let gw: TestGateway

beforeAll(async () => {
  openai = await startFake('openai')
  anthropic = await startFake('anthropic')
  gw = await startTestGateway({ openai, anthropic }, { GW_UPSTREAM_TIMEOUT_MS: '500' }, { health: { failureThreshold: 100_000 } })
  // All the load is one key's: its 150 streams fit the instance's cap, not a key's default share of it.
  await gw.admin('PUT', '/orgs/default/policy', { maxConcurrentStreams: 1_000, maxConcurrentStreamsPerKey: 1_000 })
})
afterAll(async () => {
  await gw.stop()
  await openai.stop()
  await anthropic.stop()
})

test('300 concurrent requests with resets, stalls, 429 and 529 storms: 300 log entries, each answer its own', async () => {
  const N = 300
  // Behaviours cycle; the fake takes them in arrival order, so every kind of fault is in the mix.
  const faults: Behavior[] = [
    { kind: 'reply' },
    { kind: 'error', status: 429, errorType: 'rate_limit' },
    { kind: 'reset' },
    { kind: 'reply', chunkDelayMs: 5 },
    { kind: 'stall-after', events: 2 },
    { kind: 'error', status: 500, errorType: 'server' },
    { kind: 'cut-after', events: 3 },
  ]
  openai.enqueue(...Array.from({ length: N }, (_, i) => faults[i % faults.length] as Behavior))
  anthropic.enqueue(
    ...Array.from({ length: N }, (_, i): Behavior => (i % 3 === 0 ? { kind: 'error', status: 529, errorType: 'overloaded' } : { kind: 'reply' })),
  )
  const results = await Promise.all(
    Array.from({ length: N }, async (_, i) => {
      // A distinct model id per request: the fake names it in its answer, so a mix-up would show.
      const model = `gpt-4o-load-${i}`
      const res = await gw.chat({
        model: `openai/${model}`,
        messages: [{ role: 'user', content: `request ${i}` }],
        stream: i % 2 === 0,
        metadata: { run: 'load', i },
        fallback_chain: [{ model: `anthropic/claude-load-${i}` }],
      })
      const text = await res.text()
      return { i, model, status: res.status, text, id: res.headers.get('x-gw-request-id') as string }
    }),
  )
  for (const r of results) {
    expect([200, 502, 504]).toContain(r.status)
    if (r.status === 200 && !r.text.includes('"error":true'))
      expect(r.text.includes(`(${r.model})`) || r.text.includes(`(claude-load-${r.i})`)).toBe(true)
    expect(r.text).not.toContain(`gpt-4o-load-${(r.i + 1) % N})`)
  }
  // One entry per request, none duplicated, each with its own metadata.
  await gw.gw.deps.logs.flush()
  const ids = new Set(results.map((r) => r.id))
  expect(ids.size).toBe(N)
  let cursor: string | null = null
  const seen: string[] = []
  do {
    const res = await gw.fetch(`/v1/logs?metadata=run=load&limit=500${cursor ? `&cursor=${cursor}` : ''}`)
    const page = (await res.json()) as { data: { requestId: string; metadata: { i: number } }[]; nextCursor: string | null }
    for (const e of page.data) {
      seen.push(e.requestId)
      expect(results[e.metadata.i]?.id).toBe(e.requestId)
    }
    cursor = page.nextCursor
  } while (cursor)
  expect(seen.length).toBe(N)
  expect(new Set(seen).size).toBe(N)
  // The process is alive and well.
  expect((await fetch(`${gw.url}/health`)).status).toBe(200)
}, 30_000)
