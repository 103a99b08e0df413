// The child of bench/gc-per-request.ts: gw in process on a file database, `app.handle` with the bench
// upstream's answers, a warm-up, then the measured requests between two markers in its GC log.

import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../src/app'
import { loadConfig } from '../src/config'
import { startGateway } from '../src/server'
import { fakeAnswer } from './fake-answers'
import { BENCH_ADMIN, BENCH_KEY, benchGwEnv, scenarioRequest } from './load'

const [kind = 'json', n = '20000'] = process.argv.slice(2)
const upstream = (async (input: string | URL | Request, init?: RequestInit) => {
  const url = new URL(input instanceof Request ? input.url : String(input))
  return fakeAnswer(url.pathname, JSON.parse(String(init?.body)) as { model: string; stream?: boolean }) ?? new Response('{}', { status: 404 })
}) as typeof fetch
const gw = await startGateway(loadConfig(benchGwEnv('http://upstream.bench', mkdtempSync(join(tmpdir(), 'gw-gc-')))), { listen: false, fetch: upstream })
const app = createApp(gw.deps, gw.admin)
const policy = { requestsPerMinute: 1e8, tokensPerMinute: 1e12, maxTokens: 4096, maxConcurrentStreams: 1e5, maxConcurrentStreamsPerKey: 1e5 }
await app.handle(
  new Request('http://gw.bench/admin/orgs/default/policy', {
    method: 'PUT',
    headers: { authorization: `Bearer ${BENCH_ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify(policy),
  }),
)
const t = scenarioRequest('openai', kind, 'http://gw.bench', BENCH_KEY)
async function run(count: number): Promise<void> {
  const one = async () => {
    const res = await app.handle(new Request(t.url, { method: 'POST', headers: { 'content-type': 'application/json', ...t.headers }, body: t.body }))
    await res.arrayBuffer()
  }
  for (let done = 0; done < count; done += 16) await Promise.all(Array.from({ length: 16 }, one))
}
await run(20_000)
await gw.deps.logs.flush()
// A full collection of this thread's heap between two markers names it in the log.
console.error('GC-DRIVER-MARK')
Bun.gc(true)
console.error('GC-DRIVER-START')
await run(Number(n))
await gw.deps.logs.flush()
console.error('GC-DRIVER-END')
await gw.stop()
