// createApp(deps): the Elysia HTTP edge — request ids, one error shape, body limit, and the routes.

import { Elysia } from 'elysia'
import { AdminService } from './admin/admin-service'
import { errorResponse } from './http/error-handler'
import { markArrival, tooLarge } from './http/request-context'
import { adminRoutes } from './http/routes/admin'
import { chatRoutes } from './http/routes/chat'
import { healthRoutes } from './http/routes/health'
import { logRoutes } from './http/routes/logs'
import { messagesRoutes } from './http/routes/messages'
import { modelRoutes } from './http/routes/models'
import { promptRoutes } from './http/routes/prompts'
import type { Deps } from './pipeline/context'

export function createApp(deps: Deps, admin = new AdminService(deps.store, (org) => deps.orgs.invalidate(org))) {
  return new Elysia({ name: 'gw' })
    .onRequest(({ request }) => {
      markArrival(request)
      const declared = Number(request.headers.get('content-length'))
      if (declared > deps.config.maxBodyBytes) throw tooLarge(deps.config.maxBodyBytes)
    })
    .onError({ as: 'global' }, ({ error, code, request }) => errorResponse(error, request, code))
    .use(healthRoutes(deps))
    .use(chatRoutes(deps))
    .use(messagesRoutes(deps))
    .use(promptRoutes(deps))
    .use(modelRoutes(deps))
    .use(logRoutes(deps))
    .use(adminRoutes(deps, admin))
}

export type App = ReturnType<typeof createApp>
