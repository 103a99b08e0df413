// GET /health: liveness, no authentication; also the request-log writer's counters.

import { Elysia } from 'elysia'
import type { Deps } from '../../pipeline/context'
import { requestIdOf } from '../request-context'

export const healthRoutes = (deps: Deps) =>
  new Elysia({ name: 'health-routes' }).get('/health', ({ request }) => {
    const requestId = requestIdOf(request) ?? ''
    const logs = { queued: deps.logs.queued, ...deps.logs.stats }
    return new Response(JSON.stringify({ ok: true, requestId, logs }), {
      headers: { 'content-type': 'application/json', 'x-gw-request-id': requestId },
    })
  })
