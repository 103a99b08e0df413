// `bun bench/kind-path.ts`: CPU of the parts of one request that differ by provider kind (route: the target and its
// catalog entry; clamp: the kind's fit; the adapter's request; the kind's lookups), for the same model through
// `openai` and through the vllm preset (an OpenAI-compatible provider), alternating rounds of 100,000 after a full
// garbage collection; the fastest round of each is the figure (docs/benchmarks.md).
import { loadConfig } from '../src/config'
import { startGateway } from '../src/server'
import { route } from '../src/pipeline/3-route'
import { clamp } from '../src/pipeline/4-clamp'
import { adapterFor, kindOf } from '../src/providers/registry'
import { parseChatInput } from '../src/pipeline/chat-input'
import { benchGwEnv } from './load'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
const work = mkdtempSync(join(tmpdir(), 'gw-micro-'))
const gw = await startGateway(loadConfig(benchGwEnv('http://upstream.bench', work)), { listen: false, fetch: (async () => new Response('{}')) as unknown as typeof fetch })
const found = await gw.deps.orgs.get('default')
if (!found) throw new Error('no default org')
const org = found
const messages = [{ role: 'user', content: 'Say hello to the benchmark.' }]
function one(model: string) {
  const input = parseChatInput({ model, messages, max_tokens: 64 })
  const t = route(gw.deps, org, input)[0]?.target
  if (!t) throw new Error(`${model}: no target`)
  const a = adapterFor(t.provider)
  const p = clamp(input, t, a)
  const r = a.buildRequest(p.body, t)
  return kindOf(t).genAiName(t).length + r.body.length
}
const N = 100_000
for (const m of ['openai/gpt-4o-mini', 'vllm/gpt-4o-mini']) for (let i = 0; i < 20000; i++) one(m)
const best: Record<string, number> = {}
for (let r = 0; r < 10; r++)
  for (const m of r % 2 ? ['openai/gpt-4o-mini', 'vllm/gpt-4o-mini'] : ['vllm/gpt-4o-mini', 'openai/gpt-4o-mini']) {
    Bun.gc(true)
    const s = process.cpuUsage()
    for (let i = 0; i < N; i++) one(m)
    const u = process.cpuUsage(s)
    best[m] = Math.min(best[m] ?? Infinity, (u.user + u.system) / N)
  }
for (const [m, us] of Object.entries(best)) console.log(`${m}: ${us.toFixed(2)} µs CPU (route, clamp, request; fastest of 10 rounds of ${N})`)
await gw.stop()
