// `bun bench/slow-requests.ts [json|stream] [openai|anthropic] [--lower <thread-name regex>=<nice 1..19|idle>]`: where the
// unloaded tail comes from. The compiled gw pinned to CPU 0 (the fake upstream and this driver on CPU 1), after a warm-up,
// answers N (4,000) sequential requests; for those slower than SLOW_MS (1.5) it counts which of gw's threads spent more
// than 0.2 ms of CPU while one ran (`/proc/<pid>/task/<tid>/schedstat`; each request listed with LIST=1). With `--lower`,
// blocks of 250 requests take turns as they are and with the threads whose name matches at a lower priority (`renice`, or
// `chrt -i` for SCHED_IDLE), reported apart: whether the tail follows those threads' CPU. Results:
// bench/results/p99-2026-11-27.md.

import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BENCH_KEY, benchGwEnv, percentiles, scenarioRequest, startBenchScript, startPinnedGw, warmUp } from './load'

const args = process.argv.slice(2)
const [kind = 'json', provider = 'openai'] = args.filter((a, i) => !a.startsWith('--') && args[i - 1] !== '--lower')
const lower = args.includes('--lower') ? args[args.indexOf('--lower') + 1] : undefined
const N = Number(process.env.N ?? 4000)
const WARM = Number(process.env.WARM ?? 20_000)
const SLOW_MS = Number(process.env.SLOW_MS ?? 1.5)
const children: { kill(): void }[] = []
process.on('exit', () => children.forEach((c) => c.kill()))

const fake = await startBenchScript('fake-upstream.ts', {}, 1)
children.push(fake.proc)
const gw = await startPinnedGw([join(import.meta.dir, '../dist/gw')], benchGwEnv(fake.url, mkdtempSync(join(tmpdir(), 'gw-slow-'))))
children.push(gw.proc)
const pid = gw.proc.pid
const target = scenarioRequest(provider, kind, gw.url, BENCH_KEY)
await warmUp('gw', target, WARM)

/** Each thread's CPU so far (ns), keyed `tid:name`. */
function threads(): Map<string, number> {
  const out = new Map<string, number>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim()
      out.set(`${tid}:${tid === String(pid) ? 'main' : name}`, Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]))
    } catch {} // the thread ended meanwhile
  }
  return out
}

/** Threads whose name matches `pattern`, by id. */
const matching = (pattern: RegExp) => [...threads().keys()].map((k) => k.split(':') as [string, string]).filter(([, name]) => pattern.test(name))

/** Sets the matching threads' priority: lowered as `how` says, or back to normal. */
function setPriority(pattern: RegExp, how: string | undefined): void {
  for (const [tid] of matching(pattern)) {
    if (how === 'idle') Bun.spawnSync(['chrt', '-i', '-p', '0', tid])
    else if (how !== undefined) Bun.spawnSync(['renice', '-n', how, '-p', tid])
    else {
      Bun.spawnSync(['chrt', '-o', '-p', '0', tid])
      Bun.spawnSync(['renice', '-n', '0', '-p', tid])
    }
  }
}

interface Run {
  all: number[]
  slow: string[]
  /** In how many slow requests each thread (by name) spent more than 0.2 ms. */
  seenIn: Map<string, number>
}
const run = (): Run => ({ all: [], slow: [], seenIn: new Map() })
const asIs = run()
const lowered = run()
const [pattern = '', how = '19'] = (lower ?? '').split('=')
const re = new RegExp(pattern)
if (lower) console.log(`${matching(re).map(([tid, name]) => `${name} (${tid})`).join(', ')}: ${how === 'idle' ? 'SCHED_IDLE' : `nice ${how}`} in every other block of 250`)
const t0 = performance.now()
for (let i = 0; i < N; i++) {
  // Blocks of 250 as they are and lowered, in turn, so that the host's drift hits both alike.
  const r = lower && Math.floor(i / 250) % 2 === 1 ? lowered : asIs
  if (lower && i % 250 === 0) setPriority(re, r === lowered ? how : undefined)
  const before = threads()
  const start = performance.now()
  const res = await fetch(target.url, { method: 'POST', headers: { 'content-type': 'application/json', ...target.headers }, body: target.body })
  await res.arrayBuffer()
  const ms = performance.now() - start
  r.all.push(ms)
  if (ms <= SLOW_MS) continue
  const spent = [...threads()]
    .map(([k, ns]) => [k.split(':')[1] as string, (ns - (before.get(k) ?? 0)) / 1e6] as const)
    .filter(([, cpu]) => cpu > 0.2)
  for (const [name] of new Map(spent)) r.seenIn.set(name, (r.seenIn.get(name) ?? 0) + 1)
  r.slow.push(`#${i} at ${Math.round(start - t0)} ms: ${ms.toFixed(2)} ms | ${spent.map(([name, cpu]) => `${name} ${cpu.toFixed(2)}`).join(', ')}`)
}
for (const [name, r] of [['as is', asIs], ['lowered', lowered]] as const) {
  if (!r.all.length) continue
  const p = percentiles(r.all)
  console.log(`${provider} ${kind}, ${name}: ${r.all.length} sequential requests: p50 ${p.p50.toFixed(3)} ms, p99 ${p.p99.toFixed(3)} ms; ${r.slow.length} over ${SLOW_MS} ms`)
  console.log(`  threads busy (> 0.2 ms) during the slow ones: ${[...r.seenIn].sort((a, b) => b[1] - a[1]).map(([n, c]) => `${n} in ${c}`).join(', ')}`)
  if (process.env.LIST) for (const line of r.slow) console.log(`  ${line}`)
}
process.exit(0)
