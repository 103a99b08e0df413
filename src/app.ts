// createApp(deps): the Elysia HTTP edge — request ids, one error shape, and the routes.

import { Elysia } from 'elysia'
import { AdminService } from './admin/admin-service'
import { errorResponse } from './http/error-handler'
import { markArrival } from './http/request-context'
import { adminRoutes } from './http/routes/admin'
import { chatRoutes } from './http/routes/chat'
import { healthRoutes } from './http/routes/health'
import { logRoutes } from './http/routes/logs'
import { metricsRoutes } from './http/routes/metrics'
import { modelRoutes } from './http/routes/models'
import { promptRoutes } from './http/routes/prompts'
import type { Deps } from './pipeline/context'

/**
 * Which routes a listener serves: everything (one listener, the default), the client API only
 * (`public`, when GW_ADMIN_PORT gives the admin API a listener of its own), or the admin API,
 * /metrics and /health (`admin`).
 */
export type Surface = 'all' | 'public' | 'admin'

/** Stands for a group of routes a listener does not serve. */
const off = () => new Elysia()

export function createApp(deps: Deps, admin = new AdminService(deps.store, (org) => deps.orgs.invalidate(org)), surface: Surface = 'all') {
  const clients = surface !== 'admin'
  const operators = surface !== 'public'
  const metrics = operators || deps.config.metrics === 'public'
  return new Elysia({ name: `gw-${surface}` })
    // No body is looked at here: each route reads its body (with the size limit) only after the
    // caller is authenticated, so an unauthenticated caller gets 401 whatever it sends (PRODUCT §4).
    .onRequest(({ request }) => {
      markArrival(request)
    })
    .onError({ as: 'global' }, ({ error, code, request }) => errorResponse(error, request, code))
    .use(healthRoutes(deps))
    .use(metrics ? metricsRoutes(deps) : off())
    .use(clients ? chatRoutes(deps) : off())
    .use(clients ? promptRoutes(deps) : off())
    .use(clients ? modelRoutes(deps) : off())
    .use(clients ? logRoutes(deps) : off())
    .use(operators ? adminRoutes(deps, admin) : off())
}

export type App = ReturnType<typeof createApp>
