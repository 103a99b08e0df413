// SQLite stats report (the dashboard's overview) over request_logs: one range scan of the covering index request_logs_org_figures.

import { BIN_SCALE, shapeStats, type StatsGroupRow } from '../log-stats'
import type { LogStats, LogStatsQuery } from '../types'
import type { SqlReader } from './read-thread'

/** One range scan of the covering index, grouped by bucket, series key and both histogram bins. */
export async function statsReport(reader: SqlReader, q: LogStatsQuery): Promise<LogStats> {
  const column = q.by === 'model' ? 'model' : 'provider'
  const bin = (col: string) => `CAST(round(log2(${col} + 1) * ${BIN_SCALE}) AS INTEGER)`
  const rows = await reader.all<StatsGroupRow>(
      `SELECT (created_at - ?2) / ?4 AS bucket, ${column} AS key, ${bin('latency_ms')} AS lat, ${bin('ttft_ms')} AS ttft,
        count(*) AS n, sum(status >= 400) AS errors, sum(prompt_tokens + completion_tokens) AS tokens, coalesce(sum(cost_usd), 0) AS cost
       FROM request_logs INDEXED BY request_logs_org_figures WHERE org_id = ?1 AND created_at >= ?2 AND created_at < ?3
       GROUP BY 1, 2, 3, 4`,
      [q.orgId, q.since, q.until, q.bucketMs],
    )
  return shapeStats(q, rows)
}
