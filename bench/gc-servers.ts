// `bun bench/gc-servers.ts [json|stream] [seconds]`: the garbage collector under wrk (64 connections) in
// the bare floor (bench/floor-proxy.ts; for streams also with FLOOR_READ=js), the same-work floor (bench/same-work-floor.ts) and gw from
// source, each a server pinned to CPU 0 with JavaScriptCore's GC log on (BUN_JSC_logGC, on stderr), the
// fake upstream and wrk on CPU 1: per heap, collections per 1,000 requests and the eden pauses' median,
// counted over the measured run only (after a 5 s warm-up). The heap with the most eden collections
// is the serving thread's (it allocates each request's objects); the others are the workers' (the log
// thread's, in the same-work floor and gw). Issue 28 asks for gw's eden median at the floor's.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BENCH_KEY, benchGwEnv, requireWrk, scenarioRequest, startBenchScript, startPinnedGw, wrk } from './load'

const [kind = 'json', secondsArg = '10'] = process.argv.slice(2)
const wrkPath = await requireWrk()
const fake = await startBenchScript('fake-upstream.ts', {}, 1)
const work = mkdtempSync(join(tmpdir(), 'gw-gc-servers-'))
process.on('exit', () => rmSync(work, { recursive: true, force: true }))
const GC_LOG = { BUN_JSC_logGC: '1' }

interface Heap {
  eden: number[]
  full: number
}

/** Reads a server's GC log as it comes; only the collections while `measuring()` holds are counted. */
function gcLog(stderr: ReadableStream<Uint8Array>, measuring: () => boolean): Map<string, Heap> {
  const heaps = new Map<string, Heap>()
  void (async () => {
    const utf8 = new TextDecoder()
    let rest = ''
    for await (const bytes of stderr) {
      const lines = (rest + utf8.decode(bytes, { stream: true })).split('\n')
      rest = lines.pop() ?? ''
      for (const line of lines) {
        const m = /^\[GC<(0x[0-9a-f]+)>: START .*?(EdenCollection|FullCollection).* p=([\d.]+)ms/.exec(line)
        if (!m || !measuring()) continue
        const h = heaps.get(m[1] as string) ?? { eden: [], full: 0 }
        heaps.set(m[1] as string, h)
        if (m[2] === 'EdenCollection') h.eden.push(Number(m[3]))
        else h.full++
      }
    }
  })()
  return heaps
}

const median = (xs: number[]) => (xs.length ? ([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number) : 0)
const servers = [
  { name: 'floor', start: () => startBenchScript('floor-proxy.ts', { UPSTREAM: fake.url, ...GC_LOG }, 0, [], 'pipe') },
  // Streams: the floor that reads each stream in JavaScript (FLOOR_READ=js), as gw must to act on its events.
  ...(kind === 'stream'
    ? [{ name: 'JavaScript-stream floor', start: () => startBenchScript('floor-proxy.ts', { UPSTREAM: fake.url, FLOOR_READ: 'js', ...GC_LOG }, 0, [], 'pipe') }]
    : []),
  { name: 'same-work floor', start: () => startBenchScript('same-work-floor.ts', { UPSTREAM: fake.url, KEY: BENCH_KEY, DB: join(work, 'same-work.db'), ...GC_LOG }, 0, [], 'pipe') },
  { name: 'gw', start: () => startPinnedGw([process.execPath, join(import.meta.dir, '../src/main.ts')], { ...benchGwEnv(fake.url, work), ...GC_LOG }, 'pipe') },
]
for (const s of servers) {
  const { proc, url } = await s.start()
  let measuring = false
  const heaps = gcLog(proc.stderr as ReadableStream<Uint8Array>, () => measuring)
  const target = scenarioRequest('openai', kind, url, BENCH_KEY)
  await wrk(wrkPath, target, 64, 5, 1)
  measuring = true
  const r = await wrk(wrkPath, target, 64, Number(secondsArg), 1)
  await Bun.sleep(200)
  measuring = false
  const byEden = [...heaps.values()].sort((a, b) => b.eden.length - a.eden.length)
  const per1k = (n: number) => ((n * 1000) / r.requests).toFixed(2)
  console.log(`${s.name}, openai ${kind}: ${r.requests} requests`)
  byEden.forEach((h, i) =>
    console.log(
      `  ${i === 0 ? 'serving thread' : 'a worker'}: ${per1k(h.eden.length)} eden and ${per1k(h.full)} full collections per 1,000 requests, eden pause median ${median(h.eden).toFixed(3)} ms (${h.eden.length} eden)`,
    ),
  )
  proc.kill()
}
fake.proc.kill()
