// Fake Azure OpenAI: OpenAI's chat wire format as the OpenAI fake speaks it, at Azure's two URL forms and with
// Azure's authentication, per Microsoft's public reference:
// - the v1 API, https://learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle (`POST {endpoint}/openai/v1/chat/completions`,
//   `…/openai/v1/embeddings`, `…/openai/v1/responses`, the deployment's name in the body's `model`, no api-version needed);
// - the Responses API of the older form, https://learn.microsoft.com/azure/ai-foundry/openai/how-to/responses (`POST
//   {endpoint}/openai/responses?api-version=…`, the deployment in the body's `model`);
// - the deployment API, https://learn.microsoft.com/azure/ai-foundry/openai/reference (`POST {endpoint}/openai/deployments/{deployment-id}/chat/completions?api-version=…`,
//   `…/embeddings?api-version=…`; api-version is required: without it the service answers 404 "Resource not found");
// - the key in the `api-key` header; without it (or with a wrong one) 401 `{"error":{"code":"401","message":"Access denied due to invalid
//   subscription key or wrong API endpoint. …"}}` (an `Authorization: Bearer` header is an Entra ID token, not the key);
// - answers carry `prompt_filter_results` / `content_filter_results`, a stream starts with a chunk of no choices holding the prompt's
//   filter results, https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter (its 400 for a filtered prompt has
//   `error.code: "content_filter"`, `innererror.code: "ResponsibleAIPolicyViolation"`: AZURE_CONTENT_FILTER_400 below).

import { jsonReply } from './common.ts'
import { openai } from './openai.ts'
import type { Obj, ProviderImpl } from './types.ts'

const PROMPT_FILTER = [{ prompt_index: 0, content_filter_results: { hate: { filtered: false, severity: 'safe' }, self_harm: { filtered: false, severity: 'safe' }, sexual: { filtered: false, severity: 'safe' }, violence: { filtered: false, severity: 'safe' } } }]

const azureError = (status: number, message: string, code = String(status)) => jsonReply(status, { error: { code, message } })

/** Azure's 400 when its content filter blocks the prompt (concepts/content-filter, "Scenario details"). */
export const AZURE_CONTENT_FILTER_400 = {
  error: {
    message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.",
    type: null,
    param: 'prompt',
    code: 'content_filter',
    status: 400,
    innererror: {
      code: 'ResponsibleAIPolicyViolation',
      content_filter_result: { hate: { filtered: true, severity: 'high' }, self_harm: { filtered: false, severity: 'safe' }, sexual: { filtered: false, severity: 'safe' }, violence: { filtered: false, severity: 'safe' } },
    },
  },
}

const DEPLOYMENT = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|embeddings)$/

/** The body as the OpenAI fake reads it: the deployment API names the model in its URL, not the body. */
function withDeployment(body: unknown, deployment: string | undefined): unknown {
  return deployment !== undefined && typeof body === 'object' && body !== null ? { model: deployment, ...(body as Obj) } : body
}

export const azure: ProviderImpl = {
  ...openai,
  // The resource's endpoint (https://<resource>.openai.azure.com): both URL forms are under it.
  basePath: '',

  route(method, url) {
    if (method !== 'POST') return undefined
    if (url.pathname === '/openai/v1/chat/completions') return {}
    if (url.pathname === '/openai/v1/embeddings') return { endpoint: 'embeddings' }
    // The Responses API: not per deployment, the deployment named in the body's `model`.
    if (url.pathname === '/openai/v1/responses') return { endpoint: 'responses' }
    if (url.pathname === '/openai/responses') return url.searchParams.get('api-version') ? { endpoint: 'responses' } : { endpoint: 'no-api-version' }
    const m = DEPLOYMENT.exec(url.pathname)
    if (!m) return undefined
    if (!url.searchParams.get('api-version')) return { endpoint: 'no-api-version' }
    const deployment = decodeURIComponent(m[1] as string)
    return m[2] === 'embeddings' ? { endpoint: 'embeddings', model: deployment } : { model: deployment }
  },

  notFound: () => azureError(404, 'Resource not found'),

  authenticate(headers, _url, apiKey) {
    if (headers['api-key'] !== apiKey)
      return azureError(401, 'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.')
    return undefined
  },

  validate(body, isJson, route, headers) {
    return openai.validate(withDeployment(body, route.model), isJson, route, headers)
  },

  extra(route, body, isJson, headers, b) {
    if (route.endpoint === 'no-api-version') return azureError(404, 'Resource not found')
    return (openai.extra as NonNullable<ProviderImpl['extra']>)(route, withDeployment(body, route.model), isJson, headers, b)
  },

  error(b, ctx) {
    if (b.status === 429)
      return azureError(429, `Requests to the ChatCompletions_Create Operation under Azure OpenAI API have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after ${b.retryAfter ?? 1} seconds.`)
    if (b.status >= 500) return azureError(b.status, 'The server had an error while processing your request. Sorry about that!', 'InternalServerError')
    return openai.error(b, ctx)
  },

  complete(r, ctx) {
    const reply = openai.complete(r, ctx)
    const body = JSON.parse(reply.body as string) as Obj
    body.prompt_filter_results = PROMPT_FILTER
    return { ...reply, body: JSON.stringify(body) }
  },

  stream(r, ctx) {
    const plan = openai.stream(r, ctx)
    const first = { choices: [], created: 0, id: '', model: '', object: '', prompt_filter_results: PROMPT_FILTER }
    return { ...plan, events: [`data: ${JSON.stringify(first)}\n\n`, ...plan.events] }
  },
}
