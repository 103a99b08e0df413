// POST /v1/messages and /v1/messages/count_tokens (Anthropic Messages API) → the pipeline.

import { Elysia } from 'elysia'
import { handleCountTokens, handleMessages } from '../../pipeline'
import type { Deps } from '../../pipeline/context'
import { pipelinePost } from './pipeline-post'

export const messagesRoutes = (deps: Deps) =>
  new Elysia({ name: 'messages-routes' })
    .use(pipelinePost(deps, '/v1/messages', handleMessages))
    .use(pipelinePost(deps, '/v1/messages/count_tokens', handleCountTokens))
