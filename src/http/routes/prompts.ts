// POST /v1/prompts/:idOrSlug/run → a saved prompt through the chat pipeline.

import { Elysia } from 'elysia'
import { handlePromptRun } from '../../pipeline'
import type { Deps } from '../../pipeline/context'
import { contextFor } from '../request-context'
import { withBody } from './pipeline-post'

export const promptRoutes = (deps: Deps) =>
  new Elysia({ name: 'prompt-routes' }).post(
    '/v1/prompts/:idOrSlug/run',
    ({ request, server, params }) =>
      withBody(deps, request, server, {}, (readBody) =>
        handlePromptRun(deps, contextFor(request, '/v1/prompts/run'), params.idOrSlug, new URL(request.url).searchParams.get('version'), readBody),
      ),
    { parse: 'none' },
  )
