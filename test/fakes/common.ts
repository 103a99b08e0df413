// Helpers shared by the fake upstreams: ids, word counting, text splitting, schema-driven sample values, SSE framing and reply planning.

import type { FakeProtocol, FinishKind, Obj, ReplyBehavior, Reply, RequestCtx, ToolCallSpec } from './types.ts'

export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

export const isStr = (v: unknown): v is string => typeof v === 'string'

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
const HEX = '0123456789abcdef'

function randomFrom(alphabet: string, n: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(n))
  let s = ''
  for (const b of bytes) s += alphabet[b % alphabet.length]
  return s
}

export const randomAlnum = (n: number): string => randomFrom(ALNUM, n)
export const randomHex = (n: number): string => randomFrom(HEX, n)
export const randomBase64 = (bytes: number): string =>
  Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString('base64')

export const nowSeconds = (): number => Math.floor(Date.now() / 1000)

/** Whitespace-separated words: the fake's token unit. */
export function countWords(text: string): number {
  const m = text.match(/\S+/g)
  return m ? m.length : 0
}

/** Concatenated text of a content value: a string, or an array of parts carrying `text` (or nested `content`). */
export function textOf(content: unknown): string {
  if (isStr(content)) return content
  if (Array.isArray(content)) return content.map(textOf).filter((s) => s.length > 0).join(' ')
  if (isObj(content)) {
    if (isStr(content.text)) return content.text
    if (content.content !== undefined) return textOf(content.content)
  }
  return ''
}

/**
 * Split text into `chunks` streaming pieces whose concatenation is the text.
 * Default: one piece per word, the leading whitespace going with the word ("Hello", " from", …).
 */
export function splitText(text: string, chunks?: number): string[] {
  if (text.length === 0) return []
  const words = text.match(/\s*\S+/g) ?? [text]
  const covered = words.join('').length
  if (covered < text.length) words[words.length - 1] += text.slice(covered)
  if (chunks === undefined || chunks <= 0) return words
  if (chunks <= words.length) {
    const out: string[] = []
    for (let i = 0; i < chunks; i++) {
      const from = Math.floor((i * words.length) / chunks)
      const to = Math.floor(((i + 1) * words.length) / chunks)
      out.push(words.slice(from, to).join(''))
    }
    return out
  }
  const n = Math.min(chunks, text.length)
  const out: string[] = []
  for (let i = 0; i < n; i++) out.push(text.slice(Math.floor((i * text.length) / n), Math.floor(((i + 1) * text.length) / n)))
  return out
}

/** Split a JSON string into at least two fragments (when it has at least two characters). */
export function splitJson(json: string): string[] {
  if (json.length < 2) return [json]
  const n = json.length >= 12 ? 3 : 2
  const out: string[] = []
  for (let i = 0; i < n; i++) out.push(json.slice(Math.floor((i * json.length) / n), Math.floor(((i + 1) * json.length) / n)))
  return out
}

/** Resolve a local `$ref` (#/$defs/x, #/definitions/x) against the root schema. */
function deref(schema: Obj, root: unknown): Obj {
  const ref = schema.$ref
  if (!isStr(ref) || !ref.startsWith('#/')) return schema
  let cur: unknown = root
  for (const seg of ref.slice(2).split('/')) cur = isObj(cur) ? cur[seg.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined
  return isObj(cur) ? cur : {}
}

/** A simple value satisfying the schema's types and `required` properties (string "x", number 1, true, {}, []). */
export function sampleFromSchema(schema: unknown, root: unknown = schema, depth = 0): unknown {
  if (!isObj(schema) || depth > 12) return {}
  const s = deref(schema, root)
  if ('const' in s) return s.const
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0]
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    const alts = s[key]
    if (Array.isArray(alts) && alts.length > 0 && s.type === undefined && s.properties === undefined) {
      const nonNull = alts.find((a) => !(isObj(a) && a.type === 'null')) ?? alts[0]
      return sampleFromSchema(nonNull, root, depth + 1)
    }
  }
  let type = s.type
  if (Array.isArray(type)) type = type.find((t) => t !== 'null') ?? type[0]
  if (type === undefined && isObj(s.properties)) type = 'object'
  if (type === undefined && s.items !== undefined) type = 'array'
  switch (isStr(type) ? type.toLowerCase() : undefined) {
    case 'string':
      return 'x'
    case 'number':
    case 'integer':
      return 1
    case 'boolean':
      return true
    case 'null':
      return null
    case 'array': {
      const min = typeof s.minItems === 'number' ? s.minItems : 0
      return Array.from({ length: Math.min(min, 3) }, () => sampleFromSchema(s.items, root, depth + 1))
    }
    case 'object':
    default: {
      const out: Obj = {}
      const props = isObj(s.properties) ? s.properties : {}
      const required = Array.isArray(s.required) ? s.required.filter(isStr) : []
      for (const name of required) out[name] = sampleFromSchema(props[name], root, depth + 1)
      return out
    }
  }
}

/** One SSE event. `eol` is '\n' for most providers, '\r\n' for Gemini. */
export function sse(data: string, event?: string, eol = '\n'): string {
  return `${event === undefined ? '' : `event: ${event}${eol}`}data: ${data}${eol}${eol}`
}

export function jsonReply(status: number, body: unknown, headers: Record<string, string> = {}): {
  status: number
  body: string
  headers: Record<string, string>
} {
  return { status, body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } }
}

export const REASONING_RE = /^(o1|o3|o4|gpt-5|gpt-6)/

/** Turn a reply behaviour plus the validated request into the concrete reply. */
export function planReply(
  provider: FakeProtocol,
  refusalText: string,
  b: ReplyBehavior,
  ctx: RequestCtx,
): Reply {
  let finish: FinishKind | undefined = b.finish
  let toolCalls: ToolCallSpec[] = b.toolCalls ? [...b.toolCalls] : []
  let text: string
  const sampleTool = (name: string | undefined): ToolCallSpec => {
    const decl = (name ? ctx.tools.find((t) => t.name === name) : undefined) ?? ctx.tools[0]
    if (!decl) return { name: name || 'fake_tool', arguments: {} }
    const args = sampleFromSchema(decl.schema)
    return { name: decl.name, arguments: isObj(args) ? args : {} }
  }
  if (b.text !== undefined) text = b.text
  else if (finish === 'refusal' || finish === 'content_filter') text = finish === 'refusal' ? refusalText : ''
  else if (toolCalls.length > 0 || finish === 'tool_calls') text = ''
  else if (ctx.forcedTool !== undefined && ctx.tools.length > 0) {
    text = ''
    toolCalls = [sampleTool(ctx.forcedTool)]
  } else if (ctx.jsonSchema !== undefined) {
    text = JSON.stringify(
      ctx.jsonSchema === null ? { reply: `Hello from fake-${provider} (${ctx.model}).` } : sampleFromSchema(ctx.jsonSchema),
    )
  } else text = `Hello from fake-${provider} (${ctx.model}).`

  if (finish === 'tool_calls' && toolCalls.length === 0) toolCalls = [sampleTool(undefined)]
  if (finish === undefined) finish = toolCalls.length > 0 ? 'tool_calls' : 'stop'

  // A token limit smaller than the answer truncates it, like the real models do.
  if (b.finish === undefined && toolCalls.length === 0 && ctx.maxTokens !== undefined && b.text === undefined) {
    const words = text.match(/\s*\S+/g) ?? []
    if (words.length > ctx.maxTokens) {
      text = words.slice(0, Math.max(0, ctx.maxTokens)).join('')
      finish = 'length'
    }
  }

  const thinkingText = ctx.showThinking ? 'Let me think about this request.' : ''
  const completion = countWords(text) + 5 * toolCalls.length
  const usage = {
    prompt: b.usage?.prompt ?? ctx.promptTokens,
    completion: b.usage?.completion ?? completion,
    cached: b.usage?.cached ?? 0,
    cacheWrite: b.usage?.cacheWrite ?? 0,
    thinking: b.usage?.thinking ?? countWords(thinkingText),
  }
  return { model: ctx.model, text, pieces: splitText(text, b.chunks), toolCalls, finish, thinkingText, usage }
}

/** Sleep that ends early when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted) return Promise.resolve()
  return new Promise((resolve) => {
    const t = setTimeout(done, ms)
    function done(): void {
      clearTimeout(t)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done, { once: true })
  })
}

/** Resolves when any of the signals aborts. */
export function untilAborted(...signals: AbortSignal[]): Promise<void> {
  return new Promise((resolve) => {
    for (const s of signals) {
      if (s.aborted) return resolve()
      s.addEventListener('abort', () => resolve(), { once: true })
    }
  })
}

/** The status-derived default error kind, when the behaviour gives none. */
export function defaultErrorType(status: number): string {
  if (status === 429) return 'rate_limit'
  if (status === 529) return 'overloaded'
  if (status === 401) return 'auth'
  if (status === 403) return 'permission'
  if (status === 404) return 'not_found'
  if (status === 400 || status === 422) return 'bad_request'
  if (status === 502 || status === 503 || status === 504) return 'unavailable'
  if (status >= 500) return 'server'
  return 'bad_request'
}

/** Mask an API key the way OpenAI does in its 401 message. */
export function maskKey(key: string): string {
  if (key.length <= 8) return '*'.repeat(key.length)
  return `${key.slice(0, 3)}${'*'.repeat(Math.min(12, key.length - 7))}${key.slice(-4)}`
}
