// `bun bench/seed-logs.ts <db file> [count]`: a gw database holding the default org, the benchmark's
// service key and `count` (default 1,000,000) realistic request-log entries over the last 30 days.
// `bun run bench` seeds its own copy (cached in bench/.cache/); this is the same seed, by hand.

import { seed } from './log-store'

const [path, n] = process.argv.slice(2)
if (!path) {
  console.error('usage: bun bench/seed-logs.ts <db file> [count]')
  process.exit(2)
}
const count = Number(n ?? 1_000_000)
const key = process.env.GW_SERVICE_KEY ?? `gw_sk_benchmark000${'s'.repeat(32)}`
const started = performance.now()
await seed(path, count, key)
console.log(`seeded ${count.toLocaleString('en')} log entries into ${path} in ${((performance.now() - started) / 1000).toFixed(1)} s (service key: GW_SERVICE_KEY or the benchmark's)`)
