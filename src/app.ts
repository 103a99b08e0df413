// createApp(deps): the Elysia HTTP edge — request ids, one error shape, and the routes.

import { Elysia } from 'elysia'
import { AdminService } from './admin/admin-service'
import { errorResponse } from './http/error-handler'
import { markArrival } from './http/request-context'
import { adminRoutes } from './http/routes/admin'
import { chatRoutes } from './http/routes/chat'
import { healthRoutes } from './http/routes/health'
import { logRoutes } from './http/routes/logs'
import { embeddingsRoutes } from './http/routes/embeddings'
import { messagesRoutes } from './http/routes/messages'
import { responsesRoutes } from './http/routes/responses'
import { modelRoutes } from './http/routes/models'
import { promptRoutes } from './http/routes/prompts'
import type { Deps } from './pipeline/context'

export function createApp(deps: Deps, admin = new AdminService(deps.store, (org) => deps.orgs.invalidate(org))) {
  return new Elysia({ name: 'gw' })
    // No body is looked at here: each route reads its body (with the size limit) only after the
    // caller is authenticated, so an unauthenticated caller gets 401 whatever it sends (PRODUCT §4).
    .onRequest(({ request }) => {
      markArrival(request)
    })
    .onError({ as: 'global' }, ({ error, code, request }) => errorResponse(error, request, code))
    .use(healthRoutes(deps))
    .use(chatRoutes(deps))
    .use(messagesRoutes(deps))
    .use(embeddingsRoutes(deps))
    .use(responsesRoutes(deps))
    .use(promptRoutes(deps))
    .use(modelRoutes(deps))
    .use(logRoutes(deps))
    .use(adminRoutes(deps, admin))
}

export type App = ReturnType<typeof createApp>
