// `bun bench/endpoint-cpu.ts [json|stream] [rounds]`: CPU per request of gw's own handling, in process —
// `app.handle` with the bench upstream's answers served in process (no sockets, no HTTP parsing) — for
// the bench's chat completions relayed to OpenAI and to an OpenAI-compatible provider (the vllm preset),
// and its /v1/messages request relayed to Anthropic,
// alternating rounds of 4,000 requests (64 at a time), each after a full garbage collection and in a
// rotating order; the fastest round of each is the figure, since other programs' load only slows a
// round down (docs/benchmarks.md).

import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../src/app'
import { loadConfig } from '../src/config'
import { startGateway } from '../src/server'
import { fakeAnswer } from './fake-answers'
import { BENCH_ADMIN, BENCH_KEY, benchGwEnv, scenarioRequest } from './load'

const [kind = 'json', roundsArg = '12'] = process.argv.slice(2)
const KEY = BENCH_KEY
const ADMIN = BENCH_ADMIN
const UPSTREAM = 'http://upstream.bench'
const work = mkdtempSync(join(tmpdir(), 'gw-endpoint-cpu-'))

const upstream = (async (input: string | URL | Request, init?: RequestInit) => {
  const url = new URL(input instanceof Request ? input.url : String(input))
  const body = JSON.parse(String(init?.body)) as { model: string; stream?: boolean }
  return fakeAnswer(url.pathname, body) ?? new Response('{}', { status: 404 })
}) as typeof fetch

const config = loadConfig(benchGwEnv(UPSTREAM, work))
const gw = await startGateway(config, { listen: false, fetch: upstream })
const app = createApp(gw.deps, gw.admin)
const base = 'http://gw.bench'
const policy = await app.handle(
  new Request(`${base}/admin/orgs/default/policy`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    // 64 streams at once: above the default per-credential cap on concurrent streams.
    body: JSON.stringify({ requestsPerMinute: 1e8, tokensPerMinute: 1e12, maxTokens: 4096, maxConcurrentStreams: 1000, maxConcurrentStreamsPerKey: 1000 }),
  }),
)
if (policy.status !== 200) throw new Error(`policy: ${policy.status}`)

// `compat`: the same OpenAI model through an OpenAI-compatible provider (the vllm preset, PRODUCT §17).
const scenarios = { 'chat completions → OpenAI': 'openai', 'chat completions → vllm preset': 'compat', '/v1/messages → Anthropic': 'messages' } as const
const N = 4000
const CONCURRENCY = 64

async function round(provider: string): Promise<number> {
  const t = scenarioRequest(provider, kind, base, KEY)
  const one = async () => {
    const res = await app.handle(new Request(t.url, { method: 'POST', headers: { 'content-type': 'application/json', ...t.headers }, body: t.body }))
    if (res.status !== 200) throw new Error(`${provider}: HTTP ${res.status} ${await res.text()}`)
    await res.arrayBuffer()
  }
  // The previous round's garbage is collected first, outside the measure: otherwise the round after another
  // scenario pays for that scenario's garbage (the first scenario of a round measured ~20 µs more, whichever it was).
  Bun.gc(true)
  const start = process.cpuUsage()
  for (let done = 0; done < N; done += CONCURRENCY) await Promise.all(Array.from({ length: CONCURRENCY }, one))
  const used = process.cpuUsage(start)
  return (used.user + used.system) / N
}

const best = new Map<string, number>()
for (const [name, provider] of Object.entries(scenarios)) await round(provider) // warm-up
const order = Object.entries(scenarios)
for (let r = 0; r < Number(roundsArg); r++)
  // Each round starts with the next scenario, so no scenario always follows the same one.
  for (let i = 0; i < order.length; i++) {
    const [name, provider] = order[(r + i) % order.length] as [string, string]
    best.set(name, Math.min(best.get(name) ?? Infinity, await round(provider)))
  }
for (const [name, us] of best) console.log(`${kind}, ${name}: ${us.toFixed(1)} µs CPU/request (fastest of ${roundsArg} rounds of ${N}, in process)`)
await gw.stop()
