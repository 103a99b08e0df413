// The OpenAI chat-completions shapes gw accepts from clients and emits to them (its canonical format).

export type Role = 'system' | 'developer' | 'user' | 'assistant' | 'tool'

export interface TextPart {
  type: 'text'
  text: string
}
export interface ImageUrlPart {
  type: 'image_url'
  image_url: { url: string; detail?: string }
}
export interface OtherPart {
  type: string
  [key: string]: unknown
}
export type ContentPart = TextPart | ImageUrlPart | OtherPart

export interface ToolCall {
  id: string
  type: 'function'
  function: { name: string; arguments: string }
}

export interface ChatMessage {
  role: Role
  content?: string | ContentPart[] | null
  name?: string
  tool_calls?: ToolCall[]
  tool_call_id?: string
  refusal?: string | null
  [key: string]: unknown
}

export interface FunctionTool {
  type: 'function'
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean }
}

export type ToolChoice =
  | 'none'
  | 'auto'
  | 'required'
  | { type: 'function'; function: { name: string } }

export interface JsonSchemaFormat {
  type: 'json_schema'
  json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean }
}
export type ResponseFormat = { type: 'text' } | { type: 'json_object' } | JsonSchemaFormat

/**
 * An OpenAI chat request as it leaves the gateway's own stages: gateway-only fields
 * (metadata, output_schema, fallback_chain, prompt_id) removed, `model` set to the upstream id.
 * Unknown fields a client sent stay on the object and reach OpenAI unchanged.
 */
export interface ChatRequest {
  model: string
  messages: ChatMessage[]
  stream?: boolean
  max_tokens?: number
  max_completion_tokens?: number
  temperature?: number
  top_p?: number
  stop?: string | string[]
  user?: string
  tools?: FunctionTool[]
  tool_choice?: ToolChoice
  parallel_tool_calls?: boolean
  response_format?: ResponseFormat
  stream_options?: { include_usage?: boolean; [key: string]: unknown }
  /** `none|minimal|low|medium|high|xhigh|max`; translated for Anthropic and Gemini (docs/providers.md). */
  reasoning_effort?: unknown
  [key: string]: unknown
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call'

export interface Usage {
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
  prompt_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number; [key: string]: unknown }
  completion_tokens_details?: { reasoning_tokens?: number; [key: string]: unknown }
  /** gw's own, on answers to clients only: the cost in USD at the catalog's prices, null when unknown (PRODUCT §11). */
  cost_usd?: number | null
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
