// Load generation for the benchmark: sequential (unloaded) latency and time to first chunk, open-loop fixed rate, closed-loop counts, wrk.

import { $ } from 'bun'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BENCH_SECRET } from './log-store'

/**
 * The runtime settings of every Bun server the benchmarks start: the outgoing-request limit of the
 * Docker image (README).
 */
export const SERVER_ENV: Readonly<Record<string, string>> = { BUN_CONFIG_MAX_HTTP_REQUESTS: '4096' }

/**
 * Re-runs the driver script at `path` pinned to CPU 1 with SERVER_ENV (the servers it starts get CPU 0, so
 * it never competes with them) and exits with its status; returns at once in the pinned run.
 */
export async function runPinned(path: string): Promise<void> {
  if (process.env.GW_BENCH_PINNED) return
  const p = Bun.spawn(['taskset', '-c', '1', process.execPath, path, ...process.argv.slice(2)], {
    env: { ...process.env, GW_BENCH_PINNED: '1', ...SERVER_ENV },
    stdio: ['inherit', 'inherit', 'inherit'],
  })
  process.exit(await p.exited)
}

/**
 * Starts a bench server script (`bench/<script>`) pinned to `cpu`, with Bun's own flags in `bunArgs`
 * (e.g. `--cpu-prof`); it prints `{"port": …}` as its first line. `stderr: 'pipe'` leaves its stderr to
 * the caller to read (`proc.stderr`).
 */
export async function startBenchScript(
  script: string,
  env: Record<string, string>,
  cpu: number,
  bunArgs: string[] = [],
  stderr: 'inherit' | 'pipe' = 'inherit',
): Promise<{ proc: ReturnType<typeof Bun.spawn>; url: string }> {
  const proc = Bun.spawn(['taskset', '-c', String(cpu), process.execPath, ...bunArgs, join(import.meta.dir, script)], {
    env: { PATH: process.env.PATH ?? '', ...SERVER_ENV, ...env },
    stdout: 'pipe',
    stderr,
  })
  const { value } = await (proc.stdout as ReadableStream<Uint8Array>).getReader().read()
  return { proc, url: `http://127.0.0.1:${(JSON.parse(new TextDecoder().decode(value)) as { port: number }).port}` }
}

export interface Target {
  url: string
  headers: Record<string, string>
  body: string
}

export interface Percentiles {
  p50: number
  p99: number
  n: number
}

export function percentiles(samples: number[]): Percentiles {
  const s = [...samples].sort((a, b) => a - b)
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))] as number
  return { p50: at(0.5), p99: at(0.99), n: s.length }
}

const post = (t: Target) => fetch(t.url, { method: 'POST', headers: { 'content-type': 'application/json', ...t.headers }, body: t.body })

/** One request, read to its end: total latency and time to the first body chunk (ms). */
async function timed(t: Target): Promise<{ total: number; first: number }> {
  const start = performance.now()
  const res = await post(t)
  if (res.status !== 200) throw new Error(`${t.url}: HTTP ${res.status} ${await res.text()}`)
  const reader = (res.body as ReadableStream<Uint8Array>).getReader()
  let firstAt = 0
  for (;;) {
    const { done } = await reader.read()
    if (!firstAt) firstAt = performance.now()
    if (done) break
  }
  return { total: performance.now() - start, first: firstAt - start }
}

export interface Sequential {
  total: Percentiles
  firstChunk: Percentiles
}

/** One request at a time: total latency and, for streams, time to the first body chunk (ms). */
export async function sequential(t: Target, n: number): Promise<Sequential> {
  return (await interleaved({ t }, n)).t as Sequential
}

/**
 * A server's steady state before it is measured: `n` requests 8 at a time (long enough for the JIT to
 * compile the request path, bench/results/history-2026-11.md "The JIT's warm-up"), then 1,000 one by one.
 */
export async function warmUp(name: string, t: Target, n: number): Promise<void> {
  const bad = await closedLoop(t, n, 8)
  if (bad) throw new Error(`warm-up of ${name}: ${bad} answers were not 200`)
  await sequential(t, 1000)
}

/**
 * One request at a time, the targets taking turns of `block` requests until each has had `n`: every
 * target sees the same background load, which on a shared machine changes from one second to the
 * next, while a server on a shared core still answers runs of requests as it would alone (one
 * request each in turn would also make every server's code and data leave the core's caches
 * between two of its requests).
 */
export async function interleaved<K extends string>(targets: Record<K, Target>, n: number, block = 250): Promise<Record<K, Sequential>> {
  const runs = (Object.keys(targets) as K[]).map((name) => ({ name, target: targets[name], total: [] as number[], first: [] as number[] }))
  for (let done = 0; done < n; done += block)
    for (const run of runs)
      for (let i = done; i < Math.min(n, done + block); i++) {
        const r = await timed(run.target)
        run.total.push(r.total)
        run.first.push(r.first)
      }
  return Object.fromEntries(runs.map((run) => [run.name, { total: percentiles(run.total), firstChunk: percentiles(run.first) }])) as Record<K, Sequential>
}

/**
 * Open loop: requests are started on a fixed schedule whatever the answers do, and latency is
 * counted from the scheduled start, so a stall shows in full (no coordinated omission).
 */
export async function fixedRate(t: Target, rate: number, seconds: number): Promise<Percentiles & { errors: number; achieved: number }> {
  const n = Math.round(rate * seconds)
  const lat: number[] = []
  let errors = 0
  const started = performance.now()
  const pending: Promise<void>[] = []
  for (let i = 0; i < n; i++) {
    const due = started + (i * 1000) / rate
    const wait = due - performance.now()
    if (wait > 1) await Bun.sleep(wait)
    // From the scheduled time when running late (a stall counts in full), from the send when early.
    const from = Math.min(due, performance.now())
    pending.push(
      post(t).then(
        async (res) => {
          await res.arrayBuffer()
          if (res.status === 200) lat.push(performance.now() - from)
          else errors++
        },
        () => {
          errors++
        },
      ),
    )
  }
  await Promise.all(pending)
  const elapsed = (performance.now() - started) / 1000
  return { ...percentiles(lat), errors, achieved: n / elapsed }
}

/** Closed loop: `n` requests, `concurrency` at a time; returns how many were not 200. */
export async function closedLoop(t: Target, n: number, concurrency: number): Promise<number> {
  let next = 0
  let bad = 0
  const worker = async () => {
    while (next++ < n) {
      const res = await post(t)
      await res.arrayBuffer()
      if (res.status !== 200) bad++
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return bad
}

/**
 * The stand-in for wrk where it cannot be installed: `connections` closed loops in this process for
 * `seconds`. It reports the same fields as wrk(); this driver is slower than wrk, so it may cap the rate.
 */
export async function closedLoopFor(t: Target, connections: number, seconds: number) {
  const until = performance.now() + seconds * 1000
  const started = performance.now()
  let requests = 0
  let non2xx = 0
  const worker = async () => {
    while (performance.now() < until) {
      const res = await post(t)
      await res.arrayBuffer()
      requests++
      if (res.status >= 300) non2xx++
    }
  }
  await Promise.all(Array.from({ length: connections }, worker))
  return { rps: requests / ((performance.now() - started) / 1000), requests, non2xx, errors: null }
}

/** wrk is installed from Debian when missing; undefined when that is not possible. */
export async function ensureWrk(): Promise<string | undefined> {
  const found = Bun.which('wrk')
  if (found) return found
  console.log('installing wrk (apt-get install wrk)…')
  await $`apt-get install -y wrk`.quiet().nothrow()
  if (!Bun.which('wrk')) await $`sh -c "apt-get update && apt-get install -y wrk"`.quiet().nothrow()
  return Bun.which('wrk') ?? undefined
}

/** wrk's path, installed when missing (ensureWrk), or a throw for the tools that cannot run without it. */
export async function requireWrk(): Promise<string> {
  const path = await ensureWrk()
  if (!path) throw new Error('wrk is needed (apt-get install wrk)')
  return path
}

/** Maximum throughput with `connections` keep-alive connections for `seconds`, pinned to `cpu`. */
export async function wrk(wrkPath: string, t: Target, connections: number, seconds: number, cpu: number) {
  const dir = mkdtempSync(join(tmpdir(), 'gw-wrk-'))
  const script = join(dir, 'post.lua')
  const headers = Object.entries({ 'Content-Type': 'application/json', ...t.headers })
    .map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`)
    .join('\n')
  writeFileSync(script, `wrk.method = "POST"\nwrk.body = ${JSON.stringify(t.body)}\n${headers}\n`)
  const out = await $`taskset -c ${cpu} ${wrkPath} -t1 -c${connections} -d${seconds}s --latency -s ${script} ${t.url}`.text()
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1])
  const requests = Number(/(\d+) requests in/.exec(out)?.[1])
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0)
  const errors = /Socket errors: (.*)/.exec(out)?.[1]
  return { rps, requests, non2xx, errors: errors ?? null, p50Ms: wrkPercentile(out, 50), p99Ms: wrkPercentile(out, 99) }
}

/** A latency percentile of wrk's `--latency` distribution, in ms (NaN when absent). */
function wrkPercentile(out: string, p: number): number {
  const m = new RegExp(`^\\s+${p}(?:\\.0+)?%\\s+([\\d.]+)(us|ms|s)$`, 'm').exec(out)
  if (!m) return Number.NaN
  return Number(m[1]) * ({ us: 0.001, ms: 1, s: 1000 } as Record<string, number>)[m[2] as string]!
}

/**
 * A port free right now. Other benchmarks may run on the same machine: a fixed port would collide,
 * and gw refuses a taken port (PRODUCT §4), so the run would measure the other program instead.
 */
export function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const { port } = probe
  probe.stop(true)
  return port
}

/**
 * The request of one profiling scenario (`bench/profile.ts`, `bench/ab.ts`): chat completions to
 * `openai` or `anthropic`, or `messages` (POST /v1/messages relayed to Anthropic, gw metadata as a
 * header since the body's metadata is Anthropic's), `json` or `stream`.
 */
export function scenarioRequest(provider: string, kind: string, gw: string, key: string): Target {
  // `compat`: the same OpenAI model through an OpenAI-compatible provider (the vllm preset, PRODUCT §17).
  const model = provider === 'openai' ? 'openai/gpt-4o-mini' : provider === 'compat' ? 'vllm/gpt-4o-mini' : 'anthropic/claude-haiku-4-5'
  const messages = [{ role: 'user', content: 'Say hello to the benchmark.' }]
  const stream = kind === 'stream' ? { stream: true } : {}
  if (provider === 'messages')
    return {
      url: `${gw}/v1/messages`,
      headers: { authorization: `GwKey ${key}`, 'x-gw-metadata': JSON.stringify({ bench: 'yes' }) },
      body: JSON.stringify({ model, messages, max_tokens: 64, ...stream }),
    }
  return {
    url: `${gw}/v1/chat/completions`,
    headers: { authorization: `GwKey ${key}` },
    body: JSON.stringify({ model, messages, max_tokens: 64, metadata: { bench: 'yes' }, ...stream }),
  }
}

/**
 * Starts gw for the one-request-at-a-time benches (`bench/threads.ts`, `bench/profile-diff.ts`): `cmd` is
 * the binary, or Bun with its flags and `src/main.ts`; it runs `serve` pinned to CPU 0, logging bodies,
 * with `env` on top of SERVER_ENV, and an org policy whose limits never refuse.
 */
export async function startPinnedGw(
  cmd: string[],
  env: Record<string, string>,
  stderr: 'inherit' | 'pipe' = 'inherit',
): Promise<{ proc: ReturnType<typeof Bun.spawn>; url: string }> {
  const port = freePort()
  const proc = Bun.spawn(['taskset', '-c', '0', ...cmd, 'serve'], {
    env: { PATH: process.env.PATH ?? '', ...SERVER_ENV, GW_PORT: String(port), GW_LOG_BODIES: 'true', ...env },
    stdout: 'ignore',
    stderr,
  })
  const url = `http://127.0.0.1:${port}`
  // A server that ends before it answers (a binary not built, a port taken) stops the bench here instead of hanging it.
  while (!(await fetch(`${url}/health`).then((r) => r.ok, () => false))) {
    if (proc.exitCode !== null) throw new Error(`${cmd.join(' ')} ended (exit ${proc.exitCode}) before answering on ${url}`)
    await Bun.sleep(20)
  }
  const policy = { requestsPerMinute: 1e8, tokensPerMinute: 1e12, maxTokens: 4096, maxConcurrentStreams: 1e5, maxConcurrentStreamsPerKey: 1e5 }
  const res = await fetch(`${url}/admin/orgs/default/policy`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${BENCH_ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify(policy),
  })
  if (res.status !== 200) throw new Error(`policy: ${res.status} ${await res.text()}`)
  return { proc, url }
}

/** The service key and admin token of the profiling benches' gw (`bench/profile.ts`, `ab.ts`, `endpoint-cpu.ts`). */
export const BENCH_KEY = `gw_sk_benchmark000${'s'.repeat(32)}`
export const BENCH_ADMIN = 'bench-admin-token-000000000000'

/** Their gw's environment: its database and prompts in `work`, OpenAI and Anthropic at `upstream`. */
export function benchGwEnv(upstream: string, work: string): Record<string, string> {
  return {
    GW_DB: join(work, 'gw.db'),
    GW_SECRET: BENCH_SECRET,
    GW_ADMIN_TOKEN: BENCH_ADMIN,
    GW_SERVICE_KEY: BENCH_KEY,
    GW_PROMPTS_DIR: work,
    GW_OPENAI_BASE_URL: `${upstream}/v1`,
    GW_ANTHROPIC_BASE_URL: `${upstream}/v1`,
    GW_VLLM_BASE_URL: `${upstream}/v1`,
    OPENAI_API_KEY: 'sk-bench-openai',
    ANTHROPIC_API_KEY: 'sk-ant-bench',
  }
}

/** An admin call against a bench gw (over HTTP, or `app.handle` in process): the answer's JSON, or a throw. */
export type BenchAdmin = (method: string, path: string, body: unknown) => Promise<Record<string, unknown>>

/**
 * The response cache benches' two orgs, alike but for `cache: {mode: "exact"}` (policy limits that never
 * refuse, the bench's OpenAI key), each with a service key of its own (the same auth path for both).
 */
export async function cacheBenchKeys(admin: BenchAdmin): Promise<{ on: string; off: string }> {
  const limits = { requestsPerMinute: 1e8, tokensPerMinute: 1e12, maxTokens: 4096 }
  const keyOf = async (org: string, cache: object | undefined) => {
    await admin('POST', '/orgs', { id: org, name: org })
    await admin('PUT', `/orgs/${org}/policy`, { ...limits, ...(cache ? { cache } : {}) })
    await admin('PUT', `/orgs/${org}/providers/openai`, { apiKey: 'sk-bench-openai' })
    return (await admin('POST', `/orgs/${org}/service-keys`, { name: 'bench' })).key as string
  }
  return { on: await keyOf('cache-on', { mode: 'exact', ttlSeconds: 86_400 }), off: await keyOf('cache-off', undefined) }
}
