// `bun run bench [--quick]`: gw (compiled, auth + policy + logging on) against direct calls and a bare Bun proxy, in one run.
// gw and the floor run pinned to CPU 0 (one core: gw's serving thread and its log thread share it), plus a
// gw on CPUs 0 and 1 (two cores) for the throughput runs; this driver, wrk and the fake upstream to CPU 1.
// Beside each process's CPU per request, gw's by thread (bench/thread-cpu.ts: the serving thread, the
// Worker threads). Results: bench/results/latest.{json,md}.

import { $ } from 'bun'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { closedLoop, closedLoopFor, ensureWrk, fixedRate, freePort, interleaved, type Percentiles, runPinned, SERVER_ENV, percentiles, type Sequential, type Target, warmUp, wrk } from './load'
import { MIGRATIONS, PAGE_SIZE } from '../src/store/sqlite/open'
import { BENCH_SECRET, type LogRates, seed } from './log-store'
import { observabilityCosts } from './observability'
import { markdown, type Results } from './report'
import { threadCpuPerRequest, threadSnapshot } from './thread-cpu'

const QUICK = process.argv.includes('--quick')
const ROOT = join(import.meta.dir, '..')
const BUN = process.execPath

// Re-run pinned to CPU 1, so the driver never competes with gw for CPU 0.
await runPinned(import.meta.path)

const N_SEQ = QUICK ? 300 : 2000
/**
 * Requests to each target before its unloaded run (8 at a time, then 1,000 one by one). gw's request path
 * is large enough that JavaScriptCore keeps compiling it (DFG, then FTL, in a JIT thread that shares the
 * pinned core) for 20,000–30,000 requests: between the 10,000th and the 20,000th its compiler threads
 * still used 5–57 µs per request, and that CPU lands in the unloaded p99 (bench/results/history-2026-11.md,
 * "The JIT's warm-up"). The
 * bench measures a warmed server, so every target gets the same long warm-up; the JIT's CPU during
 * the measurement is reported beside it, to show it has settled.
 */
const N_WARM = QUICK ? 6000 : 40_000
const RATE_SECONDS = QUICK ? 3 : 10
const WRK_SECONDS = QUICK ? 3 : 10
const LEAK_REQUESTS = QUICK ? 20_000 : 100_000
// BENCH_STREAMS: the open streams of the memory run (a quick run that still measures the target's 1,000).
const STREAMS = Number(process.env.BENCH_STREAMS ?? (QUICK ? 300 : 1000))
const LOG_ROWS = QUICK ? 100_000 : 1_000_000
// Shaped like the keys gw makes (gw_sk_ + 12-char id + 32-char secret).
const KEY = `gw_sk_benchmark000${'s'.repeat(32)}`
const ADMIN = 'bench-admin-token-000000000000'
const work = mkdtempSync(join(tmpdir(), 'gw-bench-'))
const results: Record<string, unknown> = { quick: QUICK, date: new Date().toISOString() }
const children: ReturnType<typeof Bun.spawn>[] = []

// ── processes ────────────────────────────────────────────────────────────────────────────────
async function startJsonPort(cmd: string[], env: Record<string, string>, cpu: number): Promise<{ proc: ReturnType<typeof Bun.spawn>; port: number }> {
  const proc = Bun.spawn(['taskset', '-c', String(cpu), ...cmd], {
    env: { PATH: process.env.PATH ?? '', ...SERVER_ENV, ...env },
    stdout: 'pipe',
    stderr: 'inherit',
  })
  children.push(proc)
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
  const { value } = await reader.read()
  reader.releaseLock()
  return { proc, port: (JSON.parse(new TextDecoder().decode(value)) as { port: number }).port }
}

async function waitHealthy(url: string, timeoutMs = 15_000): Promise<number> {
  const t0 = performance.now()
  while (performance.now() - t0 < timeoutMs) {
    try {
      if ((await fetch(`${url}/health`)).status === 200) return performance.now() - t0
    } catch {}
    await Bun.sleep(1)
  }
  throw new Error(`${url} did not become healthy`)
}

let gwSeq = 0
/**
 * Starts the compiled gw on CPU 0 (`cpus`: `0,1` gives it the second core too, shared with the
 * driver, wrk and the fake upstream) with auth, a rate-limit policy and full request logging.
 */
async function startGw(upstream: string, extra: Record<string, string> = {}, cpus = '0') {
  const port = freePort()
  gwSeq++
  const env = {
    PATH: process.env.PATH ?? '',
    ...SERVER_ENV,
    GW_PORT: String(port),
    GW_DB: join(work, `gw-${gwSeq}.db`),
    GW_SECRET: BENCH_SECRET,
    GW_ADMIN_TOKEN: ADMIN,
    GW_SERVICE_KEY: KEY,
    GW_LOG_BODIES: 'true',
    GW_PROMPTS_DIR: work, // no prompt files
    GW_OPENAI_BASE_URL: `${upstream}/v1`,
    GW_ANTHROPIC_BASE_URL: `${upstream}/v1`,
    OPENAI_API_KEY: 'sk-bench-openai',
    ANTHROPIC_API_KEY: 'sk-ant-bench',
    ...extra,
  }
  const proc = Bun.spawn(['taskset', '-c', cpus, join(ROOT, 'dist/gw'), 'serve'], { env, stdout: 'ignore', stderr: 'inherit' })
  children.push(proc)
  const url = `http://127.0.0.1:${port}`
  await waitHealthy(url)
  // Limits set high enough never to refuse, concurrent streams included (the memory run opens 1,000 on one key).
  const policy = {
    requestsPerMinute: 100_000_000,
    tokensPerMinute: 1_000_000_000_000,
    maxTokens: 4096,
    maxConcurrentStreams: 100_000,
    maxConcurrentStreamsPerKey: 100_000,
  }
  const res = await fetch(`${url}/admin/orgs/default/policy`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify(policy),
  })
  if (res.status !== 200) throw new Error(`policy: ${res.status} ${await res.text()}`)
  return { proc, url }
}

const stat = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
/** utime + stime of a process, in ms. */
const cpuMs = (pid: number) => ((Number(stat(pid)[11]) + Number(stat(pid)[12])) * 1000) / 100
/** JavaScriptCore's compiler threads (DFG and FTL), by the name the kernel shows. */
const JIT_THREAD = /^JITWorker/
/** CPU time so far of each thread of a process (those whose name matches `only`, else all), in ns, by thread id. */
function threadCpuNs(pid: number, only?: RegExp): Map<string, number> {
  const out = new Map<string, number>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      if (only && !only.test(readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8'))) continue
      out.set(tid, Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]))
    } catch {} // the thread ended meanwhile
  }
  return out
}
/**
 * CPU time in ms, to the nanosecond (scheduler statistics, not clock ticks), that a process's threads
 * (those whose name matches `only`, else all) spent since the `before` snapshot. A thread that ended
 * meanwhile (the JIT's threads end when idle) drops out.
 */
function cpuMsSince(pid: number, before: Map<string, number>, only?: RegExp): number {
  let ns = 0
  for (const [tid, now] of threadCpuNs(pid, only)) ns += now - (before.get(tid) ?? 0)
  return ns / 1e6
}
/** CPU time of this driver and of the children it has waited for (wrk), in ms. */
const driverCpuMs = () => stat(process.pid).slice(11, 15).reduce((a, f) => a + Number(f), 0) * 10
/** Busy CPU time of the whole machine (all cores, everything but idle and iowait), in ms. */
function machineCpuMs(): number {
  const f = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number)
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = f
  return (user + nice + system + irq + softirq + steal) * 10
}
const statusKb = (pid: number, field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1])
const mb = (kb: number) => Math.round((kb / 1024) * 10) / 10

// ── targets ──────────────────────────────────────────────────────────────────────────────────
const question = [{ role: 'user', content: 'Say hello to the benchmark.' }]
const scenarios = {
  'openai json': { path: '/v1/chat/completions', native: { model: 'gpt-4o-mini', messages: question, max_tokens: 64 }, gw: 'openai/gpt-4o-mini' },
  'openai stream': {
    path: '/v1/chat/completions',
    native: { model: 'gpt-4o-mini', messages: question, max_tokens: 64, stream: true, stream_options: { include_usage: true } },
    gw: 'openai/gpt-4o-mini',
  },
  'anthropic json': { path: '/v1/messages', native: { model: 'claude-haiku-4-5', messages: question, max_tokens: 64 }, gw: 'anthropic/claude-haiku-4-5' },
  'anthropic stream': {
    path: '/v1/messages',
    native: { model: 'claude-haiku-4-5', messages: question, max_tokens: 64, stream: true },
    gw: 'anthropic/claude-haiku-4-5',
  },
  // Anthropic Messages in, relayed to Anthropic (PRODUCT §12): to set against 'openai json/stream'.
  'messages passthrough json': {
    path: '/v1/messages',
    native: { model: 'claude-haiku-4-5', messages: question, max_tokens: 64 },
    gw: 'anthropic/claude-haiku-4-5',
    gwPath: '/v1/messages',
  },
  'messages passthrough stream': {
    path: '/v1/messages',
    native: { model: 'claude-haiku-4-5', messages: question, max_tokens: 64, stream: true },
    gw: 'anthropic/claude-haiku-4-5',
    gwPath: '/v1/messages',
  },
} as const
type Scenario = keyof typeof scenarios

/** The same-work floor's URL (bench/same-work-floor.ts), set once it runs; it takes the chat-completions scenarios. */
let sameWork = ''

function targets(s: Scenario, direct: string, floor: string, gw: string): Record<'direct' | 'floor' | 'gw', Target> & { same?: Target } {
  const sc = scenarios[s]
  const stream = 'stream' in sc.native
  const metadata = { bench: 'yes', scenario: s }
  // The Messages API carries gw metadata in a header (its body's metadata is Anthropic's).
  const gwTarget: Target =
    'gwPath' in sc
      ? { url: `${gw}${sc.gwPath}`, headers: { authorization: `GwKey ${KEY}`, 'x-gw-metadata': JSON.stringify(metadata) }, body: JSON.stringify({ ...sc.native, model: sc.gw }) }
      : { url: `${gw}/v1/chat/completions`, headers: { authorization: `GwKey ${KEY}` }, body: JSON.stringify({ model: sc.gw, messages: question, max_tokens: 64, metadata, ...(stream ? { stream: true } : {}) }) }
  return {
    direct: { url: `${direct}${sc.path}`, headers: {}, body: JSON.stringify(sc.native) },
    floor: { url: `${floor}${sc.path}`, headers: {}, body: JSON.stringify(sc.native) },
    gw: gwTarget,
    ...(sameWork && !('gwPath' in sc) ? { same: { ...gwTarget, url: `${sameWork}/v1/chat/completions` } } : {}),
  }
}

const round = (n: number, d = 3) => Math.round(n * 10 ** d) / 10 ** d
const pct = (p: Percentiles) => ({ p50: round(p.p50), p99: round(p.p99) })

async function main() {
  // Build the binary if it is missing or older than the sources.
  const binary = join(ROOT, 'dist/gw')
  const newest = Number((await $`find ${join(ROOT, 'src')} ${join(ROOT, 'prompts')} -type f -printf '%T@\n'`.text()).split('\n').filter(Boolean).map(Number).sort((a, b) => b - a)[0]) * 1000
  if (!existsSync(binary) || statSync(binary).mtimeMs < newest) {
    console.log('building dist/gw…')
    await $`${BUN} ${join(ROOT, 'scripts/build.ts')}`.cwd(ROOT)
  }
  results.binaryBytes = statSync(binary).size
  const wrkPath = await ensureWrk()
  results.machine = {
    cpu: /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1],
    cores: (readFileSync('/proc/cpuinfo', 'utf8').match(/^processor/gm) ?? []).length,
    memGb: Math.round(statusKbMem() / 1024 / 1024),
    bun: Bun.version,
    kernel: readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim(),
    wrk: wrkPath ? (await $`${wrkPath} -v`.nothrow().text()).split('\n')[0] : 'wrk not available (closed loops in Bun instead)',
  }

  const fake = await startJsonPort([BUN, join(import.meta.dir, 'fake-upstream.ts')], {}, 1)
  const direct = `http://127.0.0.1:${fake.port}`
  const floorProc = await startJsonPort([BUN, join(import.meta.dir, 'floor-proxy.ts')], { UPSTREAM: direct }, 0)
  const floor = `http://127.0.0.1:${floorProc.port}`
  // The floor of reading a stream in JavaScript (FLOOR_READ=js): a stream that gw must act on cannot be piped natively.
  const jsFloorProc = await startJsonPort([BUN, join(import.meta.dir, 'floor-proxy.ts')], { UPSTREAM: direct, FLOOR_READ: 'js' }, 0)
  const jsFloor = `http://127.0.0.1:${jsFloorProc.port}`
  const sameProc = await startJsonPort([BUN, join(import.meta.dir, 'same-work-floor.ts')], { UPSTREAM: direct, KEY, DB: join(work, 'same-work.db') }, 0)
  sameWork = `http://127.0.0.1:${sameProc.port}`
  const gw = await startGw(direct)

  // 1. Unloaded latency and time to first chunk, added over direct.
  console.log(`unloaded latency (${N_SEQ} sequential requests per target, the targets in turn)…`)
  const unloaded: Record<string, unknown> = {}
  for (const s of Object.keys(scenarios) as Scenario[]) {
    const t = targets(s, direct, floor, gw.url)
    // Warm-up: long enough for the JIT to have compiled the request path (a server's steady state).
    for (const k of ['direct', 'floor', 'gw', 'same'] as const) {
      const target = t[k]
      if (target) await warmUp(`${k} (${s})`, target, N_WARM)
    }
    // The targets take turns of 250 requests (interleaved), so a change in the machine's background load
    // hits them alike; with each server's CPU per request meanwhile (at an unloaded clock, added latency is
    // mostly CPU), and the part of it its JIT threads spent compiling.
    const pids = { floor: floorProc.proc.pid, gw: gw.proc.pid, ...(t.same ? { same: sameProc.proc.pid } : {}) }
    const before = Object.entries(pids).map(([k, pid]) => ({ k, pid, all: threadCpuNs(pid), compilers: threadCpuNs(pid, JIT_THREAD) }))
    const gwThreads = threadSnapshot(gw.proc.pid)
    const turns: Record<string, Target> = { direct: t.direct, floor: t.floor, gw: t.gw, ...(t.same ? { same: t.same } : {}) }
    const m = (await interleaved(turns, N_SEQ)) as Record<'direct' | 'floor' | 'gw', Sequential> & { same?: Sequential }
    const cpu: Record<string, number> = {}
    const jit: Record<string, number> = {}
    for (const b of before) {
      cpu[b.k] = Math.round((cpuMsSince(b.pid, b.all) * 1000) / N_SEQ)
      jit[b.k] = Math.round((cpuMsSince(b.pid, b.compilers, JIT_THREAD) * 1000) / N_SEQ)
    }
    const same = m.same
    const added = (x: { total: Percentiles }) => ({ p50: round(x.total.p50 - m.direct.total.p50), p99: round(x.total.p99 - m.direct.total.p99) })
    unloaded[s] = {
      directMs: pct(m.direct.total),
      floorAddedMs: added(m.floor),
      gwAddedMs: added(m.gw),
      ...(same ? { sameWorkAddedMs: added(same) } : {}),
      cpuUsPerRequest: cpu,
      jitUsPerRequest: jit,
      // gw's by thread: the serving thread, the Workers (the log thread, …), the JIT, the rest.
      gwThreadsUsPerRequest: threadCpuPerRequest(gw.proc.pid, gwThreads, N_SEQ),
      ...(s.includes('stream')
        ? {
            firstChunkDirectMs: pct(m.direct.firstChunk),
            firstChunkFloorAddedMs: round(m.floor.firstChunk.p50 - m.direct.firstChunk.p50),
            firstChunkGwAddedMs: round(m.gw.firstChunk.p50 - m.direct.firstChunk.p50),
            ...(same ? { firstChunkSameWorkAddedMs: round(same.firstChunk.p50 - m.direct.firstChunk.p50) } : {}),
          }
        : {}),
    }
    console.log(`  ${s}: ${JSON.stringify(unloaded[s])}`)
  }
  results.unloaded = unloaded

  // 2. Fixed rates (open loop).
  console.log(`fixed rates (${RATE_SECONDS} s each)…`)
  const fixed: Record<string, unknown> = {}
  for (const rate of [500, 2000]) {
    const oj = targets('openai json', direct, floor, gw.url)
    const aj = targets('anthropic json', direct, floor, gw.url)
    const ois = targets('openai stream', direct, floor, gw.url)
    const ans = targets('anthropic stream', direct, floor, gw.url)
    const row = {
      direct: await fixedRate(oj.direct, rate, RATE_SECONDS),
      floor: await fixedRate(oj.floor, rate, RATE_SECONDS),
      gwOpenai: await fixedRate(oj.gw, rate, RATE_SECONDS),
      gwAnthropic: await fixedRate(aj.gw, rate, RATE_SECONDS),
      directStream: await fixedRate(ois.direct, rate, RATE_SECONDS),
      floorStream: await fixedRate(ois.floor, rate, RATE_SECONDS),
      gwOpenaiStream: await fixedRate(ois.gw, rate, RATE_SECONDS),
      gwAnthropicStream: await fixedRate(ans.gw, rate, RATE_SECONDS),
    }
    fixed[rate] = Object.fromEntries(Object.entries(row).map(([k, v]) => [k, { p50: round(v.p50), p99: round(v.p99), errors: v.errors, achieved: Math.round(v.achieved) }]))
    console.log(`  ${rate}/s: ${JSON.stringify(fixed[rate])}`)
  }
  results.fixedRate = fixed

  // 3. Maximum throughput with 64 connections, and CPU per request of the serving process.
  {
    // wrk when it is there; else this driver's own closed loops (recorded in results.machine.wrk).
    const load = (t: Target) => (wrkPath ? wrk(wrkPath, t, 64, WRK_SECONDS, 1) : closedLoopFor(t, 64, WRK_SECONDS))
    console.log(`max throughput (${wrkPath ? 'wrk' : 'closed loops in Bun, wrk unavailable'}, 64 connections, ${WRK_SECONDS} s)…`)
    const max: Record<string, unknown> = {}
    // Every gw scenario has the floor on the same scenario beside it (the floor passes the native
    // format through, so its Anthropic runs carry Anthropic's answers).
    const runs: [string, Target, number][] = [
      ['direct openai json', targets('openai json', direct, floor, gw.url).direct, fake.proc.pid],
      ['direct openai stream', targets('openai stream', direct, floor, gw.url).direct, fake.proc.pid],
    ]
    for (const s of Object.keys(scenarios) as Scenario[]) {
      const t = targets(s, direct, floor, gw.url)
      runs.push([`floor ${s}`, t.floor, floorProc.proc.pid])
      if (s.endsWith('stream')) runs.push([`js-stream floor ${s}`, targets(s, direct, jsFloor, gw.url).floor, jsFloorProc.proc.pid])
      if (t.same) runs.push([`same-work ${s}`, t.same, sameProc.proc.pid])
      runs.push([`gw ${s}`, t.gw, gw.proc.pid])
    }
    // gw with two cores (taskset 0,1: the serving thread and the log thread can run at once; the second
    // core is shared with wrk and the fake upstream, so its req/s understate a machine of its own).
    const gw2 = await startGw(direct, {}, '0,1')
    for (const s of ['openai json', 'openai stream'] as Scenario[]) {
      const t = targets(s, direct, floor, gw2.url)
      await warmUp(`gw two cores (${s})`, t.gw, N_WARM)
      runs.push([`gw ${s}, two cores`, t.gw, gw2.proc.pid])
    }
    // What the machine spent besides the server, the fake and this driver with its wrk: another
    // program's load that the figures would otherwise hide.
    const ours = (pid: number) => cpuMs(pid) + (pid === fake.proc.pid ? 0 : cpuMs(fake.proc.pid)) + driverCpuMs()
    for (const [name, t, pid] of runs) {
      const threads0 = name.startsWith('gw ') || name.startsWith('same-work ') ? threadSnapshot(pid) : undefined
      const c0 = cpuMs(pid)
      const o0 = ours(pid)
      const m0 = machineCpuMs()
      const r = await load(t)
      const cpu = cpuMs(pid) - c0
      const seconds = r.requests / r.rps
      const foreign = Math.max(0, machineCpuMs() - m0 - (ours(pid) - o0))
      max[name] = {
        ...r,
        rps: Math.round(r.rps),
        cpuUsPerRequest: Math.round((cpu * 1000) / Math.max(1, r.requests)),
        // Share of one core the serving process used: near 100 % means it was the bottleneck.
        cpuBusy: round(cpu / (seconds * 1000), 2),
        // CPU used by other programs during the run, as a share of one core.
        otherLoad: round(foreign / (seconds * 1000), 2),
        // gw's (and the same-work floor's) CPU per request by thread: the serving thread, the Workers (the log thread, …), the JIT, the rest.
        ...(threads0 ? { threadsUsPerRequest: threadCpuPerRequest(pid, threads0, Math.max(1, r.requests)) } : {}),
      }
      console.log(`  ${name}: ${JSON.stringify(max[name])}`)
    }
    results.maxThroughput = max
    // Stopped before the runs below: a gw (or the same-work floor) left running goes on writing and
    // checkpointing its backlog (the log store's rates measured 30 % lower beside them).
    for (const g of [gw, gw2, sameProc, jsFloorProc]) {
      g.proc.kill('SIGTERM')
      await g.proc.exited
    }
  }

  // 4. Memory: flat over many requests; peak with many open streams (fresh process for a clean peak).
  console.log(`RSS over ${LEAK_REQUESTS} requests…`)
  const leakGw = await startGw(direct)
  const mixed = [targets('openai json', direct, floor, leakGw.url).gw, targets('anthropic stream', direct, floor, leakGw.url).gw]
  await closedLoop(mixed[0] as Target, 5000, 64)
  await closedLoop(mixed[1] as Target, 5000, 64)
  const rssWarm = statusKb(leakGw.proc.pid, 'VmRSS')
  const samples: number[] = []
  let bad = 0
  for (let done = 0; done < LEAK_REQUESTS; done += 10_000) {
    bad += await closedLoop(mixed[(done / 10_000) % 2] as Target, 10_000, 64)
    samples.push(mb(statusKb(leakGw.proc.pid, 'VmRSS')))
  }
  results.rssOverRequests = { requests: LEAK_REQUESTS, non200: bad, warmMb: mb(rssWarm), afterMb: samples.at(-1), everyTenThousandMb: samples }
  console.log(`  ${JSON.stringify(results.rssOverRequests)}`)
  leakGw.proc.kill('SIGTERM')
  await leakGw.proc.exited

  console.log(`peak RSS with ${STREAMS} concurrent streams…`)
  const streamGw = await startGw(direct)
  const idleRss = statusKb(streamGw.proc.pid, 'VmRSS')
  const slow: Target = { ...targets('openai stream', direct, floor, streamGw.url).gw }
  slow.body = slow.body.replace('openai/gpt-4o-mini', 'openai/gpt-4o-mini-slow')
  let open = 0
  const started = performance.now()
  const streams = Array.from({ length: STREAMS }, async () => {
    const res = await fetch(slow.url, { method: 'POST', headers: { 'content-type': 'application/json', ...slow.headers }, body: slow.body })
    open++
    await res.text()
    return res.status
  })
  let peakSampled = 0
  while (open < STREAMS && performance.now() - started < 30_000) await Bun.sleep(50)
  const allOpenAt = performance.now() - started
  const sampler = setInterval(() => (peakSampled = Math.max(peakSampled, statusKb(streamGw.proc.pid, 'VmRSS'))), 100)
  const statuses = await Promise.all(streams)
  clearInterval(sampler)
  results.streams = {
    concurrent: STREAMS,
    allOpenAfterMs: Math.round(allOpenAt),
    ok: statuses.filter((s) => s === 200).length,
    idleRssMb: mb(idleRss),
    peakRssMb: mb(statusKb(streamGw.proc.pid, 'VmHWM')),
    peakSampledMb: mb(peakSampled),
  }
  console.log(`  ${JSON.stringify(results.streams)}`)
  streamGw.proc.kill('SIGTERM')
  await streamGw.proc.exited

  // 5. Log store: writer rate, and reads on a large database through gw.
  console.log('log writer rate…')
  // In a process of its own, as gw's writer runs on a thread of its own, on both cores (the writer and
  // its WAL checkpointer, or the log path's two threads, at once) and on one (this driver's, CPU 1).
  const rates = async (cpus: string) =>
    JSON.parse(await $`taskset -c ${cpus} ${BUN} ${join(ROOT, 'bench/log-store.ts')} rates ${work} ${QUICK ? 50_000 : 200_000}`.text()) as LogRates
  const two = await rates('0,1')
  const one = await rates('1')
  results.logWriterEntriesPerSecond = two.writer
  results.logWriterOneCore = one.writer
  console.log(`  ${two.writer} entries/s on two cores, ${one.writer} on one`)
  results.logPath = { entriesPerSecond: two.path.perSecond, servingUsPerEntry: two.path.servingUsPerEntry, oneCore: { entriesPerSecond: one.path.perSecond, servingUsPerEntry: one.path.servingUsPerEntry } }
  console.log(`  through the log thread: ${two.path.perSecond} entries/s (${two.path.servingUsPerEntry} µs of the serving thread per entry) on two cores, ${one.path.perSecond} on one`)
  // Keyed on the schema version and page size: a cache from an older schema would be migrated on every run.
  const seeded = join(ROOT, 'bench/.cache', `logs-${LOG_ROWS}-schema${MIGRATIONS.length}-page${PAGE_SIZE}.db`)
  if (!existsSync(seeded)) {
    console.log(`seeding ${LOG_ROWS} log entries (cached in bench/.cache)…`)
    mkdirSync(join(ROOT, 'bench/.cache'), { recursive: true })
    const t0 = performance.now()
    await seed(seeded, LOG_ROWS, KEY)
    console.log(`  seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
  }
  const copy = join(work, 'seeded.db')
  await $`cp ${seeded} ${copy}`
  // No log read rate (GW_LOG_READS_PER_MINUTE): the bench reads far more than a client's 120 a minute.
  const logGw = await startGw(direct, { GW_DB: copy, GW_LOG_READS_PER_MINUTE: '0' })
  const get = async (path: string) => {
    const t0 = performance.now()
    const res = await fetch(`${logGw.url}${path}`, { headers: { authorization: `GwKey ${KEY}` } })
    const body = (await res.json()) as { data?: unknown[] }
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`)
    return { ms: performance.now() - t0, rows: body.data?.length ?? 1 }
  }
  const byId: number[] = []
  for (let i = 0; i < (QUICK ? 300 : 2000); i++) {
    const n = Math.floor(Math.random() * LOG_ROWS)
    byId.push((await get(`/v1/logs/01bench-${n.toString(16).padStart(10, '0')}`)).ms)
  }
  const filtered: number[] = []
  let rows = 0
  for (let i = 0; i < (QUICK ? 200 : 1000); i++) {
    const r = await get(`/v1/logs?metadata=feature=f${i % 50}&metadata=tier=${['free', 'pro', 'team', 'enterprise', 'internal'][i % 5]}&limit=50`)
    filtered.push(r.ms)
    rows += r.rows
  }
  const noMatch: number[] = []
  for (let i = 0; i < 50; i++) noMatch.push((await get(`/v1/logs?metadata=feature=f${i}&metadata=tier=${['pro', 'team'][i % 2]}&limit=50`)).ms)
  results.logQueries = {
    rows: LOG_ROWS,
    getByIdMs: pct(percentiles(byId)),
    twoKeyFilterMs: { ...pct(percentiles(filtered)), avgRows: Math.round(rows / filtered.length) },
    twoKeyFilterNoMatchMs: pct(percentiles(noMatch)),
  }
  console.log(`  ${JSON.stringify(results.logQueries)}`)
  logGw.proc.kill('SIGTERM')
  await logGw.proc.exited

  // 6. The observer's CPU per request (metrics, access log, traces), in this process on CPU 1.
  console.log('observer cost…')
  results.observability = await observabilityCosts(QUICK ? 100_000 : 500_000)
  console.log(`  ${JSON.stringify(results.observability)}`)

  // 7. The binary: exec to first 200 on /health.
  const starts: number[] = []
  for (let i = 0; i < 10; i++) {
    const dir = mkdtempSync(join(work, 'start-'))
    const port = freePort()
    const t0 = performance.now()
    const p = Bun.spawn([binary, 'serve'], { env: { PATH: process.env.PATH ?? '', GW_PORT: String(port), GW_DB: join(dir, 'gw.db') }, stdout: 'ignore', stderr: 'ignore' })
    await waitHealthy(`http://127.0.0.1:${port}`)
    starts.push(performance.now() - t0)
    p.kill('SIGTERM')
    await p.exited
  }
  results.binary = { bytes: results.binaryBytes, mb: round((results.binaryBytes as number) / 1024 / 1024, 1), execToHealthMs: pct(percentiles(starts)) }
  console.log(`binary: ${JSON.stringify(results.binary)}`)
}

function statusKbMem(): number {
  return Number(/MemTotal:\s+(\d+) kB/.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1])
}

try {
  await main()
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true })
  const name = QUICK ? 'quick' : 'latest'
  writeFileSync(join(ROOT, `bench/results/${name}.json`), `${JSON.stringify(results, null, 2)}\n`)
  const md = markdown(results as unknown as Results)
  writeFileSync(join(ROOT, `bench/results/${name}.md`), md)
  console.log(`\n${md}\nresults written to bench/results/${name}.json and ${name}.md`)
} finally {
  for (const c of children) c.kill('SIGKILL')
  rmSync(work, { recursive: true, force: true })
}
