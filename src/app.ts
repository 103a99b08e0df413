// createApp(deps): the Elysia HTTP edge — request ids, one error shape, CORS, 405s, and the routes.

import { Elysia } from 'elysia'
import { AdminService } from './admin/admin-service'
import { ENDPOINTS } from './apis'
import { GatewayError } from './errors'
import { ClientAddresses } from './http/client-address'
import { Cors } from './http/cors'
import { errorResponse } from './http/error-handler'
import { methodsByPath, type RouteLike } from './http/methods'
import { markArrival, withRequestId } from './http/request-context'
import { ADMIN_OPERATIONS, AdminGuard, adminRoutes } from './http/routes/admin'
import { endpointRoutes } from './http/routes/endpoints'
import { MCP_ADMIN_OPERATIONS, mcpAdminRoutes } from './http/routes/mcp-admin'
import { MCP_OPERATIONS, mcpRoutes } from './http/routes/mcp'
import { HEALTH_OPERATIONS, healthRoutes } from './http/routes/health'
import { LOG_OPERATIONS, logRoutes } from './http/routes/logs'
import { METRICS_OPERATIONS, metricsRoutes } from './http/routes/metrics'
import { MODEL_OPERATIONS, modelRoutes } from './http/routes/models'
import { openApiRoutes, servedOperations } from './http/routes/openapi'
import { type DashboardSignIn, uiPageRoutes, uiRoutes } from './http/routes/ui'
import { DashboardSso } from './auth/ui-sso'
import { createHmac } from 'node:crypto'
import type { Deps } from './pipeline/context'
import { SessionKeeper } from './ui/session'

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
  const token = deps.config.adminToken
  const sessions = token ? new SessionKeeper(token, deps.store.sessions) : undefined
  const guard = new AdminGuard(token, sessions, new ClientAddresses(deps.config.trustedProxies), admin.users, deps.config.publicUrl)
  const cors = new Cors(deps.config.corsOrigins)
  const app = new Elysia({ name: `gw-${surface}`, serve: { routes: operators ? uiPageRoutes(token, deps.config.dev) : {} } })
    // No body is looked at here: each route reads its body (with the size limit) only after the
    // caller is authenticated, so an unauthenticated caller gets 401 whatever it sends (PRODUCT §4).
    // Every answer gets the request id header in one place (docs/architecture.md, "Request ids").
    .wrap((fetch) => withRequestId(fetch as unknown as Parameters<typeof withRequestId>[0]))
    .onRequest(({ request, set }) => {
      markArrival(request)
      if (!cors.enabled) return
      if (request.method === 'OPTIONS' && request.headers.has('access-control-request-method')) return cors.preflight(request)
      const headers = cors.headersFor(request.headers.get('origin'))
      if (headers) Object.assign(set.headers, headers)
    })
    .onError({ as: 'global' }, ({ error, code, request }) => {
      if (code === 'NOT_FOUND') {
        const allow = allowedMethods(new URL(request.url).pathname)
        if (allow.length) return errorResponse(notAllowed(request, allow), request, deps.config.errorFormat)
        return errorResponse(unknownRoute(request, allowedMethods), request, deps.config.errorFormat)
      }
      return errorResponse(error, request, deps.config.errorFormat, code)
    })
    .use(healthRoutes(deps))
    .use(metrics ? metricsRoutes(deps, guard) : off())
    .use(clients ? endpointRoutes(deps) : off())
    .use(clients ? modelRoutes(deps) : off())
    .use(clients ? logRoutes(deps) : off())
    .use(clients ? mcpRoutes(deps) : off())
    .use(operators ? adminRoutes(deps, admin, guard) : off())
    .use(operators ? mcpAdminRoutes(admin, guard) : off())
    .use(operators ? uiRoutes(guard, deps.config.dev, dashboardSignIn(deps, admin)) : off())
    // The document lists what this listener serves of the declared operations.
    .use(openApiRoutes(() => servedOperations(routes(), [...ENDPOINTS, ...HEALTH_OPERATIONS, ...METRICS_OPERATIONS, ...MODEL_OPERATIONS, ...LOG_OPERATIONS, ...ADMIN_OPERATIONS, ...MCP_ADMIN_OPERATIONS, ...MCP_OPERATIONS], !!token)))
  const routes = (): readonly RouteLike[] => app.routes
  const allowedMethods = methodsByPath(app.routes.filter((r) => deps.config.adminToken || !r.path.startsWith('/admin')))
  return app
}

function notAllowed(request: Request, allow: string[]): GatewayError {
  const path = new URL(request.url).pathname
  return new GatewayError(405, 'gateway_error', `${request.method} is not allowed on ${path.slice(0, 64)} (allowed: ${allow.join(', ')})`, {
    headers: { allow: allow.join(', ') },
  })
}

/** A 404 that says where gw's APIs live: `POST /messages` is most likely `/v1/messages` without its prefix. */
function unknownRoute(request: Request, allowedMethods: (path: string) => string[]): GatewayError {
  const path = new URL(request.url).pathname
  const said = `unknown route ${request.method} ${path.slice(0, 64)}`
  const hint = allowedMethods(`/v1${path}`).length
    ? `; gw's APIs live under /v1 — did you mean /v1${path.slice(0, 64)}?`
    : // The operator surfaces have prefixes of their own.
      /^\/(v1|admin|ui|health|metrics)(\/|$)/.test(path)
      ? ''
      : "; gw's APIs live under /v1"
  return new GatewayError(404, 'gateway_error', `${said}${hint}`)
}

/** Sign-in by password, first-sign-in link and (with GW_UI_OIDC_*) single sign-on, besides the admin token (PRODUCT §18). */
function dashboardSignIn(deps: Deps, admin: AdminService): DashboardSignIn {
  const c = deps.config
  const sso =
    c.adminToken && c.uiOidcIssuer && c.uiOidcClientId && c.uiOidcClientSecret
      ? new DashboardSso(
          { issuer: c.uiOidcIssuer, clientId: c.uiOidcClientId, clientSecret: c.uiOidcClientSecret },
          createHmac('sha256', 'gw dashboard sso').update(c.adminToken).digest(),
          deps.fetch,
        )
      : undefined
  return { users: admin.users, sso, defaultRole: c.uiOidcDefaultRole, defaultOrgs: c.uiOidcDefaultOrgs, publicUrl: c.publicUrl }
}

export type App = ReturnType<typeof createApp>
