// The error body each endpoint answers with (PRODUCT §4, §12): gw's seed shape by default, OpenAI's
// on /v1/responses (or with `x-gw-error-format: openai`), Anthropic's on /v1/messages.

import type { GatewayError } from '../errors'
import { anthropicErrorBody } from './anthropic-messages/answer'

/** OpenAI's error shape, `type` and `code` carrying gw's code. */
export function openAIErrorBody(code: string, message: string, requestId: string) {
  return { error: { message, type: code, code, param: null }, requestId }
}

export function errorBodyFor(request: Request, e: GatewayError, requestId: string): unknown {
  const path = new URL(request.url).pathname
  if (path === '/v1/messages' || path === '/v1/messages/count_tokens') return anthropicErrorBody(e.status, e.code, e.message, requestId)
  if (path === '/v1/responses' || request.headers.get('x-gw-error-format') === 'openai') return openAIErrorBody(e.code, e.message, requestId)
  return e.toBody(requestId)
}
