// What the response cache keeps of an answer (PRODUCT §19), as the JSON text it is stored as: made on the
// serving thread from a JSON answer; from a relayed stream's text as the client received it on the log
// thread that writes it (src/store/sqlite/response-cache.ts), or on the serving thread for a repeat of
// the request that comes before that.

import { relayTranscript, streamedAnswer } from '../apis/relay-transcript'
import type { UpstreamCompletion } from '../providers/adapter'
import type { FinishReason, ToolCall, Usage } from '../providers/openai-types'
import type { CachePut, KeptStream } from '../store/types'

/** An answer as kept: enough to answer again as JSON or as a stream, in any endpoint's shape. */
export interface Kept {
  v: 1
  /** `provider/model-id` that answered. */
  model: string
  completion: UpstreamCompletion
  usage: Usage
  /** What it cost when it was answered (the cost a hit saves); null when unknown. */
  costUsd: number | null
}

/** Finish reasons of answers that are kept: not cut short by the token limit, not filtered. */
const COMPLETE: ReadonlySet<FinishReason | null> = new Set(['stop', 'tool_calls', 'function_call'])

/**
 * The kept answer's JSON text; undefined when it is not kept: no choices (an embeddings answer has its
 * body as `native` instead), a choice that did not finish or refused, or past `maxEntryBytes`.
 */
export function keptText(model: string, c: UpstreamCompletion | undefined, usage: Usage, costUsd: number | null, maxEntryBytes: number): string | undefined {
  if (!c || (!c.choices.length && c.native === undefined) || !c.choices.every((ch) => COMPLETE.has(ch.finish_reason) && ch.message.refusal === null)) return undefined
  const kept: Kept = { v: 1, model, completion: { ...c, usage: undefined }, usage, costUsd }
  const text = JSON.stringify(kept)
  // UTF-8 takes at most 3 bytes per UTF-16 unit: the bytes are counted only when the text might pass the bound.
  if (text.length > maxEntryBytes || (text.length * 3 > maxEntryBytes && Buffer.byteLength(text) > maxEntryBytes)) return undefined
  return text
}

/** A streamed answer's transcript (the log's response body: text, tool calls, finish reason) as a completion. */
export function streamedCompletion(answer: unknown): UpstreamCompletion | undefined {
  const t = answer as { content: string; tool_calls?: ToolCall[]; finish_reason: FinishReason | null } | undefined
  if (!t || typeof t.content !== 'string') return undefined
  return {
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: t.content || (t.tool_calls ? null : ''), refusal: null, ...(t.tool_calls ? { tool_calls: t.tool_calls } : {}) },
        finish_reason: t.finish_reason ?? 'stop',
        logprobs: null,
      },
    ],
  }
}

/** A relayed stream's kept answer, read from the text the client received (its transcript, as the log reads it). */
function keptFromStream(s: KeptStream): string | undefined {
  return keptText(s.model, streamedCompletion(streamedAnswer(relayTranscript(s.events))), s.usage, s.costUsd, s.maxEntryBytes)
}

/** The answer a put stores: its text, or a relayed stream's, made once; undefined when a stream's is not kept (not complete, too large). */
export function keptValue(p: CachePut): string | undefined {
  if ('value' in p) return p.value
  p.made ??= keptFromStream(p.stream) ?? ''
  return p.made || undefined
}
