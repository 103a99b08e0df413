// Google Gemini API (v1beta) adapter: generateContent and streamGenerateContent?alt=sse, key in the
// x-goog-api-key header (never in the URL, which would end up in logs).
// Request: ./request.ts, answers: ./response.ts, streams: ./stream.ts.
// Reference: https://ai.google.dev/api/generate-content

import type { ProviderAdapter, Target, ThinkingOptions, UpstreamFailure, UpstreamRequest } from '../adapter'
import type { ChatRequest } from '../openai-types'
import { clip, isRecord, parseJson, retryAfterMs } from '../upstream-errors'
import { toGeminiBody } from './request'
import { readGeminiResponse } from './response'
import { GeminiStream } from './stream'

function toGeminiRequest(req: ChatRequest, target: Target, thinking?: ThinkingOptions): UpstreamRequest {
  const model = encodeURIComponent(target.model.id)
  const method = target.stream ? 'streamGenerateContent?alt=sse' : 'generateContent'
  return {
    url: `${target.baseUrl}/models/${model}:${method}`,
    headers: { 'x-goog-api-key': target.apiKey, 'content-type': 'application/json' },
    body: JSON.stringify(toGeminiBody(req, target, thinking)),
  }
}

/** `google.rpc.RetryInfo.retryDelay` ("32s", "1.5s") in milliseconds: Gemini's 429s carry no retry-after header. */
function retryDelayMs(details: unknown): number | undefined {
  if (!Array.isArray(details)) return undefined
  for (const d of details) {
    if (!isRecord(d) || typeof d['@type'] !== 'string' || !d['@type'].endsWith('google.rpc.RetryInfo')) continue
    const m = /^(\d+(?:\.\d+)?)s$/.exec(String(d.retryDelay))
    if (m?.[1]) return Math.round(Number(m[1]) * 1000)
  }
  return undefined
}

/** Does a google.rpc.ErrorInfo detail name this reason (e.g. `API_KEY_INVALID`)? */
function hasReason(details: unknown, reason: string): boolean {
  return Array.isArray(details) && details.some((d) => isRecord(d) && d.reason === reason)
}

/** `{"error":{"code","message","status","details"}}` (google.rpc.Status); streams without alt=sse wrap it in an array. */
function parseGeminiError(status: number, text: string, headers: Headers): UpstreamFailure {
  const json = parseJson(text)
  const root = Array.isArray(json) ? json[0] : json
  const e = isRecord(root) && isRecord(root.error) ? root.error : undefined
  const detail = typeof e?.message === 'string' ? e.message : clip(text) || `HTTP ${status}`
  const message = typeof e?.status === 'string' ? `${e.status}: ${detail}` : detail
  if (status === 429) {
    const retry = retryDelayMs(e?.details) ?? retryAfterMs(headers)
    return retry === undefined ? { kind: 'rate_limit', status, message } : { kind: 'rate_limit', status, message, retryAfterMs: retry }
  }
  const contextLimit = status === 400 && /exceeds the maximum number of tokens/i.test(detail)
  // Gemini answers a wrong key with 400, not 401: it is still the key's failure (PRODUCT §4a).
  if (hasReason(e?.details, 'API_KEY_INVALID')) return { kind: 'provider_error', status, message, keyRejected: true }
  return { kind: contextLimit ? 'context_limit' : 'provider_error', status, message }
}

export const google: ProviderAdapter = {
  id: 'google',
  capabilities: { requiresMaxTokens: false, temperatureMax: 2, maxStopSequences: 5 },
  buildRequest: (req, target) => toGeminiRequest(req, target),
  parseResponse: (json) => readGeminiResponse(json),
  createStream: () => new GeminiStream(),
  parseError: parseGeminiError,
}

/** The adapter with a client's thinking request: an exact thinking budget, the thoughts sent back. */
export function googleThinking(thinking: ThinkingOptions): ProviderAdapter {
  return {
    ...google,
    buildRequest: (req, target) => toGeminiRequest(req, target, thinking),
    parseResponse: (json) => readGeminiResponse(json, thinking.showThinking),
    createStream: () => new GeminiStream(thinking.showThinking),
  }
}
