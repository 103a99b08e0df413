// `bun bench/cache-cpu.ts [rounds] [concurrency]`: what a response cache miss costs gw's serving thread, in
// process (PRODUCT §19: ≤ 5 µs with the cache on, nothing off) — `app.handle` with the bench upstream's
// answers served in process (no sockets: the noise of the kernel's network stack, which swamps a few µs in
// bench/cache.ts, is left out), a SQLite file so that log entries and the cache's puts go to the log thread
// as in production. Two orgs alike but for `cache: {mode: "exact"}`; every request a new question (each a
// miss, each answer kept). Alternating rounds of 4,000 requests (default 8 at a time) per org, each after a
// full garbage collection and ended by a log flush (the settled message that ends a put counts); the
// serving thread's CPU from /proc/<pid>/task/<pid>/schedstat (bench/thread-cpu.ts).

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../src/app'
import { loadConfig } from '../src/config'
import { startGateway } from '../src/server'
import { fakeFetch } from './fake-answers'
import { BENCH_ADMIN, benchGwEnv, cacheBenchKeys } from './load'
import { threadSnapshot } from './thread-cpu'

const [roundsArg = '20', concurrencyArg = '8'] = process.argv.slice(2)
const ROUNDS = Number(roundsArg)
const CONCURRENCY = Number(concurrencyArg)
const N = 4000
const work = mkdtempSync(join(tmpdir(), 'gw-cache-cpu-'))

const gw = await startGateway(loadConfig(benchGwEnv('http://upstream.bench', work)), { listen: false, fetch: fakeFetch })
try {
  const app = createApp(gw.deps, gw.admin)
  const base = 'http://gw.bench'
  const admin = async (method: string, path: string, body: unknown) => {
    const res = await app.handle(new Request(`${base}/admin${path}`, { method, headers: { authorization: `Bearer ${BENCH_ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }))
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
    return (await res.json()) as Record<string, unknown>
  }
  const keys = await cacheBenchKeys(admin)
  const targets = {
    'miss (cache on)': { key: keys.on, expect: 'miss' },
    'cache off': { key: keys.off, expect: 'off' },
  }
  let counter = 0
  const question = 'Say hello to the benchmark.'

  /** Serving-thread and Worker-thread µs per request of one round. */
  async function round(t: { key: string; expect: string }): Promise<{ serving: number; workers: number }> {
    const one = async () => {
      // The same length every time: a new question per request, so each one misses.
      const body = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: `${question} #${String(++counter).padStart(9, '0')}` }], max_tokens: 64, metadata: { bench: 'cache' } })
      // With its Content-Length, as a client sends it (without, gw reads the body as a chunked one).
      const headers = { authorization: `GwKey ${t.key}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }
      const res = await app.handle(new Request(`${base}/v1/chat/completions`, { method: 'POST', headers, body }))
      await res.arrayBuffer()
      if (res.status !== 200 || res.headers.get('x-gw-cache') !== t.expect) throw new Error(`HTTP ${res.status}, x-gw-cache ${res.headers.get('x-gw-cache')}`)
    }
    Bun.gc(true)
    const ns = (part: 'serving' | 'workers', snap: ReturnType<typeof threadSnapshot>) => [...snap.values()].filter((x) => x.part === part).reduce((a, x) => a + x.ns, 0)
    const before = threadSnapshot(process.pid)
    for (let done = 0; done < N; done += CONCURRENCY) await Promise.all(Array.from({ length: CONCURRENCY }, one))
    await gw.deps.logs.flush()
    const after = threadSnapshot(process.pid)
    return { serving: (ns('serving', after) - ns('serving', before)) / 1000 / N, workers: (ns('workers', after) - ns('workers', before)) / 1000 / N }
  }

  for (const t of Object.values(targets)) for (let i = 0; i < 3; i++) await round(t) // warm-up
  const names = Object.keys(targets) as (keyof typeof targets)[]
  const figures = new Map(names.map((n) => [n, [] as { serving: number; workers: number }[]]))
  for (let r = 0; r < ROUNDS; r++)
    // Each round starts with the other org, so neither always follows the same one.
    for (let i = 0; i < names.length; i++) {
      const name = names[(r + i) % names.length] as keyof typeof targets
      figures.get(name)?.push(await round(targets[name]))
    }
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b)
  const q = (xs: number[], at: number) => sorted(xs)[Math.floor((xs.length - 1) * at)] as number
  const of = (name: keyof typeof targets, part: 'serving' | 'workers') => (figures.get(name) ?? []).map((f) => f[part])
  for (const name of names)
    console.log(`${name}: serving thread ${q(of(name, 'serving'), 0).toFixed(1)} µs/request fastest, ${q(of(name, 'serving'), 0.5).toFixed(1)} median; Worker threads ${q(of(name, 'workers'), 0.5).toFixed(1)} median`)
  const pairs = (part: 'serving' | 'workers') => of('miss (cache on)', part).map((x, i) => x - (of('cache off', part)[i] as number))
  const d = pairs('serving')
  console.log(
    `miss − off, serving thread, round by round (${ROUNDS} rounds of ${N}, ${CONCURRENCY} at a time): ${d.map((x) => x.toFixed(1)).join(', ')} µs; median ${q(d, 0.5).toFixed(1)}, quartiles ${q(d, 0.25).toFixed(1)} / ${q(d, 0.75).toFixed(1)}; fastest rounds' difference ${(q(of('miss (cache on)', 'serving'), 0) - q(of('cache off', 'serving'), 0)).toFixed(1)} µs (target ≤ 5). Worker threads: median ${q(pairs('workers'), 0.5).toFixed(1)} µs`,
  )
} finally {
  await gw.stop()
  rmSync(work, { recursive: true, force: true })
}
