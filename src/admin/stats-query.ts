// The query string of GET /admin/orgs/:org/stats (docs/dashboard.md) → a checked store query.

import { badRequest } from '../errors'
import { time } from './log-query'
import type { LogStatsQuery } from '../store/types'

const HOUR = 3_600_000

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
