// The dashboard's stats report (GET /admin/orgs/:org/stats) shaped from grouped rows: time buckets per
// model or provider, and latency/TTFT percentiles from log-scale histogram bins. Each store groups its
// own rows (SQLite: src/store/sqlite/log-reports.ts; PostgreSQL: src/store/postgres/logs.ts).

import type { LogStats, LogStatsQuery } from './types'

/** Latency histogram bins: bin b holds values near 2^(b/8) − 1 (steps of 9 %). */
export const BIN_SCALE = 8
const binValue = (bin: number) => Math.round(2 ** (bin / BIN_SCALE) - 1)

/** One group of the single scan: a bucket, a model (or provider), a latency bin and a TTFT bin. */
export interface StatsGroupRow {
  bucket: number
  key: string | null
  lat: number
  ttft: number | null
  n: number
  errors: number
  tokens: number
  cost: number
}

type Histogram = { bins: Map<number, number>; total: number }

/** The value below which `share` of the histogram's entries fall. */
function percentile(bins: Map<number, number>, total: number, share: number): number {
  const want = Math.max(1, Math.ceil(total * share))
  let seen = 0
  for (const bin of [...bins.keys()].sort((a, b) => a - b)) {
    seen += bins.get(bin) ?? 0
    if (seen >= want) return binValue(bin)
  }
  return 0
}

function add(h: Histogram, bin: number, n: number): void {
  h.bins.set(bin, (h.bins.get(bin) ?? 0) + n)
  h.total += n
}

function percentiles(hs: Histogram[]) {
  return {
    p50: hs.map((h) => (h.total ? percentile(h.bins, h.total, 0.5) : null)),
    p95: hs.map((h) => (h.total ? percentile(h.bins, h.total, 0.95) : null)),
  }
}

/** The report from rows grouped by bucket, series key, latency bin and TTFT bin (bins of BIN_SCALE). */
export function shapeStats(q: LogStatsQuery, rows: StatsGroupRow[]): LogStats {
  const count = bucketCount(q)
  const buckets = Array.from({ length: count }, (_, i) => q.since + i * q.bucketMs)
  const histograms = () => Array.from({ length: count }, (): Histogram => ({ bins: new Map(), total: 0 }))
  const latency = histograms()
  const ttft = histograms()
  const series = new Map<string | null, LogStats['series'][number]>()
  for (const r of rows) {
    let s = series.get(r.key)
    if (!s) {
      const zeros = () => new Array<number>(count).fill(0)
      s = { key: r.key, requests: zeros(), errors: zeros(), tokens: zeros(), costUsd: zeros() }
      series.set(r.key, s)
    }
    const b = r.bucket
    ;(s.requests[b] as number) += r.n
    ;(s.errors[b] as number) += r.errors
    ;(s.tokens[b] as number) += r.tokens
    ;(s.costUsd[b] as number) += r.cost
    add(latency[b] as Histogram, r.lat, r.n)
    if (r.ttft !== null) add(ttft[b] as Histogram, r.ttft, r.n)
  }
  const total = (s: LogStats['series'][number]) => s.requests.reduce((a, b) => a + b, 0)
  return {
    buckets,
    series: [...series.values()].sort((a, b) => total(b) - total(a)),
    latencyMs: percentiles(latency),
    ttftMs: percentiles(ttft),
  }
}

const bucketCount = (q: LogStatsQuery) => Math.max(1, Math.ceil((q.until - q.since) / q.bucketMs))
