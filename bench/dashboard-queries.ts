// `bun bench/dashboard-queries.ts [N]`: the dashboard's queries on a SQLite store with N log entries (default
// 1,000,000, over 30 days; seeded once into bench/.cache): stats, usage and log pages, median of 5 runs each.

import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { openBenchStore, seed } from './log-store'

const N = Number(process.argv[2] ?? 1_000_000)
const path = join(import.meta.dir, '.cache', `dashboard-${N}.db`)
if (!existsSync(path)) {
  mkdirSync(join(import.meta.dir, '.cache'), { recursive: true })
  const t0 = performance.now()
  await seed(path, N, `gw_sk_${'b'.repeat(44)}`)
  console.log(`seeded ${N} entries in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
}
const store = openBenchStore(path)
const now = Date.now()
const DAY = 86_400_000

async function time(name: string, run: () => Promise<unknown>) {
  const ms: number[] = []
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now()
    await run()
    ms.push(performance.now() - t0)
  }
  ms.sort((a, b) => a - b)
  console.log(`${name.padEnd(52)} median ${(ms[2] as number).toFixed(1)} ms   max ${(ms[4] as number).toFixed(1)} ms`)
}

const stats = (days: number, by: 'model' | 'provider') => () =>
  store.logs.stats({ orgId: 'default', since: now - days * DAY, until: now, bucketMs: Math.ceil((days * DAY) / 48), by })
await time('stats, last 24 h (~33k entries), by model', stats(1, 'model'))
await time('stats, last 7 days (~233k entries), by provider', stats(7, 'provider'))
await time('stats, last 30 days (all entries), by model', stats(30, 'model'))
const today = new Date(now).toISOString().slice(0, 10)
const monthAgo = new Date(now - 30 * DAY).toISOString().slice(0, 10)
await time('usage by model, 30 days (roll-ups)', () => store.logs.usage({ orgId: 'default', groupBy: 'model', fromDay: monthAgo, toDay: today }))
const page = (extra: object) => () => store.logs.queryLogs({ orgId: 'default', metadata: [], limit: 50, ...extra })
await time('logs, first page', page({}))
await time('logs, provider=openai', page({ provider: 'openai' }))
await time('logs, status=error', page({ status: 'error' }))
await time('logs, user=user-42, 30 days', page({ user: 'user-42', since: now - 30 * DAY }))
await time('logs, metadata tier=pro', () => store.logs.queryLogs({ orgId: 'default', metadata: [['tier', 'pro']], limit: 50 }))
await store.close()
