// Anthropic's named-event SSE (message_start … message_stop) → OpenAI chunks, as the events arrive.
// Tool calls get their own 0-based indexes (not Anthropic's block indexes); the JSON tool's argument
// deltas become content deltas. Only message_stop ends the answer: a stream cut before it is incomplete.

import type { SseEvent } from '../../sse/parse'
import type { FailureKind, StreamPart, StreamTranslator } from '../adapter'
import type { ChunkDelta, FinishReason } from '../openai-types'
import { clip, isRecord, parseJson } from '../upstream-errors'
import { JSON_TOOL } from './request'
import { mapStopReason, refusalText, toUsage } from './response'

const delta = (d: ChunkDelta, finish: FinishReason | null = null): StreamPart => ({
  type: 'choices',
  choices: [{ index: 0, delta: d, finish_reason: finish }],
})

const str = (v: unknown) => (typeof v === 'string' ? v : '')

export class AnthropicStream implements StreamTranslator {
  /** Usage as message_start reported it; message_delta's cumulative counts are laid over it. */
  private usage: Record<string, unknown> = {}
  /** Anthropic block index → OpenAI tool-call index. */
  private readonly toolIndex = new Map<number, number>()
  private readonly jsonBlocks = new Set<number>()
  /** Tool blocks that have received argument text (a call without arguments gets `{}` at its end). */
  private readonly withArgs = new Set<number>()

  constructor(private readonly jsonTool: boolean) {}

  push(ev: SseEvent): StreamPart[] {
    const json = parseJson(ev.data)
    if (!isRecord(json)) return [this.fail('provider_error', `malformed stream event: ${clip(ev.data, 200)}`)]
    switch (ev.event ?? json.type) {
      case 'message_start':
        return this.start(json.message)
      case 'content_block_start':
        return this.blockStart(json.index, json.content_block)
      case 'content_block_delta':
        return this.blockDelta(json.index, json.delta)
      case 'content_block_stop':
        return this.blockStop(json.index)
      case 'message_delta':
        return this.messageDelta(json)
      case 'message_stop':
        return [{ type: 'end' }]
      case 'error': {
        const e = isRecord(json.error) ? json.error : {}
        const kind: FailureKind = e.type === 'rate_limit_error' ? 'rate_limit' : 'provider_error'
        return [this.fail(kind, `error event in stream: ${str(e.type)}: ${str(e.message) || clip(ev.data, 300)}`)]
      }
      default: // ping, and event types Anthropic may add
        return []
    }
  }

  end(): StreamPart[] {
    return []
  }

  private fail(kind: FailureKind, message: string): StreamPart {
    return { type: 'failure', failure: { kind, message } }
  }

  private start(message: unknown): StreamPart[] {
    if (!isRecord(message)) return [this.fail('provider_error', 'message_start without a message')]
    if (isRecord(message.usage)) this.usage = message.usage
    const meta: StreamPart = { type: 'meta' }
    if (typeof message.id === 'string') meta.id = message.id
    if (typeof message.model === 'string') meta.model = message.model
    return [meta, delta({ role: 'assistant', content: '' })]
  }

  private blockStart(index: unknown, block: unknown): StreamPart[] {
    if (typeof index !== 'number' || !isRecord(block)) return []
    if (block.type === 'text' && str(block.text)) return [delta({ content: str(block.text) })]
    if (block.type !== 'tool_use') return []
    if (this.jsonTool && block.name === JSON_TOOL) {
      this.jsonBlocks.add(index)
      return []
    }
    const k = this.toolIndex.size
    this.toolIndex.set(index, k)
    return [delta({ tool_calls: [{ index: k, id: str(block.id), type: 'function', function: { name: str(block.name), arguments: '' } }] })]
  }

  private blockDelta(index: unknown, d: unknown): StreamPart[] {
    if (typeof index !== 'number' || !isRecord(d)) return []
    if (d.type === 'text_delta' && str(d.text)) return [delta({ content: str(d.text) })]
    if (d.type !== 'input_json_delta' || !str(d.partial_json)) return [] // thinking, signatures, citations
    this.withArgs.add(index)
    return this.argumentText(index, str(d.partial_json))
  }

  private blockStop(index: unknown): StreamPart[] {
    if (typeof index !== 'number' || this.withArgs.has(index)) return []
    return this.argumentText(index, '{}')
  }

  /** Tool arguments as a tool-call delta, or as content for the JSON tool. */
  private argumentText(index: number, text: string): StreamPart[] {
    if (this.jsonBlocks.has(index)) return [delta({ content: text })]
    const k = this.toolIndex.get(index)
    return k === undefined ? [] : [delta({ tool_calls: [{ index: k, function: { arguments: text } }] })]
  }

  private messageDelta(json: Record<string, unknown>): StreamPart[] {
    const d = isRecord(json.delta) ? json.delta : {}
    let finish = mapStopReason(d.stop_reason)
    if (finish === 'tool_calls' && this.jsonBlocks.size && !this.toolIndex.size) finish = 'stop'
    if (isRecord(json.usage)) this.usage = { ...this.usage, ...json.usage }
    const parts: StreamPart[] = []
    if (finish) parts.push(delta(d.stop_reason === 'refusal' ? { refusal: refusalText(d.stop_details) } : {}, finish))
    parts.push({ type: 'usage', usage: toUsage(this.usage) })
    return parts
  }
}
