// Gemini `streamGenerateContent?alt=sse` → OpenAI chunks. Every event is a whole GenerateContentResponse
// holding only the new parts; function calls arrive complete. Gemini sends no end marker: the answer is
// complete once a chunk carried a finishReason (or the prompt was blocked), and a stream that closes
// before that was cut.

import type { SseEvent } from '../../sse/parse'
import type { StreamPart, StreamTranslator } from '../adapter'
import type { ChunkDelta, FinishReason } from '../openai-types'
import { clip, isRecord, parseJson } from '../upstream-errors'
import { mapFinishReason, promptBlock, readParts, refusalFor, toUsage } from './response'

const delta = (d: ChunkDelta, finish: FinishReason | null = null): StreamPart => ({
  type: 'choices',
  choices: [{ index: 0, delta: d, finish_reason: finish }],
})

export class GeminiStream implements StreamTranslator {
  private started = false
  private toolCalls = 0
  private finished = false

  /** `showThinking`: thought parts become `reasoning_content` deltas (else they are dropped). */
  constructor(private readonly showThinking = false) {}

  push(ev: SseEvent): StreamPart[] {
    const json = parseJson(ev.data)
    if (!isRecord(json))
      return [{ type: 'failure', failure: { kind: 'provider_error', message: `malformed stream event: ${clip(ev.data, 200)}` } }]
    if (isRecord(json.error)) {
      const e = json.error
      const what = [e.status, e.message].filter((v) => typeof v === 'string').join(': ') || clip(ev.data, 300)
      return [{ type: 'failure', failure: { kind: e.code === 429 ? 'rate_limit' : 'provider_error', message: `error event in stream: ${what}` } }]
    }
    const parts: StreamPart[] = []
    if (!this.started) {
      this.started = true
      const meta: StreamPart = { type: 'meta' }
      if (typeof json.responseId === 'string') meta.id = json.responseId
      if (typeof json.modelVersion === 'string') meta.model = json.modelVersion
      parts.push(meta, delta({ role: 'assistant', content: '' }))
    }
    const candidate = Array.isArray(json.candidates) && isRecord(json.candidates[0]) ? json.candidates[0] : undefined
    const blocked = candidate ? undefined : promptBlock(json)
    if (blocked) {
      this.finished = true
      parts.push(delta({ refusal: blocked }, 'content_filter'))
    }
    if (candidate) parts.push(...this.candidateParts(candidate))
    if (isRecord(json.usageMetadata)) parts.push({ type: 'usage', usage: toUsage(json.usageMetadata) })
    return parts
  }

  end(): StreamPart[] {
    return this.finished ? [{ type: 'end' }] : []
  }

  private candidateParts(candidate: Record<string, unknown>): StreamPart[] {
    const out: StreamPart[] = []
    const { text, thoughts, toolCalls } = readParts(candidate.content)
    if (this.showThinking && thoughts) out.push(delta({ reasoning_content: thoughts }))
    if (text) out.push(delta({ content: text }))
    if (toolCalls.length) {
      const first = this.toolCalls
      this.toolCalls += toolCalls.length
      out.push(delta({ tool_calls: toolCalls.map((tc, i) => ({ index: first + i, ...tc })) }))
    }
    const finish = mapFinishReason(candidate.finishReason, this.toolCalls > 0)
    if (finish) {
      this.finished = true
      out.push(delta(finish === 'content_filter' ? { refusal: refusalFor(String(candidate.finishReason)) } : {}, finish))
    }
    return out
  }
}
