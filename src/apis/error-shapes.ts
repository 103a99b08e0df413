// The error body of a request, in the shape its endpoint declares (PRODUCT §4, §12): Anthropic's for
// the Messages API, OpenAI's for Responses, elsewhere gw's seed shape or OpenAI's (GW_ERROR_FORMAT,
// x-gw-error-format, x-stainless-lang).

import { type ErrorShape, errorShapeFor, type GatewayError } from '../errors'
import type { ErrorStyle } from '../schemas/api-operation'
import { anthropicErrorBody } from './anthropic-messages/answer'

export function errorBodyFor(style: ErrorStyle, headers: Headers, e: GatewayError, requestId: string, configured: ErrorShape | undefined): unknown {
  // Anthropic's type follows the status: a request the provider refused is 400, `invalid_request_error`.
  if (style === 'anthropic') return anthropicErrorBody(e.status, e.code, e.message, requestId)
  if (style === 'openai') return e.toBody(requestId, 'openai', e.requestRefused ? 'invalid_request_error' : e.code)
  return e.toBody(requestId, errorShapeFor(headers, configured))
}
