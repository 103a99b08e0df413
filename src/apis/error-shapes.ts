// The error body each endpoint answers with (PRODUCT §4, §12): Anthropic's on /v1/messages, OpenAI's
// on /v1/responses, elsewhere gw's seed shape or OpenAI's (GW_ERROR_FORMAT, x-gw-error-format, x-stainless-lang).

import { type ErrorShape, errorShapeFor, type GatewayError } from '../errors'
import { anthropicErrorBody } from './anthropic-messages/answer'

/** The endpoints whose client API has an error shape of its own (PRODUCT §12); undefined elsewhere. */
export function ownErrorShape(path: string): 'anthropic' | 'responses' | undefined {
  if (path === '/v1/messages' || path === '/v1/messages/count_tokens') return 'anthropic'
  if (path === '/v1/responses') return 'responses'
  return undefined
}

export function errorBodyFor(request: Request, e: GatewayError, requestId: string, configured: ErrorShape | undefined): unknown {
  const own = ownErrorShape(new URL(request.url).pathname)
  // Anthropic's type follows the status: a request the provider refused is 400, `invalid_request_error`.
  if (own === 'anthropic') return anthropicErrorBody(e.status, e.code, e.message, requestId)
  if (own === 'responses') return e.toBody(requestId, 'openai', e.requestRefused ? 'invalid_request_error' : e.code)
  return e.toBody(requestId, errorShapeFor(request.headers, configured))
}
