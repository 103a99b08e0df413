// The OpenAI adapter of /v1/responses: the client's body goes to OpenAI's /responses untouched apart
// from `model` (stored responses and previous_response_id work as OpenAI keeps them); the answer and
// its `response.*` events come back as OpenAI sent them, read on the way for usage, the commit point
// and the log.

import type { ProviderAdapter, StreamPart, StreamTranslator, UpstreamCompletion, UpstreamRequest } from '../../providers/adapter'
import { openai } from '../../providers/openai'
import { openAIEndpoint, openAIHeaders } from '../../providers/openai-compatible'
import type { ChunkChoice, ChunkDelta, FinishReason, ToolCall, Usage } from '../../providers/openai-types'
import { clip, isRecord, parseJson } from '../../providers/upstream-errors'
import type { SseEvent } from '../../sse/parse'
import { RawRelay, withModel } from '../raw-relay'

type Obj = Record<string, unknown>
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0)
const str = (v: unknown) => (typeof v === 'string' ? v : '')

/** Responses usage → gw's usage. */
function usageFromResponses(u: unknown): Usage | undefined {
  if (!isRecord(u)) return undefined
  const prompt = num(u.input_tokens)
  const completion = num(u.output_tokens)
  const cached = isRecord(u.input_tokens_details) ? num(u.input_tokens_details.cached_tokens) : 0
  const reasoning = isRecord(u.output_tokens_details) ? num(u.output_tokens_details.reasoning_tokens) : 0
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cached },
    completion_tokens_details: { reasoning_tokens: reasoning },
  }
}

function finishOf(response: Obj, hasCalls: boolean): FinishReason {
  if (response.status === 'incomplete')
    return isRecord(response.incomplete_details) && response.incomplete_details.reason === 'content_filter' ? 'content_filter' : 'length'
  return hasCalls ? 'tool_calls' : 'stop'
}

/** A `response` object → gw's completion (text, refusal, function calls), the body kept as it came. */
export function readResponse(json: unknown): UpstreamCompletion {
  if (!isRecord(json) || !Array.isArray(json.output)) throw new Error('answer has no output array')
  let text = ''
  let refusal: string | null = null
  const calls: ToolCall[] = []
  for (const item of json.output) {
    if (!isRecord(item)) continue
    if (item.type === 'message' && Array.isArray(item.content))
      for (const part of item.content) {
        if (!isRecord(part)) continue
        if (part.type === 'output_text') text += str(part.text)
        if (part.type === 'refusal') refusal = (refusal ?? '') + str(part.refusal)
      }
    if (item.type === 'function_call')
      calls.push({ id: str(item.call_id), type: 'function', function: { name: str(item.name), arguments: str(item.arguments) } })
  }
  const out: UpstreamCompletion = {
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: text || null, refusal, ...(calls.length ? { tool_calls: calls } : {}) },
        finish_reason: refusal ? 'content_filter' : finishOf(json, calls.length > 0),
        logprobs: null,
      },
    ],
    native: json,
  }
  const usage = usageFromResponses(json.usage)
  if (usage) out.usage = usage
  if (typeof json.id === 'string') out.id = json.id
  return out
}

const delta = (d: ChunkDelta, finish: FinishReason | null = null): StreamPart => ({
  type: 'choices',
  choices: [{ index: 0, delta: d, finish_reason: finish } satisfies ChunkChoice],
})

/** OpenAI's `response.*` events → parts: content for the commit point and transcript, usage and the end. */
export class ResponsesEvents implements StreamTranslator {
  /** output_index of each function call → its tool-call index. */
  private readonly calls = new Map<number, number>()

  push(ev: SseEvent): StreamPart[] {
    const json = parseJson(ev.data)
    if (!isRecord(json)) return [{ type: 'failure', failure: { kind: 'provider_error', message: `malformed stream event: ${clip(ev.data, 200)}` } }]
    switch (json.type ?? ev.event) {
      case 'response.output_text.delta':
        return str(json.delta) ? [delta({ content: str(json.delta) })] : []
      case 'response.refusal.delta':
        return str(json.delta) ? [delta({ refusal: str(json.delta) })] : []
      case 'response.output_item.added': {
        const item = isRecord(json.item) ? json.item : {}
        if (item.type !== 'function_call') return []
        const k = this.calls.size
        this.calls.set(num(json.output_index), k)
        return [delta({ tool_calls: [{ index: k, id: str(item.call_id), type: 'function', function: { name: str(item.name), arguments: '' } }] })]
      }
      case 'response.function_call_arguments.delta': {
        const k = this.calls.get(num(json.output_index))
        return k === undefined || !str(json.delta) ? [] : [delta({ tool_calls: [{ index: k, function: { arguments: str(json.delta) } }] })]
      }
      case 'response.completed':
      case 'response.incomplete': {
        const response = isRecord(json.response) ? json.response : {}
        const parts: StreamPart[] = [delta({}, finishOf(response, this.calls.size > 0))]
        // The answer's id, for the log entry (previous_response_id on another provider finds it by it).
        if (typeof response.id === 'string') parts.push({ type: 'meta', id: response.id })
        const usage = usageFromResponses(response.usage)
        if (usage) parts.push({ type: 'usage', usage })
        parts.push({ type: 'end' })
        return parts
      }
      case 'response.failed':
      case 'error': {
        const e = isRecord(json.error) ? json.error : isRecord(json.response) && isRecord(json.response.error) ? json.response.error : {}
        const kind = e.code === 'rate_limit_exceeded' ? 'rate_limit' : 'provider_error'
        return [{ type: 'failure', failure: { kind, message: `error event in stream: ${str(e.code) || str(e.type)}: ${str(e.message) || clip(ev.data, 300)}` } }]
      }
      default:
        return []
    }
  }

  end(): StreamPart[] {
    return []
  }
}

/** The events read on the serving thread past the commit point (RawRelay): a refusal, a new function call, the end, errors. */
const ACTS_ON = new Set([
  'response.refusal.delta',
  'response.output_item.added',
  'response.completed',
  'response.incomplete',
  'response.failed',
  'error',
])

export function responsesPassThrough(native: Record<string, unknown>): ProviderAdapter {
  return {
    ...openai,
    buildRequest: (req, target): UpstreamRequest => {
      // Azure OpenAI's Responses API is at its own URL, the deployment as the model (docs/providers.md "Azure OpenAI").
      const { url, model } = openAIEndpoint(target, 'responses')
      return {
        url,
        headers: openAIHeaders(target),
        // The org's maxTokens is the output limit of a request that sets none (PRODUCT §6).
        body: withModel(native.max_output_tokens == null && req.max_tokens !== undefined ? { ...native, max_output_tokens: req.max_tokens } : native, model ?? target.model.id),
      }
    },
    parseResponse: readResponse,
    createStream: () => new RawRelay(new ResponsesEvents(), 'responses', ACTS_ON),
  }
}
