// gw's answer in OpenAI Responses form: OpenAI's own body and events when OpenAI answered
// (pass-through), otherwise a `response` object built from the internal chat answer, streamed as
// response.created … output_item / content_part / *.delta … response.completed (with the real usage).

import type { GatewayError } from '../../errors'
import type { AnswerInfo, AnswerShape, StreamEncoder } from '../../pipeline/6-normalise'
import type { UpstreamCompletion } from '../../providers/adapter'
import type { ChunkChoice, FinishReason, ToolCall, Usage } from '../../providers/openai-types'
import { sseEvent } from '../../sse/encode'
import type { ResponsesBodyT } from './request'

type Obj = Record<string, unknown>

/** Ids gw gives the responses it builds: `resp_gw` + the request id's hex (its log entry). */
export const GW_RESPONSE_PREFIX = 'resp_gw'
export const responseId = (requestId: string) => `${GW_RESPONSE_PREFIX}${requestId.replaceAll('-', '')}`

export const isGwResponse = (id: string) => requestIdOfResponse(id) !== undefined

/** The request id behind a gw response id, or undefined when the id is not gw's. */
export function requestIdOfResponse(id: string): string | undefined {
  const m = /^resp_gw([0-9a-f]{32})$/.exec(id)
  if (!m?.[1]) return undefined
  const h = m[1]
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

function responsesUsage(u: Usage): Obj {
  return {
    input_tokens: u.prompt_tokens,
    input_tokens_details: { cached_tokens: u.prompt_tokens_details?.cached_tokens ?? 0 },
    output_tokens: u.completion_tokens,
    output_tokens_details: { reasoning_tokens: u.completion_tokens_details?.reasoning_tokens ?? 0 },
    total_tokens: u.prompt_tokens + u.completion_tokens,
  }
}

const messageItem = (id: string, text: string, refusal: boolean, status: string): Obj => ({
  type: 'message',
  id,
  status,
  role: 'assistant',
  content: [refusal ? { type: 'refusal', refusal: text } : { type: 'output_text', text, annotations: [], logprobs: [] }],
})

const callItem = (id: string, tc: ToolCall, status: string): Obj => ({
  type: 'function_call',
  id,
  call_id: tc.id,
  name: tc.function.name,
  arguments: tc.function.arguments,
  status,
})

/** The `response` object: the request's settings echoed, as OpenAI does. */
function responseObject(b: ResponsesBodyT, info: AnswerInfo, status: string, output: Obj[], usage: Usage | null, finish: FinishReason | null): Obj {
  const incomplete = finish === 'length'
  return {
    id: responseId(info.requestId),
    object: 'response',
    created_at: info.created,
    status: status === 'completed' && incomplete ? 'incomplete' : status,
    error: null,
    incomplete_details: incomplete && status === 'completed' ? { reason: 'max_output_tokens' } : null,
    instructions: b.instructions ?? null,
    max_output_tokens: b.max_output_tokens ?? null,
    model: info.model,
    output,
    parallel_tool_calls: b.parallel_tool_calls ?? true,
    previous_response_id: b.previous_response_id ?? null,
    reasoning: { effort: b.reasoning?.effort ?? null, summary: null },
    store: true,
    temperature: b.temperature ?? 1,
    text: { format: b.text?.format ?? { type: 'text' } },
    tool_choice: b.tool_choice ?? 'auto',
    tools: b.tools ?? [],
    top_p: b.top_p ?? 1,
    truncation: 'disabled',
    usage: usage ? responsesUsage(usage) : null,
    metadata: {},
  }
}

function translatedResponse(b: ResponsesBodyT, c: UpstreamCompletion, usage: Usage, info: AnswerInfo): Obj {
  const choice = c.choices[0]
  const output: Obj[] = []
  const rid = info.requestId.replaceAll('-', '')
  const refusal = choice?.message.refusal
  const text = choice?.message.content ?? ''
  if (refusal) output.push(messageItem(`msg_${rid}`, refusal, true, 'completed'))
  else if (text) output.push(messageItem(`msg_${rid}`, text, false, 'completed'))
  for (const [i, tc] of (choice?.message.tool_calls ?? []).entries()) output.push(callItem(`fc_${rid}_${i}`, tc, 'completed'))
  return responseObject(b, info, 'completed', output, usage, choice?.finish_reason ?? 'stop')
}

/** Streams `response.*` events in the order the OpenAI SDK's stream helpers expect. */
class ResponsesStream implements StreamEncoder {
  private seq = 0
  private started = false
  private relaying = false
  private upstreamError = false
  private readonly output: Obj[] = []
  /** The item being written: a message (text) or a function call. */
  private open: { kind: 'text'; id: string; text: string; refusal: boolean } | { kind: 'call'; id: string; call: ToolCall } | null = null
  private readonly rid: string
  private finish: FinishReason | null = null

  constructor(
    private readonly body: ResponsesBodyT,
    private readonly info: AnswerInfo,
  ) {
    this.rid = info.requestId.replaceAll('-', '')
  }

  meta(): void {}

  relay(p: { event: string | undefined; text: string }): string {
    this.relaying = true
    if (p.event === 'error' || p.event === 'response.failed') this.upstreamError = true
    return p.text
  }

  choices(choices: ChunkChoice[]): string {
    if (this.relaying) return ''
    let out = this.start()
    for (const c of choices) {
      if (c.index !== 0) continue
      if (c.delta.content) out += this.text(c.delta.content, false)
      if (c.delta.refusal) out += this.text(c.delta.refusal, true)
      for (const tc of c.delta.tool_calls ?? []) {
        if (tc.id) {
          out += this.closeItem()
          const call: ToolCall = { id: tc.id, type: 'function', function: { name: tc.function?.name ?? '', arguments: '' } }
          const id = `fc_${this.rid}_${this.output.length}`
          this.open = { kind: 'call', id, call }
          out += this.event('response.output_item.added', { output_index: this.output.length, item: callItem(id, call, 'in_progress') })
        }
        const args = tc.function?.arguments
        if (args && this.open?.kind === 'call') {
          this.open.call.function.arguments += args
          out += this.event('response.function_call_arguments.delta', { item_id: this.open.id, output_index: this.output.length, delta: args })
        }
      }
      if (c.finish_reason) this.finish = c.finish_reason
    }
    return out
  }

  end(usage: Usage, _cost: number | null, finish: FinishReason | null): string {
    if (this.relaying) return ''
    const out = this.start() + this.closeItem()
    const response = responseObject(this.body, this.info, 'completed', this.output, usage, this.finish ?? finish)
    return out + this.event(response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response })
  }

  fail(message: string, gw?: GatewayError): string {
    if (this.upstreamError) return ''
    return this.event('error', { code: gw?.code ?? 'provider_error', message, param: null })
  }

  private event(type: string, data: Obj): string {
    return sseEvent(type, { type, sequence_number: this.seq++, ...data })
  }

  private start(): string {
    if (this.started) return ''
    this.started = true
    const response = responseObject(this.body, this.info, 'in_progress', [], null, null)
    return this.event('response.created', { response }) + this.event('response.in_progress', { response })
  }

  private text(delta: string, refusal: boolean): string {
    let out = ''
    if (this.open?.kind !== 'text' || this.open.refusal !== refusal) {
      out += this.closeItem()
      const id = `msg_${this.rid}_${this.output.length}`
      this.open = { kind: 'text', id, text: '', refusal }
      out += this.event('response.output_item.added', {
        output_index: this.output.length,
        item: { type: 'message', id, status: 'in_progress', role: 'assistant', content: [] },
      })
      out += this.event('response.content_part.added', {
        item_id: id,
        output_index: this.output.length,
        content_index: 0,
        part: refusal ? { type: 'refusal', refusal: '' } : { type: 'output_text', text: '', annotations: [], logprobs: [] },
      })
    }
    this.open.text += delta
    const type = refusal ? 'response.refusal.delta' : 'response.output_text.delta'
    return out + this.event(type, { item_id: this.open.id, output_index: this.output.length, content_index: 0, delta, ...(refusal ? {} : { logprobs: [] }) })
  }

  private closeItem(): string {
    const item = this.open
    if (!item) return ''
    this.open = null
    const index = this.output.length
    let out = ''
    if (item.kind === 'text') {
      const done = messageItem(item.id, item.text, item.refusal, 'completed')
      const part = (done.content as Obj[])[0] as Obj
      out += item.refusal
        ? this.event('response.refusal.done', { item_id: item.id, output_index: index, content_index: 0, refusal: item.text })
        : this.event('response.output_text.done', { item_id: item.id, output_index: index, content_index: 0, text: item.text, logprobs: [] })
      out += this.event('response.content_part.done', { item_id: item.id, output_index: index, content_index: 0, part })
      out += this.event('response.output_item.done', { output_index: index, item: done })
      this.output.push(done)
    } else {
      if (!item.call.function.arguments) item.call.function.arguments = '{}'
      const done = callItem(item.id, item.call, 'completed')
      out += this.event('response.function_call_arguments.done', { item_id: item.id, output_index: index, arguments: item.call.function.arguments })
      out += this.event('response.output_item.done', { output_index: index, item: done })
      this.output.push(done)
    }
    return out
  }
}

/** The Responses shape for one request (its settings are echoed on the `response` object). */
export function responsesShape(body: ResponsesBodyT): AnswerShape {
  return {
    json: (c, usage, _cost, info) => c.native ?? translatedResponse(body, c, usage, info),
    stream: (info) => new ResponsesStream(body, info),
  }
}
