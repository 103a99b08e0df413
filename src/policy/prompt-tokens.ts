// Prompt token counts for policy limits, with a real BPE tokenizer (o200k_base), loaded on first need, bounded in work.

import type { ChatMessage, ChatRequest } from '../providers/openai-types'
import { messageText } from '../tokens'

type Counter = (text: string) => number
let loading: Promise<Counter> | undefined

/** Special tokens such as `<|endoftext|>` are counted as the plain text they are. */
const PLAIN = { disallowedSpecial: new Set<string>() }

/**
 * Loading the tokenizer (its o200k_base tables) takes time and memory, so it is loaded only when an org
 * has a `maxPromptTokens` policy; `warmTokenizer` starts that early (when such a policy is read).
 */
export function warmTokenizer(): Promise<Counter> {
  loading ??= import('gpt-tokenizer/encoding/o200k_base').then((m) => (text: string) => m.countTokens(text, PLAIN))
  return loading
}

/** BPE work grows faster than linearly with the length of one unbroken run, so runs are cut at this length. */
const MAX_RUN_CHARS = 256
/** Text is handed to the tokenizer in slices of at most this many characters, cut at whitespace. */
const SLICE_CHARS = 8_192
/** The event loop is given back after this much counting. */
const YIELD_AFTER_MS = 4

const LONG_RUN = new RegExp(`\\S{${MAX_RUN_CHARS + 1},}`, 'g')

/** Pieces of `text` the tokenizer counts cheaply: slices cut at whitespace, long unbroken runs cut in MAX_RUN_CHARS. */
function* pieces(text: string): Generator<string> {
  for (let i = 0; i < text.length; ) {
    let end = Math.min(i + SLICE_CHARS, text.length)
    if (end < text.length) {
      let ws = end
      while (ws > i + SLICE_CHARS / 2 && !/\s/.test(text[ws] as string)) ws--
      if (ws > i + SLICE_CHARS / 2) end = ws
    }
    const slice = text.slice(i, end)
    let from = 0
    for (const m of slice.matchAll(LONG_RUN)) {
      if (m.index > from) yield slice.slice(from, m.index)
      for (let j = 0; j < m[0].length; j += MAX_RUN_CHARS) yield m[0].slice(j, j + MAX_RUN_CHARS)
      from = m.index + m[0].length
    }
    if (from < slice.length) yield from === 0 ? slice : slice.slice(from)
    i = end
  }
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

/** The texts of a request that reach a provider as prompt, with OpenAI's per-message framing. */
function* promptTexts(body: ChatRequest, extra: unknown): Generator<string | number> {
  yield 3
  for (const m of body.messages) {
    const { role, content, name, tool_calls, ...rest } = m
    yield 3
    yield role
    yield messageText(m)
    if (name) {
      yield 1
      yield typeof name === 'string' ? name : JSON.stringify(name)
    }
    if (tool_calls) yield JSON.stringify(tool_calls)
    if (Array.isArray(content))
      for (const p of content) {
        if (p.type === 'image_url') yield 85
        else if (p.type !== 'text') yield JSON.stringify(p)
      }
    if (Object.keys(rest).length) yield JSON.stringify(rest)
  }
  const { messages: _m, model: _model, ...fields } = body
  if (Object.keys(fields).length) yield JSON.stringify(fields)
  if (extra !== undefined) yield JSON.stringify(extra)
}

/** How a count is bounded: it stops once past `stopAbove`, and when `signal` aborts (the client left). */
export interface TokenCountOptions {
  stopAbove?: number
  signal?: AbortSignal
}

/** A text has no more tokens than UTF-8 bytes; numbers are tokens already. */
function bytesAtMost(items: Iterable<string | number>): number {
  let n = 0
  for (const item of items) n += typeof item === 'number' ? item : Buffer.byteLength(item)
  return n
}

/**
 * The most tokens countPromptTokens can find in a request, at the cost of measuring its texts: a token
 * is at least one UTF-8 byte, so a text has no more tokens than bytes. A prompt within a limit by
 * this measure is within it by the count too, and need not be counted.
 */
export function promptTokensAtMost(body: ChatRequest, extra?: unknown): number {
  return bytesAtMost(promptTexts(body, extra))
}

/** The most tokens countTextTokens can find in these texts (their bytes). */
export function textTokensAtMost(texts: readonly string[]): number {
  return bytesAtMost(texts)
}

/**
 * Tokens of a request as OpenAI counts chat input: the text of each message plus 3 tokens of
 * framing per message and 3 priming the answer; tool calls, tools, other fields and `extra`
 * (the output schema) by their JSON; each image 85 tokens (the low-detail figure). Close for the
 * other providers. Counting stops as soon as the total passes `stopAbove`, gives the event loop
 * back every few milliseconds, and stops when `signal` aborts (the client left).
 */
export function countPromptTokens(body: ChatRequest, opts: TokenCountOptions & { extra?: unknown } = {}): Promise<number> {
  return countItems(promptTexts(body, opts.extra), opts)
}

/** Tokens of plain texts (embedding inputs): no framing; bounded as countPromptTokens is. */
export function countTextTokens(texts: readonly string[], opts: TokenCountOptions = {}): Promise<number> {
  return countItems(texts, opts)
}

/** Texts counted by the tokenizer, numbers taken as counts. */
async function countItems(items: Iterable<string | number>, opts: TokenCountOptions): Promise<number> {
  const count = await warmTokenizer()
  opts.signal?.throwIfAborted()
  const stopAbove = opts.stopAbove ?? Infinity
  let n = 0
  let since = performance.now()
  for (const item of items) {
    if (typeof item === 'number') {
      n += item
      continue
    }
    for (const piece of pieces(item)) {
      n += count(piece)
      if (n > stopAbove) return n
      if (performance.now() - since > YIELD_AFTER_MS) {
        await nextTurn()
        opts.signal?.throwIfAborted()
        since = performance.now()
      }
    }
  }
  return n
}
