// Anthropic Messages API adapter, pinned to API version 2023-06-01 (the one that still takes sampling
// parameters). Request: ./request.ts, answers: ./response.ts, streams: ./stream.ts.
// Reference: https://docs.anthropic.com/en/api/messages

import type { ProviderAdapter, Target, UpstreamFailure, UpstreamRequest } from '../adapter'
import type { ChatRequest } from '../openai-types'
import { clip, failure, isRecord, parseJson } from '../upstream-errors'
import { jsonStrategy, toAnthropicBody } from './request'
import { readAnthropicMessage } from './response'
import { AnthropicStream } from './stream'

export const ANTHROPIC_VERSION = '2023-06-01'

/** A target's URL and headers, made once (the route stage keeps a target per org context and model; their readers never change them). */
const places = new WeakMap<Target, { url: string; headers: Readonly<Record<string, string>> }>()

function toAnthropicRequest(req: ChatRequest, target: Target): UpstreamRequest {
  let place = places.get(target)
  if (!place) {
    place = { url: `${target.baseUrl}/messages`, headers: { 'x-api-key': target.apiKey, 'anthropic-version': ANTHROPIC_VERSION, 'content-type': 'application/json' } }
    places.set(target, place)
  }
  return { url: place.url, headers: place.headers, body: JSON.stringify(toAnthropicBody(req, target)) }
}

/**
 * `{"type":"error","error":{"type","message"}}`. Context overflow reads "prompt is too long: N tokens >
 * M maximum" or "input length and `max_tokens` exceed context limit: …"; 529 overloaded_error is a
 * provider error like any 5xx.
 */
function parseAnthropicError(status: number, text: string, headers: Headers): UpstreamFailure {
  const json = parseJson(text)
  // Usually nested under `error`; some proxies and older answers put type and message at the top.
  const e = isRecord(json) ? (isRecord(json.error) ? json.error : json) : undefined
  const detail = typeof e?.message === 'string' ? e.message : clip(text) || `HTTP ${status}`
  const message = typeof e?.type === 'string' ? `${e.type}: ${detail}` : detail
  const contextLimit = status === 400 && /prompt is too long|exceed context limit|context window/i.test(detail)
  return failure(status, message, headers, contextLimit ? 'context_limit' : undefined)
}

export const anthropic: ProviderAdapter = {
  id: 'anthropic',
  capabilities: { requiresMaxTokens: true, temperatureMax: 1 },
  buildRequest: toAnthropicRequest,
  parseResponse: (json, target, req) => readAnthropicMessage(json, jsonStrategy(req, target) === 'tool'),
  createStream: (target, req) => new AnthropicStream(jsonStrategy(req, target) === 'tool'),
  parseError: parseAnthropicError,
}
