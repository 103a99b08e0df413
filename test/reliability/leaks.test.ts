// Upstream faults under load leak neither sockets nor memory in the gateway process (a longer run: `bun run test:soak`).

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFake, type FakeUpstream } from '../fakes/upstream'
import { processStats, runFaultLoad } from '../helpers/fault-load'
import { type GwProcess, spawnGw } from '../helpers/process'

const KEY = 'gw_sk_leakcheck0000000000000000000000000000000000000'
let openai: FakeUpstream
let anthropic: FakeUpstream
let gw: GwProcess
const dir = mkdtempSync(join(tmpdir(), 'gw-leaks-'))

beforeAll(async () => {
  openai = await startFake('openai')
  anthropic = await startFake('anthropic')
  gw = await spawnGw({
    GW_DB: join(dir, 'gw.db'), // a file: an in-memory database would grow with the log
    GW_SERVICE_KEY: KEY,
    GW_UPSTREAM_TIMEOUT_MS: '300',
    GW_OPENAI_BASE_URL: openai.url,
    OPENAI_API_KEY: openai.apiKey,
    GW_ANTHROPIC_BASE_URL: anthropic.url,
    ANTHROPIC_API_KEY: anthropic.apiKey,
  })
})
afterAll(async () => {
  gw.proc.kill('SIGKILL')
  await openai.stop()
  await anthropic.stop()
  rmSync(dir, { recursive: true, force: true })
})

test('2,000 requests through resets, stalls, 429s, 5xx, 529s and cut streams: sockets and memory come back', async () => {
  const load = { url: gw.url, key: KEY, openai, anthropic, concurrency: 50 }
  // Warm-up fills the connection pools (client keep-alive, upstream fetch pool) to their working size.
  await runFaultLoad({ ...load, total: 1000 })
  await Bun.sleep(500)
  const before = processStats(gw.proc.pid)
  const counts = await runFaultLoad({ ...load, total: 2000 })
  expect(Object.keys(counts).every((s) => ['200', '502', '504'].includes(s))).toBe(true)
  expect(counts[200]).toBeGreaterThan(1000)
  await Bun.sleep(1000)
  const after = processStats(gw.proc.pid)
  // About 800 of these requests met a fault; leaking one socket each would add hundreds. The keep-alive
  // pools may still grow by a few dozen toward their working size.
  expect(after.fds).toBeLessThanOrEqual(before.fds + 60)
  // RSS moves in a GC sawtooth of about ±25 MB; a leak of a few KB per request would break this.
  expect(after.rssMb - before.rssMb).toBeLessThan(60)
  expect((await fetch(`${gw.url}/health`)).status).toBe(200)
}, 60_000)
