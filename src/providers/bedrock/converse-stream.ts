// ConverseStream's event-stream frames (messageStart … messageStop, metadata) → OpenAI chunks, as they arrive.
// Frames reach the translator as events (`EventStreamEvents`: the event type, the payload's text); tool
// calls get their own 0-based indexes; the answer is complete once messageStop and metadata (usage) came.

import type { SseEvent } from '../../sse/parse'
import type { StreamDecoder, StreamPart, StreamTranslator } from '../adapter'
import type { ChunkDelta, FinishReason } from '../openai-types'
import { JSON_TOOL } from '../json-output'
import { clip, isRecord, parseJson } from '../upstream-errors'
import { bedrockFailure, finishReason, toUsage } from './converse'
import { EventStreamDecoder, type EventStreamFrame } from './event-stream'

const text = new TextDecoder()
const NO_HEADERS = new Headers()

/** Names for the frames that are not events; an event frame's name is its `:event-type` (lower camel case, never these). */
const EXCEPTION = '!exception'
const ERROR = '!error'
const FAULT = '!fault'

function toEvent(f: EventStreamFrame): SseEvent {
  switch (f.type) {
    case 'event':
      return { event: f.eventType, data: text.decode(f.payload) }
    case 'exception':
      return { event: EXCEPTION, data: JSON.stringify({ type: f.exceptionType, payload: text.decode(f.payload) }) }
    case 'error':
      return { event: ERROR, data: `${f.errorCode}: ${f.errorMessage}` }
    case 'fault':
      return { event: FAULT, data: f.message }
  }
}

/** The body of a ConverseStream answer (`application/vnd.amazon.eventstream`) as events for ConverseStream. */
export class EventStreamEvents implements StreamDecoder {
  private readonly frames = new EventStreamDecoder()
  /** Never set: a frame over the decoder's bounds is a fault event, which the translator fails on. */
  readonly tooLarge: string | undefined = undefined
  push(chunk: Uint8Array): SseEvent[] {
    return this.frames.push(chunk).map(toEvent)
  }
  end(): SseEvent[] {
    return this.frames.end().map(toEvent)
  }
}

const delta = (d: ChunkDelta, finish: FinishReason | null = null): StreamPart => ({
  type: 'choices',
  choices: [{ index: 0, delta: d, finish_reason: finish }],
})

const fail = (message: string): StreamPart => ({ type: 'failure', failure: { kind: 'provider_error', message } })

/** Exception names in a stream are lower camel case (`throttlingException`); as error types they are upper. */
const upperFirst = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)

export class ConverseStream implements StreamTranslator {
  /** Bedrock content block index → OpenAI tool-call index. */
  private readonly toolIndex = new Map<number, number>()
  /** The content block of the JSON tool, whose input is streamed as the answer's content. */
  private jsonBlock: number | undefined
  private stopped = false
  private ended = false

  /** `jsonTool`: structured output was asked for through the JSON tool (converse.ts). */
  constructor(private readonly jsonTool = false) {}

  /** The parts one frame gives. */
  push(ev: SseEvent): StreamPart[] {
    if (this.ended) return []
    if (ev.event === FAULT) return [fail(`malformed event stream: ${ev.data}`)]
    if (ev.event === ERROR) return [fail(`stream error ${clip(ev.data, 300)}`)]
    if (ev.event === EXCEPTION) {
      const e = parseJson(ev.data) as { type: string; payload: string }
      const body = parseJson(e.payload)
      const message = isRecord(body) && typeof body.message === 'string' ? body.message : e.payload
      // Named as the other providers' stream errors are (an exception frame is Bedrock's error event).
      const f = bedrockFailure(0, upperFirst(e.type), message, NO_HEADERS)
      return [{ type: 'failure', failure: { ...f, message: `error event in stream: ${f.message}`, status: undefined } }]
    }
    const json = parseJson(ev.data)
    if (!isRecord(json)) return [fail(`malformed stream event ${ev.event}: ${clip(ev.data, 200)}`)]
    switch (ev.event) {
      case 'messageStart':
        return [delta({ role: 'assistant', content: '' })]
      case 'contentBlockStart':
        return this.blockStart(json)
      case 'contentBlockDelta':
        return this.blockDelta(json)
      case 'contentBlockStop':
        return []
      case 'messageStop': {
        this.stopped = true
        const jsonOnly = this.jsonBlock !== undefined && this.toolIndex.size === 0 && json.stopReason === 'tool_use'
        return [delta({}, jsonOnly ? 'stop' : finishReason(json.stopReason))]
      }
      case 'metadata': {
        const parts: StreamPart[] = [{ type: 'usage', usage: toUsage(json.usage) }]
        if (this.stopped) {
          this.ended = true
          parts.push({ type: 'end' })
        }
        return parts
      }
      default:
        return []
    }
  }

  /** The body closed: an answer that saw messageStop is complete even without metadata. */
  end(): StreamPart[] {
    if (this.ended) return []
    this.ended = true
    return this.stopped ? [{ type: 'end' }] : []
  }

  private blockStart(json: Record<string, unknown>): StreamPart[] {
    const start = isRecord(json.start) ? json.start : {}
    if (!isRecord(start.toolUse)) return []
    if (this.jsonTool && start.toolUse.name === JSON_TOOL) {
      this.jsonBlock = Number(json.contentBlockIndex)
      return []
    }
    const k = this.toolIndex.size
    this.toolIndex.set(Number(json.contentBlockIndex), k)
    const id = String(start.toolUse.toolUseId ?? '')
    const name = String(start.toolUse.name ?? '')
    return [delta({ tool_calls: [{ index: k, id, type: 'function', function: { name, arguments: '' } }] })]
  }

  private blockDelta(json: Record<string, unknown>): StreamPart[] {
    const d = isRecord(json.delta) ? json.delta : {}
    if (typeof d.text === 'string') return d.text ? [delta({ content: d.text })] : []
    if (isRecord(d.toolUse) && typeof d.toolUse.input === 'string') {
      if (this.jsonBlock !== undefined && Number(json.contentBlockIndex) === this.jsonBlock) return d.toolUse.input ? [delta({ content: d.toolUse.input })] : []
      const k = this.toolIndex.get(Number(json.contentBlockIndex))
      return k === undefined ? [] : [delta({ tool_calls: [{ index: k, function: { arguments: d.toolUse.input } }] })]
    }
    return []
  }
}
