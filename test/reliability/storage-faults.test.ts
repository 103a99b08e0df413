// Storage faults: unusable database paths at start, a locked database at run time, and a disk that fills up.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { spawnGw } from '../helpers/process'

const MAIN = join(import.meta.dir, '../../src/main.ts')
const KEY = 'gw_sk_storagefaults00000000000000000000000000000000'
let dir: string
let openai: FakeUpstream

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gw-storage-'))
  openai = await startFake('openai')
})
afterAll(async () => {
  await openai.stop()
  rmSync(dir, { recursive: true, force: true })
})

/** Runs `gw serve` to completion (it should fail fast) and returns its exit code and stderr. */
function serveOnce(env: Record<string, string>) {
  const p = Bun.spawnSync([process.execPath, MAIN, 'serve', '--port', '0'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
    timeout: 10_000,
  })
  return { code: p.exitCode, err: p.stderr.toString() }
}

/** Mounts a small tmpfs (needs root); undefined where that is not possible. */
function tmpfs(name: string, options: string): string | undefined {
  const at = join(dir, name)
  mkdirSync(at)
  const m = Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', options, 'tmpfs', at], { stderr: 'pipe' })
  return m.exitCode === 0 ? at : undefined
}
const unmount = (at: string) => Bun.spawnSync(['umount', '-l', at])
const canMount = (() => {
  const probe = mkdtempSync(join(tmpdir(), 'gw-mount-probe-'))
  const ok = Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', 'size=16k', 'tmpfs', probe], { stderr: 'pipe' }).exitCode === 0
  if (ok) unmount(probe)
  rmSync(probe, { recursive: true, force: true })
  return ok
})()

function expectClearStartFailure(r: { code: number | null; err: string }, path: string) {
  expect(r.code).toBe(1)
  expect(r.err).toContain(`cannot use the database at ${path}`)
  expect(r.err).toContain('set GW_DB (or --db) to another path')
  expect(r.err).not.toMatch(/^\s+at /m) // no stack trace
}

test('a database path that cannot be created: clear message, exit 1', () => {
  const file = join(dir, 'a-file')
  writeFileSync(file, 'not a directory')
  expectClearStartFailure(serveOnce({ GW_DB: join(file, 'gw.db') }), join(file, 'gw.db'))
  expectClearStartFailure(serveOnce({ GW_DB: '/proc/gw-nowhere/gw.db' }), '/proc/gw-nowhere/gw.db')
})

test.skipIf(!canMount)('a read-only database directory: clear message, exit 1', () => {
  const ro = tmpfs('ro', 'size=1m,ro') as string
  try {
    expectClearStartFailure(serveOnce({ GW_DB: join(ro, 'gw.db') }), join(ro, 'gw.db'))
  } finally {
    unmount(ro)
  }
})

test.skipIf(!canMount)('a full disk at start: clear message, exit 1', () => {
  const full = tmpfs('full', 'size=16k') as string
  try {
    writeFileSync(join(full, 'filler'), Buffer.alloc(12 * 1024))
    const r = serveOnce({ GW_DB: join(full, 'gw.db'), GW_SECRET: 'storage-test-secret-0123456789-0123' })
    expectClearStartFailure(r, join(full, 'gw.db'))
  } finally {
    unmount(full)
  }
})

async function chatBurst(url: string, n: number) {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const started = performance.now()
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `GwKey ${KEY}` },
        body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
      })
      await res.arrayBuffer()
      return { status: res.status, id: res.headers.get('x-gw-request-id') as string, ms: performance.now() - started }
    }),
  )
}

interface LogStats {
  queued: number
  written: number
  dropped: number
  retries: number
}
const health = async (url: string) => (await (await fetch(`${url}/health`)).json()) as { checks: { logWriter: LogStats } }

test('a locked database stalls nothing and loses no log entry: writes are retried once the lock is gone', async () => {
  const path = join(dir, 'locked.db')
  const gw = await spawnGw({ GW_DB: path, GW_OPENAI_BASE_URL: openai.url, OPENAI_API_KEY: openai.apiKey, GW_SERVICE_KEY: KEY })
  try {
    await chatBurst(gw.url, 2)
    const other = new Database(path)
    other.exec('PRAGMA busy_timeout = 5000')
    other.exec('BEGIN EXCLUSIVE')
    other.exec("INSERT INTO orgs (id, name, created_at) VALUES ('lock-holder', 'x', 'now')")
    const during = await chatBurst(gw.url, 30)
    // Keep sending while the writer meets the lock: no request may wait for it.
    const until = performance.now() + 2500
    while (performance.now() < until) during.push(...(await chatBurst(gw.url, 1)))
    const lockedHealth = await health(gw.url)
    other.exec('ROLLBACK')
    other.close()
    expect(during.every((r) => r.status === 200)).toBe(true)
    // Requests are answered while the database is locked: nothing waits for the lock.
    expect(Math.max(...during.map((r) => r.ms))).toBeLessThan(1000)
    expect(lockedHealth.checks.logWriter.retries).toBeGreaterThan(0)
    expect(lockedHealth.checks.logWriter.queued).toBeGreaterThanOrEqual(during.length)
    // Once the lock is gone every entry reaches the database.
    const deadline = Date.now() + 10_000
    while ((await health(gw.url)).checks.logWriter.queued > 0 && Date.now() < deadline) await Bun.sleep(100)
    expect((await health(gw.url)).checks.logWriter).toMatchObject({ queued: 0, dropped: 0 })
    gw.proc.kill('SIGTERM')
    expect(await gw.proc.exited).toBe(0)
    const db = new Database(path, { readonly: true })
    const found = during.filter((r) => db.query('SELECT 1 FROM request_logs WHERE request_id = ?1').get(r.id)).length
    db.close()
    expect(found).toBe(during.length)
  } finally {
    gw.proc.kill('SIGKILL')
  }
}, 30_000)

test.skipIf(!canMount)('a disk that fills up at run time: answers go on, entries wait, and are written once there is room', async () => {
  const disk = tmpfs('fills', 'size=8m') as string
  const gw = await spawnGw({
    GW_DB: join(disk, 'gw.db'),
    GW_OPENAI_BASE_URL: openai.url,
    OPENAI_API_KEY: openai.apiKey,
    GW_SERVICE_KEY: KEY,
  })
  try {
    await chatBurst(gw.url, 2)
    // The WAL emptied first: its pages are reused after a checkpoint, so a WAL grown before the disk
    // filled could take the whole burst without needing a byte more (the writer would never fail).
    while ((await health(gw.url)).checks.logWriter.queued > 0) await Bun.sleep(20)
    for (let i = 0; i < 50; i++) {
      const db = new Database(join(disk, 'gw.db'))
      const row = db.query('PRAGMA wal_checkpoint(TRUNCATE)').get() as { busy: number }
      db.close()
      if (row.busy === 0) break
      await Bun.sleep(20)
    }
    const filler = join(disk, 'filler')
    // Fill what is left of the disk.
    Bun.spawnSync(['dd', 'if=/dev/zero', `of=${filler}`, 'bs=4k'], { stderr: 'pipe' })
    const during = await chatBurst(gw.url, 200)
    expect(during.every((r) => r.status === 200)).toBe(true)
    await Bun.sleep(800)
    const full = await health(gw.url)
    rmSync(filler)
    const deadline = Date.now() + 15_000
    while ((await health(gw.url)).checks.logWriter.queued > 0 && Date.now() < deadline) await Bun.sleep(100)
    const after = await health(gw.url)
    expect(after.checks.logWriter).toMatchObject({ queued: 0, dropped: 0 })
    expect(after.checks.logWriter.written).toBeGreaterThanOrEqual(202)
    // The disk really was full for the writer: its batches failed and waited.
    expect(full.checks.logWriter.retries).toBeGreaterThan(0)
    gw.proc.kill('SIGTERM')
    expect(await gw.proc.exited).toBe(0)
  } finally {
    gw.proc.kill('SIGKILL')
    await Bun.sleep(100)
    unmount(disk)
  }
}, 40_000)
