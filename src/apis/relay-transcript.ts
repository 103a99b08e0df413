// A streamed answer's transcript (its text, tool calls, finish reason): folded from chat choices as they pass, or assembled from a relayed stream's events by the provider's own translator (on the log thread; on the serving thread only when a usage estimate or a structured-output check needs the text).

import { AnthropicStream } from '../providers/anthropic/stream'
import type { StreamTranslator } from '../providers/adapter'
import type { ChunkChoice, FinishReason, ToolCall } from '../providers/openai-types'
import { mapOpenAIFinishReason, OpenAIStyleStream } from '../providers/openai/response'
import { SseDecoder } from '../sse/parse'
import type { StreamedAnswer } from '../store/log-sink'
import { ResponsesEvents } from './responses/pass-through'

/** The translators a relayed stream's events are read with, by name (the name crosses to the log thread). */
const READERS = {
  anthropic: (): StreamTranslator => new AnthropicStream(false),
  responses: (): StreamTranslator => new ResponsesEvents(),
  /** A chat client's stream as gw wrote it (chunks passed on with their model renamed, and gw's own). */
  'openai-chat': (): StreamTranslator => new OpenAIStyleStream({ mapFinish: mapOpenAIFinishReason, passThrough: true }),
}

export type RelayReader = keyof typeof READERS

/** A stream's text as the client received it (its relayed bytes and what gw wrote), and the translator that reads it. */
export interface RelayedEvents {
  reader: RelayReader
  text: string
}

export interface Transcript {
  content: string
  toolCalls: ToolCall[]
  finish: FinishReason | null
}

/** Adds the choice-0 text, tool-call pieces and finish reason of one chunk's choices. */
export function addChoices(t: Transcript, choices: ChunkChoice[]): void {
  for (const c of choices) {
    if (c.index !== 0) continue
    if (c.delta.content) t.content += c.delta.content
    if (c.delta.refusal) t.content += c.delta.refusal
    for (const tc of c.delta.tool_calls ?? []) {
      const slot = (t.toolCalls[tc.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } })
      if (tc.id) slot.id = tc.id
      if (tc.function?.name) slot.function.name += tc.function.name
      if (tc.function?.arguments) slot.function.arguments += tc.function.arguments
    }
    if (c.finish_reason) t.finish = c.finish_reason
  }
}

/** The transcript of a relayed stream: its events read again, in order, by a fresh translator. */
export function relayTranscript(events: RelayedEvents): Transcript {
  const t: Transcript = { content: '', toolCalls: [], finish: null }
  const translator = READERS[events.reader]()
  const decoder = new SseDecoder()
  const all = decoder.pushText(events.text)
  all.push(...decoder.end())
  for (const ev of all) for (const p of translator.push(ev)) if (p.type === 'choices') addChoices(t, p.choices)
  return t
}

/** What the log keeps of a streamed answer (key order: content, tool_calls, finish_reason). */
export function streamedAnswer(t: Transcript): StreamedAnswer {
  return { content: t.content, ...(t.toolCalls.length ? { tool_calls: t.toolCalls } : {}), finish_reason: t.finish }
}
