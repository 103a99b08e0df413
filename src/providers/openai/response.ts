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
import { type SseEvent, SseDecoder } from '../../sse/parse'
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
const LF = 10
const utf8 = new TextEncoder()
const utf8in = new TextDecoder()
const key = (k: string) => utf8.encode(k)
const KEYS = {
  usage: key('usage'),
  index: key('index'),
  model: key('model'),
  error: key('error'),
  content: key('content'),
  refusal: key('refusal'),
  tool_calls: key('tool_calls'),
  finish_reason: key('finish_reason'),
}
const DATA = key('data: ')

/** Whether `buf` holds `s` at `at`. */
function holds(buf: Uint8Array, at: number, s: Uint8Array): boolean {
  if (at < 0 || at + s.length > buf.length) return false
  for (let i = 0; i < s.length; i++) if (buf[at + i] !== s[i]) return false
  return true
}

/**
 * Where the upstream's model field is in the JSON of `buf[from, to)`, a chunk of plain text for choice
 * 0 that can go out as it came with only that field renamed; -1 when the chunk needs a full read: a
 * cheap pass per event instead of decode, parse, translate, rebuild, serialise and encode (most of a
 * stream).
 *
 * One walk over the bytes (a multi-byte character never holds an ASCII byte, so quotes, backslashes and
 * brackets are found as in text): every `{` and `[` outside strings closed in order and no string left
 * open (a chunk cut short, or otherwise broken this way, is read, so that its failure is acted on:
 * PRODUCT §4, a failure mid-stream never ends in a clean finish); its keys looked at as they pass. It
 * needs a full read when it holds what gw acts on or cannot pass on as is: a finish reason, usage, a
 * refusal, tool calls, an error (a key, or the value `"error"`), empty content, a choice other than
 * index 0 or more than one, or JSON in a form other than compact (a key not followed at once by `:`).
 * It must hold non-empty content and the upstream's model field exactly as the first chunk wrote it.
 */
function passableAt(buf: Uint8Array, from: number, to: number, upstreamField: Uint8Array): number {
  let depth = 0
  let content = false
  let choices = 0
  let model = -1
  for (let i = from; i < to; i++) {
    const c = buf[i]
    if (c === QUOTE) {
      const start = i + 1
      for (i = start; i < to; i++) {
        const d = buf[i]
        if (d === 92) i++ // a backslash escapes the next byte
        else if (d === QUOTE) break
      }
      if (i >= to) return -1
      const after = buf[i + 1]
      const length = i - start
      if (after !== COLON) {
        // A value: followed by `,`, `}` or `]` in compact JSON.
        if (after !== 44 && after !== 125 && after !== 93) return -1
        if (length === 5 && holds(buf, start, KEYS.error)) return -1
        continue
      }
      const value = i + 2
      const v = buf[value]
      switch (length) {
        case 5:
          if (holds(buf, start, KEYS.usage)) {
            if (v === 123) return -1
          } else if (holds(buf, start, KEYS.index)) {
            // Choice 0 only, once (a second `index` is another choice or a tool call).
            if (++choices > 1 || v !== 48) return -1
            const next = buf[value + 1] as number
            if (next >= 48 && next <= 57) return -1
          } else if (holds(buf, start, KEYS.model)) {
            if (model < 0 && holds(buf, start - 1, upstreamField)) model = start - 1
          } else if (holds(buf, start, KEYS.error)) return -1
          break
        case 7:
          if (holds(buf, start, KEYS.content)) {
            if (v === QUOTE && buf[value + 1] === QUOTE) return -1
            if (v === QUOTE) content = true
          } else if (v === QUOTE && holds(buf, start, KEYS.refusal)) return -1
          break
        case 10:
          if (holds(buf, start, KEYS.tool_calls)) return -1
          break
        case 13:
          if (v === QUOTE && holds(buf, start, KEYS.finish_reason)) return -1
          break
      }
    } else if (c === 123 || c === 91) depth++
    else if ((c === 125 || c === 93) && --depth < 0) return -1
  }
  if (depth !== 0 || !content || choices !== 1 || model < 0) return -1
  return model
}

/** Whether `buf[from, to)`, one whole event and its blank line, is a single `data: ` line (the usual form). */
const oneDataLine = (buf: Uint8Array, from: number, to: number) => holds(buf, from, DATA) && buf.indexOf(LF, from) === to - 2

/** The events of `buf[from, to)`, one whole event and its blank line, decoded (`oneLine`: see oneDataLine, without a decoder). */
function eventsIn(buf: Uint8Array, from: number, to: number, oneLine: boolean): SseEvent[] {
  if (oneLine) return [{ event: undefined, data: utf8in.decode(buf.subarray(from + DATA.length, to - 2)) }]
  return new SseDecoder().pushText(utf8in.decode(buf.subarray(from, to)))
}

/** `"model":<name as JSON>` as bytes, made once per name: each stream needs two (at most 1,000 names kept; others are made each time). */
function modelFieldOf(name: string): Uint8Array {
  let field = modelFields.get(name)
  if (!field) {
    field = key(`"model":${JSON.stringify(name)}`)
    if (modelFields.size < 1000) modelFields.set(name, field)
  }
  return field
}
const modelFields = new Map<string, Uint8Array>()

/** Translates an OpenAI-style `data:` stream ending in `data: [DONE]`. */
export class OpenAIStyleStream implements StreamTranslator {
  private started = false
  /** `"model":"provider/model-id"`, when chunks may be passed on with only their model renamed. */
  private readonly modelField: Uint8Array | undefined
  /** The upstream's `"model":"…"` field as its first chunk wrote it (the one a passed-on chunk must hold). */
  private upstreamField = modelFieldOf('')
  private passing = false
  /** Some chunk went out as bytes: the log reads the client's text (src/apis/relay-transcript.ts). */
  private passed = false
  /** A choice has said how it finished: `[DONE]` before that is a stream cut short (PRODUCT §4a). */
  private finished = false

  /** `passOnAs`: the model name clients see; given, plain text chunks can be passed on as bytes (passBytes). */
  constructor(
    private readonly opts: OpenAIStyleOptions,
    passOnAs?: string,
  ) {
    this.modelField = passOnAs === undefined ? undefined : modelFieldOf(passOnAs)
  }

  /** See StreamTranslator.passesBytes: set by the chat endpoints (src/apis/chat/chunk-pass.ts); stays off without a name to pass chunks on as (Mistral). */
  get passesBytes(): boolean {
    return this.passing
  }

  set passesBytes(on: boolean) {
    this.passing = on && this.modelField !== undefined
  }

  get reader(): RelayReader | undefined {
    return this.passed || this.passing ? 'openai-chat' : undefined
  }

  /**
   * Whole events (each ending in its blank line, no CR): after the first chunk, those of plain text
   * go on as bytes with their model renamed, in one `bytes` part per run; the others are read.
   */
  passBytes(buf: Uint8Array): StreamPart[] {
    const parts: StreamPart[] = []
    let run = -1
    const models: number[] = []
    for (let at = 0; at < buf.length; ) {
      let end = at
      for (;;) {
        end = buf.indexOf(LF, end)
        if (end < 0 || buf[end + 1] === LF) break
        end++
      }
      end = end < 0 ? buf.length : end + 2
      const oneLine = oneDataLine(buf, at, end)
      const model = this.started && oneLine ? passableAt(buf, at + DATA.length, end - 2, this.upstreamField) : -1
      if (model >= 0) {
        if (run < 0) run = at
        models.push(model)
      } else {
        if (run >= 0) parts.push(this.renamed(buf, run, at, models))
        run = -1
        for (const ev of eventsIn(buf, at, end, oneLine)) for (const p of this.push(ev)) parts.push(p)
      }
      at = end
    }
    if (run >= 0) parts.push(this.renamed(buf, run, buf.length, models))
    return parts
  }

  /** `buf[from, to)` with the upstream's model field at each of `models` renamed; the list is emptied. */
  private renamed(buf: Uint8Array, from: number, to: number, models: number[]): StreamPart {
    this.passed = true
    const upstream = this.upstreamField
    const field = this.modelField as Uint8Array
    let bytes: Uint8Array
    if (holds(field, 0, upstream) && field.length === upstream.length) bytes = buf.subarray(from, to)
    else {
      bytes = new Uint8Array(to - from + models.length * (field.length - upstream.length))
      let at = from
      let out = 0
      for (const m of models) {
        bytes.set(buf.subarray(at, m), out)
        out += m - at
        bytes.set(field, out)
        out += field.length
        at = m + upstream.length
      }
      bytes.set(buf.subarray(at, to), out)
    }
    models.length = 0
    return { type: 'bytes', bytes, content: true }
  }

  push(ev: SseEvent): StreamPart[] {
    if (ev.data === '[DONE]')
      return this.finished ? [{ type: 'end' }] : [{ type: 'failure', failure: { kind: 'provider_error', message: 'the stream ended ([DONE]) before any choice had finished' } }]
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
        this.upstreamField = modelFieldOf(json.model)
      }
      if (typeof json.created === 'number') meta.created = json.created
      parts.push(meta)
    }
    if (Array.isArray(json.choices) && json.choices.length) {
      const choices = json.choices.filter(isRecord).map(
        (c, i): ChunkChoice => {
          if (c.finish_reason != null) this.finished = true
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
