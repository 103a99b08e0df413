// `bun run bench:cluster [--quick]`: gw on PostgreSQL + Redis against gw on SQLite (req/s, one and two instances),
// the PostgreSQL log writer's sustained rate, log reads at 1,000,000 entries, and the limit counters' cost per request.
// Uses GW_BENCH_DATABASE_URL / GW_BENCH_REDIS_URL (default the local servers; a fresh schema and Redis prefix per run).

import { SQL } from 'bun'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SecretBox } from '../src/crypto/secret-box'
import { MemoryRateLimiter, type RateLimiter } from '../src/policy/rate-limiter'
import { RedisLink } from '../src/shared/redis-link'
import { RedisRateLimiter } from '../src/shared/redis-rate-limiter'
import { LogWriter } from '../src/store/log-writer'
import { createPostgresStore } from '../src/store/postgres'
import { closedLoopFor, ensureWrk, percentiles, type Target, wrk } from './load'
import { entry } from './log-store'

const QUICK = process.argv.includes('--quick')
const ROOT = join(import.meta.dir, '..')
const BUN = process.execPath
const DB = process.env.GW_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const REDIS = process.env.GW_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const SECONDS = QUICK ? 4 : 10
const CONNECTIONS = 64
const LOG_ROWS = QUICK ? 100_000 : 1_000_000
const WRITER_ROWS = QUICK ? 20_000 : 100_000
const KEY = `gw_sk_benchmark000${'s'.repeat(32)}`
const ADMIN = 'bench-admin-token-000000000000'
const work = mkdtempSync(join(tmpdir(), 'gw-bench-cluster-'))
const children: ReturnType<typeof Bun.spawn>[] = []
const out: Record<string, unknown> = { quick: QUICK, date: new Date().toISOString() }

async function jsonPort(cmd: string[], env: Record<string, string>, cpu: number) {
  const proc = Bun.spawn(['taskset', '-c', String(cpu), ...cmd], { env: { PATH: process.env.PATH ?? '', ...env }, stdout: 'pipe', stderr: 'inherit' })
  children.push(proc)
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
  const { value } = await reader.read()
  reader.releaseLock()
  return (JSON.parse(new TextDecoder().decode(value)) as { port: number }).port
}

const schemas: string[] = []
async function freshSchema(): Promise<string> {
  const schema = `gw_bench_${Date.now().toString(36)}`
  schemas.push(schema)
  const sql = new SQL(DB, { max: 1 })
  await sql.unsafe(`CREATE SCHEMA ${schema}`)
  await sql.close()
  const u = new URL(DB)
  u.searchParams.set('search_path', schema)
  return u.toString()
}

let gwSeq = 0
async function startGw(upstream: string, env: Record<string, string>, cpu: number): Promise<string> {
  const port = 20_000 + Math.floor(Math.random() * 20_000)
  const proc = Bun.spawn(['taskset', '-c', String(cpu), BUN, join(ROOT, 'src/main.ts'), 'serve'], {
    env: {
      PATH: process.env.PATH ?? '',
      BUN_CONFIG_MAX_HTTP_REQUESTS: '4096',
      GW_PORT: String(port),
      GW_DB: join(work, `gw-${gwSeq++}.db`),
      GW_SECRET: 'gw-bench-secret-0123456789abcdef0123',
      GW_ADMIN_TOKEN: ADMIN,
      GW_SERVICE_KEY: KEY,
      GW_PROMPTS_DIR: work,
      GW_OPENAI_BASE_URL: `${upstream}/v1`,
      OPENAI_API_KEY: 'sk-bench',
      ...env,
    },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  children.push(proc)
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; i < 300; i++) {
    if ((await fetch(`${url}/health/ready`).catch(() => undefined))?.status === 200) return url
    await Bun.sleep(50)
  }
  throw new Error('gw did not start')
}

/** A request and token limit on the default org, so every request pays for both counters. */
async function limit(url: string) {
  const res = await fetch(`${url}/admin/orgs/default/policy`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ADMIN}` },
    body: JSON.stringify({ requestsPerMinute: 100_000_000, tokensPerMinute: 1_000_000_000 }),
  })
  if (res.status !== 200) throw new Error(`policy: ${res.status} ${await res.text()}`)
}

const target = (url: string): Target => ({
  url: `${url}/v1/chat/completions`,
  headers: { authorization: `GwKey ${KEY}` },
  body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Say hi please' }] }),
})

async function throughput(urls: string[], wrkPath: string | undefined) {
  const per = await Promise.all(
    urls.map((u, i) => (wrkPath ? wrk(wrkPath, target(u), CONNECTIONS / urls.length, SECONDS, 1) : closedLoopFor(target(u), CONNECTIONS / urls.length, SECONDS)).then((r) => ({ i, ...r }))),
  )
  return { rps: Math.round(per.reduce((n, r) => n + r.rps, 0)), non2xx: per.reduce((n, r) => n + r.non2xx, 0) }
}

async function counterCost(limiter: RateLimiter, n: number): Promise<{ p50Us: number; p99Us: number }> {
  const samples: number[] = []
  const checks = [
    { key: 'org:bench:rpm', limit: 1e12, cost: 1 },
    { key: 'org:bench:tpm', limit: 1e12, cost: 120 },
    { key: 'key:bench:rpm', limit: 1e12, cost: 1 },
  ]
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await limiter.admit(checks)
    samples.push((performance.now() - t0) * 1000)
  }
  const p = percentiles(samples)
  return { p50Us: Math.round(p.p50), p99Us: Math.round(p.p99) }
}

try {
  const wrkPath = await ensureWrk()
  const upstream = `http://127.0.0.1:${await jsonPort([BUN, join(import.meta.dir, 'fake-upstream.ts')], {}, 1)}`
  const prefix = `gwbench:${Date.now().toString(36)}:`

  // One instance on CPU 0: SQLite, then PostgreSQL + Redis; limits on in both.
  const sqlite = await startGw(upstream, {}, 0)
  await limit(sqlite)
  await throughput([sqlite], wrkPath) // warm-up
  out.sqliteRps = await throughput([sqlite], wrkPath)
  // Where the difference comes from: Redis alone (SQLite store), PostgreSQL alone (in-process counters).
  for (const c of children.splice(1)) c.kill()
  const sqliteRedis = await startGw(upstream, { GW_REDIS_URL: REDIS, GW_REDIS_PREFIX: `${prefix}a:` }, 0)
  await limit(sqliteRedis)
  await throughput([sqliteRedis], wrkPath)
  out.sqliteRedisRps = await throughput([sqliteRedis], wrkPath)
  for (const c of children.splice(1)) c.kill()
  const pgOnly = await startGw(upstream, { GW_DATABASE_URL: await freshSchema(), GW_SPOOL_DIR: join(work, 'spool-0') }, 0)
  await limit(pgOnly)
  await throughput([pgOnly], wrkPath)
  out.postgresOnlyRps = await throughput([pgOnly], wrkPath)
  for (const c of children.splice(1)) c.kill()
  const dbUrl = await freshSchema()
  const shared = { GW_DATABASE_URL: dbUrl, GW_REDIS_URL: REDIS, GW_REDIS_PREFIX: prefix }
  const pg = await startGw(upstream, { ...shared, GW_SPOOL_DIR: join(work, 'spool-a') }, 0)
  await limit(pg)
  await throughput([pg], wrkPath)
  out.postgresRedisRps = await throughput([pg], wrkPath)
  // A second instance on CPU 1, same database and Redis (the driver shares CPU 1 with it).
  const pg2 = await startGw(upstream, { ...shared, GW_SPOOL_DIR: join(work, 'spool-b') }, 1)
  await throughput([pg, pg2], wrkPath)
  out.twoInstancesRps = await throughput([pg, pg2], wrkPath)
  for (const c of children.splice(1)) c.kill()

  // Limit counters: one admission (three counters) in memory and in Redis, sequential.
  const link = new RedisLink(REDIS)
  await link.connect()
  out.counterCost = {
    memory: await counterCost(new MemoryRateLimiter(), 20_000),
    redis: await counterCost(new RedisRateLimiter(link, { required: true, prefix }), QUICK ? 2000 : 10_000),
  }
  link.close()

  // The PostgreSQL log writer, sustained: entries queued as fast as they come until all are stored.
  const store = createPostgresStore(await freshSchema(), new SecretBox('gw-bench-secret-0123456789abcdef0123'))
  await store.whenReady
  const writer = new LogWriter(store.logs)
  const now = Date.now() - LOG_ROWS * 10
  let t0 = performance.now()
  for (let i = 0; i < WRITER_ROWS; i++) {
    writer.write(entry(i, now + i))
    if (i % 5000 === 4999) await Bun.sleep(0)
  }
  await writer.flush()
  out.writerEntriesPerSecond = Math.round(WRITER_ROWS / ((performance.now() - t0) / 1000))

  // Seed to LOG_ROWS entries (batches of 1,000 straight into the store), then time reads.
  t0 = performance.now()
  for (let i = WRITER_ROWS; i < LOG_ROWS; i += 1000)
    await store.logs.insertLogs(Array.from({ length: Math.min(1000, LOG_ROWS - i) }, (_, j) => entry(i + j, now + i + j)))
  out.seedSeconds = Math.round((performance.now() - t0) / 1000)
  const reads = async (label: string, run: () => Promise<unknown>, n: number) => {
    const s: number[] = []
    for (let i = 0; i < n; i++) {
      const t = performance.now()
      await run()
      s.push(performance.now() - t)
    }
    const p = percentiles(s)
    return { label, p50Ms: +p.p50.toFixed(2), p99Ms: +p.p99.toFixed(2) }
  }
  out.reads = [
    await reads('GET /v1/logs/:id (store.getLog)', () => store.logs.getLog('default', entry(Math.floor(Math.random() * LOG_ROWS), 0).requestId), 1000),
    await reads(
      'two-key metadata filter, first page of 50',
      () => store.logs.queryLogs({ orgId: 'default', metadata: [['feature', `f${Math.floor(Math.random() * 50)}`], ['tier', 'pro']], limit: 50 }),
      300,
    ),
    await reads('two-key filter matching nothing', () => store.logs.queryLogs({ orgId: 'default', metadata: [['feature', 'f1'], ['tier', 'nope']], limit: 50 }), 300),
  ]
  await store.close()
} finally {
  for (const c of children) c.kill()
  rmSync(work, { recursive: true, force: true })
  const sql = new SQL(DB, { max: 1 })
  for (const schema of schemas) await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  await sql.close()
}
writeFileSync(join(import.meta.dir, 'results', 'cluster-latest.json'), `${JSON.stringify(out, null, 2)}\n`)
console.log(JSON.stringify(out, null, 2))
process.exit(0)
