// `bun run bench:cluster [--quick] [--logs] [--rows=N]`: gw on PostgreSQL + Redis against gw on SQLite (req/s, one and two
// instances, Redis calls per request), the PostgreSQL log writer's sustained rate, log reads at 1,000,000 entries (--quick:
// 100,000), the limit counters' cost per request, and each issue-13 target met or missed. --logs: the log store part alone.
// Uses GW_BENCH_DATABASE_URL / GW_BENCH_REDIS_URL (default the local servers; a fresh schema and Redis prefix per run).

import { SQL } from 'bun'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SecretBox } from '../src/crypto/secret-box'
import { MemoryRateLimiter, type RateLimiter } from '../src/policy/rate-limiter'
import { RedisLink } from '../src/shared/redis-link'
import { RedisRateLimiter } from '../src/shared/redis-rate-limiter'
import { withoutBodies } from '../src/store/log-cursor'
import { LogWriter } from '../src/store/log-writer'
import { createPostgresStore } from '../src/store/postgres'
import { closedLoopFor, ensureWrk, percentiles, SERVER_ENV, type Target, wrk } from './load'
import { entry, FEATURES, TIERS } from './log-store'

const QUICK = process.argv.includes('--quick')
const ROOT = join(import.meta.dir, '..')
const BUN = process.execPath
const DB = process.env.GW_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const REDIS = process.env.GW_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const SECONDS = QUICK ? 4 : 10
const CONNECTIONS = 64
const LOGS_ONLY = process.argv.includes('--logs')
const LOG_ROWS = Number(process.argv.find((a) => a.startsWith('--rows='))?.slice(7) ?? (QUICK ? 100_000 : 1_000_000))
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
      ...SERVER_ENV,
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
  return {
    rps: Math.round(per.reduce((n, r) => n + r.rps, 0)),
    requests: per.reduce((n, r) => n + r.requests, 0),
    non2xx: per.reduce((n, r) => n + r.non2xx, 0),
  }
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

/** CPU time (ms) used so far by every PostgreSQL process on this machine (Linux; null elsewhere): what the database pays per entry. */
function postgresCpuMs(): number | null {
  try {
    let ticks = 0
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue
      let stat: string
      try {
        stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      } catch {
        continue // the process has just ended
      }
      if (!stat.includes('(postgres)')) continue
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      ticks += Number(f[11]) + Number(f[12])
    }
    return ticks * 10 // USER_HZ 100
  } catch {
    return null
  }
}

/** Calls of one Redis command so far (INFO commandstats). */
async function redisCalls(link: RedisLink, command: string): Promise<number> {
  const info = String(await link.send('INFO', ['commandstats']))
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0)
}

/**
 * Seeds entries from..to (exclusive) server-side, shaped like bench/log-store.ts's entry(i) (same
 * ids, times, metadata and columns; no bodies, no roll-ups): a million rows in tens of seconds
 * instead of the writer's minutes. Reads only need the rows and tags to be there.
 */
async function seedLogs(url: string, from: number, to: number, t0: number) {
  const sql = new SQL(url, { max: 1 })
  const template = JSON.stringify({ ...withoutBodies(entry(0, t0)), requestId: '@ID@', createdAt: '@AT@', endUserId: '@U@', user: '@U@', metadata: '@M@' })
  try {
    for (let i = from; i < to; i += 100_000) {
      await sql`
        WITH s AS (
          SELECT i, '01bench-' || lpad(to_hex(i), 10, '0') AS id, ${t0}::bigint + i AS at, 'user-' || (i % 5000) AS u,
            jsonb_build_object('feature', 'f' || (i % ${FEATURES}), 'tier', (${TIERS}::text[])[i % ${TIERS.length} + 1], 'run', i::text) AS m
          FROM generate_series(${i}::bigint, ${Math.min(to, i + 100_000) - 1}::bigint) i
        ), rows AS (
          INSERT INTO request_logs (request_id, org_id, created_at, model, requested_model, status, end_user_id, metadata, entry)
          SELECT id, 'default', at, 'openai/gpt-4o-mini', 'openai/gpt-4o-mini', CASE WHEN i % 50 = 0 THEN 502 ELSE 200 END, u, m,
            replace(replace(replace(replace(${template}, '"@ID@"', to_json(id)::text), '"@AT@"',
              to_json(to_char(to_timestamp(at / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text),
              '"@U@"', to_json(u)::text), '"@M@"', (m - 'run' || jsonb_build_object('run', i))::text)
          FROM s
          RETURNING request_id, org_id, created_at, metadata
        )
        INSERT INTO request_log_tags (org_id, key, value, created_at, request_id)
        SELECT rows.org_id, m.key, m.value, rows.created_at, rows.request_id FROM rows, jsonb_each_text(rows.metadata) m`
    }
  } finally {
    await sql.close()
  }
}

/** The serving part: req/s per mode, Redis calls per request, the limit counters' cost. */
async function serving() {
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
  // Redis calls per answered request during the measured run (every instance on this Redis counts; run alone).
  const link = new RedisLink(REDIS)
  await link.connect()
  const before = { evalsha: await redisCalls(link, 'evalsha'), eval: await redisCalls(link, 'eval') }
  const run = await throughput([pg], wrkPath)
  const scripts = (await redisCalls(link, 'evalsha')) - before.evalsha + (await redisCalls(link, 'eval')) - before.eval
  out.postgresRedisRps = { rps: run.rps, non2xx: run.non2xx }
  out.redisScriptCallsPerRequest = run.requests ? +(scripts / run.requests).toFixed(3) : null
  // A second instance on CPU 1, same database and Redis (the driver shares CPU 1 with it).
  const pg2 = await startGw(upstream, { ...shared, GW_SPOOL_DIR: join(work, 'spool-b') }, 1)
  await throughput([pg, pg2], wrkPath)
  out.twoInstancesRps = await throughput([pg, pg2], wrkPath)
  for (const c of children.splice(1)) c.kill()

  // Limit counters: one admission (three counters) in memory and in Redis, sequential.
  out.counterCost = {
    memory: await counterCost(new MemoryRateLimiter(), 20_000),
    redis: await counterCost(new RedisRateLimiter(link, { required: true, prefix }), QUICK ? 2000 : 10_000),
  }
  link.close()
}

/** The log store part: the writer's sustained rate (and what PostgreSQL pays per entry), then reads at LOG_ROWS entries. */
async function logStore() {
  const url = await freshSchema()
  const store = createPostgresStore(url, new SecretBox('gw-bench-secret-0123456789abcdef0123'))
  await store.whenReady
  const writer = new LogWriter(store.logs)
  const now = Date.now() - LOG_ROWS * 10
  let t0 = performance.now()
  const cpu0 = postgresCpuMs()
  const own0 = process.cpuUsage()
  for (let i = 0; i < WRITER_ROWS; i++) {
    writer.write(entry(i, now + i))
    if (i % 5000 === 4999) await Bun.sleep(0)
  }
  await writer.flush()
  const seconds = (performance.now() - t0) / 1000
  const cpu1 = postgresCpuMs()
  const own = process.cpuUsage(own0)
  out.writer = {
    entries: WRITER_ROWS,
    entriesPerSecond: Math.round(WRITER_ROWS / seconds),
    postgresCpuUsPerEntry: cpu0 === null || cpu1 === null ? null : +(((cpu1 - cpu0) * 1000) / WRITER_ROWS).toFixed(1),
    gwCpuUsPerEntry: +((own.user + own.system) / WRITER_ROWS).toFixed(1),
  }
  // Exactness: the roll-ups (folded or still pending) count every entry once.
  const day = (i: number) => entry(i, now + i).createdAt.slice(0, 10)
  const usage = await store.logs.usage({ orgId: 'default', groupBy: 'day', fromDay: day(0), toDay: day(WRITER_ROWS - 1) })
  out.writerRollupRequests = usage.reduce((n, r) => n + r.requests, 0)

  // Seed to LOG_ROWS entries server-side, then time reads. No ANALYZE or VACUUM: as right after a fill,
  // before autovacuum has run (on this machine's server it is off).
  t0 = performance.now()
  await seedLogs(url, WRITER_ROWS, LOG_ROWS, now)
  out.seedSeconds = Math.round((performance.now() - t0) / 1000)
  out.logRows = await store.logs.countLogs()
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
  const feature = () => Math.floor(Math.random() * FEATURES)
  const readAll = async () => [
    await reads('GET /v1/logs/:id (store.getLog)', () => store.logs.getLog('default', entry(Math.floor(Math.random() * LOG_ROWS), 0).requestId), 1000),
    // fK always has tier TIERS[K % 5]: a random feature with its own tier matches 2% of the entries.
    await reads('two-key metadata filter that matches, first page of 50', () => {
      const f = feature()
      return store.logs.queryLogs({ orgId: 'default', metadata: [['tier', TIERS[f % TIERS.length] as string], ['feature', `f${f}`]], limit: 50 })
    }, 300),
    await reads('two-key filter matching nothing (a value no entry has)', () =>
      store.logs.queryLogs({ orgId: 'default', metadata: [['tier', 'pro'], ['feature', 'nope']], limit: 50 }), 300),
    // The hard case: two common tags that never meet (4 in 5 of these pairs); the rarer one's entries are all walked.
    await reads('two-key filter, random feature × tier "pro" (4 in 5 match nothing)', () =>
      store.logs.queryLogs({ orgId: 'default', metadata: [['feature', `f${feature()}`], ['tier', 'pro']], limit: 50 }), 100),
  ]
  out.reads = await readAll()
  // Again after VACUUM ANALYZE (what autovacuum does on a server where it is on): statistics, and
  // the visibility map that lets index-only scans skip the table.
  const sql = new SQL(url, { max: 1 })
  t0 = performance.now()
  await sql`VACUUM ANALYZE request_logs, request_log_tags`
  out.vacuumSeconds = Math.round((performance.now() - t0) / 1000)
  await sql.close()
  out.readsAfterVacuum = await readAll()
  await store.close()
}

/** Each issue-13 target against what this run measured: met or missed, and by how much. */
function targets() {
  const t: Record<string, string> = {}
  const pct = (x: number) => `${Math.round(x * 100)} %`
  const rps = (k: string) => (out[k] as { rps: number } | undefined)?.rps
  const sqliteRps = rps('sqliteRps')
  const pgRps = rps('postgresRedisRps')
  if (sqliteRps && pgRps) {
    const r = pgRps / sqliteRps
    t['PostgreSQL + Redis >= 85 % of SQLite req/s'] = `${r >= 0.85 ? 'met' : 'missed'}: ${pct(r)} (${pgRps} vs ${sqliteRps}), margin ${pct(r - 0.85)}`
  }
  const calls = out.redisScriptCallsPerRequest as number | null | undefined
  if (calls != null) t['<= 1 Redis round trip per request'] = `${calls <= 1.005 ? 'met' : 'missed'}: ${calls} script calls per request`
  const w = out.writer as { entriesPerSecond: number } | undefined
  if (w) t['PostgreSQL log writer >= 20,000 entries/s'] = `${w.entriesPerSecond >= 20_000 ? 'met' : 'missed'}: ${w.entriesPerSecond}/s, margin ${pct(w.entriesPerSecond / 20_000 - 1)}`
  const reads = (out.reads as { label: string; p99Ms: number }[] | undefined) ?? []
  const vacuumed = (out.readsAfterVacuum as { label: string; p99Ms: number }[] | undefined) ?? []
  reads.forEach((r, i) => {
    const v = vacuumed[i]
    t[`${r.label} < 20 ms p99 at ${LOG_ROWS.toLocaleString('en')}`] =
      `${r.p99Ms < 20 ? 'met' : 'missed'}: p99 ${r.p99Ms} ms, margin ${(20 - r.p99Ms).toFixed(1)} ms` +
      (v ? `; after VACUUM ANALYZE ${v.p99Ms < 20 ? 'met' : 'missed'}: p99 ${v.p99Ms} ms, margin ${(20 - v.p99Ms).toFixed(1)} ms` : '')
  })
  return t
}

try {
  if (!LOGS_ONLY) await serving()
  await logStore()
  out.targets = targets()
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
