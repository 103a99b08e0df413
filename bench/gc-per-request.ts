// `bun bench/gc-per-request.ts [json|stream] [tree…]`: garbage collection per request of gw's own handling,
// in process (`app.handle`, the bench upstream's answers served in process, a file database so log
// entries go to the log thread), from JavaScriptCore's GC log (BUN_JSC_logGC): after a warm-up of
// 20,000 requests, the collections of 20,000 more, per heap (the serving thread's heap is the one the
// driver collects by hand between two markers; the log thread and the other workers have their own), with their pauses. Each tree (default: this one) runs in a
// child of its own; bench/gc-driver.ts is copied into a tree that lacks it.

import { copyFileSync, existsSync } from 'node:fs'
import { join, resolve } from 'node:path'

const [kind = 'json', ...treesArg] = process.argv.slice(2)
const trees = treesArg.length ? treesArg.map((t) => resolve(t)) : [resolve(import.meta.dir, '..')]
const N = 20_000

interface HeapGc {
  eden: number[]
  full: number[]
}

function parse(log: string): { heaps: Map<string, HeapGc>; serving: string | undefined } {
  const heaps = new Map<string, HeapGc>()
  let measuring = false
  let marking = false
  let serving: string | undefined
  for (const line of log.split('\n')) {
    if (line.includes('GC-DRIVER-MARK')) marking = true
    if (line.includes('GC-DRIVER-START')) {
      marking = false
      measuring = true
    } else if (line.includes('GC-DRIVER-END')) measuring = false
    const full = /^\[GC<(0x[0-9a-f]+)>: START .*FullCollection/.exec(line)
    if (marking && full) serving = full[1]
    const m = /^\[GC<(0x[0-9a-f]+)>: START .*?(EdenCollection|FullCollection).* p=([\d.]+)ms/.exec(line)
    if (!m) continue
    const [, heap, what, pause] = m as unknown as [string, string, string, string]
    // Every heap is listed, in the order it first collects, measured or not.
    const h = heaps.get(heap) ?? { eden: [], full: [] }
    heaps.set(heap, h)
    if (measuring) (what === 'EdenCollection' ? h.eden : h.full).push(Number(pause))
  }
  return { heaps, serving }
}

const median = (xs: number[]) => (xs.length ? ([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number) : 0)
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)

for (const tree of trees) {
  const driver = join(tree, 'bench/gc-driver.ts')
  if (!existsSync(driver)) copyFileSync(join(import.meta.dir, 'gc-driver.ts'), driver)
  const child = Bun.spawn([process.execPath, driver, kind, String(N)], {
    env: { ...process.env, BUN_JSC_logGC: '1' },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  const { heaps, serving } = parse(`${out}\n${err}`)
  console.log(`${tree} (${kind}, ${N} requests after the warm-up):`)
  ;[...heaps.entries()].forEach(([id, h], i) => {
    const who = id === serving ? 'serving thread' : `heap ${i + 1} (a worker: the log thread, the checkpointer or the read thread)`
    const ms = sum(h.eden) + sum(h.full)
    console.log(
      `  ${who}: ${h.eden.length} eden + ${h.full.length} full collections, ${((ms * 1000) / N).toFixed(2)} µs of pauses per request, eden pause median ${median(h.eden).toFixed(3)} ms`,
    )
  })
}
