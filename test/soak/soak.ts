// `bun run test:soak`: a long fault-load run against `gw serve`; fails on socket or memory growth, or a missing log entry.
// SOAK_REQUESTS (default 50,000) and SOAK_CONCURRENCY (default 64) size it.

import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFake } from '../fakes/upstream'
import { processStats, runFaultLoad } from '../helpers/fault-load'
import { spawnGw } from '../helpers/process'

const TOTAL = Number(process.env.SOAK_REQUESTS ?? 50_000)
const CONCURRENCY = Number(process.env.SOAK_CONCURRENCY ?? 64)
const ROUND = 2_000
const KEY = 'gw_sk_soak000000000000000000000000000000000000000000'

const dir = mkdtempSync(join(tmpdir(), 'gw-soak-'))
const openai = await startFake('openai')
const anthropic = await startFake('anthropic')
const db = join(dir, 'gw.db')
const gw = await spawnGw({
  GW_DB: db,
  GW_SERVICE_KEY: KEY,
  GW_UPSTREAM_TIMEOUT_MS: '300',
  GW_OPENAI_BASE_URL: openai.url,
  OPENAI_API_KEY: openai.apiKey,
  GW_ANTHROPIC_BASE_URL: anthropic.url,
  ANTHROPIC_API_KEY: anthropic.apiKey,
})
const problems: string[] = []
const samples: { done: number; fds: number; rssMb: number }[] = []
try {
  const load = { url: gw.url, key: KEY, openai, anthropic, concurrency: CONCURRENCY }
  const started = performance.now()
  let done = 0
  while (done < TOTAL) {
    const n = Math.min(ROUND, TOTAL - done)
    const counts = await runFaultLoad({ ...load, total: n })
    done += n
    const unexpected = Object.keys(counts).filter((s) => !['200', '502', '504'].includes(s))
    if (unexpected.length) problems.push(`unexpected statuses ${unexpected.join(', ')} in round ending at ${done}`)
    const s = processStats(gw.proc.pid)
    samples.push({ done, ...s })
    console.log(`${done.toString().padStart(7)} requests  fds ${s.fds}  rss ${s.rssMb.toFixed(1)} MB  ${JSON.stringify(counts)}`)
  }
  const secs = (performance.now() - started) / 1000
  console.log(`${TOTAL} requests in ${secs.toFixed(0)} s (${(TOTAL / secs).toFixed(0)} req/s)`)
  // After the first rounds (pools warm), sockets must stay flat and memory within the GC sawtooth.
  const warm = samples.slice(Math.min(2, samples.length - 1))
  const fdBase = warm[0]?.fds ?? 0
  const rssBase = Math.max(...warm.slice(0, Math.max(1, Math.floor(warm.length / 3))).map((s) => s.rssMb))
  const last = samples.at(-1) as (typeof samples)[number]
  if (last.fds > fdBase + 30) problems.push(`open fds grew from ${fdBase} to ${last.fds}`)
  if (last.rssMb > rssBase + 50) problems.push(`RSS grew from ${rssBase.toFixed(1)} MB to ${last.rssMb.toFixed(1)} MB`)
} finally {
  gw.proc.kill('SIGTERM')
  const code = await gw.proc.exited
  if (code !== 0) problems.push(`gw exited with ${code} on SIGTERM`)
  await openai.stop()
  await anthropic.stop()
}
const logged = (new Database(db, { readonly: true }).query('SELECT count(*) AS n FROM request_logs').get() as { n: number }).n
if (logged !== TOTAL) problems.push(`${logged} log entries for ${TOTAL} requests`)
rmSync(dir, { recursive: true, force: true })
if (problems.length) {
  console.error(`soak FAILED:\n  - ${problems.join('\n  - ')}`)
  process.exit(1)
}
console.log(`soak passed: ${TOTAL} requests, ${logged} log entries, fds and RSS flat`)
