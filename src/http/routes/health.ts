// GET /health: liveness, no authentication.

import { Elysia } from 'elysia'
import { requestIdOf } from '../request-context'

export const healthRoutes = new Elysia({ name: 'health-routes' }).get(
  '/health',
  ({ request }) =>
    new Response(JSON.stringify({ ok: true, requestId: requestIdOf(request) }), {
      headers: { 'content-type': 'application/json', 'x-gw-request-id': requestIdOf(request) ?? '' },
    }),
)
