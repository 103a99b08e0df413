// POST /v1/prompts/:idOrSlug/run → a saved prompt through the chat pipeline.

import { Elysia } from 'elysia'
import { handlePromptRun } from '../../pipeline'
import type { Deps } from '../../pipeline/context'
import { contextFor, readJsonBody } from '../request-context'

export const promptRoutes = (deps: Deps) =>
  new Elysia({ name: 'prompt-routes' }).post(
    '/v1/prompts/:idOrSlug/run',
    async ({ request, server, params }) => {
      const ctx = contextFor(request, '/v1/prompts/run')
      ctx.rawBody = await readJsonBody(request, deps.config.maxBodyBytes, {})
      server?.timeout(request, 0)
      const version = new URL(request.url).searchParams.get('version')
      return handlePromptRun(deps, ctx, params.idOrSlug, version, ctx.rawBody.value)
    },
    { parse: 'none' },
  )
