// GET /metrics: the Prometheus exposition, guarded by GW_METRICS (admin token by default, public, or off).

import { Elysia } from 'elysia'
import { notFound } from '../../errors'
import { PROMETHEUS_CONTENT_TYPE } from '../../observability/metric-registry'
import type { Deps } from '../../pipeline/context'
import { requestIdOf } from '../request-context'
import type { AdminGuard } from './admin'

export const metricsRoutes = (deps: Deps, guard: AdminGuard) =>
  new Elysia({ name: 'metrics-routes' }).get('/metrics', async ({ request, server }) => {
    const mode = deps.config.metrics
    if (mode === 'off') throw notFound('No route for GET /metrics (GW_METRICS=off)')
    if (mode === 'admin') await guard.check(request, server, false)
    return new Response(deps.observer.metrics.render(), {
      headers: { 'content-type': PROMETHEUS_CONTENT_TYPE, 'x-gw-request-id': requestIdOf(request) ?? '' },
    })
  })
