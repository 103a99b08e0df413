// `bun bench/concurrency.ts [json|stream] [rounds]`: the serving thread's CPU per request of gw and of the
// same-work floor (bench/same-work-floor.ts) as the number of requests in flight grows (wrk with 1, 4,
// 16 and 64 connections, 5 s each, taking turns), both pinned to CPU 0 (the fake upstream and wrk on
// CPU 1): whether a part of gw's cost grows with what is in flight rather than with each request.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { threadCpuPerRequest, threadSnapshot } from './thread-cpu'
import { BENCH_KEY, benchGwEnv, requireWrk, scenarioRequest, startBenchScript, startPinnedGw, wrk } from './load'

const [kind = 'json', roundsArg = '2'] = process.argv.slice(2)
const wrkPath = await requireWrk()
const CONNECTIONS = [1, 4, 16, 64]
const fake = await startBenchScript('fake-upstream.ts', {}, 1)
const work = mkdtempSync(join(tmpdir(), 'gw-concurrency-'))
process.on('exit', () => rmSync(work, { recursive: true, force: true }))
const same = await startBenchScript('same-work-floor.ts', { UPSTREAM: fake.url, KEY: BENCH_KEY, DB: join(work, 'same-work.db') }, 0)
const gw = await startPinnedGw([process.execPath, join(import.meta.dir, '../src/main.ts')], benchGwEnv(fake.url, work))
const targets = [
  { name: 'same-work', pid: same.proc.pid, req: scenarioRequest('openai', kind, same.url, BENCH_KEY) },
  { name: 'gw', pid: gw.proc.pid, req: scenarioRequest('openai', kind, gw.url, BENCH_KEY) },
]
for (const t of targets) await wrk(wrkPath, t.req, 64, 5, 1)
const best = new Map<string, number>()
for (let round = 0; round < Number(roundsArg); round++)
  for (const c of CONNECTIONS)
    for (const t of targets) {
      const before = threadSnapshot(t.pid)
      const r = await wrk(wrkPath, t.req, c, 5, 1)
      const split = threadCpuPerRequest(t.pid, before, r.requests)
      const key = `${t.name} ${c}`
      best.set(key, Math.min(best.get(key) ?? Infinity, split.serving))
      console.log(`${key} connections: ${Math.round(r.rps)} req/s, serving thread ${split.serving} µs, workers ${split.workers} µs, other ${split.other} µs, non-2xx ${r.non2xx}`)
    }
for (const c of CONNECTIONS) console.log(`fastest, ${c} connections: same-work ${best.get(`same-work ${c}`)} µs, gw ${best.get(`gw ${c}`)} µs`)
gw.proc.kill()
same.proc.kill()
fake.proc.kill()
