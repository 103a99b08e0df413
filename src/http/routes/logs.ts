// GET /v1/logs/:requestId, GET /v1/logs and GET /v1/usage: the org's request log and usage report, for service keys only.

import { Elysia } from 'elysia'
import { badRequest, echo, GatewayError, notFound } from '../../errors'
import { authenticateRequest } from '../../pipeline'
import type { Deps, RequestContext } from '../../pipeline/context'
import { parseUsageQuery } from '../../admin/usage-report'
import type { LogQuery } from '../../store/types'
import { contextFor } from '../request-context'

async function authorize(deps: Deps, ctx: RequestContext): Promise<string> {
  const { identity } = await authenticateRequest(deps, ctx)
  if (identity.authMode !== 'GwKey')
    throw new GatewayError(403, 'forbidden', 'Only service keys (GwKey) may read request logs and usage')
  return identity.orgId
}

function time(name: string, raw: string | null): number | undefined {
  if (raw === null || raw === '') return undefined
  const n = /^\d+$/.test(raw) ? Number(raw) : Date.parse(raw)
  if (!Number.isFinite(n)) throw badRequest(`Invalid ${name} ${echo(raw)}: expected an ISO date or epoch milliseconds`)
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
  const user = params.get('user')
  const cursor = params.get('cursor')
  const since = time('since', params.get('since'))
  const until = time('until', params.get('until'))
  if (model) q.model = model
  if (status !== undefined) q.status = status
  if (user) q.user = user
  if (cursor) q.cursor = cursor
  if (since !== undefined) q.since = since
  if (until !== undefined) q.until = until
  return q
}

const json = (ctx: RequestContext, body: unknown) =>
  new Response(JSON.stringify(body), {
    headers: { 'content-type': 'application/json', 'x-gw-request-id': ctx.requestId },
  })

export const logRoutes = (deps: Deps) =>
  new Elysia({ name: 'log-routes' })
    .get('/v1/logs/:requestId', async ({ request, params }) => {
      const ctx = contextFor(request, '/v1/logs')
      const orgId = await authorize(deps, ctx)
      const entry = deps.logs.pendingEntry(orgId, params.requestId) ?? (await deps.store.logs.getLog(orgId, params.requestId))
      if (!entry) throw notFound(`No log entry ${echo(params.requestId)} in this org`)
      return json(ctx, entry)
    })
    .get('/v1/logs', async ({ request }) => {
      const ctx = contextFor(request, '/v1/logs')
      const orgId = await authorize(deps, ctx)
      const q = parseLogQuery(orgId, new URL(request.url).searchParams)
      await deps.logs.flush()
      return json(ctx, await deps.store.logs.queryLogs(q))
    })
    .get('/v1/usage', async ({ request }) => {
      const ctx = contextFor(request, '/v1/usage')
      const orgId = await authorize(deps, ctx)
      const q = parseUsageQuery(orgId, new URL(request.url).searchParams)
      await deps.logs.flush()
      return json(ctx, { data: await deps.store.logs.usage(q) })
    })
