// The answer of chat completions and prompt runs (OpenAI's chat format, gw's own): the JSON body and
// the stream encoder stage 6 writes with (src/pipeline/6-normalise.ts).

import { GatewayError } from '../../errors'
import type { AnswerShape } from '../../pipeline/6-normalise'
import type { ChatChunk, ChatCompletion, ChunkChoice, Usage } from '../../providers/openai-types'
import { SSE_DONE, sseData } from '../../sse/encode'

/**
 * OpenAI chat completions, gw's own format, with the cost in `usage.cost_usd` (PRODUCT §11). Usage
 * goes where PRODUCT §4 puts it: with `stream_options.include_usage`, in a last chunk with
 * `choices: []` (OpenAI's shape); without it, on the chunk that carries the finish_reason (held back
 * until the usage is known), so `chunk.choices[0]` is always safe.
 */
export function chatShape(includeUsage: boolean): AnswerShape {
  return {
    json(c, usage, cost, info): ChatCompletion {
      return {
        ...c.extra,
        id: c.id ?? `chatcmpl-${info.requestId}`,
        object: 'chat.completion',
        created: info.created,
        model: info.model,
        choices: c.choices,
        usage: { ...usage, cost_usd: cost },
      }
    },
    stream(info) {
      let id = `chatcmpl-${info.requestId}`
      let created = info.created
      /** The chunk with the finish_reason, held back to carry the usage (without include_usage). */
      let finishing: ChunkChoice[] | undefined
      const held = () => (finishing ? sseData(chunk(finishing)) : '')
      const chunk = (choices: ChunkChoice[], extra?: { usage: Usage }): ChatChunk => ({
        id,
        object: 'chat.completion.chunk',
        created,
        model: info.model,
        choices,
        ...extra,
      })
      return {
        meta(upstreamId, upstreamCreated) {
          if (upstreamId) id = upstreamId
          if (upstreamCreated) created = upstreamCreated
        },
        choices(choices) {
          if (!choices.some((c) => c.finish_reason !== null)) return sseData(chunk(choices))
          // Held back to carry the usage; a later finish (other choices) joins it.
          finishing = finishing ? [...finishing, ...choices] : choices
          return ''
        },
        relay: () => '',
        end(reported, cost) {
          const usage = { ...reported, cost_usd: cost }
          const last = finishing ?? [{ index: 0, delta: {}, finish_reason: 'stop' as const }]
          const closing = includeUsage ? sseData(chunk(last)) + sseData(chunk([], { usage })) : sseData(chunk(last, { usage }))
          return closing + SSE_DONE
        },
        held,
        fail(message, gw) {
          const error = gw ?? new GatewayError(502, 'provider_error', message)
          return `${held()}${sseData(error.toBody(info.requestId, info.errorShape))}${SSE_DONE}`
        },
      }
    },
  }
}
