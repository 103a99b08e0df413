// `bun bench/same-work-parts.ts [json|stream] [openai|anthropic]`: what each part of gw's required work costs,
// as CPU per request of the same-work floor (bench/same-work-floor.ts) with parts left out, beside the bare
// floor, and the latency each adds over calling the fake directly with one request at a time (p50 / p99
// of 1,000). Alternating 3 rounds of 5 s of wrk (64 connections), servers pinned to CPU 0, wrk and the
// fake upstream to CPU 1: alternating rounds see the same background load.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { requireWrk, sequential, startBenchScript, wrk } from './load'

const [kind = 'json', provider = 'openai'] = process.argv.slice(2)
const wrkPath = await requireWrk()
const KEY = `gw_sk_benchmark000${'s'.repeat(32)}`
const stat = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
const cpuMs = (pid: number) => ((Number(stat(pid)[11]) + Number(stat(pid)[12])) * 1000) / 100
const work = mkdtempSync(join(tmpdir(), 'gw-same-work-'))

const fake = await startBenchScript('fake-upstream.ts', {}, 1)
const stream = kind === 'stream'
const model = provider === 'anthropic' ? 'claude-haiku-4-5' : 'gpt-4o-mini'
const question = [{ role: 'user', content: 'Say hello to the benchmark.' }]
const native = { model, messages: question, max_tokens: 64, ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) }
const gwBody = { ...native, model: `${provider}/${model}`, metadata: { bench: 'yes', scenario: `${provider} ${kind}` } }
const variants: [string, string, Record<string, string>][] = [
  ['bare floor (pass-through)', 'floor-proxy.ts', { UPSTREAM: fake.url }],
  ['required work, no log entry', 'same-work-floor.ts', { SKIP: 'log' }],
  ['required work, no log entry, no token count or limits', 'same-work-floor.ts', { SKIP: 'log,tokens,limits' }],
  ['required work (same-work floor)', 'same-work-floor.ts', {}],
]
const cpu: Record<string, number[]> = {}
const added: Record<string, string[]> = {}
const direct = { url: `${fake.url}${provider === 'anthropic' ? '/v1/messages' : '/v1/chat/completions'}`, headers: {}, body: JSON.stringify(native) }
const ms = (n: number) => n.toFixed(3)
try {
  for (let round = 0; round < 3; round++)
    for (const [name, script, env] of variants) {
      const db = join(work, `${round}-${name.length}.db`)
      const s = await startBenchScript(script, { UPSTREAM: fake.url, KEY, DB: db, ...env }, 0)
      const path = provider === 'anthropic' && script === 'floor-proxy.ts' ? '/v1/messages' : '/v1/chat/completions'
      const t = { url: `${s.url}${path}`, headers: { authorization: `GwKey ${KEY}` }, body: JSON.stringify(script === 'floor-proxy.ts' ? native : gwBody) }
      await sequential(t, 300)
      const [d, m] = [(await sequential(direct, 1000)).total, (await sequential(t, 1000)).total]
      ;(added[name] ??= []).push(`${ms(m.p50 - d.p50)} / ${ms(m.p99 - d.p99)}`)
      await wrk(wrkPath, t, 64, 2, 1)
      const c0 = cpuMs(s.proc.pid)
      const r = await wrk(wrkPath, t, 64, 5, 1)
      const us = ((cpuMs(s.proc.pid) - c0) * 1000) / r.requests
      ;(cpu[name] ??= []).push(us)
      console.log(`${provider} ${kind} · ${name}: ${Math.round(r.rps)} req/s, ${us.toFixed(0)} µs CPU/request, non-2xx ${r.non2xx}; unloaded added ${added[name]?.at(-1)} ms`)
      s.proc.kill()
      await s.proc.exited
    }
  console.log(`\n| ${provider} ${kind} | CPU per request, median of 3 | unloaded added p50 / p99 (ms), 3 rounds |\n|---|---|---|`)
  for (const [name] of variants)
    console.log(`| ${name} | ${[...(cpu[name] ?? [])].sort((a, b) => a - b)[1]?.toFixed(0)} µs | ${added[name]?.join(' · ')} |`)
} finally {
  fake.proc.kill()
  rmSync(work, { recursive: true, force: true })
}
