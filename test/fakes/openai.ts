// Fake OpenAI Chat Completions upstream: validates requests like api.openai.com and answers in its JSON / SSE wire format.

import { openaiEmbeddings } from './embeddings.ts'
import { openaiResponses } from './openai-responses.ts'
import {
  countWords,
  defaultErrorType,
  isObj,
  isStr,
  jsonReply,
  maskKey,
  nowSeconds,
  randomAlnum,
  randomHex,
  REASONING_RE,
  splitJson,
  sse,
  textOf,
} from './common.ts'
import type { NativeReply, Obj, ProviderImpl, Reply, RequestCtx, StreamErrorType, ToolDecl, Validation } from './types.ts'

const ROLES = ['system', 'assistant', 'user', 'function', 'tool', 'developer']
const PART_TYPES = ['text', 'image_url', 'input_audio', 'refusal', 'audio', 'file']
const FN_NAME = /^[a-zA-Z0-9_-]{1,64}$/
const FINISH = { stop: 'stop', length: 'length', tool_calls: 'tool_calls', content_filter: 'content_filter', refusal: 'stop' } as const

function baseHeaders(): Record<string, string> {
  return {
    'x-request-id': `req_${randomHex(32)}`,
    'openai-version': '2020-10-01',
    'openai-processing-ms': '42',
    'x-ratelimit-limit-requests': '10000',
    'x-ratelimit-remaining-requests': '9999',
    'x-ratelimit-reset-requests': '6ms',
    'x-ratelimit-limit-tokens': '30000000',
    'x-ratelimit-remaining-tokens': '29999000',
    'x-ratelimit-reset-tokens': '2ms',
  }
}

export function openaiError(
  status: number,
  message: string,
  type: string,
  param: string | null = null,
  code: string | null = null,
  headers: Record<string, string> = {},
): NativeReply {
  return jsonReply(status, { error: { message, type, param, code } }, { ...baseHeaders(), ...headers })
}

const bad = (message: string, param: string | null = null, code: string | null = null): Validation => ({
  ok: false,
  reply: openaiError(400, message, 'invalid_request_error', param, code),
})

function typeName(v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an array'
  if (typeof v === 'number') return Number.isInteger(v) ? 'an integer' : 'a decimal'
  if (typeof v === 'object') return 'an object'
  return `a ${typeof v}`
}

function checkRange(body: Obj, name: string, min: number, max: number): Validation | undefined {
  const v = body[name]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number') return bad(`Invalid type for '${name}': expected a decimal, but got ${typeName(v)} instead.`, name, 'invalid_type')
  if (v > max) return bad(`Invalid '${name}': decimal above maximum value. Expected a value <= ${max}, but got ${v} instead.`, name, 'decimal_above_max_value')
  if (v < min) return bad(`Invalid '${name}': decimal below minimum value. Expected a value >= ${min}, but got ${v} instead.`, name, 'decimal_below_min_value')
  return undefined
}

export function isReasoningModel(model: string): boolean {
  return REASONING_RE.test(model) && !model.includes('-chat-latest')
}

/** gpt-5.1+ (except Astra) accepts sampling parameters when reasoning_effort is "none". */
function samplingAllowed(model: string, body: Obj): boolean {
  return body.reasoning_effort === 'none' && /^gpt-(5\.[1-9]|6)/.test(model) && !model.includes('astra')
}

/** Prompt tokens: Σ over messages of (3 + words of their text). */
export function chatPromptTokens(messages: unknown[]): number {
  let n = 0
  for (const m of messages) n += 3 + (isObj(m) ? countWords(textOf(m.content)) : 0)
  return n
}

function validateMessages(messages: unknown[]): Validation | undefined {
  let pending: Set<string> | undefined
  let pendingIdx = 0
  const unanswered = (): Validation =>
    bad(
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...(pending ?? [])].join(', ')}`,
      `messages.[${pendingIdx}].role`,
    )
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]
    if (!isObj(m)) return bad(`Invalid type for 'messages[${i}]': expected an object, but got ${typeName(m)} instead.`, `messages[${i}]`, 'invalid_type')
    if (!isStr(m.role)) return bad(`Missing required parameter: 'messages[${i}].role'.`, `messages[${i}].role`, 'missing_required_parameter')
    if (!ROLES.includes(m.role))
      return bad(
        `Invalid value: '${m.role}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`,
        `messages[${i}].role`,
        'invalid_value',
      )
    const content = m.content
    if (content === undefined && m.role !== 'assistant')
      return bad(`Missing required parameter: 'messages[${i}].content'.`, `messages[${i}].content`, 'missing_required_parameter')
    if (content !== undefined && content !== null && !isStr(content) && !Array.isArray(content))
      return bad(`Invalid type for 'messages[${i}].content': expected one of a string or array of objects, but got ${typeName(content)} instead.`, `messages[${i}].content`, 'invalid_type')
    if (Array.isArray(content)) {
      for (let j = 0; j < content.length; j++) {
        const p = content[j]
        const t = isObj(p) ? p.type : undefined
        if (!isStr(t) || !PART_TYPES.includes(t))
          return bad(
            `Invalid value: '${String(t)}'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', 'audio', and 'file'.`,
            `messages[${i}].content[${j}].type`,
            'invalid_value',
          )
      }
    }
    if (m.role === 'tool') {
      if (!isStr(m.tool_call_id))
        return bad(`Missing required parameter: 'messages[${i}].tool_call_id'.`, `messages[${i}].tool_call_id`, 'missing_required_parameter')
      if (!pending || !pending.has(m.tool_call_id))
        return bad(
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          `messages.[${i}].role`,
        )
      pending.delete(m.tool_call_id)
      continue
    }
    if (pending && pending.size > 0) return unanswered()
    pending = undefined
    if (m.role === 'assistant' && m.tool_calls !== undefined && m.tool_calls !== null) {
      if (!Array.isArray(m.tool_calls))
        return bad(`Invalid type for 'messages[${i}].tool_calls': expected an array of objects, but got ${typeName(m.tool_calls)} instead.`, `messages[${i}].tool_calls`, 'invalid_type')
      const ids = new Set<string>()
      for (let j = 0; j < m.tool_calls.length; j++) {
        const tc = m.tool_calls[j]
        const at = `messages[${i}].tool_calls[${j}]`
        if (!isObj(tc)) return bad(`Invalid type for '${at}': expected an object, but got ${typeName(tc)} instead.`, at, 'invalid_type')
        if (!isStr(tc.id)) return bad(`Missing required parameter: '${at}.id'.`, `${at}.id`, 'missing_required_parameter')
        if (tc.type !== 'function') return bad(`Missing required parameter: '${at}.type'.`, `${at}.type`, 'missing_required_parameter')
        const fn = tc.function
        if (!isObj(fn) || !isStr(fn.name)) return bad(`Missing required parameter: '${at}.function.name'.`, `${at}.function.name`, 'missing_required_parameter')
        if (!isStr(fn.arguments))
          return bad(`Invalid type for '${at}.function.arguments': expected a string, but got ${typeName(fn.arguments)} instead.`, `${at}.function.arguments`, 'invalid_type')
        ids.add(tc.id)
      }
      if (ids.size > 0) {
        pending = ids
        pendingIdx = i
      }
    }
  }
  if (pending && pending.size > 0) return unanswered()
  return undefined
}

function validateBody(body: Obj, headers: Record<string, string>): Validation {
  const model = body.model
  if (!isStr(model) || model.length === 0) return bad('you must provide a model parameter')
  if (/does-not-exist|^unknown-/.test(model))
    return {
      ok: false,
      reply: openaiError(404, `The model \`${model}\` does not exist or you do not have access to it.`, 'invalid_request_error', null, 'model_not_found'),
    }
  const messages = body.messages
  if (messages === undefined) return bad("Missing required parameter: 'messages'.", 'messages', 'missing_required_parameter')
  if (!Array.isArray(messages))
    return bad(`Invalid type for 'messages': expected an array of objects, but got ${typeName(messages)} instead.`, 'messages', 'invalid_type')
  if (messages.length === 0)
    return bad("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", 'messages', 'empty_array')
  const msgErr = validateMessages(messages)
  if (msgErr) return msgErr

  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean')
    return bad(`Invalid type for 'stream': expected a boolean, but got ${typeName(body.stream)} instead.`, 'stream', 'invalid_type')
  const stream = body.stream === true
  if (body.stream_options !== undefined && body.stream_options !== null && !stream)
    return bad("The 'stream_options' parameter is only allowed when 'stream' is enabled.", 'stream_options')

  for (const [name, min, max] of [
    ['temperature', 0, 2],
    ['top_p', 0, 1],
    ['presence_penalty', -2, 2],
    ['frequency_penalty', -2, 2],
  ] as const) {
    const e = checkRange(body, name, min, max)
    if (e) return e
  }
  for (const name of ['max_tokens', 'max_completion_tokens'] as const) {
    const v = body[name]
    if (v === undefined || v === null) continue
    if (typeof v !== 'number' || !Number.isInteger(v))
      return bad(`Invalid type for '${name}': expected an integer, but got ${typeName(v)} instead.`, name, 'invalid_type')
    if (v < 1) return bad(`Invalid '${name}': integer below minimum value. Expected a value >= 1, but got ${v} instead.`, name, 'integer_below_min_value')
  }

  if (isReasoningModel(model)) {
    if (body.max_tokens !== undefined && body.max_tokens !== null)
      return bad(
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        'max_tokens',
        'unsupported_parameter',
      )
    if (!samplingAllowed(model, body)) {
      for (const name of ['temperature', 'top_p'] as const) {
        const v = body[name]
        if (typeof v === 'number' && v !== 1)
          return bad(
            `Unsupported value: '${name}' does not support ${v} with this model. Only the default (1) value is supported.`,
            name,
            'unsupported_value',
          )
      }
    }
  }

  // response_format
  let jsonSchema: unknown
  const rf = body.response_format
  if (rf !== undefined && rf !== null) {
    if (!isObj(rf) || !isStr(rf.type) || !['text', 'json_object', 'json_schema'].includes(rf.type))
      return bad(
        `Invalid value: '${isObj(rf) ? String(rf.type) : String(rf)}'. Supported values are: 'text', 'json_object', and 'json_schema'.`,
        'response_format.type',
        'invalid_value',
      )
    if (rf.type === 'json_schema') {
      const js = rf.json_schema
      if (!isObj(js)) return bad("Missing required parameter: 'response_format.json_schema'.", 'response_format.json_schema', 'missing_required_parameter')
      if (!isStr(js.name))
        return bad("Missing required parameter: 'response_format.json_schema.name'.", 'response_format.json_schema.name', 'missing_required_parameter')
      if (!FN_NAME.test(js.name))
        return bad(
          "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
          'response_format.json_schema.name',
          'invalid_value',
        )
      jsonSchema = isObj(js.schema) ? js.schema : {}
    } else if (rf.type === 'json_object') {
      const all = messages.map((m) => (isObj(m) ? textOf(m.content) : '')).join(' ')
      if (!/json/i.test(all))
        return bad("'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.", 'messages')
      jsonSchema = null
    }
  }

  // tools / tool_choice
  const tools: ToolDecl[] = []
  if (body.tools !== undefined && body.tools !== null) {
    if (!Array.isArray(body.tools))
      return bad(`Invalid type for 'tools': expected an array of objects, but got ${typeName(body.tools)} instead.`, 'tools', 'invalid_type')
    for (let i = 0; i < body.tools.length; i++) {
      const t = body.tools[i]
      if (!isObj(t) || (t.type !== 'function' && t.type !== 'custom'))
        return bad(`Invalid value: '${isObj(t) ? String(t.type) : ''}'. Supported values are: 'function' and 'custom'.`, `tools[${i}].type`, 'invalid_value')
      if (t.type !== 'function') continue
      const fn = t.function
      if (!isObj(fn) || !isStr(fn.name))
        return bad(`Missing required parameter: 'tools[${i}].function.name'.`, `tools[${i}].function.name`, 'missing_required_parameter')
      if (!FN_NAME.test(fn.name))
        return bad(
          `Invalid 'tools[${i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
          `tools[${i}].function.name`,
          'invalid_value',
        )
      tools.push({ name: fn.name, schema: fn.parameters ?? { type: 'object', properties: {} } })
    }
  }
  let forcedTool: string | undefined
  const tc = body.tool_choice
  if (tc !== undefined && tc !== null) {
    if (tools.length === 0) return bad("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", 'tool_choice')
    if (isStr(tc)) {
      if (!['none', 'auto', 'required'].includes(tc))
        return bad(`Invalid value: '${tc}'. Supported values are: 'none', 'auto', and 'required'.`, 'tool_choice', 'invalid_value')
      if (tc === 'required') forcedTool = ''
    } else if (isObj(tc) && tc.type === 'function' && isObj(tc.function) && isStr(tc.function.name)) {
      const name = tc.function.name
      if (!tools.some((t) => t.name === name))
        return bad(`Invalid value for 'tool_choice': tool choice '${name}' not found in 'tools' parameter.`, 'tool_choice')
      forcedTool = name
    } else if (!(isObj(tc) && tc.type === 'allowed_tools')) {
      return bad("Missing required parameter: 'tool_choice.function'.", 'tool_choice.function', 'missing_required_parameter')
    }
  }

  const maxTokens = [body.max_completion_tokens, body.max_tokens].find((v): v is number => typeof v === 'number')
  const so = body.stream_options
  return {
    ok: true,
    ctx: {
      model,
      stream: stream ? 'sse' : false,
      promptTokens: chatPromptTokens(messages),
      jsonSchema,
      tools,
      forcedTool,
      maxTokens,
      includeUsage: stream && isObj(so) && so.include_usage === true,
      showThinking: false,
      headers,
    },
  }
}

function usageOf(r: Reply): Obj {
  const { prompt, completion, cached, cacheWrite, thinking } = r.usage
  return {
    prompt_tokens: prompt,
    completion_tokens: completion + thinking,
    total_tokens: prompt + completion + thinking,
    prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0, ...(cacheWrite ? { cache_write_tokens: cacheWrite } : {}) },
    completion_tokens_details: { reasoning_tokens: thinking, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  }
}

const callId = (): string => `call_${randomAlnum(24)}`

const ERR: Record<string, { status: number; type: string; code: string | null; message: (model: string, prompt: number, key: string) => string; param?: string }> = {
  rate_limit: {
    status: 429,
    type: 'requests',
    code: 'rate_limit_exceeded',
    message: (m) =>
      `Rate limit reached for ${m} in organization org-fake on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s. Visit https://platform.openai.com/account/rate-limits to learn more.`,
  },
  overloaded: { status: 503, type: 'server_error', code: null, message: () => 'The engine is currently overloaded, please try again later' },
  unavailable: { status: 503, type: 'server_error', code: null, message: () => 'The server is overloaded or not ready yet.' },
  server: {
    status: 500,
    type: 'server_error',
    code: null,
    message: () =>
      'The server had an error while processing your request. Sorry about that! You can retry your request, or contact us through our help center at help.openai.com if the error persists.',
  },
  context_length: {
    status: 400,
    type: 'invalid_request_error',
    code: 'context_length_exceeded',
    param: 'messages',
    message: (_m, p) =>
      `This model's maximum context length is 128000 tokens. However, your messages resulted in ${128000 + p} tokens. Please reduce the length of the messages.`,
  },
  auth: {
    status: 401,
    type: 'invalid_request_error',
    code: 'invalid_api_key',
    message: (_m, _p, k) => `Incorrect API key provided: ${maskKey(k)}. You can find your API key at https://platform.openai.com/account/api-keys.`,
  },
  bad_request: { status: 400, type: 'invalid_request_error', code: null, message: () => "Invalid value for 'messages': the request was rejected." },
  permission: { status: 403, type: 'invalid_request_error', code: 'unsupported_country_region_territory', message: () => 'Country, region, or territory not supported' },
  not_found: {
    status: 404,
    type: 'invalid_request_error',
    code: 'model_not_found',
    message: (m) => `The model \`${m}\` does not exist or you do not have access to it.`,
  },
}

function streamErrorBody(type: StreamErrorType | undefined): Obj {
  const e = ERR[type ?? 'server'] ?? ERR.server
  if (!e) return {}
  return { error: { message: e.message('the model', 0, ''), type: e.type, param: null, code: e.code } }
}

export const openai: ProviderImpl = {
  id: 'openai',
  basePath: '/v1',
  refusalText: "I'm sorry, but I can't help with that request.",

  route(method, url) {
    if (method !== 'POST') return undefined
    if (url.pathname === '/v1/chat/completions') return {}
    if (url.pathname === '/v1/responses') return { endpoint: 'responses' }
    return url.pathname === '/v1/embeddings' ? { endpoint: 'embeddings' } : undefined
  },

  extra(route, body, isJson, headers, b) {
    if (route.endpoint === 'responses') return openaiResponses(body, isJson, headers, b, openai.refusalText)
    return openaiEmbeddings(body)
  },

  notFound(method, url) {
    return openaiError(404, `Invalid URL (${method} ${url.pathname})`, 'invalid_request_error')
  },

  authenticate(headers, _url, apiKey) {
    const auth = headers.authorization
    const m = auth === undefined ? null : /^Bearer\s+(.+)$/i.exec(auth)
    if (!m || !m[1])
      return openaiError(
        401,
        "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (i.e. username: YOUR_KEY) when using HTTP Basic Auth... You can obtain an API key from https://platform.openai.com/account/api-keys.",
        'invalid_request_error',
      )
    const key = m[1].trim()
    if (key !== apiKey)
      return openaiError(
        401,
        `Incorrect API key provided: ${maskKey(key)}. You can find your API key at https://platform.openai.com/account/api-keys.`,
        'invalid_request_error',
        null,
        'invalid_api_key',
      )
    return undefined
  },

  validate(body, isJson, _route, headers) {
    if (!isJson || !isObj(body))
      return bad(
        "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)",
      )
    return validateBody(body, headers)
  },

  error(b, ctx) {
    const kind = b.errorType ?? defaultErrorType(b.status)
    const e = ERR[kind] ?? ERR.server
    if (!e) throw new Error('unreachable')
    return openaiError(b.status, e.message(ctx.model, ctx.promptTokens, ctx.apiKey), e.type, e.param ?? null, e.code)
  },

  complete(r) {
    const refusal = r.finish === 'refusal'
    const content = refusal || (r.text === '' && (r.toolCalls.length > 0 || r.finish === 'content_filter')) ? null : r.text
    const message: Obj = { role: 'assistant', content, refusal: refusal ? r.text : null, annotations: [] }
    if (r.toolCalls.length > 0)
      message.tool_calls = r.toolCalls.map((t) => ({
        id: callId(),
        type: 'function',
        function: { name: t.name, arguments: JSON.stringify(t.arguments) },
      }))
    return jsonReply(
      200,
      {
        id: `chatcmpl-${randomAlnum(29)}`,
        object: 'chat.completion',
        created: nowSeconds(),
        model: r.model,
        choices: [{ index: 0, message, logprobs: null, finish_reason: FINISH[r.finish] }],
        usage: usageOf(r),
        service_tier: 'default',
        system_fingerprint: `fp_${randomHex(10)}`,
      },
      baseHeaders(),
    )
  },

  stream(r, ctx) {
    const id = `chatcmpl-${randomAlnum(29)}`
    const created = nowSeconds()
    const fp = `fp_${randomHex(10)}`
    const chunk = (choices: Obj[], usage?: Obj): string => {
      const c: Obj = { id, object: 'chat.completion.chunk', created, model: r.model, service_tier: 'default', system_fingerprint: fp, choices }
      if (ctx.includeUsage) c.usage = usage ?? null
      c.obfuscation = randomAlnum(1 + Math.floor(Math.random() * 12))
      return sse(JSON.stringify(c))
    }
    const delta = (d: Obj, finish: string | null = null): string => chunk([{ index: 0, delta: d, logprobs: null, finish_reason: finish }])
    const refusal = r.finish === 'refusal'
    const events: string[] = []
    if (refusal) events.push(delta({ role: 'assistant', content: null, refusal: '' }))
    else if (r.text === '' && r.toolCalls.length > 0) events.push(delta({ role: 'assistant', content: null }))
    else events.push(delta({ role: 'assistant', content: '', refusal: null }))
    for (const p of r.pieces) events.push(delta(refusal ? { refusal: p } : { content: p }))
    r.toolCalls.forEach((t, index) => {
      events.push(delta({ tool_calls: [{ index, id: callId(), type: 'function', function: { name: t.name, arguments: '' } }] }))
      for (const frag of splitJson(JSON.stringify(t.arguments))) events.push(delta({ tool_calls: [{ index, function: { arguments: frag } }] }))
    })
    events.push(delta({}, FINISH[r.finish]))
    if (ctx.includeUsage) events.push(chunk([], usageOf(r)))
    return { events, end: 'data: [DONE]\n\n', headers: { ...baseHeaders(), 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' } }
  },

  streamError(type) {
    return sse(JSON.stringify(streamErrorBody(type)))
  },

  malformed() {
    return 'data: {not json\n\n'
  },
}
