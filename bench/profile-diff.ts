// `bun bench/profile-diff.ts <json|stream> [openai|anthropic] [--perf]`: where gw's unloaded request costs
// more than the same-work floor's (bench/same-work-floor.ts), function by function. Both run from source
// under `bun --cpu-prof` (100 µs interval), pinned to CPU 0, the fake upstream and this driver on CPU 1;
// after a warm-up, each gets N (10,000) sequential requests in turn, and the samples of that window give
// the JS thread's self time per function and request, sorted by gw's excess. With --perf, both run
// without the JS profiler under `perf record -e cpu-clock` instead, and the output is the CPU per
// request of the whole process by where it ran: kernel, Bun's native code, JIT-compiled JS, libc; plus
// the native code addresses whose share grew most (Bun's binary carries no symbols: read them with
// objdump). bench/results/history-2026-11.md, "gw against the same-work floor, function by function".

import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BENCH_KEY, benchGwEnv, scenarioRequest, sequential, startBenchScript, startPinnedGw, warmUp } from './load'

const args = process.argv.slice(2)
const PERF = args.includes('--perf')
const [kind = 'stream', provider = 'openai'] = args.filter((a) => !a.startsWith('--'))
const N = Number(process.env.N ?? 10_000)
const WARM = Number(process.env.WARM ?? 40_000)
const TOP = Number(process.env.TOP ?? 40)
const ROOT = join(import.meta.dir, '..')
const work = mkdtempSync(join(tmpdir(), 'gw-profile-diff-'))
const OUT = join(work, 'profiles')
mkdirSync(OUT)
const children: ReturnType<typeof Bun.spawn>[] = []
process.on('exit', () => {
  for (const c of children) c.kill()
  rmSync(work, { recursive: true, force: true })
})

/** The JS profiler's sampling interval: each sample stands for this much of the thread's time. */
const SAMPLE_US = 100
const cpuProf = (name: string) => (PERF ? [] : ['--cpu-prof', `--cpu-prof-dir=${OUT}`, `--cpu-prof-name=${name}.cpuprofile`, `--cpu-prof-interval=${SAMPLE_US}`])
const fake = await startBenchScript('fake-upstream.ts', {}, 1)
children.push(fake.proc)
const same = await startBenchScript('same-work-floor.ts', { UPSTREAM: fake.url, KEY: BENCH_KEY, DB: join(work, 'same-work.db') }, 0, cpuProf('same-work'))
children.push(same.proc)
const gw = await startPinnedGw([process.execPath, ...cpuProf('gw'), join(ROOT, 'src/main.ts')], { GW_DRAIN_MS: '0', ...benchGwEnv(fake.url, work) })
children.push(gw.proc)

const target = (url: string) => scenarioRequest(provider, kind, url, BENCH_KEY)
const servers = { 'same-work': same, gw }
for (const [name, s] of Object.entries(servers)) await warmUp(name, target(s.url), WARM)

/** Per request, by key: what each server spent in its window. */
type Costs = Map<string, number>
const costs: Record<string, Costs> = {}
console.log(`${provider} ${kind}: ${N} sequential requests each, after ${WARM} warm-up requests${PERF ? ', under perf' : ', under bun --cpu-prof'}`)
for (const [name, s] of Object.entries(servers)) {
  const perfData = join(work, `${name}.perf`)
  const recorder = PERF ? Bun.spawn(['perf', 'record', '-q', '-e', 'cpu-clock', '-F', '10000', '-o', perfData, '-p', String(s.proc.pid)], { stdout: 'ignore', stderr: 'inherit' }) : undefined
  if (recorder) await Bun.sleep(500)
  // The profile's timestamps are epoch microseconds: the window is marked with the wall clock.
  const from = Date.now() * 1000
  const r = await sequential(target(s.url), N)
  const to = Date.now() * 1000
  if (recorder) {
    recorder.kill('SIGINT')
    await recorder.exited
  }
  s.proc.kill('SIGTERM')
  await s.proc.exited
  console.log(`${name}: p50 ${r.total.p50.toFixed(3)} ms, p99 ${r.total.p99.toFixed(3)} ms`)
  costs[name] = PERF ? await perfCosts(perfData, N) : jsCosts(join(OUT, `${name}.cpuprofile`), from, to, N)
}

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
}

/**
 * Self time per function and request (µs) over the samples taken between `from` and `to`. Samples
 * are counted, not their time deltas: the profiler takes none while the thread sleeps, so a delta
 * can span an idle gap.
 */
function jsCosts(file: string, from: number, to: number, requests: number): Costs {
  const p = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number }
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const out: Costs = new Map()
  let t = p.startTime
  p.samples.forEach((id, i) => {
    t += p.timeDeltas[i] ?? 0
    const f = byId.get(id)?.callFrame
    if (t < from || t > to || !f || f.functionName === '(idle)') return
    const where = f.url ? `${f.url.replace(/^.*?\/(src|bench|node_modules)\//, '$1/')}:${f.lineNumber + 1}` : 'native'
    const key = `${f.functionName || '(anonymous)'} (${where})`
    out.set(key, (out.get(key) ?? 0) + SAMPLE_US / requests)
  })
  return out
}

/** CPU per request (µs) by where it ran, and by 4 KiB page of Bun's native code. */
async function perfCosts(file: string, requests: number): Promise<Costs> {
  const report = await Bun.$`perf report -i ${file} --sort dso,sym --stdio -n -F overhead,sample,dso,sym`.nothrow().quiet().text()
  const out: Costs = new Map()
  const add = (k: string, us: number) => out.set(k, (out.get(k) ?? 0) + us)
  for (const line of report.split('\n')) {
    const m = /^\s*[\d.]+%\s+(\d+)\s+(\S+(?: tid \d+)?)\s+\[[.k]\]\s+(\S+)/.exec(line)
    if (!m) continue
    const us = (Number(m[1]) * 100) / requests // 10 kHz: 100 µs per sample
    const dso = m[2] as string
    const group = dso.startsWith('[kernel') ? 'kernel' : dso.startsWith('[JIT]') ? 'JIT-compiled JS' : /^(bun|bun\.exe|gw)$/.test(dso) ? "Bun's native code" : dso
    add(`= ${group}`, us)
    if (group === "Bun's native code" && (m[3] as string).startsWith('0x')) add(`native page ${(Math.floor(Number(m[3]) / 4096) * 4096).toString(16)}`, us)
  }
  return out
}

const g = costs.gw as Costs
const s = costs['same-work'] as Costs
const total = (c: Costs) => [...c].filter(([k]) => PERF === k.startsWith('= ')).reduce((a, [, v]) => a + v, 0)
console.log(`\n${PERF ? 'CPU' : 'JS thread, sampled'} per request: gw ${total(g).toFixed(1)} µs, same-work ${total(s).toFixed(1)} µs`)
const rows = [...new Set([...g.keys(), ...s.keys()])].map((k) => ({ k, g: g.get(k) ?? 0, s: s.get(k) ?? 0 }))
if (PERF)
  for (const r of rows.filter((r) => r.k.startsWith('= ')).sort((a, b) => b.g - a.g))
    console.log(`  ${r.k.slice(2).padEnd(18)} gw ${r.g.toFixed(1).padStart(6)} µs, same-work ${r.s.toFixed(1).padStart(6)} µs`)
console.log(`\n${PERF ? 'native code pages' : 'functions'} by gw's excess (µs per request: excess, gw, same-work):`)
for (const r of rows.filter((r) => !r.k.startsWith('= ')).sort((a, b) => b.g - b.s - (a.g - a.s)).slice(0, TOP))
  console.log(`${(r.g - r.s).toFixed(2).padStart(7)} ${r.g.toFixed(2).padStart(7)} ${r.s.toFixed(2).padStart(7)}  ${r.k}`)
process.exit(0)
