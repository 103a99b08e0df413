// POST /v1/chat/completions → the chat pipeline.

import { handleChat } from '../../pipeline'
import type { Deps } from '../../pipeline/context'
import { pipelinePost } from './pipeline-post'

export const chatRoutes = (deps: Deps) => pipelinePost(deps, '/v1/chat/completions', handleChat)
