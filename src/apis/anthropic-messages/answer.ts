// gw's answer in Anthropic Messages form: the upstream's own body and events when Anthropic answered
// (pass-through), otherwise a message built from the internal chat answer (thinking text the provider
// gave back first, as a `thinking` block) and streamed as message_start … content_block_* …
// message_delta (with the real usage) … message_stop.

import type { GatewayError } from '../../errors'
import type { AnswerShape, StreamEncoder } from '../../pipeline/6-normalise'
import type { UpstreamCompletion } from '../../providers/adapter'
import type { FinishReason, Usage } from '../../providers/openai-types'
import { isRecord, parseJson } from '../../providers/upstream-errors'
import { sseEvent } from '../../sse/encode'

const STOP_REASON: Record<FinishReason, string> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  content_filter: 'refusal',
  function_call: 'tool_use',
}

/** Anthropic counts cache reads and writes apart from `input_tokens`. */
function anthropicUsage(u: Usage): Record<string, number> {
  const read = u.prompt_tokens_details?.cached_tokens ?? 0
  const write = u.prompt_tokens_details?.cache_write_tokens ?? 0
  return {
    input_tokens: Math.max(0, u.prompt_tokens - read - write),
    output_tokens: u.completion_tokens,
    cache_creation_input_tokens: write,
    cache_read_input_tokens: read,
  }
}

const messageId = (requestId: string) => `msg_${requestId.replaceAll('-', '')}`

/** Tool-call arguments as the object Anthropic clients expect (`{}` when they are not a JSON object). */
function toolInput(args: string): Record<string, unknown> {
  const v = parseJson(args)
  return isRecord(v) ? v : {}
}

function translatedMessage(c: UpstreamCompletion, usage: Usage, requestId: string, model: string): Record<string, unknown> {
  const choice = c.choices[0]
  const content: Record<string, unknown>[] = []
  // Thinking the provider gave back (docs/apis.md): gw has no Anthropic signature to give it.
  const thinking = choice?.message.reasoning_content
  if (thinking) content.push({ type: 'thinking', thinking, signature: '' })
  const text = choice?.message.content ?? choice?.message.refusal ?? ''
  if (text) content.push({ type: 'text', text })
  for (const tc of choice?.message.tool_calls ?? [])
    content.push({ type: 'tool_use', id: tc.id, name: tc.function.name, input: toolInput(tc.function.arguments) })
  return {
    id: messageId(requestId),
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: STOP_REASON[choice?.finish_reason ?? 'stop'],
    stop_sequence: null,
    usage: anthropicUsage(usage),
  }
}

/** Anthropic's error `type` for an HTTP status. */
function anthropicErrorType(status: number): string {
  if (status === 401) return 'authentication_error'
  if (status === 403) return 'permission_error'
  if (status === 404) return 'not_found_error'
  if (status === 413) return 'request_too_large'
  if (status === 429) return 'rate_limit_error'
  if (status === 503 || status === 529) return 'overloaded_error'
  if (status === 504) return 'timeout_error'
  return status >= 500 ? 'api_error' : 'invalid_request_error'
}

/** Anthropic's error body, carrying gw's code and request id (PRODUCT §12). */
export function anthropicErrorBody(status: number, code: string, message: string, requestId: string) {
  return { type: 'error', error: { type: anthropicErrorType(status), message, code }, request_id: requestId }
}

class MessagesStream implements StreamEncoder {
  private started = false
  /** Upstream events are being relayed as they came (Anthropic answered). */
  private relaying = false
  private upstreamError = false
  private block = -1
  private blockType: 'thinking' | 'text' | 'tool_use' | null = null
  /** Tool-call index → content block index. */
  private readonly toolBlocks = new Map<number, number>()
  private stopReason: string | null = null

  constructor(private readonly info: Parameters<AnswerShape['stream']>[0]) {}

  meta(): void {}

  relay(p: { event: string | undefined; text: string }): string {
    this.relaying = true
    if (p.event === 'error') this.upstreamError = true
    return p.text
  }

  choices(choices: Parameters<StreamEncoder['choices']>[0]): string {
    if (this.relaying) return ''
    let out = this.start()
    for (const c of choices) {
      if (c.index !== 0) continue
      const thinking = c.delta.reasoning_content
      if (thinking) {
        if (this.blockType !== 'thinking') out += this.open('thinking', { type: 'thinking', thinking: '', signature: '' })
        out += sseEvent('content_block_delta', { type: 'content_block_delta', index: this.block, delta: { type: 'thinking_delta', thinking } })
      }
      const text = (c.delta.content ?? '') + (c.delta.refusal ?? '')
      if (text) {
        if (this.blockType !== 'text') out += this.open('text', { type: 'text', text: '' })
        out += sseEvent('content_block_delta', { type: 'content_block_delta', index: this.block, delta: { type: 'text_delta', text } })
      }
      for (const tc of c.delta.tool_calls ?? []) {
        if (tc.id) {
          out += this.open('tool_use', { type: 'tool_use', id: tc.id, name: tc.function?.name ?? '', input: {} })
          this.toolBlocks.set(tc.index, this.block)
        }
        const index = this.toolBlocks.get(tc.index)
        const args = tc.function?.arguments
        if (index !== undefined && args)
          out += sseEvent('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: args } })
      }
      if (c.finish_reason) this.stopReason = STOP_REASON[c.finish_reason]
    }
    return out
  }

  end(usage: Usage, _cost: number | null, finish: FinishReason | null): string {
    if (this.relaying) return ''
    const stop_reason = this.stopReason ?? STOP_REASON[finish ?? 'stop']
    return (
      this.start() +
      this.close() +
      sseEvent('message_delta', { type: 'message_delta', delta: { stop_reason, stop_sequence: null }, usage: anthropicUsage(usage) }) +
      sseEvent('message_stop', { type: 'message_stop' })
    )
  }

  fail(message: string, gw?: GatewayError): string {
    if (this.upstreamError) return ''
    return sseEvent('error', anthropicErrorBody(gw?.status ?? 502, gw?.code ?? 'provider_error', message, this.info.requestId))
  }

  private start(): string {
    if (this.started) return ''
    this.started = true
    return sseEvent('message_start', {
      type: 'message_start',
      message: {
        id: messageId(this.info.requestId),
        type: 'message',
        role: 'assistant',
        model: this.info.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: this.info.estimatePromptTokens(), output_tokens: 0 },
      },
    })
  }

  private close(): string {
    if (this.blockType === null) return ''
    this.blockType = null
    return sseEvent('content_block_stop', { type: 'content_block_stop', index: this.block })
  }

  private open(type: 'thinking' | 'text' | 'tool_use', block: Record<string, unknown>): string {
    const out = this.close()
    this.block++
    this.blockType = type
    return out + sseEvent('content_block_start', { type: 'content_block_start', index: this.block, content_block: block })
  }
}

export const MESSAGES_SHAPE: AnswerShape = {
  json: (c, usage, _cost, info) => c.native ?? translatedMessage(c, usage, info.requestId, info.model),
  stream: (info) => new MessagesStream(info),
}
