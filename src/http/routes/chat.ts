// POST /v1/chat/completions → the chat pipeline.

import { Elysia } from 'elysia'
import { handleChat } from '../../pipeline'
import type { Deps } from '../../pipeline/context'
import { contextFor, readJsonBody } from '../request-context'

export const chatRoutes = (deps: Deps) =>
  new Elysia({ name: 'chat-routes' }).post(
    '/v1/chat/completions',
    ({ request, server }) =>
      // The body is read only once the caller is authenticated (PRODUCT §4).
      handleChat(deps, contextFor(request, '/v1/chat/completions'), async () => {
        const body = await readJsonBody(request, deps.config.maxBodyBytes)
        // The answer may take long to start and streams may go quiet: no idle cut-off from here on.
        server?.timeout(request, 0)
        return body
      }),
    { parse: 'none' },
  )
