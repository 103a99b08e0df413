// OpenAI chat-completions adapter: the native format is gw's own, so it mostly passes through.
// Reference: https://platform.openai.com/docs/api-reference/chat

import type { ProviderAdapter, Target, UpstreamFailure, UpstreamRequest } from '../adapter'
import { closeObjects, jsonRequest, strictCompatible, withJsonHint } from '../json-output'
import { isContentFilterError } from '../azure'
import { applyQuirks, openAIEndpoint, openAIHeaders } from '../openai-compatible'
import type { ChatMessage, ChatRequest, RequestResponseFormat } from '../openai-types'
import { fitToolId } from '../tool-ids'
import { clip, failure, isRecord, parseJson } from '../upstream-errors'
import { mapOpenAIFinishReason, OpenAIStyleStream, readOpenAIStyleCompletion } from './response'

const OPTIONS = { mapFinish: mapOpenAIFinishReason, passThrough: true }

/** OpenAI refuses tool-call ids over 40 characters (other providers' ids can be longer). */
const openAIToolId = (id: string) => fitToolId(id, 40, /^\S+$/)

function fitToolIds(messages: ChatMessage[]): ChatMessage[] {
  return messages.map((m) => {
    if (m.role === 'assistant' && m.tool_calls?.length)
      return { ...m, tool_calls: m.tool_calls.map((tc) => ({ ...tc, id: openAIToolId(tc.id) })) }
    if (m.role === 'tool' && m.tool_call_id) return { ...m, tool_call_id: openAIToolId(m.tool_call_id) }
    return m
  })
}

/**
 * json_schema goes strict (enforced by the model) when the client left `strict` open and the schema
 * allows it without changing which answers are valid; JSON mode needs the word JSON in the messages.
 */
function structuredOutput(req: ChatRequest, messages: ChatMessage[]): { format?: RequestResponseFormat; messages: ChatMessage[] } {
  const rf = req.response_format
  if (jsonRequest(req)?.mode === 'json_object') return { messages: withJsonHint(messages) }
  if (rf?.type !== 'json_schema' || !rf.json_schema || rf.json_schema.strict !== undefined) return { messages }
  const schema = rf.json_schema.schema
  if (!schema || !strictCompatible(schema)) return { messages }
  return { format: { type: 'json_schema', json_schema: { ...rf.json_schema, schema: closeObjects(schema), strict: true } }, messages }
}

/** Reasoning models refuse `max_tokens`; everything else is forwarded as the client sent it. */
function toOpenAIRequest(req: ChatRequest, target: Target): UpstreamRequest {
  const { format, messages } = structuredOutput(req, fitToolIds(req.messages))
  const endpoint = openAIEndpoint(target, 'chat/completions')
  const body: Record<string, unknown> = { ...req, model: endpoint.model, messages }
  if (endpoint.model === undefined) delete body.model
  if (format) body.response_format = format
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
  // An OpenAI-compatible provider (PRODUCT §17): the request adapted to its quirks.
  if (target.compat) applyQuirks(body, target.compat.quirks, target.stream)
  return { url: endpoint.url, headers: openAIHeaders(target), body: JSON.stringify(body) }
}

/** OpenAI error body: `{"error":{"message","type","param","code"}}`; Azure's content filter's 400 is a refusal. */
export function parseOpenAIError(status: number, text: string, headers: Headers): UpstreamFailure {
  const json = parseJson(text)
  const e = isRecord(json) && isRecord(json.error) ? json.error : undefined
  const message = typeof e?.message === 'string' ? e.message : clip(text) || `HTTP ${status}`
  const contextLimit = e?.code === 'context_length_exceeded' || /maximum context length|context window/i.test(message)
  return failure(status, message, headers, contextLimit ? 'context_limit' : isContentFilterError(e) ? 'refusal_detected' : undefined)
}

export const openai: ProviderAdapter = {
  id: 'openai',
  capabilities: { requiresMaxTokens: false, temperatureMax: 2, maxStopSequences: 4 },
  buildRequest: toOpenAIRequest,
  parseResponse: (json) => readOpenAIStyleCompletion(json, OPTIONS),
  // OpenAI to OpenAI: plain text chunks are passed on with their model renamed (the light pass).
  createStream: (target) => new OpenAIStyleStream(OPTIONS, target.model.name),
  parseError: parseOpenAIError,
}
