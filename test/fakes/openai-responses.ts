// Fake OpenAI POST /v1/responses: validates like the real API (input or previous_response_id, function
// outputs answering a call, stored responses for previous_response_id) and answers with a `response`
// object, or its `response.*` event stream in the recorded order, from the same reply plan as chat.

import { countWords, isObj, jsonReply, nowSeconds, planReply, randomHex, splitJson, textOf } from './common.ts'
import { openaiError } from './openai.ts'
import type { Behavior, ExtraStream, NativeReply, Obj, Reply, RequestCtx } from './types.ts'

/** Responses this fake has given, for previous_response_id (input and output items, as OpenAI stores them). */
const stored = new Map<string, { input: Obj[]; output: Obj[] }>()

const bad = (message: string, param: string | null = null): NativeReply => openaiError(400, message, 'invalid_request_error', param)

function inputItems(input: unknown): Obj[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }]
  return Array.isArray(input) ? input.filter(isObj) : []
}

/** Prompt tokens: Σ over message items of (3 + words), function outputs counted by their words. */
function promptTokens(instructions: unknown, items: Obj[]): number {
  let n = typeof instructions === 'string' ? 3 + countWords(instructions) : 0
  for (const it of items) {
    if ((it.type ?? 'message') === 'message') n += 3 + countWords(textOf(it.content))
    else if (it.type === 'function_call_output') n += 3 + countWords(typeof it.output === 'string' ? it.output : '')
  }
  return n
}

function check(body: Obj, history: Obj[]): NativeReply | undefined {
  if (typeof body.model !== 'string') return bad("Missing required parameter: 'model'.", 'model')
  if (body.input === undefined && body.previous_response_id === undefined) return bad("Missing required parameter: 'input'.", 'input')
  const calls = new Set<string>()
  for (const it of [...history, ...inputItems(body.input)]) {
    if (it.type === 'function_call') calls.add(String(it.call_id))
    if (it.type === 'function_call_output' && !calls.has(String(it.call_id)))
      return bad(`No tool call found for function call output with call_id ${String(it.call_id)}.`, 'input')
  }
  const format = isObj(body.text) && isObj(body.text.format) ? body.text.format : undefined
  if (format?.type === 'json_schema' && (typeof format.name !== 'string' || !isObj(format.schema)))
    return bad("Missing required parameter: 'text.format.name'.", 'text.format.name')
  return undefined
}

function requestCtx(body: Obj, items: Obj[], headers: Record<string, string>): RequestCtx {
  const format = isObj(body.text) && isObj(body.text.format) ? body.text.format : undefined
  const tools = (Array.isArray(body.tools) ? body.tools.filter(isObj) : [])
    .filter((t) => t.type === 'function')
    .map((t) => ({ name: String(t.name), schema: t.parameters }))
  const choice = body.tool_choice
  return {
    model: String(body.model),
    stream: body.stream === true ? 'sse' : false,
    promptTokens: promptTokens(body.instructions, items),
    jsonSchema: format?.type === 'json_schema' ? format.schema : format?.type === 'json_object' ? null : undefined,
    tools,
    forcedTool: choice === 'required' ? '' : isObj(choice) && choice.type === 'function' ? String(choice.name) : undefined,
    maxTokens: typeof body.max_output_tokens === 'number' ? body.max_output_tokens : undefined,
    includeUsage: true,
    showThinking: false,
    headers,
  }
}

function usageOf(r: Reply): Obj {
  const output = r.usage.completion + r.usage.thinking
  return {
    input_tokens: r.usage.prompt,
    input_tokens_details: { cached_tokens: r.usage.cached },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: r.usage.thinking },
    total_tokens: r.usage.prompt + output,
  }
}

function responseObject(body: Obj, id: string, status: string, output: Obj[], usage: Obj | null, r: Reply | undefined): Obj {
  const incomplete = r?.finish === 'length'
  return {
    id,
    object: 'response',
    created_at: nowSeconds(),
    status: incomplete && status === 'completed' ? 'incomplete' : status,
    background: false,
    error: null,
    incomplete_details: incomplete && status === 'completed' ? { reason: 'max_output_tokens' } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: `${String(body.model)}-2025-08-07`,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: { effort: null, summary: null },
    store: body.store ?? true,
    temperature: body.temperature ?? 1.0,
    text: { format: isObj(body.text) && isObj(body.text.format) ? body.text.format : { type: 'text' }, verbosity: 'medium' },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_p: body.top_p ?? 1.0,
    truncation: 'disabled',
    usage,
    user: null,
    metadata: body.metadata ?? {},
  }
}

function outputItems(r: Reply): Obj[] {
  const out: Obj[] = []
  if (r.finish === 'refusal')
    out.push({ id: `msg_${randomHex(48)}`, type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'refusal', refusal: r.text }] })
  else if (r.text)
    out.push({
      id: `msg_${randomHex(48)}`,
      type: 'message',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', annotations: [], logprobs: [], text: r.text }],
    })
  for (const t of r.toolCalls)
    out.push({ id: `fc_${randomHex(48)}`, type: 'function_call', status: 'completed', arguments: JSON.stringify(t.arguments), call_id: `call_${randomHex(24)}`, name: t.name })
  return out
}

function stream(body: Obj, id: string, r: Reply, output: Obj[]): ExtraStream {
  let seq = 0
  const events: string[] = []
  const ev = (type: string, data: Obj) => events.push(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`)
  ev('response.created', { response: responseObject(body, id, 'in_progress', [], null, undefined) })
  ev('response.in_progress', { response: responseObject(body, id, 'in_progress', [], null, undefined) })
  output.forEach((item, index) => {
    if (item.type === 'message') {
      const part = (item.content as Obj[])[0] as Obj
      const refusal = part.type === 'refusal'
      ev('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', content: [] } })
      ev('response.content_part.added', { item_id: item.id, output_index: index, content_index: 0, part: refusal ? { type: 'refusal', refusal: '' } : { type: 'output_text', annotations: [], logprobs: [], text: '' } })
      for (const piece of refusal ? [r.text] : r.pieces)
        ev(refusal ? 'response.refusal.delta' : 'response.output_text.delta', { item_id: item.id, output_index: index, content_index: 0, delta: piece, ...(refusal ? {} : { logprobs: [], obfuscation: randomHex(6) }) })
      if (refusal) ev('response.refusal.done', { item_id: item.id, output_index: index, content_index: 0, refusal: r.text })
      else ev('response.output_text.done', { item_id: item.id, output_index: index, content_index: 0, text: r.text, logprobs: [] })
      ev('response.content_part.done', { item_id: item.id, output_index: index, content_index: 0, part })
    } else {
      ev('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', arguments: '' } })
      for (const frag of splitJson(String(item.arguments)))
        ev('response.function_call_arguments.delta', { item_id: item.id, output_index: index, delta: frag, obfuscation: randomHex(6) })
      ev('response.function_call_arguments.done', { item_id: item.id, output_index: index, arguments: item.arguments })
    }
    ev('response.output_item.done', { output_index: index, item })
  })
  const done = responseObject(body, id, 'completed', output, usageOf(r), r)
  ev(done.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: done })
  return { events, headers: { 'content-type': 'text/event-stream; charset=utf-8', 'x-request-id': `req_${randomHex(32)}` } }
}

export function openaiResponses(body: unknown, isJson: boolean, headers: Record<string, string>, b: Behavior, refusalText: string): NativeReply | ExtraStream {
  if (!isJson || !isObj(body)) return bad('We could not parse the JSON body of your request.')
  const previous = typeof body.previous_response_id === 'string' ? stored.get(body.previous_response_id) : undefined
  if (typeof body.previous_response_id === 'string' && !previous)
    return bad(`Previous response with id '${body.previous_response_id}' not found.`, 'previous_response_id')
  const history = previous ? [...previous.input, ...previous.output] : []
  const err = check(body, history)
  if (err) return err
  const items = inputItems(body.input)
  const ctx = requestCtx(body, [...history, ...items], headers)
  const r = planReply('openai', refusalText, b.kind === 'reply' ? b : { kind: 'reply' }, ctx)
  const id = `resp_${randomHex(48)}`
  const output = outputItems(r)
  stored.set(id, { input: [...history, ...items], output })
  if (ctx.stream) return stream(body, id, r, output)
  return jsonReply(200, responseObject(body, id, 'completed', output, usageOf(r), r), { 'x-request-id': `req_${randomHex(32)}` })
}
