// Outages of the shared servers (PRODUCT §10), on private servers these tests start and stop: PostgreSQL stopped under load
// (spool, every entry exactly once, across a gw restart too) and Redis killed and restarted (local counters or 503, then shared again).

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { ADMIN_TOKEN } from '../helpers/gateway'
import { type PrivatePostgres, type PrivateRedis, privateServersAvailable, startPrivatePostgres, startPrivateRedis } from '../helpers/private-servers'
import { type GwProcess, spawnGw } from '../helpers/process'
import { freshSchema, serversFor, TEST_SECRET } from '../helpers/servers'

const KEY = `gw_sk_${'o'.repeat(44)}`
const can = privateServersAvailable()
if (!can) {
  if (process.env.CI === 'true') throw new Error('outage tests: initdb, pg_ctl and redis-server are required under CI')
  console.log('skipped: outage tests (initdb, pg_ctl or redis-server not installed)')
}

interface Sent {
  id: string
  status: number
}

/** Sends chat requests, `concurrency` at a time, until stop() is called; records every answer. */
function load(url: string, concurrency = 4) {
  const sent: Sent[] = []
  let running = true
  const worker = async () => {
    while (running) {
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `GwKey ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: `n${sent.length}` }] }),
      })
      await res.arrayBuffer()
      sent.push({ id: res.headers.get('x-gw-request-id') as string, status: res.status })
    }
  }
  const done = Promise.all(Array.from({ length: concurrency }, worker))
  return {
    sent,
    async stop() {
      running = false
      await done
      return sent
    },
  }
}

const health = async (url: string) => (await (await fetch(`${url}/health`)).json()) as Record<string, any>
async function until(what: string, ok: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = performance.now() + ms
  while (!(await ok())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(50)
  }
}

describe.skipIf(!can)('PostgreSQL stopped under load', () => {
  let pg: PrivatePostgres
  let openai: FakeUpstream
  let spool: string
  const env = () => ({
    GW_DATABASE_URL: pg.url,
    GW_SECRET: TEST_SECRET,
    GW_SERVICE_KEY: KEY,
    GW_SPOOL_DIR: spool,
    GW_PROMPTS_DIR: '/nonexistent-gw-test-prompts',
    GW_OPENAI_BASE_URL: openai.url,
    OPENAI_API_KEY: openai.apiKey,
  })
  beforeAll(async () => {
    pg = await startPrivatePostgres()
    openai = await startFake('openai')
    spool = mkdtempSync(join(tmpdir(), 'gw-spool-'))
  }, 60_000)
  afterAll(async () => {
    pg.destroy()
    await openai.stop()
    rmSync(spool, { recursive: true, force: true })
  })

  test('known keys keep being served, entries wait in the spool, and every entry is stored exactly once, across a gw restart too', async () => {
    let gw = await spawnGw(env())
    const sql = new SQL(pg.url, { max: 1 })
    try {
      const before = load(gw.url)
      await Bun.sleep(300)
      pg.stop()
      await Bun.sleep(2500) // past the 2 s cache lifetime: orgs and keys now come from the stale cache
      const down = await health(gw.url)
      expect(down).toMatchObject({ ok: true, status: 'degraded', checks: { store: { status: 'down' }, logWriter: { status: 'degraded' } } })
      expect(down.checks.logWriter.inSpool).toBeGreaterThan(0)
      expect((await fetch(`${gw.url}/health/ready`)).status).toBe(503)
      expect((await fetch(`${gw.url}/health/live`)).status).toBe(200)
      const first = await before.stop()
      // gw stops while the database is still away: what is queued goes to the spool, nothing is dropped.
      gw.proc.kill('SIGTERM')
      expect(await gw.proc.exited).toBe(0)
      expect(gw.output()).not.toContain('dropped')

      pg.start()
      gw = await spawnGw(env())
      const after = load(gw.url)
      await Bun.sleep(300)
      const second = await after.stop()
      await until('the spool to drain', async () => (await health(gw.url)).checks.logWriter.inSpool === 0 && (await health(gw.url)).status === 'ok')
      await until('the queue to be written', async () => (await health(gw.url)).checks.logWriter.queued === 0)

      const sent = [...first, ...second]
      expect(sent.length).toBeGreaterThan(20)
      expect(sent.every((s) => s.status === 200)).toBe(true)
      const rows = (await sql`SELECT request_id FROM request_logs`) as { request_id: string }[]
      const stored = rows.map((r) => r.request_id)
      // Exactly once: every answered request, no duplicates, nothing else (the default org has only these).
      expect(new Set(stored).size).toBe(stored.length)
      expect(stored.sort()).toEqual(sent.map((s) => s.id).sort())
    } finally {
      await sql.close()
      gw.proc.kill('SIGTERM')
      await gw.proc.exited
    }
  }, 60_000)

  test('a database that hangs (paused: answers nothing, refuses nothing): known keys are served, entries go to the spool, SIGTERM exits; all stored once it is back', async () => {
    let gw = await spawnGw({ ...env(), GW_DRAIN_MS: '1000' })
    const sql = new SQL(pg.url, { max: 1 })
    try {
      const before = load(gw.url)
      await Bun.sleep(300)
      pg.pause()
      await Bun.sleep(2500) // past the 2 s cache lifetime
      const answered = before.sent.length
      await Bun.sleep(2000)
      // Requests go on (the known key and org served after a second's wait for the database).
      expect(before.sent.length).toBeGreaterThan(answered)
      // Past the queries' 10 s deadline the writer counts the database as unreachable: entries go to the spool.
      await until('entries in the spool', async () => (await health(gw.url)).checks.logWriter.inSpool > 0, 30_000)
      const first = await before.stop()
      const t0 = performance.now()
      gw.proc.kill('SIGTERM')
      expect(await gw.proc.exited).toBe(0)
      console.log(`SIGTERM with the database hanging: exited in ${Math.round(performance.now() - t0)} ms`)
      expect(gw.output()).not.toContain('dropped')

      pg.resume()
      gw = await spawnGw(env())
      await until('the spool to drain', async () => (await health(gw.url)).checks.logWriter.inSpool === 0 && (await health(gw.url)).status === 'ok', 30_000)
      await until('the queue to be written', async () => (await health(gw.url)).checks.logWriter.queued === 0)
      expect(first.every((s) => s.status === 200)).toBe(true)
      const ids = new Set(first.map((s) => s.id))
      const stored = async () => ((await sql`SELECT request_id FROM request_logs`) as { request_id: string }[]).map((r) => r.request_id).filter((id) => ids.has(id))
      await until('every answered request stored', async () => (await stored()).length >= ids.size, 30_000).catch(() => {})
      const rows = await stored()
      expect(new Set(rows).size).toBe(rows.length)
      expect(rows.length).toBe(ids.size)
    } finally {
      pg.resume()
      await sql.close()
      gw.proc.kill('SIGTERM')
      await gw.proc.exited
    }
  }, 120_000)

  test('gw may start while the database is down: live 200, ready 503, then ready once it is back', async () => {
    pg.stop()
    const gw = await spawnGw(env())
    try {
      expect((await fetch(`${gw.url}/health/live`)).status).toBe(200)
      expect((await fetch(`${gw.url}/health/ready`)).status).toBe(503)
      const h = await fetch(`${gw.url}/health`)
      expect(h.status).toBe(503)
      expect(await h.json()).toMatchObject({ ok: false, status: 'down' })
      pg.start()
      await until('ready', async () => (await fetch(`${gw.url}/health/ready`)).status === 200)
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `GwKey ${KEY}` },
        body: JSON.stringify({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
      })
      expect(res.status).toBe(200)
    } finally {
      gw.proc.kill('SIGTERM')
      await gw.proc.exited
    }
  }, 60_000)
})

describe.skipIf(!can)('Redis killed and restarted under load', () => {
  let redis: PrivateRedis
  let openai: FakeUpstream
  let schema: Awaited<ReturnType<typeof freshSchema>> | undefined
  let pgUp = false
  beforeAll(async () => {
    pgUp = await serversFor('Redis outage tests (need the test PostgreSQL)', { postgres: true })
    if (!pgUp) return
    redis = await startPrivateRedis()
    openai = await startFake('openai')
    schema = await freshSchema()
  })
  afterAll(async () => {
    if (!pgUp) return
    await redis.destroy()
    await openai.stop()
    await schema?.drop()
  })
  const spawn = (extra: Record<string, string> = {}) =>
    spawnGw({
      GW_DATABASE_URL: (schema as { url: string }).url,
      GW_REDIS_URL: redis.url,
      GW_SECRET: TEST_SECRET,
      GW_SERVICE_KEY: KEY,
      GW_ADMIN_TOKEN: ADMIN_TOKEN,
      GW_SPOOL_DIR: join(tmpdir(), `gw-spool-${Bun.randomUUIDv7()}`),
      GW_PROMPTS_DIR: '/nonexistent-gw-test-prompts',
      GW_OPENAI_BASE_URL: openai.url,
      OPENAI_API_KEY: openai.apiKey,
      ...extra,
    })
  const admin = (gw: GwProcess, method: string, path: string, body?: unknown) =>
    fetch(`${gw.url}/admin${path}`, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, ...(body ? { body: JSON.stringify(body) } : {}) })

  test('GW_REDIS_REQUIRED=false: local counters while it is away (degraded), shared counters and notices again once it is back', async () => {
    if (!pgUp) return
    const [a, b] = await Promise.all([spawn(), spawn()])
    try {
      expect((await admin(a, 'PUT', '/orgs/default/policy', { requestsPerMinute: 100_000 })).status).toBe(200)
      const traffic = load(a.url, 3)
      await Bun.sleep(300)
      await redis.kill()
      await Bun.sleep(700)
      const degraded = await health(a.url)
      expect(degraded).toMatchObject({ ok: true, status: 'degraded', checks: { redis: { status: 'down' } } })
      await redis.start()
      await until('Redis to be used again', async () => (await health(a.url)).checks.redis.status === 'ok' && (await health(b.url)).checks.redis.status === 'ok')
      await Bun.sleep(300)
      const sent = await traffic.stop()
      expect(sent.every((s) => s.status === 200)).toBe(true)
      // What runs is what is said (PRODUCT §10): one line when Redis went away and one when it came back, not one per
      // request (A served traffic meanwhile; B, idle, says so at most once each way).
      expect(a.errors().match(/gw: Redis unreachable/g)?.length).toBe(1)
      expect(a.output().match(/gw: Redis reachable again/g)?.length).toBe(1)
      expect(b.errors().match(/gw: Redis unreachable/g)?.length ?? 0).toBeLessThanOrEqual(1)
      expect(b.output().match(/gw: Redis reachable again/g)?.length ?? 0).toBeLessThanOrEqual(1)
      // Back on shared counters: the admissions after the restart are counted in Redis again.
      const probe = new Bun.RedisClient(redis.url)
      expect(((await probe.send('KEYS', ['gw:rl:*'])) as string[]).length).toBeGreaterThan(0)
      probe.close()
      // And change notices flow again (the subscription was made anew): a key revoked on A is refused by B within 1 s.
      const made = await admin(a, 'POST', '/orgs/default/service-keys', { name: 'after-restart' })
      const k = (await made.json()) as { id: string; key: string }
      const use = () =>
        fetch(`${b.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `GwKey ${k.key}` },
          body: JSON.stringify({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
        }).then((r) => r.status)
      expect(await use()).toBe(200)
      expect((await admin(a, 'DELETE', `/orgs/default/service-keys/${k.id}`)).status).toBe(204)
      const t0 = performance.now()
      await until('B to refuse the revoked key', async () => (await use()) === 401, 1000)
      expect(performance.now() - t0).toBeLessThan(1000)
    } finally {
      for (const gw of [a, b]) gw.proc.kill('SIGTERM')
      await Promise.all([a.proc.exited, b.proc.exited])
    }
  }, 60_000)

  test('GW_REDIS_REQUIRED=true: limited requests get 503 while Redis is away, unlimited ones are served', async () => {
    if (!pgUp) return
    const gw = await spawn({ GW_REDIS_REQUIRED: 'true' })
    try {
      expect((await admin(gw, 'POST', '/orgs', { id: 'free', name: 'free' })).status).toBe(201)
      expect((await admin(gw, 'PUT', '/orgs/free/providers/openai', { apiKey: openai.apiKey, baseUrl: openai.url })).status).toBe(200)
      const free = ((await (await admin(gw, 'POST', '/orgs/free/service-keys', {})).json()) as { key: string }).key
      const chat = (key: string) =>
        fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `GwKey ${key}` },
          body: JSON.stringify({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
        })
      await redis.kill()
      const limited = await chat(KEY) // the default org has requestsPerMinute (previous test)
      expect(limited.status).toBe(503)
      expect(await limited.json()).toMatchObject({ error: true, code: 'gateway_error', message: expect.stringContaining('Redis') })
      expect((await chat(free)).status).toBe(200)
      // Log pages and usage reports of an org without limits are served too (their read rate is gw's own, counted here meanwhile).
      for (const path of ['/v1/logs?limit=1', '/v1/usage'])
        expect((await fetch(`${gw.url}${path}`, { headers: { authorization: `GwKey ${free}` } })).status).toBe(200)
      await redis.start()
      await until('limited requests to pass again', async () => (await chat(KEY)).status === 200)
    } finally {
      gw.proc.kill('SIGTERM')
      await gw.proc.exited
    }
  }, 60_000)
})
