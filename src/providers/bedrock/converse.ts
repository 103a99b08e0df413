// Bedrock's Converse API ↔ OpenAI chat: the request body, the answer, and error answers as failure kinds. Pure: no fetch.

import { badRequest } from '../../errors'
import type { UpstreamCompletion, UpstreamFailure } from '../adapter'
import { cacheControlOf, type ImageSource, pieces, textOf, withUserTurn } from '../content'
import { JSON_TOOL, JSON_TOOL_HINT, jsonPromptHint, type JsonRequest, jsonRequest } from '../json-output'
import { MAX_BREAKPOINTS, minCacheableTokens } from '../anthropic/prompt-cache'
import { estimateTokens } from '../../tokens'
import type { ChatMessage, ChatRequest, FinishReason, ToolCall, Usage } from '../openai-types'
import { clip, failure, isRecord, parseJson } from '../upstream-errors'

type Block = Record<string, unknown>
interface BedrockMessage {
  role: 'user' | 'assistant'
  content: Block[]
}

/** `https://bedrock-runtime.{region}.amazonaws.com`: where a record without `baseUrl` is sent. */
export const bedrockBaseUrl = (region: string): string => `https://bedrock-runtime.${region}.amazonaws.com`

/** The URL of a Converse (or ConverseStream) call: the model id is one path segment, `:` sent as `%3A`. */
export function converseUrl(baseUrl: string, modelId: string, stream: boolean): string {
  return `${baseUrl.replace(/\/+$/, '')}/model/${encodeURIComponent(modelId)}/${stream ? 'converse-stream' : 'converse'}`
}

const IMAGE_FORMATS: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/gif': 'gif', 'image/webp': 'webp' }

function imageBlock(source: ImageSource): Block {
  const format = IMAGE_FORMATS[source.mediaType ?? '']
  if (source.kind !== 'inline' || !format)
    throw badRequest('Images for bedrock must be data: URLs (base64) of PNG, JPEG, GIF or WebP')
  return { image: { format, source: { bytes: source.data } } }
}

/** Converse's prompt-cache breakpoint: a block of its own after what it caches (PRODUCT §19). */
const CACHE_POINT: Block = { cachePoint: { type: 'default' } }

/** The blocks of a piece, with a cache point after it when the chat client put `cache_control` on its part. */
const withPoint = (block: Block, cache: unknown): Block[] => (cache ? [block, CACHE_POINT] : [block])

function userBlocks(m: ChatMessage): Block[] {
  // Converse refuses a blank text block ("the text field … is blank"): whitespace-only text is left out.
  const blocks = pieces(m, 'bedrock')
    .filter((p) => p.kind !== 'text' || p.text.trim())
    .flatMap((p) => withPoint(p.kind === 'text' ? { text: p.text } : imageBlock(p.source), p.cache))
  if (cacheControlOf(m) && blocks.length && !blocks[blocks.length - 1]?.cachePoint) blocks.push(CACHE_POINT)
  return blocks
}

/** Tool-call arguments as the JSON object Converse wants; anything else becomes `{}`. */
function toolInput(args: string | undefined): Record<string, unknown> {
  const v = parseJson(args ?? '')
  return isRecord(v) ? v : {}
}

function assistantBlocks(m: ChatMessage): Block[] {
  const text = textOf(m, 'bedrock')
  const blocks: Block[] = text.trim() ? [{ text }] : []
  for (const tc of m.tool_calls ?? [])
    blocks.push({ toolUse: { toolUseId: tc.id, name: tc.function.name, input: toolInput(tc.function.arguments) } })
  return blocks
}

/** Messages in Converse's shape: tool results are user turns, and consecutive turns of one role are merged. */
function converseMessages(messages: ChatMessage[]): BedrockMessage[] {
  const out: BedrockMessage[] = []
  const add = (role: BedrockMessage['role'], content: Block[]) => {
    if (!content.length) return
    const last = out[out.length - 1]
    if (last?.role === role) last.content.push(...content)
    else out.push({ role, content })
  }
  for (const m of messages) {
    if (m.role === 'system' || m.role === 'developer') continue
    if (m.role === 'user') add('user', userBlocks(m))
    else if (m.role === 'assistant') add('assistant', assistantBlocks(m))
    else if (m.role === 'tool')
      add('user', [{ toolResult: { toolUseId: String(m.tool_call_id ?? ''), content: [{ text: textOf(m, 'bedrock') }] } }])
    else throw badRequest(`Messages with role ${String(m.role)} are not supported for bedrock`)
  }
  return out
}

/**
 * The tools and the choice among them. Structured output (`response_format`) is the JSON tool, its input
 * schema the requested schema (docs/providers.md "AWS Bedrock"): forced when the client has no tools of its own.
 * A tool's `cache_control` becomes a cache point after it.
 */
function toolConfig(req: ChatRequest, json: JsonRequest | undefined): Block | undefined {
  // Converse refuses toolUse and toolResult blocks in the conversation without a toolConfig, and has no
  // "none" choice: a conversation with tool calls keeps its tools declared (those the calls name, when the
  // request declares none), tool_choice "none" or not.
  const called = [...new Set(req.messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.function.name) : [])))]
  const declared = (req.tools ?? []).flatMap((t) => (t.type === 'function' && t.function ? [t.function] : []))
  const needed = req.tool_choice === 'none' && !called.length ? [] : declared
  const fns: typeof declared = needed.length || !called.length ? needed : called.map((name) => ({ name, parameters: { type: 'object', properties: {} } }))
  const cacheOf = new Map((req.tools ?? []).flatMap((t) => (t.function ? [[t.function, cacheControlOf(t) ?? cacheControlOf(t.function)] as const] : [])))
  const specs: Block[] = fns.flatMap((f) =>
    withPoint(
      {
        toolSpec: {
          name: f.name,
          ...(f.description ? { description: f.description } : {}),
          inputSchema: { json: f.parameters ?? { type: 'object', properties: {} } },
        },
      },
      cacheOf.get(f),
    ),
  )
  const c = req.tool_choice
  const named = typeof c === 'object' && c !== null ? c.function?.name : undefined
  let choice: Block = c === 'required' ? { any: {} } : named ? { tool: { name: named } } : { auto: {} }
  if (json) {
    if (!specs.length) choice = { tool: { name: JSON_TOOL } }
    specs.push({ toolSpec: { name: JSON_TOOL, description: 'Gives the final answer as JSON.', inputSchema: { json: json.mode === 'json_schema' ? json.schema : { type: 'object' } } } })
  }
  return specs.length ? { tools: specs, toolChoice: choice } : undefined
}

/**
 * The Converse request body for an OpenAI chat request (the model id goes in the URL, not the body).
 * `promptCaching`: cache points after the last tool, the system text and the turn before the final
 * user turn, as for Anthropic's own API (src/providers/anthropic/prompt-cache.ts).
 */
/**
 * How structured output is asked of a Bedrock model (docs/providers.md "AWS Bedrock"): `tool`, the JSON tool (forced
 * unless the client has tools of its own); `prompt`, an instruction only, for a model Bedrock refuses a forced tool
 * choice for (the catalog's `forcedToolChoice: false`: Meta Llama, Mistral) when the client has no tools.
 */
export type BedrockJson = 'none' | 'tool' | 'prompt'

export function bedrockJson(req: ChatRequest, forcedToolChoice: boolean): BedrockJson {
  if (!jsonRequest(req)) return 'none'
  return forcedToolChoice || (req.tools?.length && req.tool_choice !== 'none') ? 'tool' : 'prompt'
}

export function converseBody(request: ChatRequest, promptCaching = false, strategy: BedrockJson = bedrockJson(request, true)): Record<string, unknown> {
  const req = withUserTurn(request, 'bedrock')
  const asked = jsonRequest(req)
  const json = strategy === 'tool' ? asked : undefined
  const system: Block[] = req.messages
    .filter((m) => m.role === 'system' || m.role === 'developer')
    .flatMap((m) => {
      const text = textOf(m, 'bedrock')
      return text ? withPoint({ text }, pieces(m, 'bedrock').some((p) => p.cache) || cacheControlOf(m)) : []
    })
  if (json && req.tools?.length && req.tool_choice !== 'none') system.push({ text: JSON_TOOL_HINT })
  if (strategy === 'prompt' && asked) system.push({ text: jsonPromptHint(asked) })
  const inference: Record<string, unknown> = {}
  const max = req.max_completion_tokens ?? req.max_tokens
  if (max != null) inference.maxTokens = max
  if (req.temperature != null) inference.temperature = req.temperature
  if (req.top_p != null) inference.topP = req.top_p
  if (req.stop != null) inference.stopSequences = typeof req.stop === 'string' ? [req.stop] : req.stop
  const tools = toolConfig(req, json)
  const messages = converseMessages(req.messages)
  if (promptCaching) addCachePoints(tools?.tools as Block[] | undefined, system, messages, minCacheableTokens(req.model))
  return {
    messages,
    ...(system.length ? { system } : {}),
    ...(Object.keys(inference).length ? { inferenceConfig: inference } : {}),
    ...(tools ? { toolConfig: tools } : {}),
  }
}

/** Cache points at the ends of the tools, the system text and the turn before the final user turn, while the prefix is long enough; four at most. */
function addCachePoints(tools: Block[] | undefined, system: Block[], messages: BedrockMessage[], minTokens: number): void {
  const finalUser = messages.findLastIndex((m) => m.role === 'user')
  const before = finalUser > 0 ? messages[finalUser - 1] : undefined
  if (estimateTokens(JSON.stringify([tools ?? [], system, messages.slice(0, Math.max(0, finalUser))])) < minTokens) return
  let count = [...(tools ?? []), ...system, ...messages.flatMap((m) => m.content)].filter((b) => b.cachePoint).length
  for (const list of [tools, system, before?.content]) {
    if (!list?.length || list[list.length - 1]?.cachePoint || count >= MAX_BREAKPOINTS) continue
    list.push(CACHE_POINT)
    count++
  }
}

/** Converse's `stopReason` as an OpenAI finish reason. */
export function finishReason(stop: unknown): FinishReason {
  switch (stop) {
    case 'tool_use':
      return 'tool_calls'
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length'
    case 'guardrail_intervened':
    case 'content_filtered':
      return 'content_filter'
    default:
      return 'stop'
  }
}

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0)

/** Converse's usage → OpenAI's: `inputTokens` excludes cache reads and writes, `prompt_tokens` includes them. */
export function toUsage(u: unknown): Usage {
  const r = isRecord(u) ? u : {}
  const read = num(r.cacheReadInputTokens)
  const write = num(r.cacheWriteInputTokens)
  const prompt = num(r.inputTokens) + read + write
  const completion = num(r.outputTokens)
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: write ? { cached_tokens: read, cache_write_tokens: write } : { cached_tokens: read },
  }
}

/** A Converse answer in OpenAI terms (`jsonTool`: the JSON tool's input is the answer); throws on an answer that is not Converse's shape. */
export function parseConverse(json: unknown, jsonTool = false): UpstreamCompletion {
  const output = isRecord(json) && isRecord(json.output) ? json.output : undefined
  const message = output && isRecord(output.message) ? output.message : undefined
  if (!isRecord(json) || !message || !Array.isArray(message.content)) throw new Error('Bedrock answer without output.message.content')
  let text = ''
  let jsonAnswer: string | undefined
  const toolCalls: ToolCall[] = []
  for (const b of message.content) {
    if (!isRecord(b)) continue
    if (typeof b.text === 'string') text += b.text
    else if (jsonTool && isRecord(b.toolUse) && b.toolUse.name === JSON_TOOL) jsonAnswer = JSON.stringify(b.toolUse.input ?? {})
    else if (isRecord(b.toolUse))
      toolCalls.push({ id: String(b.toolUse.toolUseId ?? ''), type: 'function', function: { name: String(b.toolUse.name ?? ''), arguments: JSON.stringify(b.toolUse.input ?? {}) } })
  }
  return {
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: jsonAnswer ?? (text || (toolCalls.length ? null : '')), refusal: null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
        // The JSON tool's call is the answer, not a call for the client to make.
        finish_reason: jsonAnswer !== undefined && !toolCalls.length && json.stopReason === 'tool_use' ? 'stop' : finishReason(json.stopReason),
        logprobs: null,
      },
    ],
    usage: toUsage(json.usage),
  }
}

/** Bedrock's error type: `x-amzn-errortype` (`ThrottlingException:http://…`), else the body's `__type`. */
function errorType(headers: Headers, body: unknown): string {
  const raw = headers.get('x-amzn-errortype') ?? (isRecord(body) && typeof body.__type === 'string' ? body.__type : '')
  return raw.split(':')[0]?.split('#').pop() ?? ''
}

const KEY_ERRORS = new Set(['AccessDeniedException', 'UnrecognizedClientException', 'InvalidSignatureException', 'MissingAuthenticationTokenException', 'ExpiredTokenException', 'IncompleteSignatureException'])
const CONTEXT_LIMIT = /too long|too many tokens|context (length|window)|input is too large|maximum context/i

/** A failure kind for a Bedrock error, by its type (exceptions in streams too): throttling, the key, the request, the provider. */
export function bedrockFailure(status: number, type: string, message: string, headers: Headers): UpstreamFailure {
  const text = `${type || `HTTP ${status}`}: ${clip(message || '(no message)')}`
  if (type === 'ModelNotReadyException') return failure(status, text, headers, 'provider_error')
  if (type === 'ThrottlingException' || type === 'ServiceQuotaExceededException' || status === 429)
    return { ...failure(429, text, headers, 'rate_limit'), status }
  if (KEY_ERRORS.has(type)) return { kind: 'provider_error', status, message: text, keyRejected: true }
  if (type === 'ValidationException' && CONTEXT_LIMIT.test(message)) return failure(status, text, headers, 'context_limit')
  return failure(status, text, headers, 'provider_error')
}

/** An error answer (`{"message": …}` with `x-amzn-errortype`) as a failure kind. */
export function parseBedrockError(status: number, bodyText: string, headers: Headers): UpstreamFailure {
  const body = parseJson(bodyText)
  const message = isRecord(body) && typeof (body.message ?? body.Message) === 'string' ? String(body.message ?? body.Message) : bodyText
  return bedrockFailure(status, errorType(headers, body), message, headers)
}
