// ConverseStream's event-stream frames (messageStart … messageStop, metadata) → OpenAI chunks, as they arrive.
// Tool calls get their own 0-based indexes; the answer is complete once messageStop and metadata (usage) came.

import type { StreamPart } from '../adapter'
import type { ChunkDelta, FinishReason } from '../openai-types'
import { clip, isRecord, parseJson } from '../upstream-errors'
import { bedrockFailure, finishReason, toUsage } from './converse'
import type { EventStreamFrame } from './event-stream'

const text = new TextDecoder()
const NO_HEADERS = new Headers()

const delta = (d: ChunkDelta, finish: FinishReason | null = null): StreamPart => ({
  type: 'choices',
  choices: [{ index: 0, delta: d, finish_reason: finish }],
})

const fail = (message: string): StreamPart => ({ type: 'failure', failure: { kind: 'provider_error', message } })

/** Exception names in a stream are lower camel case (`throttlingException`); as error types they are upper. */
const upperFirst = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)

export class ConverseStream {
  /** Bedrock content block index → OpenAI tool-call index. */
  private readonly toolIndex = new Map<number, number>()
  private stopped = false
  private ended = false

  /** The parts one decoded frame gives. */
  push(frame: EventStreamFrame): StreamPart[] {
    if (this.ended) return []
    if (frame.type === 'fault') return [fail(`malformed event stream: ${frame.message}`)]
    if (frame.type === 'error') return [fail(`stream error ${frame.errorCode}: ${clip(frame.errorMessage, 300)}`)]
    const payload = text.decode(frame.payload)
    const json = parseJson(payload)
    if (frame.type === 'exception') {
      const message = isRecord(json) && typeof json.message === 'string' ? json.message : payload
      return [{ type: 'failure', failure: { ...bedrockFailure(0, upperFirst(frame.exceptionType), message, NO_HEADERS), status: undefined } }]
    }
    if (!isRecord(json)) return [fail(`malformed stream event ${frame.eventType}: ${clip(payload, 200)}`)]
    switch (frame.eventType) {
      case 'messageStart':
        return [delta({ role: 'assistant', content: '' })]
      case 'contentBlockStart':
        return this.blockStart(json)
      case 'contentBlockDelta':
        return this.blockDelta(json)
      case 'contentBlockStop':
        return []
      case 'messageStop':
        this.stopped = true
        return [delta({}, finishReason(json.stopReason))]
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
      const k = this.toolIndex.get(Number(json.contentBlockIndex))
      return k === undefined ? [] : [delta({ tool_calls: [{ index: k, function: { arguments: d.toolUse.input } }] })]
    }
    return []
  }
}
