// Mistral chat-completions adapter: OpenAI-like wire format, but a strict field allow-list (422 on
// anything unknown), 9-character tool-call ids and usage on the last content chunk.
// Reference: https://docs.mistral.ai/api/#tag/chat

import type { ProviderAdapter, Target, ThinkingOptions, UpstreamFailure, UpstreamRequest } from '../adapter'
import { withUserTurn } from '../content'
import { jsonRequest, withJsonHint } from '../json-output'
import type { ChatMessage, ChatRequest, FinishReason } from '../openai-types'
import { mapOpenAIFinishReason, OpenAIStyleStream, readOpenAIStyleCompletion } from '../openai/response'
import { clip, failure, isRecord, parseJson } from '../upstream-errors'

/** Top-level request fields Mistral accepts; anything else is a 422 `extra_forbidden`. */
const ACCEPTED = new Set([
  'temperature', 'top_p', 'max_tokens', 'stop', 'random_seed', 'response_format', 'tools', 'tool_choice',
  'presence_penalty', 'frequency_penalty', 'n', 'prediction', 'parallel_tool_calls', 'reasoning_effort',
  'prompt_mode', 'safe_prompt',
])

const TOOL_ID = /^[a-zA-Z0-9]{9}$/
const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'

/** Mistral only takes ids of 9 alphanumerics: other ids are hashed into one, the same way every time. */
export function toMistralToolId(id: string): string {
  if (TOOL_ID.test(id)) return id
  let h = 0xcbf29ce484222325n
  for (let i = 0; i < id.length; i++) h = BigInt.asUintN(64, (h ^ BigInt(id.charCodeAt(i))) * 0x100000001b3n)
  let out = ''
  for (let i = 0; i < 9; i++) {
    out += ALPHABET[Number(h % 62n)]
    h /= 62n
  }
  return out
}

function toMistralMessage(m: ChatMessage): Record<string, unknown> {
  const role = m.role === 'developer' ? 'system' : m.role
  const out: Record<string, unknown> = { role, content: m.content ?? '' }
  if (m.role === 'assistant') {
    if (m.tool_calls?.length) {
      out.tool_calls = m.tool_calls.map((tc) => ({ ...tc, id: toMistralToolId(tc.id) }))
      // Mistral takes content or tool_calls on one message, never both: the calls are what matter.
      out.content = ''
    }
    if (m.prefix === true) out.prefix = true
  }
  if (m.role === 'tool') {
    if (m.tool_call_id) out.tool_call_id = toMistralToolId(m.tool_call_id)
    if (m.name) out.name = m.name
  }
  return out
}

function toMistralRequest(asked: ChatRequest, target: Target): UpstreamRequest {
  const req = withUserTurn(asked, 'mistral')
  const body: Record<string, unknown> = { model: target.model.id }
  // System messages must open the conversation.
  const system = req.messages.filter((m) => m.role === 'system' || m.role === 'developer')
  const rest = req.messages.filter((m) => m.role !== 'system' && m.role !== 'developer')
  const messages = [...system, ...rest]
  body.messages = (jsonRequest(req)?.mode === 'json_object' ? withJsonHint(messages) : messages).map(toMistralMessage)
  for (const [k, v] of Object.entries(req)) if (ACCEPTED.has(k) && v !== undefined) body[k] = v
  if (body.max_tokens === undefined && typeof req.max_completion_tokens === 'number')
    body.max_tokens = req.max_completion_tokens
  if (body.random_seed === undefined && typeof req.seed === 'number') body.random_seed = req.seed
  if (target.stream) body.stream = true
  return {
    url: `${target.baseUrl}/chat/completions`,
    headers: {
      authorization: `Bearer ${target.apiKey}`,
      'content-type': 'application/json',
      accept: target.stream ? 'text/event-stream' : 'application/json',
    },
    body: JSON.stringify(body),
  }
}

function mapMistralFinishReason(reason: unknown): FinishReason | null {
  if (reason === 'model_length') return 'length'
  if (reason === 'error') return 'stop'
  return mapOpenAIFinishReason(reason)
}

/** Mistral error body: `{"object":"error","message": str | {detail:[…]}, "type", "code"}` or `{detail:[…]}`. */
function parseMistralError(status: number, text: string, headers: Headers): UpstreamFailure {
  const json = parseJson(text)
  let message = clip(text) || `HTTP ${status}`
  if (isRecord(json)) {
    const m = json.message
    const detail = isRecord(m) ? m.detail : json.detail
    if (typeof m === 'string') message = m
    else if (Array.isArray(detail))
      message = detail
        .filter(isRecord)
        .map((d) => `${Array.isArray(d.loc) ? d.loc.join('.') : ''}: ${String(d.msg ?? d.type ?? '')}`)
        .join('; ')
  }
  const contextLimit = status === 400 && /too large|context|too many tokens/i.test(message)
  return failure(status, message, headers, contextLimit ? 'context_limit' : undefined)
}

const OPTIONS = { mapFinish: mapMistralFinishReason, passThrough: false }

export const mistral: ProviderAdapter = {
  id: 'mistral',
  capabilities: { requiresMaxTokens: false, temperatureMax: 1 },
  buildRequest: toMistralRequest,
  parseResponse: (json) => readOpenAIStyleCompletion(json, OPTIONS),
  createStream: () => new OpenAIStyleStream(OPTIONS),
  parseError: parseMistralError,
}

/** The adapter with a client's thinking request: the `thinking` chunks of reasoning models sent back. */
export function mistralThinking(thinking: ThinkingOptions): ProviderAdapter {
  if (!thinking.showThinking) return mistral
  const opts = { ...OPTIONS, showThinking: true }
  return {
    ...mistral,
    parseResponse: (json) => readOpenAIStyleCompletion(json, opts),
    createStream: () => new OpenAIStyleStream(opts),
  }
}
