// POST /v1/chat/completions → the chat pipeline.

import { Elysia } from 'elysia'
import { handleChat } from '../../pipeline'
import type { Deps } from '../../pipeline/context'
import { contextFor, readJsonBody } from '../request-context'

export const chatRoutes = (deps: Deps) =>
  new Elysia({ name: 'chat-routes' }).post(
    '/v1/chat/completions',
    async ({ request, server }) => {
      const ctx = contextFor(request, '/v1/chat/completions')
      ctx.rawBody = await readJsonBody(request, deps.config.maxBodyBytes)
      // The answer may take long to start and streams may go quiet: no idle cut-off from here on.
      server?.timeout(request, 0)
      return handleChat(deps, ctx, ctx.rawBody.value)
    },
    { parse: 'none' },
  )
