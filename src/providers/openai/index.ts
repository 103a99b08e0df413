// OpenAI chat-completions adapter: the native format is gw's own, so it mostly passes through.
// Reference: https://platform.openai.com/docs/api-reference/chat

import type { ProviderAdapter, Target, UpstreamFailure, UpstreamRequest } from '../adapter'
import type { ChatRequest } from '../openai-types'
import { clip, failure, isRecord, parseJson } from '../upstream-errors'
import { mapOpenAIFinishReason, OpenAIStyleStream, readOpenAIStyleCompletion } from './response'

const OPTIONS = { mapFinish: mapOpenAIFinishReason, passThrough: true }

/** Reasoning models refuse `max_tokens`; everything else is forwarded as the client sent it. */
function toOpenAIRequest(req: ChatRequest, target: Target): UpstreamRequest {
  const body: Record<string, unknown> = { ...req, model: target.model.id }
  if (target.model.info.reasoning && body.max_tokens !== undefined) {
    body.max_completion_tokens ??= body.max_tokens
    delete body.max_tokens
  }
  if (target.stream) {
    body.stream = true
    body.stream_options = { ...(isRecord(req.stream_options) ? req.stream_options : {}), include_usage: true }
  } else {
    delete body.stream
    delete body.stream_options
  }
  return {
    url: `${target.baseUrl}/chat/completions`,
    headers: { authorization: `Bearer ${target.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }
}

/** OpenAI error body: `{"error":{"message","type","param","code"}}`. */
export function parseOpenAIError(status: number, text: string, headers: Headers): UpstreamFailure {
  const json = parseJson(text)
  const e = isRecord(json) && isRecord(json.error) ? json.error : undefined
  const message = typeof e?.message === 'string' ? e.message : clip(text) || `HTTP ${status}`
  const contextLimit = e?.code === 'context_length_exceeded' || /maximum context length|context window/i.test(message)
  return failure(status, message, headers, contextLimit ? 'context_limit' : undefined)
}

export const openai: ProviderAdapter = {
  id: 'openai',
  capabilities: { requiresMaxTokens: false, temperatureMax: 2 },
  buildRequest: toOpenAIRequest,
  parseResponse: (json) => readOpenAIStyleCompletion(json, OPTIONS),
  createStream: () => new OpenAIStyleStream(OPTIONS),
  parseError: parseOpenAIError,
}
