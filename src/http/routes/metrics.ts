// GET /metrics: the Prometheus exposition, guarded by GW_METRICS (admin token by default, public, or off).

import { notFound } from '../../errors'
import { PROMETHEUS_CONTENT_TYPE } from '../../observability/metric-registry'
import type { Deps } from '../../pipeline/context'
import { MetricsAnswer } from '../../schemas/admin-answers'
import { operationRoutes, ownOperations } from '../operation-routes'
import type { AdminGuard } from './admin'

export const METRICS_OPERATIONS = ownOperations('admin', [
  {
    id: 'metrics',
    method: 'GET',
    path: '/metrics',
    summary: 'The Prometheus exposition (behind the admin token unless GW_METRICS=public; absent with GW_METRICS=off)',
    answer: MetricsAnswer,
  },
])

export const metricsRoutes = (deps: Deps, guard: AdminGuard) =>
  operationRoutes('metrics-routes', METRICS_OPERATIONS, {
    metrics: async ({ request, server }) => {
      const mode = deps.config.metrics
      if (mode === 'off') throw notFound('No route for GET /metrics (GW_METRICS=off)')
      if (mode === 'admin') await guard.check(request, server, false)
      return new Response(deps.observer.metrics.render(), {
        headers: { 'content-type': PROMETHEUS_CONTENT_TYPE },
      })
    },
  })
