// POST /v1/embeddings, declared (PRODUCT §12, §16): OpenAI's shape in and out; OpenAI, Mistral,
// Google and Bedrock's Titan and Cohere models (Anthropic has no embeddings models).

import { badRequest } from '../../errors'
import { withHeaderFields } from '../../pipeline/chat-input'
import type { EndpointDeclaration } from '../../pipeline/endpoint'
import { applyGatewayHeaders } from '../../pipeline/prompt-input'
import { EmbeddingsAnswer } from '../../schemas/answers'
import { EMBEDDINGS_SHAPE, embeddingsAdapters } from './adapters'
import { EmbeddingsBody, inputSlots, parseEmbeddingsInput } from './request'

export const embeddings: EndpointDeclaration = {
  id: 'createEmbedding',
  method: 'POST',
  path: '/v1/embeddings',
  summary: "Embeddings in OpenAI's format from OpenAI, Mistral or Google",
  audience: 'client',
  body: EmbeddingsBody,
  answer: EmbeddingsAnswer,
  errorStyle: 'gw',
  operation: 'embeddings',
  listed: true,
  async plan({ deps, ctx, body, routeOf }) {
    const { input, request } = parseEmbeddingsInput(withHeaderFields(body.value, ctx.headers), routeOf)
    await applyGatewayHeaders(deps, ctx, input)
    if (input.model.provider === 'anthropic')
      throw badRequest(`Anthropic has no embeddings models ("${input.model.name.slice(0, 64)}"): use openai/, mistral/ or google/`)
    return { input, shape: EMBEDDINGS_SHAPE, adapters: embeddingsAdapters(request), texts: inputSlots(request), sendsClientBody: true }
  },
}
