// The answer of chat completions and prompt runs (OpenAI's chat format, gw's own): the JSON body and
// the stream encoder stage 6 writes with (src/pipeline/6-normalise.ts).

import { GatewayError } from '../../errors'
import type { AnswerInfo, AnswerShape, StreamEncoder } from '../../pipeline/6-normalise'
import type { UpstreamCompletion } from '../../providers/adapter'
import type { ChatChunk, ChatCompletion, ChunkChoice, Usage } from '../../providers/openai-types'
import { SSE_DONE, sseData } from '../../sse/encode'

/**
 * OpenAI chat completions, gw's own format, with the cost in `usage.cost_usd` (PRODUCT §11). Usage
 * goes where PRODUCT §4 puts it: with `stream_options.include_usage`, in a last chunk with
 * `choices: []` (OpenAI's shape); without it, on the chunk that carries the finish_reason (held back
 * until the usage is known), so `chunk.choices[0]` is always safe. Two shapes, made once.
 */
export function chatShape(includeUsage: boolean): AnswerShape {
  return includeUsage ? WITH_USAGE_CHUNK : USAGE_ON_FINISH
}

function chatJson(c: UpstreamCompletion, usage: Usage, cost: number | null, info: AnswerInfo): ChatCompletion {
  return {
    ...c.extra,
    id: c.id ?? `chatcmpl-${info.requestId}`,
    object: 'chat.completion',
    created: info.created,
    model: info.model,
    choices: c.choices,
    usage: { ...usage, cost_usd: cost },
  }
}

const WITH_USAGE_CHUNK: AnswerShape = { json: chatJson, stream: (info) => new ChatStream(info, true) }
const USAGE_ON_FINISH: AnswerShape = { json: chatJson, stream: (info) => new ChatStream(info, false) }

/** One streamed chat answer: its state in fields (one object per stream, no closures). */
class ChatStream implements StreamEncoder {
  private id: string
  private created: number
  /** The chunk with the finish_reason, held back to carry the usage (without include_usage). */
  private finishing: ChunkChoice[] | undefined

  constructor(
    private readonly info: AnswerInfo,
    private readonly includeUsage: boolean,
  ) {
    this.id = `chatcmpl-${info.requestId}`
    this.created = info.created
  }

  private chunk(choices: ChunkChoice[], extra?: { usage: Usage }): ChatChunk {
    return { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.info.model, choices, ...extra }
  }

  meta(upstreamId: string | undefined, upstreamCreated: number | undefined): void {
    if (upstreamId) this.id = upstreamId
    if (upstreamCreated) this.created = upstreamCreated
  }

  choices(choices: ChunkChoice[]): string {
    if (!choices.some((c) => c.finish_reason !== null)) return sseData(this.chunk(choices))
    // Held back to carry the usage; a later finish (other choices) joins it.
    this.finishing = this.finishing ? [...this.finishing, ...choices] : choices
    return ''
  }

  relay(): string {
    return ''
  }

  end(reported: Usage, cost: number | null): string {
    const usage = { ...reported, cost_usd: cost }
    const last = this.finishing ?? [{ index: 0, delta: {}, finish_reason: 'stop' as const }]
    const closing = this.includeUsage ? sseData(this.chunk(last)) + sseData(this.chunk([], { usage })) : sseData(this.chunk(last, { usage }))
    return closing + SSE_DONE
  }

  held(): string {
    return this.finishing ? sseData(this.chunk(this.finishing)) : ''
  }

  fail(message: string, gw?: GatewayError): string {
    const error = gw ?? new GatewayError(502, 'provider_error', message)
    return `${this.held()}${sseData(error.toBody(this.info.requestId, this.info.errorShape))}${SSE_DONE}`
  }
}
