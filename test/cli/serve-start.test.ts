// `gw serve` start-up (PRODUCT §4): one process per port, and the files it creates readable by their owner only.

import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type GwProcess, spawnGw } from '../helpers/process'

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
  expect(gw.key).toMatch(/^gw_sk_/)
  expect(gw.output()).toContain('gw key create')
  const res = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `GwKey ${gw.key}` } })
  expect(res.status).toBe(200)
  gw.proc.kill('SIGTERM')
  await gw.proc.exited
  // The key is created and shown once: a later start prints none.
  const again = await spawnGw({ GW_DB: db })
  started.push(again)
  expect(again.key).toBeUndefined()
})
