// Fake Ollama OpenAI-compatible endpoint (`/v1`): OpenAI's chat wire format as the OpenAI fake speaks it, with
// Ollama's differences per its reference (https://github.com/ollama/ollama/blob/main/docs/openai.md): no API key
// needed (any or none is accepted), `stream_options.include_usage` ignored (a stream carries no usage), and
// `GET /v1/models` listing the local models as `{object: "list", data: [{id, object: "model", created, owned_by}]}`.

import { jsonReply, nowSeconds } from './common.ts'
import { openai } from './openai.ts'
import type { ProviderImpl } from './types.ts'

/** The models the fake Ollama has pulled. */
export const OLLAMA_MODELS = ['llama3.2', 'qwen2.5:7b']

export const ollama: ProviderImpl = {
  ...openai,

  route(method, url) {
    if (method === 'GET' && url.pathname === '/v1/models') return { endpoint: 'models' }
    return openai.route(method, url)
  },

  extra(route, body, isJson, headers, b) {
    if (route.endpoint === 'models')
      return jsonReply(200, { object: 'list', data: OLLAMA_MODELS.map((id) => ({ id, object: 'model', created: nowSeconds(), owned_by: 'library' })) })
    return (openai.extra as NonNullable<ProviderImpl['extra']>)(route, body, isJson, headers, b)
  },

  authenticate: () => undefined,

  validate(body, isJson, route, headers) {
    const v = openai.validate(body, isJson, route, headers)
    if (v.ok) v.ctx.includeUsage = false
    return v
  },
}
