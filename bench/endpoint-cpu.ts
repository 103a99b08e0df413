// `bun bench/endpoint-cpu.ts [json|stream] [rounds]`: CPU per request of gw's own handling, in process —
// `app.handle` with the bench upstream's answers served in process (no sockets, no HTTP parsing) — for
// the bench's chat completions relayed to OpenAI and to an OpenAI-compatible provider (the vllm preset),
// and its /v1/messages request relayed to Anthropic, alternating rounds of 4,000 requests (64 at a time),
// each after a full garbage collection and in a rotating order; the fastest round of each is the figure,
// since other programs' load only slows a round down (docs/benchmarks.md). Besides the process's CPU, the
// serving thread's own and the Worker threads' (the log thread's; bench/thread-cpu.ts); the database
// is a file, so log entries go to the log thread as in production.

import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../src/app'
import { loadConfig } from '../src/config'
import { startGateway } from '../src/server'
import { fakeFetch } from './fake-answers'
import { BENCH_ADMIN, BENCH_KEY, benchGwEnv, scenarioRequest } from './load'
import { type ThreadCpu, threadCpuPerRequest, threadSnapshot } from './thread-cpu'

const [kind = 'json', roundsArg = '12'] = process.argv.slice(2)
const KEY = BENCH_KEY
const ADMIN = BENCH_ADMIN
const UPSTREAM = 'http://upstream.bench'
const work = mkdtempSync(join(tmpdir(), 'gw-endpoint-cpu-'))

const config = loadConfig(benchGwEnv(UPSTREAM, work))
const gw = await startGateway(config, { listen: false, fetch: fakeFetch })
const app = createApp(gw.deps, gw.admin)
const base = 'http://gw.bench'
const policy = await app.handle(
  new Request(`${base}/admin/orgs/default/policy`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ requestsPerMinute: 1e8, tokensPerMinute: 1e12, maxTokens: 4096, maxConcurrentStreams: 1e5, maxConcurrentStreamsPerKey: 1e5 }),
  }),
)
if (policy.status !== 200) throw new Error(`policy: ${policy.status}`)

// `compat`: the same OpenAI model through an OpenAI-compatible provider (the vllm preset, PRODUCT §17).
const scenarios = { 'chat completions → OpenAI': 'openai', 'chat completions → vllm preset': 'compat', '/v1/messages → Anthropic': 'messages' } as const
const N = 4000
const CONCURRENCY = 64

async function round(provider: string): Promise<{ all: number; threads: ThreadCpu }> {
  const t = scenarioRequest(provider, kind, base, KEY)
  const one = async () => {
    // With its Content-Length, as a client sends it (without, gw reads the body as a chunked one).
    const res = await app.handle(new Request(t.url, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(t.body)), ...t.headers }, body: t.body }))
    if (res.status !== 200) throw new Error(`${provider}: HTTP ${res.status} ${await res.text()}`)
    await res.arrayBuffer()
  }
  // The previous round's garbage is collected first, outside the measure: otherwise the round after another
  // scenario pays for that scenario's garbage (the first scenario of a round measured ~20 µs more, whichever it was).
  Bun.gc(true)
  const start = process.cpuUsage()
  const threads = threadSnapshot(process.pid)
  for (let done = 0; done < N; done += CONCURRENCY) await Promise.all(Array.from({ length: CONCURRENCY }, one))
  // The log thread's share of this round: what it has written by now (a flush waits for the rest).
  await gw.deps.logs.flush()
  const used = process.cpuUsage(start)
  return { all: (used.user + used.system) / N, threads: threadCpuPerRequest(process.pid, threads, N) }
}

const best = new Map<string, number>()
const bestServing = new Map<string, ThreadCpu>()
for (const [, provider] of Object.entries(scenarios)) await round(provider) // warm-up
const order = Object.entries(scenarios)
for (let r = 0; r < Number(roundsArg); r++)
  // Each round starts with the next scenario, so no scenario always follows the same one.
  for (let i = 0; i < order.length; i++) {
    const [name, provider] = order[(r + i) % order.length] as [string, string]
    const { all, threads } = await round(provider)
    best.set(name, Math.min(best.get(name) ?? Infinity, all))
    if (threads.serving < (bestServing.get(name)?.serving ?? Infinity)) bestServing.set(name, threads)
  }
for (const [name, us] of best) {
  const t = bestServing.get(name)
  console.log(
    `${kind}, ${name}: ${us.toFixed(1)} µs CPU/request (fastest of ${roundsArg} rounds of ${N}, in process); serving thread ${t?.serving} µs, workers ${t?.workers} µs, JIT ${t?.jit} µs, other threads ${t?.other} µs (its fastest round)`,
  )
}
await gw.stop()
