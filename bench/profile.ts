// `bun bench/profile.ts [openai|anthropic|messages] [json|stream] [seconds]`: gw from source under
// `bun --cpu-prof`, pinned to CPU 0 and driven by wrk (64 connections, CPU 1) with one scenario, as in
// `bun run bench`. Writes the profile to .bench/profile/ and prints the self time per function and
// per part of the pipeline. `messages`: POST /v1/messages relayed to Anthropic (gw metadata as a header).

import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BENCH_ADMIN, BENCH_KEY, benchGwEnv, requireWrk, freePort, scenarioRequest, wrk } from './load'

const [provider = 'openai', kind = 'json', secondsArg = '10'] = process.argv.slice(2)
const ROOT = join(import.meta.dir, '..')
const OUT = join(ROOT, '.bench/profile')
const KEY = BENCH_KEY
const ADMIN = BENCH_ADMIN
const BUN = process.execPath

async function portOf(proc: ReturnType<typeof Bun.spawn>): Promise<number> {
  const { value } = await (proc.stdout as ReadableStream<Uint8Array>).getReader().read()
  return (JSON.parse(new TextDecoder().decode(value)) as { port: number }).port
}

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}

/** Where each part of the pipeline is recognised: the first matching frame, innermost first. */
const PARTS: [string, RegExp][] = [
  ['log write (SQLite, entry JSON)', /store\/(log-writer|sqlite\/logs)\.ts/],
  ['log entry (stage 7)', /pipeline\/7-log\.ts/],
  ['upstream fetch (native)', /^fetch @/],
  ['answer out (stage 6: JSON or SSE)', /pipeline\/6-normalise\.ts|sse\/encode\.ts/],
  ['upstream stream read + translate', /sse\/parse\.ts|providers\/.*stream\.ts/],
  ['providers (build request, parse answer)', /src\/providers\//],
  ['dispatch (stage 5: attempt, fallback walk)', /pipeline\/5-(attempt|fallback)\.ts/],
  ['auth (stage 1)', /pipeline\/1-auth\.ts|src\/auth\//],
  ['policy, limits, tokens (stages 2–4)', /pipeline\/[234]-|src\/policy\/|src\/tokens\.ts/],
  ['body read, validation, route', /http\/|chat-input\.ts|schemas\//],
  ['ingress API (src/apis/)', /src\/apis\//],
  ['Elysia', /node_modules\/elysia/],
]

function summarise(file: string): void {
  const p = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const label = (n: ProfileNode) => `${n.callFrame.functionName || '(anonymous)'} @ ${n.callFrame.url.replace(ROOT, '') || 'native'}`
  const self = new Map<string, number>()
  const parts = new Map<string, number>()
  let total = 0
  p.samples.forEach((id, i) => {
    const us = Math.max(0, p.timeDeltas[i + 1] ?? p.timeDeltas[i] ?? 0)
    const leaf = byId.get(id)
    if (!leaf || leaf.callFrame.functionName === '(idle)') return
    total += us
    self.set(label(leaf), (self.get(label(leaf)) ?? 0) + us)
    let part = 'other (Bun server, GC, runtime)'
    for (let n: ProfileNode | undefined = leaf; n; n = byId.get(parent.get(n.id) ?? -1)) {
      const hit = PARTS.find(([, re]) => re.test(label(n as ProfileNode)))
      if (hit) {
        part = hit[0]
        break
      }
    }
    parts.set(part, (parts.get(part) ?? 0) + us)
  })
  const show = (m: Map<string, number>, n: number) =>
    [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `  ${((v / total) * 100).toFixed(1).padStart(5)} %  ${k}`).join('\n')
  console.log(`\nby part of the pipeline (innermost src frame of each sample):\n${show(parts, 20)}`)
  console.log(`\nself time, top 25:\n${show(self, 25)}`)
}

const wrkPath = await requireWrk()
mkdirSync(OUT, { recursive: true })
const before = new Set(readdirSync(OUT))
const fake = Bun.spawn(['taskset', '-c', '1', BUN, join(import.meta.dir, 'fake-upstream.ts')], { stdout: 'pipe' })
const upstream = `http://127.0.0.1:${await portOf(fake)}`
const work = mkdtempSync(join(tmpdir(), 'gw-profile-'))
const port = freePort()
const gw = Bun.spawn(['taskset', '-c', '0', BUN, '--cpu-prof', `--cpu-prof-dir=${OUT}`, join(ROOT, 'src/main.ts'), 'serve'], {
  env: { ...process.env, GW_PORT: String(port), ...benchGwEnv(upstream, work) },
  stdout: 'ignore',
  stderr: 'inherit',
})
const url = `http://127.0.0.1:${port}`
for (let i = 0; ; i++) {
  if (await fetch(`${url}/health`).then((r) => r.ok, () => false)) break
  if (i > 3000) throw new Error('gw did not start')
  await Bun.sleep(5)
}
await fetch(`${url}/admin/orgs/default/policy`, {
  method: 'PUT',
  headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
  body: JSON.stringify({ requestsPerMinute: 100_000_000, tokensPerMinute: 1_000_000_000_000, maxTokens: 4096, maxConcurrentStreams: 100_000, maxConcurrentStreamsPerKey: 100_000 }),
})
const target = scenarioRequest(provider, kind, url, KEY)
await wrk(wrkPath, target, 64, 2, 1) // warm-up
const r = await wrk(wrkPath, target, 64, Number(secondsArg), 1)
console.log(`${provider} ${kind}: ${Math.round(r.rps)} req/s under the profiler, ${r.non2xx} non-2xx`)
gw.kill('SIGTERM')
await gw.exited
fake.kill()
const made = readdirSync(OUT).filter((f) => !before.has(f) && f.endsWith('.cpuprofile'))
if (!made[0]) throw new Error('no profile was written')
console.log(`profile: .bench/profile/${made[0]}`)
summarise(join(OUT, made[0]))
