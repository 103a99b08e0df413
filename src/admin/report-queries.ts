// Query strings of the admin usage and stats reports (docs/dashboard.md) → checked store queries.

import { badRequest } from '../errors'
import { time } from '../http/routes/logs'
import type { LogStatsQuery, UsageGroupBy, UsageQuery } from '../store/types'

const GROUPS: readonly UsageGroupBy[] = ['day', 'model', 'provider', 'key', 'endUser']
const HOUR = 3_600_000

export function parseUsageQuery(orgId: string, params: URLSearchParams): UsageQuery {
  const groupBy = (params.get('groupBy') ?? 'day') as UsageGroupBy
  if (!GROUPS.includes(groupBy)) throw badRequest(`Invalid groupBy "${groupBy}": one of ${GROUPS.join(', ')}`)
  const q: UsageQuery = { orgId, groupBy }
  const since = time('since', params.get('since'))
  const until = time('until', params.get('until'))
  if (since !== undefined) q.since = since
  if (until !== undefined) q.until = until
  return q
}

/** Defaults: the last 24 hours in 48 buckets, one series per model. */
export function parseStatsQuery(orgId: string, params: URLSearchParams, now = Date.now()): LogStatsQuery {
  const until = time('until', params.get('until')) ?? now
  const since = time('since', params.get('since')) ?? until - 24 * HOUR
  if (since >= until) throw badRequest('Invalid range: since must be before until')
  const raw = params.get('buckets') ?? '48'
  const buckets = Number(raw)
  if (!Number.isInteger(buckets) || buckets < 1 || buckets > 500) throw badRequest(`Invalid buckets "${raw}": an integer from 1 to 500`)
  const by = params.get('by') ?? 'model'
  if (by !== 'model' && by !== 'provider') throw badRequest(`Invalid by "${by}": model or provider`)
  return { orgId, since, until, bucketMs: Math.ceil((until - since) / buckets), by }
}
