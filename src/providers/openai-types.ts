// The OpenAI chat-completions shapes gw accepts from clients and emits to them (its canonical format).

import type { Static } from '@sinclair/typebox'
import type { ChatRequestBody } from '../schemas/chat-body'

export type Role = ChatMessage['role']

// Parts, tool calls, tools, tool choices and formats as gw builds them: in answers, and in the requests
// the other APIs' translators make (src/apis/); each fits the request's schema-derived type below.
export type TextPart = {
  type: 'text'
  text: string
}
export type ImageUrlPart = {
  type: 'image_url'
  image_url: { url: string; detail?: string }
}
export type OtherPart = {
  type: string
  [key: string]: unknown
}
export type ContentPart = TextPart | ImageUrlPart | OtherPart

export type ToolCall = {
  id: string
  type: 'function'
  function: { name: string; arguments: string }
}

/** A message of a chat request, as its schema (src/schemas/chat-body.ts) checks it. */
export type ChatMessage = ChatRequest['messages'][number]
/** A tool call of a request's assistant message (its `arguments` may be absent). */
export type RequestToolCall = NonNullable<ChatMessage['tool_calls']>[number]
/** A request's `tool_choice`, as its schema checks it. */
export type RequestToolChoice = ChatRequest['tool_choice']
/** A request's `response_format`, as its schema checks it. */
export type RequestResponseFormat = ChatRequest['response_format']

export type FunctionTool = {
  type: 'function'
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean }
}

export type ToolChoice =
  | 'none'
  | 'auto'
  | 'required'
  | { type: 'function'; function: { name: string } }

export type JsonSchemaFormat = {
  type: 'json_schema'
  json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean }
}
export type ResponseFormat = { type: 'text' } | { type: 'json_object' } | JsonSchemaFormat

/**
 * An OpenAI chat request as it leaves the gateway's own stages: gateway-only fields
 * (metadata, output_schema, fallback_chain, prompt_id) removed, `model` set to the upstream id.
 * Unknown fields a client sent stay on the object and reach OpenAI unchanged (`reasoning_effort`,
 * `none|minimal|low|medium|high|xhigh|max`, among them: translated for Anthropic and Gemini, docs/providers.md).
 * The type of the schema gw checks it with (`ChatRequestBody`), so the two never drift apart.
 */
export type ChatRequest = Static<typeof ChatRequestBody>

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call'

export interface Usage {
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
  prompt_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number; [key: string]: unknown }
  completion_tokens_details?: { reasoning_tokens?: number; [key: string]: unknown }
  /** gw's own, on answers to clients only: the cost in USD at the catalog's prices, null when unknown (PRODUCT §11). */
  cost_usd?: number | null
  /** What the upstream itself charged for the answer, in USD, when it says (OpenRouter's `usage.cost`, PRODUCT §17): it wins over the catalog's price. */
  cost?: number
}

export interface AssistantMessage {
  role: 'assistant'
  content: string | null
  refusal: string | null
  tool_calls?: ToolCall[]
  /** The model's thinking text, read only by adapters asked for it (ThinkingOptions.showThinking); never sent to chat clients. */
  reasoning_content?: string
  [key: string]: unknown
}

export interface Choice {
  index: number
  message: AssistantMessage
  finish_reason: FinishReason
  logprobs: unknown
}

export interface ChatCompletion {
  id: string
  object: 'chat.completion'
  created: number
  model: string
  choices: Choice[]
  usage: Usage
  [key: string]: unknown
}

export interface ToolCallDelta {
  index: number
  id?: string
  type?: 'function'
  function?: { name?: string; arguments?: string }
}

export interface ChunkDelta {
  role?: 'assistant'
  content?: string | null
  refusal?: string | null
  tool_calls?: ToolCallDelta[]
  /** As AssistantMessage.reasoning_content: thinking text, only from adapters asked for it. */
  reasoning_content?: string
  [key: string]: unknown
}

export interface ChunkChoice {
  index: number
  delta: ChunkDelta
  finish_reason: FinishReason | null
  logprobs?: unknown
}

export interface ChatChunk {
  id: string
  object: 'chat.completion.chunk'
  created: number
  model: string
  choices: ChunkChoice[]
  usage?: Usage | null
  [key: string]: unknown
}
