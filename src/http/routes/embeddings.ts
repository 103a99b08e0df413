// POST /v1/embeddings → the pipeline.

import { handleEmbeddings } from '../../pipeline'
import type { Deps } from '../../pipeline/context'
import { pipelinePost } from './pipeline-post'

export const embeddingsRoutes = (deps: Deps) => pipelinePost(deps, '/v1/embeddings', handleEmbeddings)
