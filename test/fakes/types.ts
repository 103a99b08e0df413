// Types shared by the fake upstream servers: the public test API (re-exported by upstream.ts) and the provider-module contract.

export type FakeProvider = 'openai' | 'anthropic' | 'google' | 'mistral'

/** The protocol a fake speaks: a provider's, or Bedrock's Converse (test/fakes/bedrock.ts). */
export type FakeProtocol = FakeProvider | 'bedrock'

export interface RecordedRequest {
  method: string
  /** Path + query, e.g. '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse'. */
  path: string
  /** Lower-cased header names. */
  headers: Record<string, string>
  /** Parsed JSON, or the raw text when the body is not JSON. */
  body: unknown
  /** The body exactly as received. */
  text: string
  /** True once the client disconnected before the fake finished answering. */
  aborted: boolean
}

export type FinishKind = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'refusal'
export type ErrorType = 'rate_limit' | 'overloaded' | 'server' | 'context_length' | 'auth' | 'bad_request' | 'unavailable'
export type StreamErrorType = 'overloaded' | 'server' | 'rate_limit'

export interface ToolCallSpec {
  name: string
  arguments: Record<string, unknown>
}

export interface UsageSpec {
  /** Total prompt tokens (including cached ones), as OpenAI counts them. */
  prompt: number
  /** Visible completion tokens, without thinking. */
  completion: number
  cached?: number
  /** Prompt tokens written to the cache (Anthropic cache_creation_input_tokens, OpenAI cache_write_tokens). */
  cacheWrite?: number
  thinking?: number
}

export interface ReplyBehavior {
  kind: 'reply'
  text?: string
  finish?: FinishKind
  toolCalls?: ToolCallSpec[]
  usage?: UsageSpec
  chunks?: number
  delayMs?: number
  chunkDelayMs?: number
}

export interface ErrorBehavior {
  kind: 'error'
  status: number
  errorType?: ErrorType
  retryAfter?: string
  body?: unknown
  headers?: Record<string, string>
}

export interface RawBehavior {
  kind: 'raw'
  status: number
  headers?: Record<string, string>
  body: string | string[]
  delayMs?: number
}

export type Behavior =
  | ReplyBehavior
  | ErrorBehavior
  | { kind: 'reset' }
  | { kind: 'stall-headers' }
  | { kind: 'stall-after'; events: number }
  | { kind: 'cut-after'; events: number }
  | { kind: 'error-event-after'; events: number; errorType?: StreamErrorType }
  | { kind: 'malformed-after'; events: number }
  | RawBehavior

export interface FakeUpstream {
  readonly provider: FakeProtocol
  readonly url: string
  readonly requests: RecordedRequest[]
  readonly apiKey: string
  enqueue(...b: Behavior[]): void
  setDefault(b: Behavior): void
  reset(): void
  waitForAbort(i: number, timeoutMs?: number): Promise<boolean>
  stop(): Promise<void>
}

// ---------------------------------------------------------------------------------------------
// Provider-module contract (internal).

export type Obj = Record<string, unknown>

/** A complete native HTTP answer (body already serialised the way the provider does it). */
export interface NativeReply {
  status: number
  body: string
  headers: Record<string, string>
}

/** What the router found in the URL. */
export interface Route {
  /** An endpoint other than chat generation (embeddings, count_tokens, Responses): answered by `extra`. */
  endpoint?: string
  /** Google puts the model in the path. */
  model?: string
  /** Google selects streaming by path: SSE with alt=sse, a streamed JSON array without it. */
  streamMode?: 'sse' | 'json-array'
}

export interface ToolDecl {
  name: string
  schema: unknown
}

/** A validated request, reduced to what the reply generator needs. */
export interface RequestCtx {
  model: string
  stream: false | 'sse' | 'json-array'
  promptTokens: number
  /** undefined: plain text; null: JSON without a schema; otherwise the JSON Schema to satisfy. */
  jsonSchema: unknown
  tools: ToolDecl[]
  /** Set when the request forces a tool call: the tool name ('' = any tool). */
  forcedTool: string | undefined
  /** Output token limit the request set, if any. */
  maxTokens: number | undefined
  /** OpenAI: stream_options.include_usage. */
  includeUsage: boolean
  /** The request asked to see the model's thinking (Anthropic thinking enabled, Gemini includeThoughts). */
  showThinking: boolean
  headers: Record<string, string>
}

/** The reply the fake is going to give, provider-neutral. */
export interface Reply {
  model: string
  text: string
  /** Text split into streaming content events. */
  pieces: string[]
  toolCalls: ToolCallSpec[]
  finish: FinishKind
  thinkingText: string
  usage: { prompt: number; completion: number; cached: number; cacheWrite: number; thinking: number }
}

/** A native stream: framed events (each written as one chunk) and the end marker, if the provider has one. */
export interface StreamPlan {
  events: string[]
  end: string
  headers: Record<string, string>
}

export type Validation = { ok: true; ctx: RequestCtx } | { ok: false; reply: NativeReply }

export interface ProviderImpl {
  readonly id: FakeProtocol
  readonly basePath: string
  /** undefined → 404. */
  route(method: string, url: URL): Route | undefined
  notFound(method: string, url: URL): NativeReply
  /** undefined when the credentials are accepted; `request` is the method and body as received (a signature covers them). */
  authenticate(headers: Record<string, string>, url: URL, apiKey: string, request: { method: string; text: string }): NativeReply | undefined
  /** The stream's events are bytes (each string a latin1 rendering of one frame's bytes), not text. */
  readonly binary?: boolean
  validate(body: unknown, isJson: boolean, route: Route, headers: Record<string, string>): Validation
  /** Text the fake says when the behaviour gives none, for a refusal (OpenAI, Mistral); '' = none. */
  readonly refusalText: string
  error(b: ErrorBehavior, ctx: { model: string; promptTokens: number; apiKey: string }): NativeReply
  complete(reply: Reply, ctx: RequestCtx): NativeReply
  stream(reply: Reply, ctx: RequestCtx): StreamPlan
  /** The native mid-stream error, written after `written` events, followed by closing the connection. */
  streamError(type: StreamErrorType | undefined, ctx: RequestCtx, written: number): string
  /** One broken event (`data: {not json`), written after `written` events. */
  malformed(ctx: RequestCtx, written: number): string
  /** Endpoints besides chat (route.endpoint set): validates and answers after auth; `error` behaviours apply first. */
  extra?(route: Route, body: unknown, isJson: boolean, headers: Record<string, string>, b: Behavior): NativeReply | ExtraStream
}

/** A streamed answer of an extra endpoint. */
export interface ExtraStream {
  events: string[]
  headers: Record<string, string>
}
