// `bun bench/gc-servers.ts [json|stream] [seconds]`: the garbage collector under wrk (64 connections) in
// the bare floor (bench/floor-proxy.ts), the same-work floor (bench/same-work-floor.ts) and gw from
// source, each a server pinned to CPU 0 with JavaScriptCore's GC log on (BUN_JSC_logGC), the fake
// upstream and wrk on CPU 1: per heap, collections per 1,000 requests and the eden pauses' median,
// counted over the measured run only (after a 5 s warm-up). The heap with the most eden collections
// is the serving thread's (it allocates each request's objects); the others are the workers' (the log
// thread's, in the same-work floor and gw). Issue 28 asks for gw's eden median at the floor's.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BENCH_ADMIN, BENCH_KEY, benchGwEnv, ensureWrk, freePort, scenarioRequest, SERVER_ENV, startBenchScript, wrk } from './load'

const [kind = 'json', secondsArg = '10'] = process.argv.slice(2)
const wrkPath = await ensureWrk()
if (!wrkPath) throw new Error('wrk is needed')
const fake = await startBenchScript('fake-upstream.ts', {}, 1)
const work = mkdtempSync(join(tmpdir(), 'gw-gc-servers-'))

interface Heap {
  eden: number[]
  full: number
}

/** A server with its GC log read as it comes; `measuring` decides which collections count. */
function logged(cmd: string[], env: Record<string, string>) {
  const heaps = new Map<string, Heap>()
  let measuring = false
  const proc = Bun.spawn(['taskset', '-c', '0', process.execPath, ...cmd], {
    env: { PATH: process.env.PATH ?? '', ...SERVER_ENV, ...env, BUN_JSC_logGC: '1' },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let firstLine: ((line: string) => void) | undefined
  const port = new Promise<string>((resolve) => (firstLine = resolve))
  const read = async (stream: ReadableStream<Uint8Array>) => {
    let rest = ''
    const utf8 = new TextDecoder()
    for await (const bytes of stream) {
      const lines = (rest + utf8.decode(bytes, { stream: true })).split('\n')
      rest = lines.pop() ?? ''
      for (const line of lines) {
        if (line.startsWith('{"port"')) firstLine?.(line)
        const m = /^\[GC<(0x[0-9a-f]+)>: START .*?(EdenCollection|FullCollection).* p=([\d.]+)ms/.exec(line)
        if (!m || !measuring) continue
        const h = heaps.get(m[1] as string) ?? { eden: [], full: 0 }
        heaps.set(m[1] as string, h)
        if (m[2] === 'EdenCollection') h.eden.push(Number(m[3]))
        else h.full++
      }
    }
  }
  void read(proc.stdout as ReadableStream<Uint8Array>)
  void read(proc.stderr as ReadableStream<Uint8Array>)
  return { proc, heaps, port, measure: (on: boolean) => (measuring = on) }
}

const median = (xs: number[]) => (xs.length ? ([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number) : 0)
const gwPort = freePort()
const servers = [
  { name: 'floor', s: logged([join(import.meta.dir, 'floor-proxy.ts')], { UPSTREAM: fake.url }), url: '' },
  { name: 'same-work floor', s: logged([join(import.meta.dir, 'same-work-floor.ts')], { UPSTREAM: fake.url, KEY: BENCH_KEY, DB: join(work, 'same-work.db') }), url: '' },
  { name: 'gw', s: logged([join(import.meta.dir, '../src/main.ts'), 'serve'], { ...benchGwEnv(fake.url, work), GW_PORT: String(gwPort) }), url: `http://127.0.0.1:${gwPort}` },
]
for (const t of servers) {
  // The floors print their port once they listen; gw is asked its /health.
  if (!t.url) t.url = `http://127.0.0.1:${(JSON.parse(await t.s.port) as { port: number }).port}`
  else while (!(await fetch(`${t.url}/health`).then((r) => r.ok, () => false))) await Bun.sleep(10)
}
await fetch(`${servers[2]?.url}/admin/orgs/default/policy`, {
  method: 'PUT',
  headers: { authorization: `Bearer ${BENCH_ADMIN}`, 'content-type': 'application/json' },
  body: JSON.stringify({ requestsPerMinute: 1e8, tokensPerMinute: 1e12, maxTokens: 4096, maxConcurrentStreams: 1e5, maxConcurrentStreamsPerKey: 1e5 }),
})
for (const t of servers) {
  const target = scenarioRequest('openai', kind, t.url, BENCH_KEY)
  await wrk(wrkPath, target, 64, 5, 1)
  t.s.measure(true)
  const r = await wrk(wrkPath, target, 64, Number(secondsArg), 1)
  await Bun.sleep(200)
  t.s.measure(false)
  const heaps = [...t.s.heaps.values()].sort((a, b) => b.eden.length - a.eden.length)
  const per1k = (n: number) => ((n * 1000) / r.requests).toFixed(2)
  console.log(`${t.name}, openai ${kind}: ${r.requests} requests`)
  heaps.forEach((h, i) =>
    console.log(
      `  ${i === 0 ? 'serving thread' : 'a worker'}: ${per1k(h.eden.length)} eden and ${per1k(h.full)} full collections per 1,000 requests, eden pause median ${median(h.eden).toFixed(3)} ms (${h.eden.length} eden)`,
    ),
  )
  t.s.proc.kill()
}
fake.proc.kill()
