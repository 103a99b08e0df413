// `bun bench/ab.ts <scenario>[,<scenario>…] <tree> <tree> …`: CPU per request of gw source trees
// (e.g. `git archive <commit>` unpacked, node_modules linked), alternating AB_ROUNDS (default 3) rounds
// of 5 s of wrk (64 connections) over every scenario and tree, gw pinned to CPU 0 (AB_CPUS=0,1: two
// cores, the second shared with wrk and the fake upstream), wrk and the fake upstream to CPU 1; AB_CONNECTIONS=1 sends one request
// at a time (its req/s is then the inverse of the mean latency). Besides
// the process's CPU per request, the serving thread's and the Worker threads' (the log thread's) own
// (bench/thread-cpu.ts): CPU-time measures, which hold on a shared machine where req/s do not.
// Scenarios: <openai|anthropic|compat>-<json|stream> on chat completions (compat: an OpenAI-compatible provider), messages-<json|stream> on
// /v1/messages relayed to Anthropic (gw metadata as a header). Alternating rounds see the same
// background load, so the difference holds on a shared machine when the absolute figures do not; the
// last lines give each one's fastest round (other programs only ever slow a round down).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { threadCpuPerRequest, threadSnapshot } from './thread-cpu'
import { BENCH_ADMIN, BENCH_KEY, benchGwEnv, requireWrk, freePort, scenarioRequest, SERVER_ENV, wrk } from './load'
const [scenarios = 'openai-stream', ...trees] = process.argv.slice(2)
const wrkPath = await requireWrk()
const KEY = BENCH_KEY
const ADMIN = BENCH_ADMIN
const stat = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
const cpuMs = (pid: number) => ((Number(stat(pid)[11]) + Number(stat(pid)[12])) * 1000) / 100
/** CPU time of this driver and of the children it has waited for (wrk), in ms. */
const driverMs = () => stat(process.pid).slice(11, 15).reduce((a, f) => a + Number(f), 0) * 10
const busyMs = () => { const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.split(/\s+/).slice(1).map(Number); return (f[0]! + f[1]! + f[2]! + f[5]! + f[6]!) * 10 }
const fake = Bun.spawn(['taskset', '-c', '1', process.execPath, join(import.meta.dir, 'fake-upstream.ts')], { stdout: 'pipe' })
const { value } = await (fake.stdout as ReadableStream<Uint8Array>).getReader().read()
const upstream = `http://127.0.0.1:${JSON.parse(new TextDecoder().decode(value)).port}`
const rounds = Number(process.env.AB_ROUNDS ?? 3)
const cpus = process.env.AB_CPUS ?? '0'
const connections = Number(process.env.AB_CONNECTIONS ?? 64)
const fastest = new Map<string, number>()
const fastestServing = new Map<string, { serving: number; workers: number }>()
for (let round = 0; round < rounds; round++)
  for (const scenario of scenarios.split(','))
  for (const tree of trees) {
    const work = mkdtempSync(join(tmpdir(), 'gw-ab-'))
    const port = freePort()
    const gw = Bun.spawn(['taskset', '-c', cpus, process.execPath, join(tree, 'src/main.ts'), 'serve'], {
      env: { PATH: process.env.PATH ?? '', ...SERVER_ENV, GW_PORT: String(port), ...benchGwEnv(upstream, work) },
      stdout: 'ignore', stderr: 'inherit',
    })
    const url = `http://127.0.0.1:${port}`
    for (let i = 0; ; i++) { if (await fetch(`${url}/health`).then((r) => r.ok, () => false)) break; await Bun.sleep(10) }
    await fetch(`${url}/admin/orgs/default/policy`, { method: 'PUT', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify({ requestsPerMinute: 1e8, tokensPerMinute: 1e12, maxTokens: 4096 }) })
    const [provider = 'openai', kind = 'json'] = scenario.split('-')
    const t = scenarioRequest(provider, kind, url, KEY)
    await wrk(wrkPath, t, 64, 2, 1)
    const ours = () => cpuMs(gw.pid) + cpuMs(fake.pid) + driverMs()
    const threads0 = threadSnapshot(gw.pid)
    const c0 = cpuMs(gw.pid), o0 = ours(), b0 = busyMs(), t0 = performance.now()
    const r = await wrk(wrkPath, t, connections, 5, 1)
    const cpu = cpuMs(gw.pid) - c0
    const split = threadCpuPerRequest(gw.pid, threads0, r.requests)
    const ms = performance.now() - t0
    // Everything but gw, the fake upstream, wrk and this driver: the machine's load from other programs.
    const others = (busyMs() - b0 - (ours() - o0)) / ms
    const perRequest = (cpu * 1000) / r.requests
    const name = `${scenario} ${tree.split('/').pop()}`
    if (r.non2xx === 0 && r.requests > 0) {
      fastest.set(name, Math.min(fastest.get(name) ?? Infinity, perRequest))
      if (split.serving < (fastestServing.get(name)?.serving ?? Infinity)) fastestServing.set(name, split)
    }
    console.log(
      `${name}: ${Math.round(r.rps)} req/s (p50 ${r.p50Ms.toFixed(3)} ms, p99 ${r.p99Ms.toFixed(3)} ms), ${perRequest.toFixed(0)} µs CPU/request (serving thread ${split.serving}, workers ${split.workers}, JIT ${split.jit}, other threads ${split.other}), non-2xx ${r.non2xx}, other programs ${(Math.max(0, others) * 100).toFixed(0)} % of a core`,
    )
    gw.kill(); await gw.exited
    rmSync(work, { recursive: true, force: true })
  }
fake.kill()
console.log(`gw on CPU ${cpus} (${cpus.includes(',') ? 'two cores' : 'one core'}), ${connections} connections`)
for (const [name, us] of fastest)
  console.log(`fastest round, ${name}: ${us.toFixed(0)} µs CPU/request; serving thread ${fastestServing.get(name)?.serving} µs, workers ${fastestServing.get(name)?.workers} µs (its fastest round)`)
