// Fake Mistral chat-completions upstream: strict pydantic-style request validation (422 extra_forbidden, 9-char tool ids) and Mistral's wire format.

import { mistralEmbeddings } from './embeddings.ts'
import { chatPromptTokens } from './openai.ts'
import { defaultErrorType, isObj, isStr, jsonReply, nowSeconds, randomAlnum, randomHex, sse } from './common.ts'
import type { NativeReply, Obj, ProviderImpl, Reply, StreamErrorType, ToolDecl, Validation } from './types.ts'

const TOP_LEVEL = new Set([
  'model', 'messages', 'temperature', 'top_p', 'max_tokens', 'stream', 'stop', 'random_seed', 'metadata', 'response_format',
  'tools', 'tool_choice', 'presence_penalty', 'frequency_penalty', 'n', 'prediction', 'parallel_tool_calls', 'reasoning_effort',
  'prompt_mode', 'guardrails', 'prompt_cache_key', 'service_tier', 'safe_prompt',
])
const MESSAGE_FIELDS: Record<string, Set<string>> = {
  system: new Set(['role', 'content']),
  user: new Set(['role', 'content']),
  assistant: new Set(['role', 'content', 'tool_calls', 'prefix']),
  tool: new Set(['role', 'content', 'tool_call_id', 'name']),
}
const TOOL_CALL_FIELDS = new Set(['id', 'type', 'function', 'index'])
const FUNCTION_CALL_FIELDS = new Set(['name', 'arguments'])
const TOOL_ID = /^[a-zA-Z0-9]{9}$/
const FINISH = { stop: 'stop', length: 'length', tool_calls: 'tool_calls', content_filter: 'stop', refusal: 'stop' } as const

const baseHeaders = (): Record<string, string> => ({
  'x-ratelimit-limit-req-minute': '600',
  'x-ratelimit-remaining-req-minute': '599',
  'x-ratelimit-limit-tokens-minute': '2000000',
  'x-ratelimit-remaining-tokens-minute': '1999000',
  'x-kong-request-id': randomHex(32),
})

export function mistralError(status: number, message: unknown, type: string, code: string | null = null, headers: Record<string, string> = {}): NativeReply {
  return jsonReply(status, { object: 'error', message, type, param: null, code }, { ...baseHeaders(), ...headers })
}

interface Detail {
  type: string
  loc: (string | number)[]
  msg: string
  input: unknown
  ctx?: Obj
}

const unprocessable = (detail: Detail[]): Validation => ({
  ok: false,
  reply: mistralError(422, { detail }, 'invalid_request_error'),
})

const bad = (message: string, type = 'invalid_request_error', code: string | null = null): Validation => ({
  ok: false,
  reply: mistralError(400, message, type, code),
})

function extras(obj: Obj, allowed: Set<string>, loc: (string | number)[], out: Detail[]): void {
  for (const [k, v] of Object.entries(obj))
    if (!allowed.has(k)) out.push({ type: 'extra_forbidden', loc: [...loc, k], msg: 'Extra inputs are not permitted', input: v })
}

function schemaErrors(body: Obj): Detail[] {
  const out: Detail[] = []
  extras(body, TOP_LEVEL, ['body'], out)
  for (const f of ['model', 'messages'])
    if (body[f] === undefined) out.push({ type: 'missing', loc: ['body', f], msg: 'Field required', input: body })
  if (body.model !== undefined && !isStr(body.model))
    out.push({ type: 'string_type', loc: ['body', 'model'], msg: 'Input should be a valid string', input: body.model })
  const t = body.temperature
  if (t !== undefined && t !== null) {
    if (typeof t !== 'number') out.push({ type: 'float_parsing', loc: ['body', 'temperature'], msg: 'Input should be a valid number, unable to parse string as a number', input: t })
    else if (t > 1.5) out.push({ type: 'less_than_equal', loc: ['body', 'temperature'], msg: 'Input should be less than or equal to 1.5', input: t, ctx: { le: 1.5 } })
    else if (t < 0) out.push({ type: 'greater_than_equal', loc: ['body', 'temperature'], msg: 'Input should be greater than or equal to 0', input: t, ctx: { ge: 0 } })
  }
  const mt = body.max_tokens
  if (mt !== undefined && mt !== null && (typeof mt !== 'number' || !Number.isInteger(mt)))
    out.push({ type: 'int_type', loc: ['body', 'max_tokens'], msg: 'Input should be a valid integer', input: mt })
  const msgs = body.messages
  if (msgs !== undefined && !Array.isArray(msgs)) out.push({ type: 'list_type', loc: ['body', 'messages'], msg: 'Input should be a valid list', input: msgs })
  if (Array.isArray(msgs)) {
    msgs.forEach((m, i) => {
      if (!isObj(m)) {
        out.push({ type: 'model_attributes_type', loc: ['body', 'messages', i], msg: 'Input should be a valid dictionary or object to extract fields from', input: m })
        return
      }
      const role = m.role
      const fields = isStr(role) ? MESSAGE_FIELDS[role] : undefined
      if (!fields) {
        const tags = "'system', 'user', 'assistant', 'tool'"
        out.push({
          type: 'union_tag_invalid',
          loc: ['body', 'messages', i],
          msg: `Input tag '${String(role)}' found using 'role' does not match any of the expected tags: ${tags}`,
          input: m,
          ctx: { discriminator: "'role'", tag: String(role), expected_tags: tags },
        })
        return
      }
      const loc = ['body', 'messages', i, role as string]
      extras(m, fields, loc, out)
      if (role !== 'assistant' && m.content === undefined) out.push({ type: 'missing', loc: [...loc, 'content'], msg: 'Field required', input: m })
      if (role === 'assistant' && Array.isArray(m.tool_calls)) {
        m.tool_calls.forEach((tc, j) => {
          if (!isObj(tc)) return
          extras(tc, TOOL_CALL_FIELDS, [...loc, 'tool_calls', j], out)
          if (isObj(tc.function)) extras(tc.function, FUNCTION_CALL_FIELDS, [...loc, 'tool_calls', j, 'function'], out)
          else out.push({ type: 'missing', loc: [...loc, 'tool_calls', j, 'function'], msg: 'Field required', input: tc })
        })
      }
    })
  }
  return out
}

function validateBody(body: Obj, headers: Record<string, string>): Validation {
  const details = schemaErrors(body)
  if (details.length > 0) return unprocessable(details)
  const model = body.model as string
  const messages = body.messages as Obj[]
  if (/does-not-exist|^unknown-/.test(model)) return bad(`Invalid model: ${model}`, 'invalid_model', '1500')
  if (messages.length === 0) return bad('Conversation must have at least one message', 'invalid_request_message_order', '3230')

  // Ordering and tool-call rules.
  let seenNonSystem = false
  let prevRole = ''
  let pendingCalls = 0
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i] as Obj
    const role = m.role as string
    if (role === 'system') {
      if (seenNonSystem) return bad(`Unexpected role 'system' after role '${prevRole}'`, 'invalid_request_message_order', '3230')
    } else seenNonSystem = true
    if (role === 'assistant') {
      const calls = Array.isArray(m.tool_calls) ? m.tool_calls : []
      const hasContent = isStr(m.content) ? m.content.length > 0 : Array.isArray(m.content) && m.content.length > 0
      if (calls.length > 0 && hasContent) return bad('Assistant message must have either content or tool_calls, but not both.')
      for (const tc of calls) {
        const id = isObj(tc) ? tc.id : undefined
        if (!isStr(id) || !TOOL_ID.test(id))
          return bad(`Tool call id was ${String(id)} but must be a-z, A-Z, 0-9, with a length of 9.`, 'invalid_function_call', '3280')
      }
      if (pendingCalls > 0) return bad('Not the same number of function calls and responses', 'invalid_request_message_order', '3230')
      pendingCalls = calls.length
    } else if (role === 'tool') {
      const id = m.tool_call_id
      if (!isStr(id) || !TOOL_ID.test(id))
        return bad(`Tool call id was ${String(id)} but must be a-z, A-Z, 0-9, with a length of 9.`, 'invalid_function_call', '3280')
      if (pendingCalls === 0) return bad('Not the same number of function calls and responses', 'invalid_request_message_order', '3230')
      pendingCalls--
    } else if (pendingCalls > 0) {
      return bad('Not the same number of function calls and responses', 'invalid_request_message_order', '3230')
    }
    prevRole = role
  }
  const last = messages[messages.length - 1] as Obj
  if (!(last.role === 'user' || last.role === 'tool' || (last.role === 'assistant' && last.prefix === true)))
    return bad(
      `Expected last role User or Tool (or Assistant with prefix True) for serving but got ${String(last.role)}`,
      'invalid_request_message_order',
      '3230',
    )

  let jsonSchema: unknown
  const rf = body.response_format
  if (isObj(rf)) {
    if (rf.type === 'json_object') jsonSchema = null
    else if (rf.type === 'json_schema') jsonSchema = isObj(rf.json_schema) && isObj(rf.json_schema.schema) ? rf.json_schema.schema : {}
  }
  const tools: ToolDecl[] = []
  if (Array.isArray(body.tools))
    for (const t of body.tools)
      if (isObj(t) && isObj(t.function) && isStr(t.function.name)) tools.push({ name: t.function.name, schema: t.function.parameters ?? {} })
  let forcedTool: string | undefined
  const tc = body.tool_choice
  if (tc === 'any' || tc === 'required') forcedTool = ''
  else if (isObj(tc) && isObj(tc.function) && isStr(tc.function.name)) forcedTool = tc.function.name
  return {
    ok: true,
    ctx: {
      model,
      stream: body.stream === true ? 'sse' : false,
      promptTokens: chatPromptTokens(messages),
      jsonSchema,
      tools,
      forcedTool,
      maxTokens: typeof body.max_tokens === 'number' ? body.max_tokens : undefined,
      includeUsage: false,
      // Magistral (Mistral's reasoning models) always think, and say so in `thinking` content chunks.
      showThinking: /^magistral/.test(model),
      headers,
    },
  }
}

function usageOf(r: Reply): Obj {
  const { prompt, completion, cached, thinking } = r.usage
  return {
    prompt_tokens: prompt,
    total_tokens: prompt + completion + thinking,
    completion_tokens: completion + thinking,
    prompt_tokens_details: { cached_tokens: cached },
  }
}

/** A reasoning model's thinking, as Mistral puts it in `content`. */
const thinkingChunk = (text: string): Obj => ({ type: 'thinking', thinking: [{ type: 'text', text }] })

const toolCallsOf = (r: Reply): Obj[] =>
  r.toolCalls.map((t, index) => ({ id: randomAlnum(9), function: { name: t.name, arguments: JSON.stringify(t.arguments) }, index }))

const ERR: Record<string, { status: number; message: (model: string, prompt: number) => string; type: string; code: string | null }> = {
  rate_limit: { status: 429, message: () => 'Rate limit exceeded', type: 'rate_limited', code: '1300' },
  overloaded: { status: 503, message: () => 'Service tier capacity exceeded for this model.', type: 'invalid_request_error', code: null },
  unavailable: { status: 503, message: () => 'Service unavailable.', type: 'internal_server_error', code: null },
  server: { status: 500, message: () => 'Internal server error', type: 'internal_server_error', code: null },
  context_length: {
    status: 400,
    message: (_m, p) => `Prompt contains ${131072 + p} tokens and 0 draft tokens, too large for model with 131072 maximum context length`,
    type: 'invalid_request_error',
    code: null,
  },
  bad_request: { status: 400, message: () => 'Invalid request', type: 'invalid_request_error', code: null },
  not_found: { status: 404, message: (m) => `Invalid model: ${m}`, type: 'invalid_model', code: '1500' },
  permission: { status: 403, message: () => 'Forbidden', type: 'invalid_request_error', code: null },
}

export const mistral: ProviderImpl = {
  id: 'mistral',
  basePath: '/v1',
  refusalText: "I'm sorry, but I can't help with that request.",

  route(method, url) {
    if (method !== 'POST') return undefined
    if (url.pathname === '/v1/chat/completions') return {}
    return url.pathname === '/v1/embeddings' ? { endpoint: 'embeddings' } : undefined
  },

  extra(_route, body) {
    return mistralEmbeddings(body)
  },

  notFound() {
    return jsonReply(404, { detail: 'Not Found' })
  },

  authenticate(headers, _url, apiKey) {
    const m = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? '')
    if (!m || m[1]?.trim() !== apiKey) return jsonReply(401, { message: 'Unauthorized', request_id: randomHex(32) })
    return undefined
  },

  validate(body, isJson, _route, headers) {
    if (!isJson)
      return unprocessable([{ type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error', input: {}, ctx: { error: 'Expecting value' } }])
    if (!isObj(body)) return unprocessable([{ type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', input: body }])
    return validateBody(body, headers)
  },

  error(b, ctx) {
    const kind = b.errorType ?? defaultErrorType(b.status)
    if (kind === 'auth') return jsonReply(b.status, { message: 'Unauthorized', request_id: randomHex(32) })
    const e = ERR[kind] ?? ERR.server
    if (!e) throw new Error('unreachable')
    return mistralError(b.status, e.message(ctx.model, ctx.promptTokens), e.type, e.code)
  },

  complete(r) {
    const calls = toolCallsOf(r)
    const message: Obj = {
      role: 'assistant',
      tool_calls: calls.length > 0 ? calls : null,
      content: r.thinkingText ? [thinkingChunk(r.thinkingText), { type: 'text', text: r.text }] : r.text,
    }
    return jsonReply(
      200,
      {
        id: randomHex(32),
        created: nowSeconds(),
        model: r.model,
        usage: usageOf(r),
        object: 'chat.completion',
        choices: [{ index: 0, finish_reason: FINISH[r.finish], message }],
      },
      baseHeaders(),
    )
  },

  stream(r) {
    const id = randomHex(32)
    const created = nowSeconds()
    const chunk = (delta: Obj, finish: string | null, usage?: Obj): string => {
      const c: Obj = { id, object: 'chat.completion.chunk', created, model: r.model, choices: [{ index: 0, delta, finish_reason: finish }] }
      if (usage) c.usage = usage
      c.p = 'abcdefghijklmnopqrstuvwxyz'.slice(0, 1 + Math.floor(Math.random() * 20))
      return sse(JSON.stringify(c))
    }
    const events = [chunk({ role: 'assistant', content: '' }, null)]
    if (r.thinkingText) events.push(chunk({ content: [thinkingChunk(r.thinkingText)] }, null))
    const finish = FINISH[r.finish]
    const calls = toolCallsOf(r)
    const pieces = r.pieces.length > 0 || calls.length > 0 ? r.pieces : ['']
    pieces.forEach((p, i) => {
      const last = i === pieces.length - 1 && calls.length === 0
      events.push(last ? chunk({ content: p }, finish, usageOf(r)) : chunk({ content: p }, null))
    })
    if (calls.length > 0) events.push(chunk({ content: null, tool_calls: calls }, finish, usageOf(r)))
    return { events, end: 'data: [DONE]\n\n', headers: { ...baseHeaders(), 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' } }
  },

  streamError(type: StreamErrorType | undefined) {
    const e = ERR[type ?? 'server'] ?? ERR.server
    return sse(JSON.stringify({ error: { object: 'error', message: e?.message('', 0), type: e?.type, param: null, code: e?.code ?? null } }))
  },

  malformed() {
    return 'data: {not json\n\n'
  },
}
