// The logs query (PRODUCT §9, plus provider), shared by GET /v1/logs, GET /admin/orgs/:org/logs and `gw logs list`; the audit query (§18).

import { badRequest, echo } from '../errors'
import { decodeCursor } from '../store/log-cursor'
import { auditCursorSeq } from '../store/rows'
import type { AuditQuery, LogQuery } from '../store/types'

/** A time parameter: ISO 8601 or epoch milliseconds; undefined when absent. */
export function time(name: string, raw: string | null): number | undefined {
  if (raw === null || raw === '') return undefined
  const n = /^\d+$/.test(raw) ? Number(raw) : Date.parse(raw)
  if (!Number.isFinite(n)) throw badRequest(`Invalid ${name} ${echo(raw)}: expected an ISO 8601 time or epoch milliseconds`)
  return n
}

export function parseLogQuery(orgId: string, params: URLSearchParams): LogQuery {
  const metadata = params.getAll('metadata').map((pair): [string, string] => {
    const eq = pair.indexOf('=')
    if (eq < 1) throw badRequest(`Invalid metadata filter ${echo(pair)}: expected key=value`)
    return [pair.slice(0, eq), pair.slice(eq + 1)]
  })
  const limitRaw = params.get('limit')
  const limit = limitRaw === null ? 50 : Number(limitRaw)
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw badRequest('Invalid limit: an integer from 1 to 500')
  const statusRaw = params.get('status')
  let status: LogQuery['status']
  if (statusRaw === 'success' || statusRaw === 'error') status = statusRaw
  else if (statusRaw !== null) {
    status = Number(statusRaw)
    if (!Number.isInteger(status)) throw badRequest('Invalid status: an HTTP status, "success" or "error"')
  }
  const q: LogQuery = { orgId, metadata, limit }
  const model = params.get('model')
  const provider = params.get('provider')
  const user = params.get('user')
  const cursor = params.get('cursor')
  const since = time('since', params.get('since'))
  const until = time('until', params.get('until'))
  if (model) q.model = model
  if (provider) q.provider = provider
  if (status !== undefined) q.status = status
  if (user) q.user = user
  if (cursor) {
    // A cursor comes from a previous page's nextCursor; a damaged one must not silently restart at page 1.
    if (!decodeCursor(cursor)) throw badRequest(`Invalid cursor ${echo(cursor)}: pass the nextCursor of a previous page`)
    q.cursor = cursor
  }
  if (since !== undefined) q.since = since
  if (until !== undefined) q.until = until
  return q
}

/** GET /admin/audit's filters: org, actor, action (or a prefix ending in "."), since/until, limit (1–500, 50), cursor. */
export function parseAuditQuery(params: URLSearchParams): AuditQuery {
  const limitRaw = params.get('limit')
  const limit = limitRaw === null ? 50 : Number(limitRaw)
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw badRequest('Invalid limit: an integer from 1 to 500')
  const q: AuditQuery = { limit }
  for (const k of ['org', 'actor', 'action'] as const) {
    const v = params.get(k)
    if (v) q[k] = v
  }
  const cursor = params.get('cursor')
  if (cursor) {
    try {
      auditCursorSeq(cursor)
    } catch {
      throw badRequest(`Invalid cursor ${echo(cursor)}: pass the nextCursor of a previous page`)
    }
    q.cursor = cursor
  }
  const since = time('since', params.get('since'))
  const until = time('until', params.get('until'))
  if (since !== undefined) q.since = since
  if (until !== undefined) q.until = until
  return q
}
