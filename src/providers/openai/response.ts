// Reads OpenAI-format chat answers (JSON and SSE chunks) into gw's canonical shapes; Mistral reuses it.

import type { StreamPart, StreamTranslator, UpstreamCompletion } from '../adapter'
import type {
  AssistantMessage,
  ChunkChoice,
  ChunkDelta,
  FinishReason,
  ToolCall,
  ToolCallDelta,
  Usage,
} from '../openai-types'
import type { RelayReader } from '../../apis/relay-transcript'
import type { SseEvent } from '../../sse/parse'
import { clip, isRecord, parseJson } from '../upstream-errors'

export interface OpenAIStyleOptions {
  /** Maps the upstream's finish reason onto OpenAI's; null means "not finished". */
  mapFinish(reason: unknown): FinishReason | null
  /** Keep upstream fields gw does not know (true for OpenAI itself). */
  passThrough: boolean
  /** Read Mistral's `thinking` chunks into `reasoning_content` (ThinkingOptions.showThinking); else they are dropped. */
  showThinking?: boolean
}

export function mapOpenAIFinishReason(reason: unknown): FinishReason | null {
  switch (reason) {
    case 'stop':
    case 'length':
    case 'tool_calls':
    case 'content_filter':
    case 'function_call':
      return reason
    case null:
    case undefined:
      return null
    default:
      return 'stop'
  }
}

/** Text of a string content or of the `text` parts of a content array (Mistral reasoning models). */
export function contentText(content: unknown): string | null {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return null
  let out = ''
  for (const part of content) if (isRecord(part) && part.type === 'text' && typeof part.text === 'string') out += part.text
  return out
}

/** Text of the `thinking` chunks of a content array (Mistral: `{type:"thinking", thinking:[{type:"text", text}]}`). */
function thinkingText(content: unknown): string {
  if (!Array.isArray(content)) return ''
  let out = ''
  for (const part of content) {
    if (!isRecord(part) || part.type !== 'thinking') continue
    if (typeof part.thinking === 'string') out += part.thinking
    else out += contentText(part.thinking) ?? ''
  }
  return out
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0)

export function readUsage(u: unknown): Usage | undefined {
  if (!isRecord(u)) return undefined
  const usage: Usage = {
    prompt_tokens: num(u.prompt_tokens),
    completion_tokens: num(u.completion_tokens),
    total_tokens: num(u.total_tokens) || num(u.prompt_tokens) + num(u.completion_tokens),
  }
  if (isRecord(u.prompt_tokens_details)) usage.prompt_tokens_details = u.prompt_tokens_details
  if (isRecord(u.completion_tokens_details)) usage.completion_tokens_details = u.completion_tokens_details
  // OpenRouter reports what it charged (docs/spend.md, "A provider's own cost").
  if (typeof u.cost === 'number' && Number.isFinite(u.cost) && u.cost >= 0) usage.cost = u.cost
  return usage
}

function readToolCalls(raw: unknown): ToolCall[] | undefined {
  if (!Array.isArray(raw) || raw.length === 0) return undefined
  return raw.filter(isRecord).map((tc, i) => {
    const fn = isRecord(tc.function) ? tc.function : {}
    const args = fn.arguments
    return {
      id: typeof tc.id === 'string' ? tc.id : `call_${i}`,
      type: 'function' as const,
      function: {
        name: typeof fn.name === 'string' ? fn.name : '',
        arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}),
      },
    }
  })
}

export function readOpenAIStyleCompletion(json: unknown, opts: OpenAIStyleOptions): UpstreamCompletion {
  if (!isRecord(json) || !Array.isArray(json.choices)) throw new Error('answer has no choices array')
  const choices = json.choices.map((c, i) => {
    if (!isRecord(c) || !isRecord(c.message)) throw new Error(`choice ${i} has no message`)
    const m = c.message
    const message: AssistantMessage = {
      ...(opts.passThrough ? m : {}),
      role: 'assistant',
      content: contentText(m.content),
      refusal: typeof m.refusal === 'string' ? m.refusal : null,
    }
    if (opts.showThinking) {
      const thinking = thinkingText(m.content)
      if (thinking) message.reasoning_content = thinking
    }
    const toolCalls = readToolCalls(m.tool_calls)
    if (toolCalls) message.tool_calls = toolCalls
    else delete message.tool_calls
    // Mistral sends "" beside its tool calls; OpenAI clients expect null there.
    if (toolCalls && message.content === '') message.content = null
    return {
      index: typeof c.index === 'number' ? c.index : i,
      message,
      finish_reason: opts.mapFinish(c.finish_reason) ?? 'stop',
      logprobs: c.logprobs ?? null,
    }
  })
  const out: UpstreamCompletion = { choices }
  if (typeof json.id === 'string') out.id = json.id
  if (typeof json.model === 'string') out.model = json.model
  const usage = readUsage(json.usage)
  if (usage) out.usage = usage
  if (opts.passThrough) {
    const extra: Record<string, unknown> = {}
    for (const k of ['system_fingerprint', 'service_tier'] as const) if (json[k] !== undefined) extra[k] = json[k]
    out.extra = extra
  }
  return out
}

function readDelta(raw: unknown, opts: OpenAIStyleOptions): ChunkDelta {
  if (!isRecord(raw)) return {}
  const delta: ChunkDelta = opts.passThrough ? { ...raw } : {}
  delete delta.obfuscation
  if (raw.role === 'assistant') delta.role = 'assistant'
  if (raw.content !== undefined) delta.content = contentText(raw.content)
  if (opts.showThinking) {
    const thinking = thinkingText(raw.content)
    if (thinking) delta.reasoning_content = thinking
  }
  if (typeof raw.refusal === 'string') delta.refusal = raw.refusal
  if (Array.isArray(raw.tool_calls)) {
    delta.tool_calls = raw.tool_calls.filter(isRecord).map((tc, i): ToolCallDelta => {
      const d: ToolCallDelta = { index: typeof tc.index === 'number' ? tc.index : i }
      if (typeof tc.id === 'string') d.id = tc.id
      if (tc.type === 'function' || typeof tc.id === 'string') d.type = 'function'
      if (isRecord(tc.function)) {
        const fn: { name?: string; arguments?: string } = {}
        if (typeof tc.function.name === 'string') fn.name = tc.function.name
        const args = tc.function.arguments
        if (args !== undefined) fn.arguments = typeof args === 'string' ? args : JSON.stringify(args)
        d.function = fn
      }
      return d
    })
  }
  return delta
}

const QUOTE = 34
const COLON = 58

/** Whether the string at `at` (a key or a value's first character) is `"` followed by `"`: an empty string. */
const emptyString = (data: string, at: number) => data.charCodeAt(at) === QUOTE && data.charCodeAt(at + 1) === QUOTE

/**
 * A chunk of plain text for choice 0 with its model renamed, or undefined when the chunk needs a full
 * read: a cheap pass per event instead of parse, translate, rebuild and serialise (most of a stream).
 *
 * One walk over the text: every `{` and `[` outside strings closed in order and no string left open (a
 * chunk cut short, or otherwise broken this way, is read, so that its failure is acted on: PRODUCT §4, a
 * failure mid-stream never ends in a clean finish); its keys looked at as they pass. It needs a full read
 * when it holds what gw acts on or cannot pass on as is: a finish reason, usage, a refusal, tool calls,
 * an error (a key, or the value `"error"`), empty content, a choice other than index 0 or more than one,
 * or JSON in a form other than compact (a key not followed at once by `:`). It must hold non-empty
 * content and the upstream's model field exactly as the first chunk wrote it.
 */
function passOn(data: string, upstreamField: string, modelField: string): string | undefined {
  let depth = 0
  let content = false
  let choices = 0
  let model = -1
  const n = data.length
  for (let i = 0; i < n; i++) {
    const c = data.charCodeAt(i)
    if (c === QUOTE) {
      const from = i + 1
      for (i = from; i < n; i++) {
        const d = data.charCodeAt(i)
        if (d === 92) i++ // a backslash escapes the next character
        else if (d === QUOTE) break
      }
      if (i >= n) return undefined
      const after = data.charCodeAt(i + 1)
      const length = i - from
      if (after !== COLON) {
        // A value: followed by `,`, `}` or `]` in compact JSON.
        if (after !== 44 && after !== 125 && after !== 93) return undefined
        if (length === 5 && data.startsWith('error', from)) return undefined
        continue
      }
      const value = i + 2
      const v = data.charCodeAt(value)
      switch (length) {
        case 5:
          if (data.startsWith('usage', from)) {
            if (v === 123) return undefined
          } else if (data.startsWith('index', from)) {
            // Choice 0 only, once (a second `index` is another choice or a tool call).
            if (++choices > 1 || v !== 48) return undefined
            const next = data.charCodeAt(value + 1)
            if (next >= 48 && next <= 57) return undefined
          } else if (data.startsWith('model', from)) {
            if (model < 0 && data.startsWith(upstreamField, from - 1)) model = from - 1
          } else if (data.startsWith('error', from)) return undefined
          break
        case 7:
          if (data.startsWith('content', from)) {
            if (emptyString(data, value)) return undefined
            if (v === QUOTE) content = true
          } else if (v === QUOTE && data.startsWith('refusal', from)) return undefined
          break
        case 10:
          if (data.startsWith('tool_calls', from)) return undefined
          break
        case 13:
          if (v === QUOTE && data.startsWith('finish_reason', from)) return undefined
          break
      }
    } else if (c === 123 || c === 91) depth++
    else if ((c === 125 || c === 93) && --depth < 0) return undefined
  }
  if (depth !== 0 || !content || choices !== 1 || model < 0) return undefined
  return data.slice(0, model) + modelField + data.slice(model + upstreamField.length)
}

/** Translates an OpenAI-style `data:` stream ending in `data: [DONE]`. */
export class OpenAIStyleStream implements StreamTranslator {
  private started = false
  /** `"model":"provider/model-id"`, when chunks may be passed on with only their model renamed. */
  private readonly modelField: string | undefined
  /** The upstream's `"model":"…"` field as its first chunk wrote it (the one a passed-on chunk must hold). */
  private upstreamField = '"model":""'
  /** Chunks passed on: a chat client's stream reaches the log as the text it received (src/apis/relay-transcript.ts). */
  readonly reader: RelayReader | undefined

  /** `passOnAs`: the model name clients see; given, plain text chunks are passed on as `raw` parts. */
  constructor(
    private readonly opts: OpenAIStyleOptions,
    passOnAs?: string,
  ) {
    this.modelField = passOnAs === undefined ? undefined : `"model":${JSON.stringify(passOnAs)}`
    this.reader = passOnAs === undefined ? undefined : 'openai-chat'
  }

  push(ev: SseEvent): StreamPart[] {
    if (ev.data === '[DONE]') return [{ type: 'end' }]
    if (this.started && this.modelField && ev.event === undefined) {
      const json = passOn(ev.data, this.upstreamField, this.modelField)
      if (json !== undefined) return [{ type: 'raw', json }]
    }
    const json = parseJson(ev.data)
    if (!isRecord(json)) {
      return [{ type: 'failure', failure: { kind: 'provider_error', message: `malformed stream event: ${clip(ev.data, 200)}` } }]
    }
    if (json.error !== undefined || ev.event === 'error') {
      const e = isRecord(json.error) ? json.error : json
      const message = typeof e.message === 'string' ? e.message : clip(ev.data, 300)
      return [{ type: 'failure', failure: { kind: 'provider_error', message: `error event in stream: ${message}` } }]
    }
    const parts: StreamPart[] = []
    // The answer's id, model and time come from its first chunk that has any: Azure's stream opens with a chunk of
    // no choices and an empty id (its prompt filter results), and the chunks passed on keep the upstream's id.
    if (!this.started && (json.id || (Array.isArray(json.choices) && json.choices.length))) {
      this.started = true
      const meta: StreamPart = { type: 'meta' }
      if (typeof json.id === 'string' && json.id) meta.id = json.id
      if (typeof json.model === 'string') {
        meta.model = json.model
        this.upstreamField = `"model":${JSON.stringify(json.model)}`
      }
      if (typeof json.created === 'number') meta.created = json.created
      parts.push(meta)
    }
    if (Array.isArray(json.choices) && json.choices.length) {
      const choices = json.choices.filter(isRecord).map(
        (c, i): ChunkChoice => {
          const choice: ChunkChoice = {
            index: typeof c.index === 'number' ? c.index : i,
            delta: readDelta(c.delta, this.opts),
            finish_reason: this.opts.mapFinish(c.finish_reason),
          }
          if (this.opts.passThrough && c.logprobs !== undefined) choice.logprobs = c.logprobs
          return choice
        },
      )
      parts.push({ type: 'choices', choices })
    }
    const usage = readUsage(json.usage)
    if (usage) parts.push({ type: 'usage', usage })
    return parts
  }

  end(): StreamPart[] {
    return []
  }
}
