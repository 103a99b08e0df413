// `bun bench/rss-streams.ts`: gw's peak RSS with 1,000 slow streams open at once, phase by phase (issue 28's memory target).
// As `npm run bench`'s memory run (bench/run.ts, "peak RSS with"): a fresh gw on CPU 0, the fake upstream and this driver on
// CPU 1, all allowed 4,096 requests in flight. Each run reports the idle RSS (anonymous and file-backed), the RSS once every
// stream is open, the highest sampled while they drip, the peak (VmHWM) and the RSS 2 s after they ended; then medians.
// Options: --runs N (3), --streams N (1000); --binary PATH (dist/gw) or --src (the sources, with Bun flags from --bun-arg A…);
// --floor (the bare proxy instead of gw; --floor-script NAME: another bench/ script speaking the same); --env K=V… (added to
// the server's environment); --trace (the RSS every 20 ms while the streams end); --smaps (resident memory by mapping at the end);
// --probe (sends the server SIGUSR2 once all are open, 5 s later and after the end: for a --preload that reports on it).

import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BENCH_KEY, benchGwEnv, runPinned, startBenchScript, startPinnedGw } from './load'

const ROOT = join(import.meta.dir, '..')
const BUN = process.execPath

await runPinned(import.meta.path)

const args = process.argv.slice(2)
const values = (name: string) => args.flatMap((a, i) => (a === name && args[i + 1] !== undefined ? [args[i + 1] as string] : []))
const flag = (name: string) => args.includes(name)
const RUNS = Number(values('--runs')[0] ?? 3)
const STREAMS = Number(values('--streams')[0] ?? 1000)
const EXTRA_ENV = Object.fromEntries(values('--env').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]))
const BUN_ARGS = values('--bun-arg')

const statusKb = (pid: number, field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1])
const mb = (kb: number) => Math.round((kb / 1024) * 10) / 10
/** Anonymous and file-backed resident memory (smaps_rollup), in MB. */
function rollup(pid: number): { anon: number; file: number } {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8')
  const kb = (f: string) => Number(new RegExp(`^${f}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0)
  return { anon: mb(kb('Anonymous')), file: mb(kb('Rss') - kb('Anonymous')) }
}

/** Resident memory by kind of mapping (file, anonymous by permissions, heap, stack), in MB: where the RSS is. */
function smapsSummary(pid: number): void {
  const by = new Map<string, number>()
  let kind = ''
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const m = /^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line)
    if (m) kind = m[2] ? (m[2].startsWith('/') ? `file ${m[2].split('/').pop()}` : m[2]) : `anon ${m[1]}`
    const r = /^Rss:\s+(\d+) kB/.exec(line)
    if (r) by.set(kind, (by.get(kind) ?? 0) + Number(r[1]))
  }
  console.log(JSON.stringify(Object.fromEntries([...by].filter(([, kb]) => kb >= 512).sort((a, b) => b[1] - a[1]).map(([k, kb]) => [k, mb(kb)]))))
}

interface Server {
  proc: ReturnType<typeof Bun.spawn>
  url: string
  slowUrl: string
  headers: Record<string, string>
  body: string
  dir: string
}

const question = [{ role: 'user', content: 'Say hello to the benchmark.' }]

async function startGw(upstream: string): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-rss-'))
  const cmd = flag('--src') ? [BUN, ...BUN_ARGS, join(ROOT, 'src/main.ts')] : [values('--binary')[0] ?? join(ROOT, 'dist/gw')]
  const { proc, url } = await startPinnedGw(cmd, { ...benchGwEnv(upstream, dir), ...EXTRA_ENV })
  const body = JSON.stringify({ model: 'openai/gpt-4o-mini-slow', messages: question, max_tokens: 64, metadata: { bench: 'yes', scenario: 'openai stream' }, stream: true })
  return { proc, url, slowUrl: `${url}/v1/chat/completions`, headers: { authorization: `GwKey ${BENCH_KEY}` }, body, dir }
}

async function startFloor(upstream: string): Promise<Server> {
  const { proc, url } = await startBenchScript(values('--floor-script')[0] ?? 'floor-proxy.ts', { UPSTREAM: upstream, ...EXTRA_ENV }, 0, BUN_ARGS)
  const body = JSON.stringify({ model: 'gpt-4o-mini-slow', messages: question, max_tokens: 64, stream: true, stream_options: { include_usage: true } })
  return { proc, url, slowUrl: `${url}/v1/chat/completions`, headers: {}, body, dir: '' }
}

interface Run {
  idle: number
  idleAnon: number
  idleFile: number
  threads: number
  allOpen: number
  allOpenMs: number
  dripMax: number
  peak: number
  peakAnon: number
  after: number
  ok: number
}

async function once(upstream: string): Promise<Run> {
  const s = flag('--floor') ? await startFloor(upstream) : await startGw(upstream)
  try {
    const pid = s.proc.pid
    await Bun.sleep(1000)
    const idle = statusKb(pid, 'VmRSS')
    const idleRollup = rollup(pid)
    const threads = Number(/Threads:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1])
    let open = 0
    let ended = 0
    let dripMax = 0
    let peakAnon = 0
    const t0 = performance.now()
    const sampler = setInterval(() => {
      const rss = statusKb(pid, 'VmRSS')
      if (open === STREAMS && ended === 0) dripMax = Math.max(dripMax, rss)
      if (rss >= statusKb(pid, 'VmHWM')) peakAnon = Math.max(peakAnon, rollup(pid).anon)
    }, 100)
    const streams = Array.from({ length: STREAMS }, async () => {
      const res = await fetch(s.slowUrl, { method: 'POST', headers: { 'content-type': 'application/json', ...s.headers }, body: s.body })
      open++
      await res.text()
      ended++
      return res.status
    })
    while (open < STREAMS && performance.now() - t0 < 30_000) await Bun.sleep(20)
    const allOpenMs = performance.now() - t0
    const allOpen = statusKb(pid, 'VmRSS')
    const probe = () => flag('--probe') && process.kill(pid, 'SIGUSR2')
    probe()
    setTimeout(probe, 5000)
    const trace: string[] = []
    let firstEnd = 0
    const tracer = flag('--trace')
      ? setInterval(() => {
          if (ended === 0) return
          firstEnd ||= performance.now()
          const t = Math.round(performance.now() - firstEnd)
          if (t < 2000) trace.push(`${t}:${mb(statusKb(pid, 'VmRSS'))}/${ended}`)
        }, 20)
      : undefined
    const statuses = await Promise.all(streams)
    await Bun.sleep(tracer ? 2000 : 0)
    clearInterval(tracer)
    if (tracer) console.log(trace.join(' '))
    probe()
    if (flag('--smaps')) smapsSummary(pid)
    await Bun.sleep(300)
    clearInterval(sampler)
    const peak = statusKb(pid, 'VmHWM')
    await Bun.sleep(1700)
    return {
      idle: mb(idle),
      idleAnon: idleRollup.anon,
      idleFile: idleRollup.file,
      threads,
      allOpen: mb(allOpen),
      allOpenMs: Math.round(allOpenMs),
      dripMax: mb(dripMax),
      peak: mb(peak),
      peakAnon,
      after: mb(statusKb(pid, 'VmRSS')),
      ok: statuses.filter((x) => x === 200).length,
    }
  } finally {
    s.proc.kill('SIGTERM')
    await s.proc.exited
    if (s.dir) rmSync(s.dir, { recursive: true, force: true })
  }
}

const fake = await startBenchScript('fake-upstream.ts', {}, 1)
try {
  const runs: Run[] = []
  for (let i = 0; i < RUNS; i++) {
    const r = await once(fake.url)
    runs.push(r)
    console.log(JSON.stringify(r))
  }
  const median = (k: keyof Run) => {
    const v = runs.map((r) => r[k]).sort((a, b) => a - b)
    return `${v[Math.floor(v.length / 2)]} (${v[0]}–${v.at(-1)})`
  }
  console.log(`median (range) of ${RUNS}: idle ${median('idle')}, all open ${median('allOpen')}, drip max ${median('dripMax')}, peak ${median('peak')}, after ${median('after')} MB`)
} finally {
  fake.proc.kill('SIGTERM')
}
