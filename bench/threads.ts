// `bun bench/threads.ts <json|stream> [openai|anthropic]`: where an unloaded request's CPU goes, thread by
// thread — CPU, timeslices, voluntary and forced switches per request, and the process's minor page
// faults — for gw (the compiled binary, pinned to CPU 0 with all its threads) and the same-work floor,
// in alternating rounds of 2,000 sequential requests after a warm-up. THREADS_VARIANTS (JSON: name →
// extra environment; GW_BIN in it names another binary) starts several gw side by side, e.g.
// '{"gw":{},"never":{"MIMALLOC_PURGE_DELAY":"-1"},"old":{"GW_BIN":"/tmp/gw-old"}}';
// SAME_ENV (JSON) adds to the same-work floor's environment. ROUNDS (3) and WARM (40,000) as named.
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BENCH_KEY, benchGwEnv, scenarioRequest, sequential, startBenchScript, startPinnedGw, warmUp } from './load'

const [kind = 'stream', provider = 'openai'] = process.argv.slice(2)
const ROUNDS = Number(process.env.ROUNDS ?? 3)
const WARM = Number(process.env.WARM ?? 40_000)
const N = 2000
const variants = JSON.parse(process.env.THREADS_VARIANTS ?? '{"gw":{}}') as Record<string, Record<string, string>>
const work = mkdtempSync(join(tmpdir(), 'gw-threads-'))
const children: ReturnType<typeof Bun.spawn>[] = []
process.on('exit', () => {
  for (const c of children) c.kill()
})

/** Starts a bench server script; it is stopped when this process exits. */
async function startScript(script: string, env: Record<string, string>, cpu: number): Promise<{ pid: number; url: string }> {
  const { proc, url } = await startBenchScript(script, env, cpu)
  children.push(proc)
  return { pid: proc.pid, url }
}

async function startGw(name: string, upstream: string, variant: Record<string, string>): Promise<{ pid: number; url: string }> {
  const { GW_BIN: binary = join(import.meta.dir, '../dist/gw'), ...extra } = variant
  const { proc, url } = await startPinnedGw([binary], { ...benchGwEnv(upstream, mkdtempSync(join(work, `${name}-`))), ...extra })
  children.push(proc)
  return { pid: proc.pid, url }
}

interface ThreadStat {
  name: string
  ns: number
  slices: number
  voluntary: number
  forced: number
}

/** Every thread of a process by id; the main thread is "main", trailing digits of a name become '#'. */
function threads(pid: number): Map<string, ThreadStat> {
  const out = new Map<string, ThreadStat>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const dir = `/proc/${pid}/task/${tid}`
      const [ns = 0, , slices = 0] = readFileSync(`${dir}/schedstat`, 'utf8').split(' ').map(Number)
      const status = readFileSync(`${dir}/status`, 'utf8')
      const count = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0)
      const name = tid === String(pid) ? 'main' : readFileSync(`${dir}/comm`, 'utf8').trim().replace(/\d+$/, '#')
      out.set(tid, { name, ns, slices, voluntary: count('voluntary_ctxt_switches'), forced: count('nonvoluntary_ctxt_switches') })
    } catch {} // the thread ended meanwhile
  }
  return out
}

const minorFaults = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[7] ?? 0)

/** Per request, by thread name (threads that spent under 0.5 µs per request left out). */
function perRequest(before: Map<string, ThreadStat>, after: Map<string, ThreadStat>): string {
  const byName = new Map<string, ThreadStat>()
  for (const [tid, a] of after) {
    const b = before.get(tid)
    const sum = byName.get(a.name) ?? { name: a.name, ns: 0, slices: 0, voluntary: 0, forced: 0 }
    sum.ns += a.ns - (b?.ns ?? 0)
    sum.slices += a.slices - (b?.slices ?? 0)
    sum.voluntary += a.voluntary - (b?.voluntary ?? 0)
    sum.forced += a.forced - (b?.forced ?? 0)
    byName.set(a.name, sum)
  }
  const rows = [...byName.values()].filter((s) => s.ns / N >= 500).sort((x, y) => y.ns - x.ns)
  const total = rows.reduce((a, s) => a + s.ns, 0)
  const f = (x: number) => (x / N).toFixed(2)
  return `all threads ${(total / N / 1000).toFixed(0)} µs | ${rows.map((s) => `${s.name} ${(s.ns / N / 1000).toFixed(1)} µs, ${f(s.slices)} slices (${f(s.voluntary)} v, ${f(s.forced)} f)`).join('; ')}`
}

const fake = await startScript('fake-upstream.ts', {}, 1)
const same = await startScript('same-work-floor.ts', { UPSTREAM: fake.url, KEY: BENCH_KEY, DB: join(work, 'same-work.db'), ...JSON.parse(process.env.SAME_ENV ?? '{}') }, 0)
const servers: Record<string, { pid: number; url: string }> = { 'same-work': same }
for (const [name, extra] of Object.entries(variants)) servers[name] = await startGw(name, fake.url, extra)

const target = (url: string) => scenarioRequest(provider, kind, url, BENCH_KEY)
for (const [name, s] of Object.entries(servers)) await warmUp(name, target(s.url), WARM)
console.log(`${provider} ${kind}, ${N} sequential requests a round, after ${WARM} warm-up requests`)
for (let round = 1; round <= ROUNDS; round++)
  for (const [name, s] of Object.entries(servers)) {
    const faults = minorFaults(s.pid)
    const before = threads(s.pid)
    const r = await sequential(target(s.url), N)
    const line = perRequest(before, threads(s.pid))
    const pf = ((minorFaults(s.pid) - faults) / N).toFixed(2)
    console.log(`round ${round} ${name}: p50 ${r.total.p50.toFixed(3)} ms, p99 ${r.total.p99.toFixed(3)} ms, ${pf} page faults | ${line}`)
  }
process.exit(0)
