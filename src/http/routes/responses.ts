// POST /v1/responses (OpenAI Responses API) → the pipeline.

import { handleResponses } from '../../pipeline'
import type { Deps } from '../../pipeline/context'
import { pipelinePost } from './pipeline-post'

export const responsesRoutes = (deps: Deps) => pipelinePost(deps, '/v1/responses', handleResponses)
