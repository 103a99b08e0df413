// `gw serve` start-up (PRODUCT §4, §10): one process per port, owner-only files and folders, the first key, one-line errors, and start-up lines naming what really runs.

import { afterAll, describe, expect, test } from 'bun:test'
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { privateServersAvailable, startPrivatePostgres } from '../helpers/private-servers'
import { type GwProcess, spawnGw } from '../helpers/process'
import { freshSchema, serversFor, TEST_REDIS_URL, TEST_SECRET } from '../helpers/servers'

const root = mkdtempSync(join(tmpdir(), 'gw-serve-'))
const started: GwProcess[] = []
afterAll(() => {
  for (const g of started) g.proc.kill('SIGKILL')
  rmSync(root, { recursive: true, force: true })
})

test('a second gw on a port that is taken fails to start with a clear message, and the first keeps it', async () => {
  const key = 'gw_sk_portcheck00000000000000000000000000000000000000'
  const first = await spawnGw({ GW_DB: join(root, 'a', 'gw.db'), GW_SERVICE_KEY: key })
  started.push(first)
  const port = new URL(first.url).port
  const second = Bun.spawn([process.execPath, join(import.meta.dir, '../../src/main.ts'), 'serve', '--port', port], {
    env: { PATH: process.env.PATH ?? '', GW_DB: join(root, 'b', 'gw.db') },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const timer = setTimeout(() => second.kill('SIGKILL'), 10_000)
  expect(await second.exited).toBe(1)
  clearTimeout(timer)
  const stderr = await new Response(second.stderr).text()
  expect(stderr).toContain(`port ${port} on 127.0.0.1 is already in use`)
  expect(await new Response(second.stdout).text()).not.toContain('listening')
  // Every request still reaches the first process (it alone knows its key).
  for (let i = 0; i < 20; i++) {
    const res = await fetch(`${first.url}/v1/models`, { headers: { authorization: `GwKey ${key}` } })
    expect(res.status).toBe(200)
  }
})

test('the database, its WAL files and the secret file are 0600, a folder gw creates 0700', async () => {
  const dir = join(root, 'fresh', 'data')
  const gw = await spawnGw({ GW_DB: join(dir, 'gw.db') })
  started.push(gw)
  const mode = (p: string) => (statSync(p).mode & 0o777).toString(8)
  expect(mode(dir)).toBe('700')
  for (const f of ['gw.db', 'gw.db-wal', 'gw.db-shm', 'gw.secret']) expect(`${f} ${mode(join(dir, f))}`).toBe(`${f} 600`)
})

/** Waits (up to `ms`) for what a process prints after its listening line, which may come in a later read. */
async function until(done: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms
  while (!done() && Date.now() < deadline) await Bun.sleep(20)
}

/** Runs `gw serve` with these arguments until it exits (a start that fails); its exit code and output. */
async function failedStart(args: string[], env: Record<string, string>) {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, '../../src/main.ts'), 'serve', ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000)
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  clearTimeout(timer)
  return { code, stdout, stderr }
}

test('a first start that cannot listen loses no key: the next start that listens creates it, prints it, and it works', async () => {
  const taken = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const db = join(root, 'first-key', 'gw.db')
  try {
    const failed = await failedStart(['--port', String(taken.port)], { GW_DB: db })
    expect(failed.code).toBe(1)
    expect(failed.stderr).toContain(`port ${taken.port} on 127.0.0.1 is already in use`)
    expect(failed.stdout).not.toContain('gw_sk_')
  } finally {
    taken.stop(true)
  }
  const gw = await spawnGw({ GW_DB: db })
  started.push(gw)
  // The key follows the start-up lines (another write): read until it is there.
  await until(() => gw.output().includes('npx bun src/main.ts key create'))
  const key = /gw_sk_\w+/.exec(gw.output())?.[0]
  expect(key).toMatch(/^gw_sk_/)
  // From the sources, the hint names the command as it is run here (README: no global Bun).
  expect(gw.output()).toContain('another one at any time: npx bun src/main.ts key create')
  const res = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `GwKey ${key}` } })
  expect(res.status).toBe(200)
  gw.proc.kill('SIGTERM')
  await gw.proc.exited
  // The key is created and shown once: a later start prints none.
  const again = await spawnGw({ GW_DB: db })
  started.push(again)
  await Bun.sleep(500)
  expect(again.output()).not.toContain('gw_sk_')
})

test('a GW_SECRET that does not open the stored provider keys stops the start in one line naming it (exit 1), never showing a secret', async () => {
  const db = join(root, 'secret', 'gw.db')
  const first = 'the-first-secret-of-enough-length-0123456789'
  const gw = await spawnGw({ GW_DB: db, GW_SECRET: first, OPENAI_API_KEY: 'sk-stored-key-0123456789' })
  started.push(gw)
  gw.proc.kill('SIGTERM')
  await gw.proc.exited
  const other = 'another-secret-of-enough-length-9876543210'
  const { code, stdout, stderr } = await failedStart(['--port', '0'], { GW_DB: db, GW_SECRET: other })
  expect(code).toBe(1)
  expect(stderr).toContain('GW_SECRET does not open the provider keys stored in the database')
  expect(stdout).not.toContain('listening')
  for (const secret of [first, other, 'sk-stored-key-0123456789']) expect(stderr + stdout).not.toContain(secret)
  // With the right secret it starts as before.
  const again = await spawnGw({ GW_DB: db, GW_SECRET: first })
  started.push(again)
  expect((await fetch(`${again.url}/health`)).status).toBe(200)
})

test('a host gw cannot listen on is named in one line (exit 1), not EINVAL', async () => {
  const r = await failedStart(['--port', '0'], { GW_DB: join(root, 'bad-host', 'gw.db'), GW_HOST: 'localhostt' })
  expect(r.code).toBe(1)
  expect(r.stderr.trim().split('\n')).toHaveLength(1)
  expect(r.stderr).toStartWith('gw: could not start: cannot listen on host "localhostt" (GW_HOST or --host): it is neither an address')
})

test('a misspelt GW_* variable is warned about at start in one line naming the setting meant; a client GW_KEY is not', async () => {
  const gw = await spawnGw({
    GW_DB: join(root, 'typo', 'gw.db'),
    GW_ADMIN_TOKN: 'an-admin-token-long-enough',
    GW_KEY: 'gw_sk_what-a-client-script-exports',
  })
  started.push(gw)
  await until(() => gw.errors().includes('GW_ADMIN_TOKN'))
  expect(gw.errors().trim().split('\n')).toEqual(['gw: GW_ADMIN_TOKN is not a gw setting and is ignored: did you mean GW_ADMIN_TOKEN?'])
})

test('PostgreSQL unreachable at start is named by host:port, never with the password', async () => {
  // A spool folder the operator made, open to others: gw warns and leaves it as it is.
  const spool = join(root, 'pg-down-spool')
  mkdirSync(spool)
  chmodSync(spool, 0o755)
  const closed = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = closed.port
  closed.stop(true)
  const gw = await spawnGw({
    GW_DATABASE_URL: `postgres://gw:pg-password-7f3a@127.0.0.1:${port}/gwdb`,
    GW_SECRET: 'a-secret-long-enough-for-the-test-0000',
    GW_SPOOL_DIR: spool,
    GW_SERVICE_KEY: 'gw_sk_pgdown000000000000000000000000000000000000000',
  })
  started.push(gw)
  await until(() => gw.errors().includes('retrying') && gw.errors().includes('chmod 700'))
  expect(gw.errors()).toContain(`PostgreSQL on 127.0.0.1:${port} (database "gwdb")`)
  expect(gw.errors()).not.toContain('pg-password-7f3a')
  expect(gw.errors()).toContain(`gw: other users can open ${spool} (755)`)
})

test('an existing database folder others can open is left as it is, with one warning at start', async () => {
  const dir = join(root, 'open-folder')
  mkdirSync(dir)
  chmodSync(dir, 0o755)
  const gw = await spawnGw({ GW_DB: join(dir, 'gw.db') })
  started.push(gw)
  await until(() => gw.errors().includes('chmod 700'))
  expect(gw.errors().trim().split('\n')).toEqual([
    `gw: other users can open ${dir} (755): gw's files in it are owner-only, but the folder gw creates itself is 0700 and gw leaves yours as it is; chmod 700 it`,
  ])
  expect((statSync(dir).mode & 0o777).toString(8)).toBe('755')
})

const clusterUp = await serversFor('start-up lines on PostgreSQL and Redis', { postgres: true, redis: true })

describe.skipIf(!clusterUp)('on PostgreSQL and Redis', () => {
  test('the start-up lines and the JSON record name the store and the limits really used, without credentials', async () => {
    const schema = await freshSchema()
    try {
      const db = new URL(schema.url)
      db.password = 'pg-password-9c2e'
      const env = {
        GW_DATABASE_URL: db.toString(),
        GW_SECRET: TEST_SECRET,
        GW_REDIS_URL: TEST_REDIS_URL,
        GW_REDIS_PREFIX: `gwtest:${schema.schema}:`,
        GW_SPOOL_DIR: join(root, 'cluster-spool'),
      }
      const where = `${db.hostname}:${db.port || '5432'}${db.pathname}`
      const redis = new URL(TEST_REDIS_URL)
      const redisAt = `${redis.hostname}:${redis.port || '6379'}`
      const text = await spawnGw(env)
      started.push(text)
      await until(() => text.output().includes('gw: metrics'))
      expect(text.output()).toContain(`gw: store postgres ${where}; rate limits redis ${redisAt}\n`)
      expect(text.output()).not.toContain('pg-password-9c2e')
      text.proc.kill('SIGTERM')
      await text.proc.exited
      const json = await spawnGw({ ...env, GW_LOG_FORMAT: 'json' })
      started.push(json)
      await until(() => json.output().includes('"accessLog"'))
      const record = JSON.parse(json.output().split('\n').find((l) => l.includes('"gw started"')) as string)
      expect(record).toMatchObject({ store: `postgres ${where}`, rateLimits: `redis ${redisAt}`, redis: expect.stringContaining(redisAt) })
      expect(json.output()).not.toContain('pg-password-9c2e')
    } finally {
      await schema.drop()
    }
  })
})

const privatePg = privateServersAvailable()
if (!privatePg) console.log('skipped: first key once PostgreSQL answers (initdb or pg_ctl not installed)')

describe.skipIf(!privatePg)('PostgreSQL down at the first start', () => {
  test('gw listens without it, then creates and prints the first key once it answers, and that key works', async () => {
    const pg = await startPrivatePostgres()
    try {
      pg.stop()
      const gw = await spawnGw({ GW_DATABASE_URL: pg.url, GW_SECRET: TEST_SECRET, GW_SPOOL_DIR: join(root, 'late-key-spool') })
      started.push(gw)
      expect(gw.output()).not.toContain('gw_sk_')
      pg.start()
      await until(() => gw.output().includes('npx bun src/main.ts key create'), 15_000)
      const key = /gw_sk_\w+/.exec(gw.output())?.[0]
      expect(key).toMatch(/^gw_sk_/)
      const res = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `GwKey ${key}` } })
      expect(res.status).toBe(200)
    } finally {
      pg.destroy()
    }
  }, 60_000)
})
