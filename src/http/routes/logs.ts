// GET /v1/logs/:requestId, GET /v1/logs and GET /v1/usage: the org's request log and usage report, for service keys only.

import { Elysia } from 'elysia'
import { parseLogQuery } from '../../admin/log-query'
import { echo, GatewayError, notFound } from '../../errors'
import { handleApiRequest } from '../../pipeline'
import type { AuthedContext, Deps, RequestContext } from '../../pipeline/context'
import { parseUsageQuery } from '../../admin/usage-report'
import { contextFor } from '../request-context'

async function authorize(authenticate: () => Promise<AuthedContext>): Promise<string> {
  const { identity } = await authenticate()
  if (identity.authMode !== 'GwKey')
    throw new GatewayError(403, 'forbidden', 'Only service keys (GwKey) may read request logs and usage')
  return identity.orgId
}

const json = (ctx: RequestContext, body: unknown) =>
  new Response(JSON.stringify(body), {
    headers: { 'content-type': 'application/json', 'x-gw-request-id': ctx.requestId },
  })

export const logRoutes = (deps: Deps) =>
  new Elysia({ name: 'log-routes' })
    .get('/v1/logs/:requestId', ({ request, params }) => {
      const ctx = contextFor(request, '/v1/logs/:requestId')
      return handleApiRequest(deps, ctx, async (authenticate) => {
        const orgId = await authorize(authenticate)
        const entry = deps.logs.pendingEntry(orgId, params.requestId) ?? (await deps.store.logs.getLog(orgId, params.requestId))
        if (!entry) throw notFound(`No log entry ${echo(params.requestId)} in this org`)
        return json(ctx, entry)
      })
    })
    .get('/v1/logs', ({ request }) => {
      const ctx = contextFor(request, '/v1/logs')
      return handleApiRequest(deps, ctx, async (authenticate) => {
        const q = parseLogQuery(await authorize(authenticate), new URL(request.url).searchParams)
        await deps.logs.flush()
        return json(ctx, await deps.store.logs.queryLogs(q))
      })
    })
    .get('/v1/usage', ({ request }) => {
      const ctx = contextFor(request, '/v1/usage')
      return handleApiRequest(deps, ctx, async (authenticate) => {
        const q = parseUsageQuery(await authorize(authenticate), new URL(request.url).searchParams)
        await deps.logs.flush()
        return json(ctx, { data: await deps.store.logs.usage(q) })
      })
    })
