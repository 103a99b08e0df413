// `bun bench/cache.ts`: the response cache on the bench (PRODUCT §19: a hit ≤ 0.3 ms p50 over the floor, JSON;
// a miss adds ≤ 5 µs of CPU with the cache on, nothing off): direct, the bare floor proxy and gw (from source,
// SQLite, auth + policy + logging with bodies) hit / miss / cache off, one request at a time, best of rounds.
// gw and the floor on CPU 0, the fake upstream and this driver on CPU 1. A miss's serving-thread CPU over cache
// off is given per round and per turn (each miss turn against the off turn right after it). Options (env):
// CACHE_BENCH_ROUNDS (5), CACHE_BENCH_REQUESTS per round (2000), CACHE_BENCH_WARMUP per target (30000),
// CACHE_BENCH_WORKERS_CPU (gw's Worker threads on that CPU instead of CPU 0).
// Writes bench/results/cache-<date>.md (a day's later runs: cache-<date>b.md, …). In process, with less
// noise from the kernel's network stack: bench/cache-cpu.ts.

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BENCH_ADMIN, benchGwEnv, cacheBenchKeys, percentiles, runPinned, SERVER_ENV, startBenchScript, startPinnedGw } from './load'
import { threadSnapshot } from './thread-cpu'

// Re-run pinned to CPU 1, so the driver never competes with gw for CPU 0 (as bench/run.ts does).
await runPinned(import.meta.path)

const ROUNDS = Number(process.env.CACHE_BENCH_ROUNDS ?? 5)
const N = Number(process.env.CACHE_BENCH_REQUESTS ?? 2000)
const N_WARM = Number(process.env.CACHE_BENCH_WARMUP ?? 30_000)
const TURN = 250
/** Longer than the log thread's batches (whose settled message the serving thread reads), so what follows an answer counts in its turn. */
const AFTER_TURN_MS = 300
const ROOT = join(import.meta.dir, '..')

/** A request target whose body may change from one request to the next (a miss needs a new body each time). */
interface Target {
  url: string
  headers: Record<string, string>
  body: () => string
  /** The gw process whose serving thread's CPU is measured over this target's turns. */
  pid?: number
}

const send = (t: Target) => fetch(t.url, { method: 'POST', headers: { 'content-type': 'application/json', ...t.headers }, body: t.body() })

/** One request read to its end, in ms; the answer's `x-gw-cache` must be `expect` when given. */
async function timed(t: Target, expect?: string): Promise<number> {
  const start = performance.now()
  const res = await send(t)
  const body = await res.arrayBuffer()
  const ms = performance.now() - start
  if (res.status !== 200) throw new Error(`${t.url}: HTTP ${res.status} ${new TextDecoder().decode(body)}`)
  if (expect && res.headers.get('x-gw-cache') !== expect) throw new Error(`${t.url}: x-gw-cache ${res.headers.get('x-gw-cache')}, expected ${expect}`)
  return ms
}

/** CPU ns so far of a gw process's serving thread and of its Worker threads (the log thread, …). */
function threadNs(pid: number): { serving: number; workers: number } {
  const out = { serving: 0, workers: 0 }
  for (const t of threadSnapshot(pid).values()) if (t.part === 'serving' || t.part === 'workers') out[t.part] += t.ns
  return out
}

const procStat = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
/** utime + stime of a process (with its waited-for children when `children`), in ms. */
const cpuMs = (pid: number, children = false) => procStat(pid).slice(11, children ? 15 : 13).reduce((a, f) => a + Number(f), 0) * 10
/** Busy CPU time of the whole machine (all cores, everything but idle and iowait), in ms. */
function machineMs(): number {
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number)
  return (user + nice + system + irq + softirq + steal) * 10
}

const work = mkdtempSync(join(tmpdir(), 'gw-bench-cache-'))
const fake = await startBenchScript('fake-upstream.ts', {}, 1)
const floor = await startBenchScript('floor-proxy.ts', { UPSTREAM: fake.url }, 0)
const gw = await startPinnedGw([process.execPath, join(ROOT, 'src/main.ts')], benchGwEnv(fake.url, work))
// CACHE_BENCH_WORKERS_CPU=1: gw's Worker threads (log, WAL checkpoint, reads) moved to that CPU, the serving thread alone on CPU 0.
const WORKERS_CPU = process.env.CACHE_BENCH_WORKERS_CPU
if (WORKERS_CPU !== undefined)
  for (const [tid, t] of threadSnapshot(gw.proc.pid)) if (t.part === 'workers') Bun.spawnSync(['taskset', '-p', '-c', WORKERS_CPU, tid])
try {
  const admin = async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${gw.url}/admin${path}`, { method, headers: { authorization: `Bearer ${BENCH_ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
    return (await res.json()) as Record<string, unknown>
  }
  const { on: onKey, off: offKey } = await cacheBenchKeys(admin)

  const question = 'Say hello to the benchmark.'
  const native = (stream: boolean) => JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: question }], max_tokens: 64, ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) })
  const gwBody = (content: string, stream = false) =>
    JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content }], max_tokens: 64, metadata: { bench: 'cache' }, ...(stream ? { stream: true } : {}) })
  let counter = 0
  // The same length every time: a new question per request, so each one misses.
  const fresh = () => gwBody(`${question} #${String(++counter).padStart(9, '0')}`)
  const chat = (base: string) => `${base}/v1/chat/completions`
  const targets: Record<string, Target & { expect?: string }> = {
    direct: { url: chat(fake.url), headers: {}, body: () => native(false) },
    floor: { url: chat(floor.url), headers: {}, body: () => native(false) },
    'gw hit': { url: chat(gw.url), headers: { authorization: `GwKey ${onKey}` }, body: () => gwBody(question), expect: 'hit' },
    'gw miss (cache on)': { url: chat(gw.url), headers: { authorization: `GwKey ${onKey}` }, body: fresh, expect: 'miss', pid: gw.proc.pid },
    'gw cache off': { url: chat(gw.url), headers: { authorization: `GwKey ${offKey}` }, body: fresh, expect: 'off', pid: gw.proc.pid },
    'direct, stream': { url: chat(fake.url), headers: {}, body: () => native(true) },
    'floor, stream': { url: chat(floor.url), headers: {}, body: () => native(true) },
    'gw hit, stream': { url: chat(gw.url), headers: { authorization: `GwKey ${onKey}` }, body: () => gwBody(question, true), expect: 'hit' },
  }
  // The hit's answer is kept by its first request (a miss), stored after the answer went out.
  await timed(targets['gw hit'] as Target)
  await Bun.sleep(50)

  console.log(`warm-up: ${N_WARM} requests per target 8 at a time, then 1,000 one by one…`)
  for (const [name, t] of Object.entries(targets)) {
    let next = 0
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next++ < N_WARM) {
          const res = await send(t)
          await res.arrayBuffer()
          if (res.status !== 200) throw new Error(`warm-up of ${name}: HTTP ${res.status}`)
        }
      }),
    )
    for (let i = 0; i < 1000; i++) await timed(t, t.expect)
  }

  const names = Object.keys(targets)
  type Round = Record<string, { p50: number; p99: number; servingUs?: number; workersUs?: number }> & { otherLoad: number; load1: number }
  const rounds: Round[] = []
  /** Serving-thread µs per request of each miss turn minus the off turn right after it (the same moment's machine, GC aside). */
  const pairs: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    const samples = new Map(names.map((n) => [n, [] as number[]]))
    const cpu = new Map(names.map((n) => [n, { serving: 0, workers: 0 }]))
    const ours = () => cpuMs(gw.proc.pid) + cpuMs(floor.proc.pid) + cpuMs(fake.proc.pid) + cpuMs(process.pid, true)
    const m0 = machineMs()
    const o0 = ours()
    const t0 = performance.now()
    // The targets take turns of 250 requests, so the machine's background load hits them alike.
    for (let done = 0; done < N; done += TURN) {
      const turnUs = new Map<string, number>()
      for (const name of names) {
        const t = targets[name] as Target & { expect?: string }
        const before = t.pid ? threadNs(t.pid) : undefined
        for (let i = 0; i < TURN; i++) samples.get(name)?.push(await timed(t, t.expect))
        if (t.pid && before) {
          // What gw does after an answer has gone out (the log hand-over, the settled message that
          // ends a handed-over put) lands in this turn.
          await Bun.sleep(AFTER_TURN_MS)
          const after = threadNs(t.pid)
          const c = cpu.get(name) as { serving: number; workers: number }
          c.serving += after.serving - before.serving
          c.workers += after.workers - before.workers
          turnUs.set(name, (after.serving - before.serving) / 1000 / TURN)
        }
      }
      pairs.push((turnUs.get('gw miss (cache on)') ?? 0) - (turnUs.get('gw cache off') ?? 0))
    }
    const seconds = (performance.now() - t0) / 1000
    const round = { otherLoad: Math.max(0, machineMs() - m0 - (ours() - o0)) / (seconds * 1000), load1: Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]) } as Round
    for (const name of names) {
      const p = percentiles(samples.get(name) as number[])
      const c = cpu.get(name) as { serving: number; workers: number }
      round[name] = { p50: p.p50, p99: p.p99, ...(targets[name]?.pid ? { servingUs: c.serving / 1000 / N, workersUs: c.workers / 1000 / N } : {}) }
    }
    rounds.push(round)
    const missCost = (round['gw miss (cache on)']?.servingUs ?? 0) - (round['gw cache off']?.servingUs ?? 0)
    console.log(
      `round ${r + 1}: ${names.map((n) => `${n} ${round[n]?.p50.toFixed(3)}/${round[n]?.p99.toFixed(3)} ms`).join(', ')}; serving thread miss ${round['gw miss (cache on)']?.servingUs?.toFixed(1)} µs, off ${round['gw cache off']?.servingUs?.toFixed(1)} µs (Δ ${missCost.toFixed(1)}); other programs ${(round.otherLoad * 100).toFixed(0)} % of a core, load ${round.load1}`,
    )
  }

  // Best of the rounds: other programs only ever slow a round down.
  const best = (name: string, f: 'p50' | 'p99' | 'servingUs' | 'workersUs') => Math.min(...rounds.map((r) => r[name]?.[f] ?? Infinity))
  const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * q)] as number
  const median = (xs: number[]) => quantile(xs, 0.5)
  const ms = (x: number) => x.toFixed(3)
  const rows = [
    ['direct', undefined],
    ['floor', undefined],
    ['gw hit', 'floor'],
    ['gw miss (cache on)', 'floor'],
    ['gw cache off', 'floor'],
    ['direct, stream', undefined],
    ['floor, stream', undefined],
    ['gw hit, stream', 'floor, stream'],
  ] as const
  const hitOver = rounds.map((r) => (r['gw hit']?.p50 ?? 0) - (r.floor?.p50 ?? 0))
  const missCpu = rounds.map((r) => (r['gw miss (cache on)']?.servingUs ?? 0) - (r['gw cache off']?.servingUs ?? 0))
  const missLog = rounds.map((r) => (r['gw miss (cache on)']?.workersUs ?? 0) - (r['gw cache off']?.workersUs ?? 0))
  const when = new Date().toISOString()
  const md = [
    `# Response cache on the bench (\`bun bench/cache.ts\`), ${when.slice(0, 16).replace('T', ' ')} UTC`,
    '',
    `${(readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/) ?? [])[1]}, ${(readFileSync('/proc/cpuinfo', 'utf8').match(/^processor/gm) ?? []).length} vCPU, Bun ${Bun.version}. ` +
      `gw from source on CPU 0 (SQLite, a service key, an org policy with limits that never refuse, the log with bodies)${WORKERS_CPU === undefined ? '' : `, its Worker threads on CPU ${WORKERS_CPU}`}, the floor on CPU 0, the fake upstream and the driver on CPU 1. ` +
      `${ROUNDS} rounds of ${N} sequential requests per target (turns of ${TURN}) after ${N_WARM} warm-up requests each; best round per figure. ` +
      `Other programs during the rounds: ${rounds.map((r) => `${(r.otherLoad * 100).toFixed(0)} %`).join(', ')} of a core; load average ${rounds.map((r) => r.load1).join(', ')}.`,
    '',
    '| target | p50 (ms) | p99 (ms) | Δ p50 / p99 over the floor (ms) | serving thread CPU / request | Worker threads (log, WAL checkpoint) CPU / request |',
    '|---|---|---|---|---|---|',
    ...rows.map(([name, over]) => {
      const d = over ? `${ms(best(name, 'p50') - best(over, 'p50'))} / ${ms(best(name, 'p99') - best(over, 'p99'))}` : ''
      const cpu = targets[name]?.pid ? [`${best(name, 'servingUs').toFixed(1)} µs`, `${best(name, 'workersUs').toFixed(1)} µs`] : ['', '']
      return `| ${name} | ${ms(best(name, 'p50'))} | ${ms(best(name, 'p99'))} | ${d} | ${cpu.join(' | ')} |`
    }),
    '',
    `- A hit over the floor, p50, round by round: ${hitOver.map(ms).join(', ')} ms (target ≤ 0.300).`,
    `- A miss's serving-thread CPU over cache off, round by round: ${missCpu.map((x) => x.toFixed(1)).join(', ')} µs; median ${median(missCpu).toFixed(1)} µs, mean ${(missCpu.reduce((a, b) => a + b, 0) / missCpu.length).toFixed(1)} µs, best rounds' difference ${(best('gw miss (cache on)', 'servingUs') - best('gw cache off', 'servingUs')).toFixed(1)} µs (target ≤ 5). Worker threads: ${missLog.map((x) => x.toFixed(1)).join(', ')} µs.`,
    `- The same, turn by turn (each miss turn of ${TURN} against the off turn right after it, ${pairs.length} pairs): median ${median(pairs).toFixed(1)} µs, quartiles ${quantile(pairs, 0.25).toFixed(1)} / ${quantile(pairs, 0.75).toFixed(1)} µs.`,
    '',
  ].join('\n')
  console.log(`\n${md}`)
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true })
  // A day's later runs get a letter (cache-<date>b.md, …): an earlier run's file is never overwritten.
  const named = (n: number) => join(ROOT, `bench/results/cache-${when.slice(0, 10)}${n ? String.fromCharCode(97 + n) : ''}.md`)
  let n = 0
  while (existsSync(named(n))) n++
  const file = named(n)
  writeFileSync(file, md)
  console.log(`written to ${file}`)
} finally {
  gw.proc.kill('SIGTERM')
  await gw.proc.exited
  floor.proc.kill()
  fake.proc.kill()
  rmSync(work, { recursive: true, force: true })
}
