// The error body each endpoint answers with (PRODUCT §4, §12): Anthropic's on /v1/messages, OpenAI's
// on /v1/responses, elsewhere gw's seed shape or OpenAI's (GW_ERROR_FORMAT, x-gw-error-format).

import { type ErrorShape, errorShapeFor, type GatewayError } from '../errors'
import { anthropicErrorBody } from './anthropic-messages/answer'

export function errorBodyFor(request: Request, e: GatewayError, requestId: string, configured: ErrorShape): unknown {
  const path = new URL(request.url).pathname
  if (path === '/v1/messages' || path === '/v1/messages/count_tokens') return anthropicErrorBody(e.status, e.code, e.message, requestId)
  if (path === '/v1/responses') return e.toBody(requestId, 'openai')
  return e.toBody(requestId, errorShapeFor(request.headers, configured))
}
