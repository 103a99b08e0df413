// Fake Anthropic Messages upstream: validates requests like api.anthropic.com (version header, max_tokens, tool_use/tool_result pairing) and answers in its JSON / named-event SSE format.

import { countWords, isObj, isStr, jsonReply, randomAlnum, randomBase64, splitJson, splitText, textOf } from './common.ts'
import type { FinishKind, NativeReply, Obj, ProviderImpl, Reply, StreamErrorType, ToolDecl, Validation } from './types.ts'

const VERSIONS = new Set(['2023-06-01', '2023-01-01', '2026-10-21'])
const TOP_LEVEL = new Set([
  'model', 'messages', 'max_tokens', 'system', 'temperature', 'top_p', 'top_k', 'stop_sequences', 'stream', 'metadata', 'tools',
  'tool_choice', 'thinking', 'output_config', 'service_tier',
])
/** Sampling parameters removed in API version 2026-10-21. */
const REMOVED_2026 = new Set(['temperature', 'top_p', 'top_k'])
const BLOCK_TYPES = [
  'text', 'image', 'document', 'search_result', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking', 'server_tool_use',
  'web_search_tool_result', 'container_upload',
]
const BLOCK_FIELDS: Record<string, Set<string>> = {
  text: new Set(['type', 'text', 'cache_control', 'citations']),
  image: new Set(['type', 'source', 'cache_control']),
  tool_use: new Set(['type', 'id', 'name', 'input', 'cache_control', 'caller']),
  tool_result: new Set(['type', 'tool_use_id', 'content', 'is_error', 'cache_control']),
  thinking: new Set(['type', 'thinking', 'signature']),
  redacted_thinking: new Set(['type', 'data']),
}
/** Models that reject forced tool choice (`any` / `tool`). */
const NO_FORCED_TOOLS = /claude-(opus|sonnet)-5-5|claude-fable/
const STOP_REASON: Record<FinishKind, string> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  refusal: 'refusal',
  content_filter: 'refusal',
}
const STATUS_TYPE: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  409: 'conflict_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
}

const requestId = (): string => `req_011C${randomAlnum(20)}`

function baseHeaders(id: string): Record<string, string> {
  const reset = new Date(Date.now() + 60_000).toISOString().replace(/\.\d+Z$/, 'Z')
  return {
    'request-id': id,
    'anthropic-organization-id': '00000000-0000-4000-8000-000000000000',
    'anthropic-ratelimit-requests-limit': '4000',
    'anthropic-ratelimit-requests-remaining': '3999',
    'anthropic-ratelimit-requests-reset': reset,
    'anthropic-ratelimit-input-tokens-limit': '2000000',
    'anthropic-ratelimit-input-tokens-remaining': '1999000',
    'anthropic-ratelimit-input-tokens-reset': reset,
    'anthropic-ratelimit-output-tokens-limit': '400000',
    'anthropic-ratelimit-output-tokens-remaining': '400000',
    'anthropic-ratelimit-output-tokens-reset': reset,
  }
}

export function anthropicError(status: number, type: string, message: string, headers: Record<string, string> = {}): NativeReply {
  const id = requestId()
  return jsonReply(status, { type: 'error', error: { type, message }, request_id: id }, { ...baseHeaders(id), ...headers })
}

const bad = (message: string): Validation => ({ ok: false, reply: anthropicError(400, 'invalid_request_error', message) })

/** Prompt tokens: Σ over messages (the system prompt counting as one) of (3 + words of their text). */
function promptTokens(body: Obj): number {
  let n = 0
  if (body.system !== undefined) n += 3 + countWords(textOf(body.system))
  for (const m of body.messages as Obj[]) n += 3 + countWords(textOf(m.content))
  return n
}

function validateBlocks(i: number, role: string, content: unknown[]): Validation | undefined {
  for (let j = 0; j < content.length; j++) {
    const b = content[j]
    const at = `messages.${i}.content.${j}`
    if (!isObj(b)) return bad(`${at}: Input should be a valid dictionary or object to extract fields from`)
    const type = b.type
    if (!isStr(type) || !BLOCK_TYPES.includes(type))
      return bad(
        `${at}: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: ${BLOCK_TYPES.map((t) => `'${t}'`).join(', ')}`,
      )
    const fields = BLOCK_FIELDS[type]
    if (fields) for (const k of Object.keys(b)) if (!fields.has(k)) return bad(`${at}.${type}.${k}: Extra inputs are not permitted`)
    if (type === 'text') {
      if (!isStr(b.text)) return bad(`${at}.text.text: Field required`)
      if (b.text.length === 0) return bad('messages: text content blocks must be non-empty')
    } else if (type === 'image') {
      const src = b.source
      if (!isObj(src) || !isStr(src.type) || !['base64', 'url', 'file'].includes(src.type))
        return bad(`${at}.image.source: Input tag '${isObj(src) ? String(src.type) : ''}' found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'`)
      if (src.type === 'base64') {
        if (!isStr(src.media_type) || !['image/jpeg', 'image/png', 'image/gif', 'image/webp'].includes(src.media_type))
          return bad(`${at}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`)
        if (!isStr(src.data) || !/^[A-Za-z0-9+/]*={0,2}$/.test(src.data)) return bad(`${at}.image.source.base64.data: Invalid base64 data`)
      }
    } else if (type === 'tool_use') {
      if (role !== 'assistant') return bad(`${at}: tool_use blocks are only allowed in assistant messages`)
      if (!isStr(b.id)) return bad(`${at}.tool_use.id: Field required`)
      if (!isStr(b.name)) return bad(`${at}.tool_use.name: Field required`)
      if (!isObj(b.input)) return bad(`${at}.tool_use.input: Input should be a valid dictionary`)
    } else if (type === 'tool_result') {
      if (role !== 'user') return bad(`${at}: tool_result blocks are only allowed in user messages`)
      if (!isStr(b.tool_use_id)) return bad(`${at}.tool_result.tool_use_id: Field required`)
      if (b.content !== undefined && !isStr(b.content) && !Array.isArray(b.content))
        return bad(`${at}.tool_result.content: Input should be a valid string or a valid list`)
    }
  }
  return undefined
}

function validateMessages(messages: unknown[]): Validation | undefined {
  if (messages.length === 0) return bad('messages: at least one message is required')
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]
    if (!isObj(m)) return bad(`messages.${i}: Input should be a valid dictionary or object to extract fields from`)
    for (const k of Object.keys(m)) if (k !== 'role' && k !== 'content') return bad(`messages.${i}.${k}: Extra inputs are not permitted`)
    if (m.role !== 'user' && m.role !== 'assistant') return bad(`messages.${i}.role: Input should be 'user' or 'assistant'`)
    if (m.content === undefined) return bad(`messages.${i}.content: Field required`)
    if (!isStr(m.content) && !Array.isArray(m.content)) return bad(`messages.${i}.content: Input should be a valid string or a valid list`)
    const last = i === messages.length - 1
    if (m.content.length === 0 && !(last && m.role === 'assistant'))
      return bad(`messages.${i}: all messages must have non-empty content except for the optional final assistant message`)
    if (Array.isArray(m.content)) {
      const e = validateBlocks(i, m.role, m.content)
      if (e) return e
    }
  }
  // The API merges consecutive same-role turns; then every tool_use needs a tool_result in the very next turn,
  // and every tool_result needs a tool_use in the turn just before it.
  const turns: { role: string; blocks: Obj[]; index: number }[] = []
  messages.forEach((m, i) => {
    const msg = m as Obj
    const blocks = Array.isArray(msg.content) ? (msg.content as Obj[]) : [{ type: 'text', text: msg.content }]
    const last = turns[turns.length - 1]
    if (last && last.role === msg.role) last.blocks.push(...blocks)
    else turns.push({ role: msg.role as string, blocks: [...blocks], index: i })
  })
  const ids = (t: { blocks: Obj[] } | undefined, type: string, key: string): string[] =>
    t ? t.blocks.filter((b) => b.type === type).map((b) => String(b[key])) : []
  for (let k = 0; k < turns.length; k++) {
    const turn = turns[k] as (typeof turns)[number]
    if (turn.role === 'user') {
      const prev = turns[k - 1]
      const allowed = new Set(prev?.role === 'assistant' ? ids(prev, 'tool_use', 'id') : [])
      const j = turn.blocks.findIndex((b) => b.type === 'tool_result' && !allowed.has(String(b.tool_use_id)))
      if (j >= 0)
        return bad(
          `messages.${turn.index}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(turn.blocks[j]?.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
        )
      continue
    }
    const uses = ids(turn, 'tool_use', 'id')
    if (uses.length === 0) continue
    const next = turns[k + 1]
    const answered = new Set(next?.role === 'user' ? ids(next, 'tool_result', 'tool_use_id') : [])
    const missing = uses.filter((id) => !answered.has(id))
    if (missing.length > 0)
      return bad(
        `messages.${next?.index ?? turn.index + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
      )
  }
  return undefined
}

function validateBody(body: Obj, headers: Record<string, string>): Validation {
  const version = headers['anthropic-version'] ?? ''
  for (const k of Object.keys(body)) {
    if (!TOP_LEVEL.has(k) || (version === '2026-10-21' && REMOVED_2026.has(k))) return bad(`${k}: Extra inputs are not permitted`)
  }
  for (const f of ['model', 'messages', 'max_tokens']) if (body[f] === undefined) return bad(`${f}: Field required`)
  const model = body.model
  if (!isStr(model)) return bad('model: Input should be a valid string')
  const mt = body.max_tokens
  if (typeof mt !== 'number' || !Number.isInteger(mt)) return bad('max_tokens: Input should be a valid integer')
  if (mt < 0) return bad('max_tokens: Input should be greater than or equal to 0')
  if (!Array.isArray(body.messages)) return bad('messages: Input should be a valid list')
  const msgErr = validateMessages(body.messages)
  if (msgErr) return msgErr

  const sys = body.system
  if (sys !== undefined) {
    if (Array.isArray(sys)) {
      for (let j = 0; j < sys.length; j++) {
        const b = sys[j]
        if (!isObj(b) || b.type !== 'text' || !isStr(b.text)) return bad(`system.${j}: Input should be a valid text block`)
        for (const k of Object.keys(b)) if (!BLOCK_FIELDS.text?.has(k)) return bad(`system.${j}.${k}: Extra inputs are not permitted`)
      }
    } else if (!isStr(sys)) return bad('system: Input should be a valid string or a valid list')
  }
  for (const [name, max] of [['temperature', 1], ['top_p', 1]] as const) {
    const v = body[name]
    if (v === undefined) continue
    if (typeof v !== 'number') return bad(`${name}: Input should be a valid number`)
    if (v > max) return bad(`${name}: Input should be less than or equal to ${max}`)
    if (v < 0) return bad(`${name}: Input should be greater than or equal to 0`)
  }
  if (body.top_k !== undefined && (typeof body.top_k !== 'number' || !Number.isInteger(body.top_k))) return bad('top_k: Input should be a valid integer')
  if (body.stop_sequences !== undefined && (!Array.isArray(body.stop_sequences) || !body.stop_sequences.every(isStr)))
    return bad('stop_sequences: Input should be a valid list of strings')
  if (body.stream !== undefined && typeof body.stream !== 'boolean') return bad('stream: Input should be a valid boolean')
  if (body.metadata !== undefined) {
    if (!isObj(body.metadata)) return bad('metadata: Input should be a valid dictionary')
    for (const k of Object.keys(body.metadata)) if (k !== 'user_id') return bad(`metadata.${k}: Extra inputs are not permitted`)
    if (body.metadata.user_id !== undefined && body.metadata.user_id !== null && !isStr(body.metadata.user_id))
      return bad('metadata.user_id: Input should be a valid string')
  }

  const tools: ToolDecl[] = []
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return bad('tools: Input should be a valid list')
    for (let i = 0; i < body.tools.length; i++) {
      const t = body.tools[i]
      if (!isObj(t)) return bad(`tools.${i}: Input should be a valid dictionary`)
      if (t.type !== undefined && t.type !== 'custom') continue // server tools (web_search_…, …)
      if (!isStr(t.name)) return bad(`tools.${i}.custom.name: Field required`)
      if (!/^[a-zA-Z0-9_-]{1,128}$/.test(t.name)) return bad(`tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`)
      if (!isObj(t.input_schema)) return bad(`tools.${i}.custom.input_schema: Field required`)
      for (const k of Object.keys(t))
        if (!['type', 'name', 'description', 'input_schema', 'cache_control', 'strict', 'input_examples'].includes(k))
          return bad(`tools.${i}.custom.${k}: Extra inputs are not permitted`)
      tools.push({ name: t.name, schema: t.input_schema })
    }
  }

  let forcedTool: string | undefined
  const tc = body.tool_choice
  if (tc !== undefined) {
    if (!isObj(tc) || !isStr(tc.type) || !['auto', 'any', 'tool', 'none'].includes(tc.type))
      return bad(`tool_choice: Input tag '${isObj(tc) ? String(tc.type) : String(tc)}' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'`)
    if (tc.type === 'tool') {
      if (!isStr(tc.name)) return bad('tool_choice.tool.name: Field required')
      forcedTool = tc.name
    }
    if (tc.type === 'any') forcedTool = ''
    if (forcedTool !== undefined && NO_FORCED_TOOLS.test(model)) return bad('tool_choice: type "tool" and "any" are not supported for this model.')
  }

  let showThinking = false
  const th = body.thinking
  if (th !== undefined) {
    if (!isObj(th) || !isStr(th.type) || !['enabled', 'disabled', 'adaptive'].includes(th.type))
      return bad(`thinking: Input tag '${isObj(th) ? String(th.type) : ''}' found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'`)
    if (th.type === 'enabled') {
      if (typeof th.budget_tokens !== 'number') return bad('thinking.enabled.budget_tokens: Field required')
      if (th.budget_tokens < 1024) return bad('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024')
      if (mt <= th.budget_tokens)
        return bad(
          '`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size',
        )
    }
    if (th.type !== 'disabled' && typeof body.temperature === 'number' && body.temperature !== 1)
      return bad('`temperature` may only be set to 1 when thinking is enabled or in adaptive mode. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility')
    showThinking = th.type !== 'disabled' && th.display !== 'omitted'
    if (showThinking && forcedTool !== undefined) return bad('Thinking may not be enabled when tool_choice forces tool use.')
  }

  let jsonSchema: unknown
  const oc = body.output_config
  if (oc !== undefined) {
    if (!isObj(oc)) return bad('output_config: Input should be a valid dictionary')
    for (const k of Object.keys(oc)) if (k !== 'effort' && k !== 'format') return bad(`output_config.${k}: Extra inputs are not permitted`)
    if (oc.effort !== undefined && !['low', 'medium', 'high', 'xhigh', 'max'].includes(String(oc.effort)))
      return bad("output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'")
    if (oc.format !== undefined && oc.format !== null) {
      const f = oc.format
      if (!isObj(f) || f.type !== 'json_schema') return bad("output_config.format.type: Input should be 'json_schema'")
      if (!isObj(f.schema)) return bad('output_config.format.schema: Field required')
      jsonSchema = f.schema
    }
  }

  if (/does-not-exist|^unknown-/.test(model)) return { ok: false, reply: anthropicError(404, 'not_found_error', `model: ${model}`) }

  return {
    ok: true,
    ctx: {
      model,
      stream: body.stream === true ? 'sse' : false,
      promptTokens: promptTokens(body),
      jsonSchema,
      tools,
      forcedTool,
      maxTokens: mt,
      includeUsage: false,
      showThinking,
      headers,
    },
  }
}

function usageOf(r: Reply, outputTokens: number): Obj {
  const { prompt, cached, cacheWrite, thinking } = r.usage
  return {
    input_tokens: Math.max(0, prompt - cached - cacheWrite),
    cache_creation_input_tokens: cacheWrite,
    cache_read_input_tokens: cached,
    cache_creation: { ephemeral_5m_input_tokens: cacheWrite, ephemeral_1h_input_tokens: 0 },
    output_tokens: outputTokens,
    ...(thinking ? { output_tokens_details: { thinking_tokens: thinking } } : {}),
    service_tier: 'standard',
  }
}

const stopDetails = (r: Reply): Obj | null =>
  r.finish === 'refusal' || r.finish === 'content_filter'
    ? {
        type: 'refusal',
        category: 'cyber',
        explanation: "This request triggered restrictions on violative content and was blocked under Anthropic's Usage Policy.",
      }
    : null

const toolUseId = (): string => `toolu_01${randomAlnum(22)}`
const messageId = (): string => `msg_01${randomAlnum(22)}`

const ERR: Record<string, { type: string; message: (model: string, prompt: number) => string }> = {
  rate_limit: { type: 'rate_limit_error', message: () => "This request would exceed your account's rate limit. Please try again later." },
  overloaded: { type: 'overloaded_error', message: () => 'Overloaded' },
  unavailable: { type: 'api_error', message: () => 'Service unavailable' },
  server: { type: 'api_error', message: () => 'Internal server error' },
  context_length: { type: 'invalid_request_error', message: (_m, p) => `prompt is too long: ${200000 + p} tokens > 200000 maximum` },
  auth: { type: 'authentication_error', message: () => 'invalid x-api-key' },
  bad_request: { type: 'invalid_request_error', message: () => 'Invalid request' },
}

const TYPE_MESSAGE: Record<string, (model: string) => string> = {
  invalid_request_error: () => 'Invalid request',
  authentication_error: () => 'invalid x-api-key',
  billing_error: () => 'Your credit balance is too low to access the Anthropic API.',
  permission_error: () => 'Your API key does not have permission to use the specified resource.',
  not_found_error: (m) => `model: ${m}`,
  request_too_large: () => 'Request exceeds the maximum allowed number of bytes.',
  rate_limit_error: () => "This request would exceed your account's rate limit. Please try again later.",
  api_error: () => 'Internal server error',
  timeout_error: () => 'Request timeout',
  overloaded_error: () => 'Overloaded',
}

/** Real Anthropic data lines carry trailing padding spaces after the JSON. */
function event(name: string, data: Obj, pad: number): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}${' '.repeat(pad)}\n\n`
}

export const anthropic: ProviderImpl = {
  id: 'anthropic',
  basePath: '/v1',
  refusalText: '',

  route(method, url) {
    if (method !== 'POST') return undefined
    if (url.pathname === '/v1/messages') return {}
    return url.pathname === '/v1/messages/count_tokens' ? { endpoint: 'count_tokens' } : undefined
  },

  notFound() {
    return anthropicError(404, 'not_found_error', 'Not Found')
  },

  authenticate(headers, _url, apiKey) {
    const bearer = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? '')?.[1]?.trim()
    const key = headers['x-api-key'] ?? bearer
    if (key === undefined) return anthropicError(401, 'authentication_error', 'x-api-key header is required')
    if (key !== apiKey) return anthropicError(401, 'authentication_error', 'invalid x-api-key')
    const version = headers['anthropic-version']
    if (version === undefined) return anthropicError(400, 'invalid_request_error', 'anthropic-version: header is required')
    if (!VERSIONS.has(version)) return anthropicError(400, 'invalid_request_error', `anthropic-version: invalid version "${version}"`)
    return undefined
  },

  validate(body, isJson, _route, headers) {
    if (!isJson) return bad('There was an issue with your request body: invalid JSON')
    if (!isObj(body)) return bad('Input should be a valid dictionary or object to extract fields from')
    return validateBody(body, headers)
  },

  error(b, ctx) {
    const e = b.errorType ? ERR[b.errorType] : undefined
    if (e) return anthropicError(b.status, e.type, e.message(ctx.model, ctx.promptTokens))
    const type = STATUS_TYPE[b.status] ?? (b.status >= 500 ? 'api_error' : 'invalid_request_error')
    return anthropicError(b.status, type, TYPE_MESSAGE[type]?.(ctx.model) ?? 'Internal server error')
  },

  complete(r) {
    const content: Obj[] = []
    if (r.thinkingText) content.push({ type: 'thinking', thinking: r.thinkingText, signature: randomBase64(48) })
    if (r.text) content.push({ type: 'text', text: r.text })
    for (const t of r.toolCalls) content.push({ type: 'tool_use', id: toolUseId(), name: t.name, input: t.arguments })
    const id = requestId()
    return jsonReply(
      200,
      {
        model: r.model,
        id: messageId(),
        type: 'message',
        role: 'assistant',
        content,
        stop_reason: STOP_REASON[r.finish],
        stop_sequence: null,
        stop_details: stopDetails(r),
        usage: usageOf(r, r.usage.completion + r.usage.thinking),
      },
      baseHeaders(id),
    )
  },

  stream(r) {
    let n = 0
    const ev = (name: string, data: Obj): string => event(name, data, (n++ * 7) % 13)
    const events: string[] = []
    events.push(
      ev('message_start', {
        type: 'message_start',
        message: {
          model: r.model,
          id: messageId(),
          type: 'message',
          role: 'assistant',
          content: [],
          stop_reason: null,
          stop_sequence: null,
          stop_details: null,
          usage: usageOf(r, 1),
        },
      }),
    )
    let index = 0
    let pinged = false
    const ping = (): void => {
      if (!pinged) events.push('event: ping\ndata: {"type": "ping"}\n\n')
      pinged = true
    }
    if (r.thinkingText) {
      events.push(ev('content_block_start', { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } }))
      ping()
      for (const p of splitText(r.thinkingText))
        events.push(ev('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: p } }))
      events.push(ev('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: randomBase64(48) } }))
      events.push(ev('content_block_stop', { type: 'content_block_stop', index }))
      index++
    }
    if (r.pieces.length > 0) {
      events.push(ev('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }))
      ping()
      for (const p of r.pieces) events.push(ev('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: p } }))
      events.push(ev('content_block_stop', { type: 'content_block_stop', index }))
      index++
    }
    for (const t of r.toolCalls) {
      events.push(
        ev('content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: toolUseId(), name: t.name, input: {} } }),
      )
      ping()
      for (const frag of ['', ...splitJson(JSON.stringify(t.arguments))])
        events.push(ev('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: frag } }))
      events.push(ev('content_block_stop', { type: 'content_block_stop', index }))
      index++
    }
    ping()
    const u = usageOf(r, r.usage.completion + r.usage.thinking)
    events.push(
      ev('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: STOP_REASON[r.finish], stop_sequence: null, stop_details: stopDetails(r) },
        usage: {
          input_tokens: u.input_tokens,
          cache_creation_input_tokens: u.cache_creation_input_tokens,
          cache_read_input_tokens: u.cache_read_input_tokens,
          output_tokens: u.output_tokens,
          ...(u.output_tokens_details ? { output_tokens_details: u.output_tokens_details } : {}),
        },
      }),
    )
    const id = requestId()
    return {
      events,
      end: event('message_stop', { type: 'message_stop' }, 1),
      headers: { ...baseHeaders(id), 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' },
    }
  },

  streamError(type: StreamErrorType | undefined) {
    const e = ERR[type ?? 'overloaded'] ?? ERR.overloaded
    return `event: error\ndata: ${JSON.stringify({ type: 'error', error: { details: null, type: e?.type, message: e?.message('', 0) }, request_id: requestId() })}\n\n`
  },

  malformed() {
    return 'event: content_block_delta\ndata: {not json\n\n'
  },

  /** count_tokens: the messages are checked like a generation request's; the answer is `{input_tokens}`. */
  extra(_route, body, isJson, headers) {
    if (!isJson || !isObj(body)) return anthropicError(400, 'invalid_request_error', 'There was an issue with your request body: invalid JSON')
    for (const k of Object.keys(body))
      if (!COUNT_FIELDS.has(k)) return anthropicError(400, 'invalid_request_error', `${k}: Extra inputs are not permitted`)
    const v = validateBody({ ...body, max_tokens: 1 }, headers)
    if (!v.ok) return v.reply
    return jsonReply(200, { input_tokens: promptTokens(body) }, baseHeaders(requestId()))
  },
}

const COUNT_FIELDS = new Set(['model', 'messages', 'system', 'tools', 'tool_choice', 'thinking', 'output_config'])
