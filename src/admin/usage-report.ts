// Usage reports (PRODUCT §11): the query shared by GET /v1/usage, GET /admin/orgs/:org/usage and `gw usage`.

import { badRequest } from '../errors'
import { time } from './log-query'
import type { LogStore } from '../store/types'
import { dayOf, reportRow, type UsageGroupBy, type UsageQuery, type UsageRow, withUngrouped } from '../store/usage-rollup'

const DAY_MS = 86_400_000
const DEFAULT_DAYS = 30
const GROUPS = ['day', 'model', 'provider', 'key', 'endUser']
/** Reports are daily roll-ups: more than this many days in one report is refused. */
const MAX_DAYS = 3660

/**
 * `since`/`until` (ISO 8601 or epoch ms; default the last 30 days) select whole UTC days: the day
 * of `since` through the day of `until`. `groupBy` is day (default), model, provider, key,
 * endUser or metadata.<key>.
 */
export function parseUsageQuery(orgId: string, params: URLSearchParams, now = Date.now()): UsageQuery {
  const groupBy = params.get('groupBy') ?? 'day'
  if (!GROUPS.includes(groupBy) && !/^metadata\.[^\s]{1,128}$/.test(groupBy))
    throw badRequest(`Invalid groupBy "${groupBy.slice(0, 64)}": one of ${GROUPS.join(', ')} or metadata.<key>`)
  const until = time('until', params.get('until')) ?? now
  const since = time('since', params.get('since')) ?? until - (DEFAULT_DAYS - 1) * DAY_MS
  if (since > until) throw badRequest('Invalid range: since is after until')
  if (until - since > MAX_DAYS * DAY_MS) throw badRequest(`Invalid range: at most ${MAX_DAYS} days`)
  return {
    orgId,
    groupBy: groupBy as UsageGroupBy,
    fromDay: dayOf(new Date(since).toISOString()),
    toDay: dayOf(new Date(until).toISOString()),
  }
}

/** The report's rows; a metadata report also has the group of requests without that key (key null). */
export async function usageReport(logs: LogStore, q: UsageQuery): Promise<UsageRow[]> {
  const rows = await logs.usage(q)
  if (!q.groupBy.startsWith('metadata.')) return rows.map(reportRow)
  return withUngrouped(rows, await logs.usage({ ...q, groupBy: 'day' }))
}
