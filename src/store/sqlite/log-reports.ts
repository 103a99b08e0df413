// SQLite stats report (the dashboard's overview) over request_logs: range scans of the covering index request_logs_org_figures.

import type { Database, SQLQueryBindings } from 'bun:sqlite'
import type { LogStats, LogStatsQuery } from '../types'

/** Latency histogram bins: bin b holds values near 2^(b/8) − 1 (steps of 9 %). */
const BIN_SCALE = 8
const binValue = (bin: number) => Math.round(2 ** (bin / BIN_SCALE) - 1)

interface SeriesSqlRow {
  bucket: number
  key: string | null
  requests: number
  errors: number
  tokens: number
  cost: number
}

interface BinSqlRow {
  bucket: number
  bin: number
  n: number
}

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

function percentiles(rows: BinSqlRow[], count: number) {
  const perBucket = Array.from({ length: count }, () => ({ bins: new Map<number, number>(), total: 0 }))
  for (const r of rows) {
    const b = perBucket[r.bucket]
    if (!b) continue
    b.bins.set(r.bin, r.n)
    b.total += r.n
  }
  return {
    p50: perBucket.map((b) => (b.total ? percentile(b.bins, b.total, 0.5) : null)),
    p95: perBucket.map((b) => (b.total ? percentile(b.bins, b.total, 0.95) : null)),
  }
}

export function statsReport(db: Database, q: LogStatsQuery): LogStats {
  const count = Math.max(1, Math.ceil((q.until - q.since) / q.bucketMs))
  const buckets = Array.from({ length: count }, (_, i) => q.since + i * q.bucketMs)
  const args = [q.orgId, q.since, q.until, q.bucketMs]
  const range = 'FROM request_logs INDEXED BY request_logs_org_figures WHERE org_id = ?1 AND created_at >= ?2 AND created_at < ?3'
  const bucket = '(created_at - ?2) / ?4'
  const column = q.by === 'model' ? 'model' : 'provider'
  const seriesRows = db
    .query<SeriesSqlRow, SQLQueryBindings[]>(
      `SELECT ${bucket} AS bucket, ${column} AS key, count(*) AS requests, sum(status >= 400) AS errors,
        sum(prompt_tokens + completion_tokens) AS tokens, coalesce(sum(cost_usd), 0) AS cost
       ${range} GROUP BY 1, 2`,
    )
    .all(...args)
  const series = new Map<string | null, LogStats['series'][number]>()
  for (const r of seriesRows) {
    let s = series.get(r.key)
    if (!s) {
      const zeros = () => new Array<number>(count).fill(0)
      s = { key: r.key, requests: zeros(), errors: zeros(), tokens: zeros(), costUsd: zeros() }
      series.set(r.key, s)
    }
    s.requests[r.bucket] = r.requests
    s.errors[r.bucket] = r.errors
    s.tokens[r.bucket] = r.tokens
    s.costUsd[r.bucket] = r.cost
  }
  const histogram = (col: string) =>
    db
      .query<BinSqlRow, SQLQueryBindings[]>(
        `SELECT ${bucket} AS bucket, CAST(round(log2(${col} + 1) * ${BIN_SCALE}) AS INTEGER) AS bin, count(*) AS n
         ${range} AND ${col} IS NOT NULL GROUP BY 1, 2`,
      )
      .all(...args)
  const total = (s: LogStats['series'][number]) => s.requests.reduce((a, b) => a + b, 0)
  return {
    buckets,
    series: [...series.values()].sort((a, b) => total(b) - total(a)),
    latencyMs: percentiles(histogram('latency_ms'), count),
    ttftMs: percentiles(histogram('ttft_ms'), count),
  }
}
