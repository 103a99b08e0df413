// Fake Google Gemini (generativelanguage v1beta) upstream: proto-JSON strict request validation and generateContent / streamGenerateContent (SSE with CRLF, or JSON array) answers.

import { googleEmbeddings } from './embeddings.ts'
import { countWords, isObj, isStr, randomAlnum, randomBase64, textOf } from './common.ts'
import type { FinishKind, NativeReply, Obj, ProviderImpl, Reply, RequestCtx, StreamErrorType, ToolDecl, Validation } from './types.ts'

const ROUTE = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent|batchEmbedContents)$/

const snake = (s: string): string => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)
const camel = (s: string): string => s.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase())

const fields = (...names: string[]): Set<string> => new Set(names)
const TOP = fields('contents', 'systemInstruction', 'generationConfig', 'tools', 'toolConfig', 'safetySettings', 'cachedContent', 'model')
const GENERATION_CONFIG = fields(
  'temperature', 'topP', 'topK', 'candidateCount', 'maxOutputTokens', 'stopSequences', 'presencePenalty', 'frequencyPenalty', 'seed',
  'responseMimeType', 'responseSchema', 'responseJsonSchema', 'responseModalities', 'thinkingConfig', 'responseLogprobs', 'logprobs',
  'speechConfig', 'imageConfig', 'mediaResolution', 'enableEnhancedCivicAnswers',
)
const THINKING_CONFIG = fields('includeThoughts', 'thinkingBudget', 'thinkingLevel')
const CONTENT = fields('role', 'parts')
const PART = fields(
  'text', 'inlineData', 'functionCall', 'functionResponse', 'fileData', 'executableCode', 'codeExecutionResult', 'videoMetadata',
  'thought', 'thoughtSignature', 'partMetadata', 'mediaResolution',
)
const PART_DATA = ['text', 'inlineData', 'functionCall', 'functionResponse', 'fileData', 'executableCode', 'codeExecutionResult']
const TOOL = fields(
  'functionDeclarations', 'googleSearchRetrieval', 'codeExecution', 'googleSearch', 'computerUse', 'urlContext', 'fileSearch', 'googleMaps',
)
const FUNCTION_DECLARATION = fields('name', 'description', 'parameters', 'parametersJsonSchema', 'response', 'responseJsonSchema', 'behavior')
const SCHEMA = fields(
  'type', 'format', 'title', 'description', 'nullable', 'enum', 'maxItems', 'minItems', 'items', 'properties', 'required', 'minProperties',
  'maxProperties', 'minLength', 'maxLength', 'minimum', 'maximum', 'pattern', 'example', 'anyOf', 'propertyOrdering', 'default',
)
const SCHEMA_TYPES = ['TYPE_UNSPECIFIED', 'STRING', 'NUMBER', 'INTEGER', 'BOOLEAN', 'ARRAY', 'OBJECT', 'NULL']
const TOOL_CONFIG = fields('functionCallingConfig', 'retrievalConfig')
const FUNCTION_CALLING_CONFIG = fields('mode', 'allowedFunctionNames')
const MODES = ['MODE_UNSPECIFIED', 'AUTO', 'ANY', 'NONE', 'VALIDATED']

const RPC_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  501: 'UNIMPLEMENTED',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
}
const FINISH: Record<FinishKind, string> = {
  stop: 'STOP',
  tool_calls: 'STOP',
  length: 'MAX_TOKENS',
  refusal: 'SAFETY',
  content_filter: 'SAFETY',
}

/** Gemini-3-and-later models: thought signatures are issued on text and required back on function calls. */
const SIGNING_MODEL = /^gemini-([3-9]|\d\d)/

const baseHeaders = (): Record<string, string> => ({
  vary: 'Origin, X-Origin, Referer',
  server: 'scaffolding on HTTPServer2',
  'x-xss-protection': '0',
  'x-frame-options': 'SAMEORIGIN',
  'x-content-type-options': 'nosniff',
  'server-timing': 'gfet4t7; dur=412',
})

/** Google's compact SSE JSON: a space after each colon, none after commas. */
function gjson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(gjson).join(',')}]`
  if (isObj(v))
    return `{${Object.entries(v)
      .filter(([, x]) => x !== undefined)
      .map(([k, x]) => `${JSON.stringify(k)}: ${gjson(x)}`)
      .join(',')}}`
  return JSON.stringify(v) ?? 'null'
}

const pretty = (v: unknown): string => JSON.stringify(v, null, 2)

function googleReply(status: number, body: unknown, headers: Record<string, string> = {}): NativeReply {
  return { status, body: `${pretty(body)}\n`, headers: { ...baseHeaders(), 'content-type': 'application/json; charset=UTF-8', ...headers } }
}

export function googleError(code: number, message: string, details?: unknown[], headers: Record<string, string> = {}): NativeReply {
  const error: Obj = { code, message, status: RPC_STATUS[code] ?? (code >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION') }
  if (details && details.length > 0) error.details = details
  return googleReply(code, { error }, headers)
}

const bad = (message: string, details?: unknown[]): Validation => ({ ok: false, reply: googleError(400, message, details) })

/** Collects proto-JSON parse problems ("Unknown name", bad enum values) the way the real ESF reports them. */
class Parser {
  readonly unknown: { field: string; description: string }[] = []
  invalid: string | undefined

  /** Check `obj` against the allowed (camelCase) names; snake_case spellings are accepted too, like the real API. */
  check(obj: Obj, allowed: Set<string>, at: string): void {
    for (const k of Object.keys(obj)) {
      if (allowed.has(k) || allowed.has(camel(k))) continue
      const where = at ? ` at '${at}'` : ''
      this.unknown.push({ field: at, description: `Invalid JSON payload received. Unknown name "${k}"${where}: Cannot find field.` })
    }
  }

  enumValue(v: unknown, allowed: string[], at: string, typeName: string): void {
    if (this.invalid !== undefined || v === undefined) return
    if (!isStr(v) || !allowed.includes(v.toUpperCase()))
      this.invalid = `Invalid value at '${at}' (type.googleapis.com/google.ai.generativelanguage.v1beta.${typeName}), ${JSON.stringify(v)}`
  }

  struct(v: unknown, at: string): void {
    if (this.invalid === undefined && v !== undefined && !isObj(v))
      this.invalid = `Invalid value at '${at}' (type.googleapis.com/google.protobuf.Struct), ${JSON.stringify(v)}`
  }

  schema(s: unknown, at: string, depth = 0): void {
    if (!isObj(s) || depth > 20) return
    this.check(s, SCHEMA, at)
    this.enumValue(s.type, SCHEMA_TYPES, `${at}.type`, 'Type')
    if (isObj(s.properties)) Object.values(s.properties).forEach((p, i) => this.schema(p, `${at}.properties[${i}].value`, depth + 1))
    if (s.items !== undefined) this.schema(s.items, `${at}.items`, depth + 1)
    const anyOf = s.anyOf ?? s.any_of
    if (Array.isArray(anyOf)) anyOf.forEach((a, i) => this.schema(a, `${at}.any_of[${i}]`, depth + 1))
  }

  result(): Validation | undefined {
    if (this.unknown.length > 0)
      return bad(
        this.unknown.map((u) => u.description).join('\n'),
        [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: this.unknown.map((u) => (u.field ? u : { description: u.description })) }],
      )
    if (this.invalid !== undefined)
      return bad(this.invalid, [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ description: this.invalid }] }])
    return undefined
  }
}

/** Read a field under either spelling. */
const get = (o: Obj, name: string): unknown => (o[name] !== undefined ? o[name] : o[snake(name)])

function parse(body: Obj): Validation | undefined {
  const p = new Parser()
  p.check(body, TOP, '')
  const contents = get(body, 'contents')
  if (Array.isArray(contents))
    contents.forEach((c, i) => {
      if (!isObj(c)) return
      p.check(c, CONTENT, `contents[${i}]`)
      const parts = get(c, 'parts')
      if (Array.isArray(parts))
        parts.forEach((part, j) => {
          if (!isObj(part)) return
          const at = `contents[${i}].parts[${j}]`
          p.check(part, PART, at)
          const fc = get(part, 'functionCall')
          if (isObj(fc)) p.struct(get(fc, 'args'), `${at}.function_call.args`)
          const fr = get(part, 'functionResponse')
          if (isObj(fr)) p.struct(get(fr, 'response'), `${at}.function_response.response`)
        })
    })
  const si = get(body, 'systemInstruction')
  if (isObj(si)) p.check(si, CONTENT, 'system_instruction')
  const gc = get(body, 'generationConfig')
  if (isObj(gc)) {
    p.check(gc, GENERATION_CONFIG, 'generation_config')
    const tc = get(gc, 'thinkingConfig')
    if (isObj(tc)) p.check(tc, THINKING_CONFIG, 'generation_config.thinking_config')
    const rs = get(gc, 'responseSchema')
    if (rs !== undefined) p.schema(rs, 'generation_config.response_schema')
  }
  const tools = get(body, 'tools')
  if (Array.isArray(tools))
    tools.forEach((t, i) => {
      if (!isObj(t)) return
      p.check(t, TOOL, `tools[${i}]`)
      const decls = get(t, 'functionDeclarations')
      if (Array.isArray(decls))
        decls.forEach((d, j) => {
          if (!isObj(d)) return
          const at = `tools[${i}].function_declarations[${j}]`
          p.check(d, FUNCTION_DECLARATION, at)
          const params = get(d, 'parameters')
          if (params !== undefined) p.schema(params, `${at}.parameters`)
        })
    })
  const tcfg = get(body, 'toolConfig')
  if (isObj(tcfg)) {
    p.check(tcfg, TOOL_CONFIG, 'tool_config')
    const fcc = get(tcfg, 'functionCallingConfig')
    if (isObj(fcc)) {
      p.check(fcc, FUNCTION_CALLING_CONFIG, 'tool_config.function_calling_config')
      p.enumValue(fcc.mode, MODES, 'tool_config.function_calling_config.mode', 'FunctionCallingConfig.Mode')
    }
  }
  return p.result()
}

const invalid = (field: string, text: string): Validation => bad(`* GenerateContentRequest.${field}: ${text}\n`)

/** Prompt tokens: Σ over contents (the system instruction counting as one) of (3 + words of their text parts). */
function promptTokens(body: Obj, contents: Obj[]): number {
  let n = 0
  const si = get(body, 'systemInstruction')
  if (isObj(si)) n += 3 + countWords(textOf(get(si, 'parts')))
  for (const c of contents) n += 3 + countWords(textOf(get(c, 'parts')))
  return n
}

function validateContents(contents: Obj[], model: string): Validation | undefined {
  for (let i = 0; i < contents.length; i++) {
    const c = contents[i] as Obj
    const role = c.role
    if (role !== undefined && role !== 'user' && role !== 'model') return bad('Please use a valid role: user, model.')
    const parts = get(c, 'parts')
    if (!Array.isArray(parts) || parts.length === 0) return invalid(`contents[${i}].parts`, 'contents.parts must not be empty.')
    for (let j = 0; j < parts.length; j++) {
      const part = parts[j]
      if (!isObj(part) || !PART_DATA.some((k) => get(part, k) !== undefined))
        return invalid(`contents[${i}].parts[${j}].data`, "required oneof field 'data' must have one initialized field")
      const fc = get(part, 'functionCall')
      if (isObj(fc) && !isStr(fc.name)) return invalid(`contents[${i}].parts[${j}].function_call.name`, 'Name cannot be empty.')
      const fr = get(part, 'functionResponse')
      if (isObj(fr) && !isStr(fr.name)) return invalid(`contents[${i}].parts[${j}].function_response.name`, 'Name cannot be empty.')
    }
  }
  // Function responses must answer the previous function-call turn, one for one.
  const calls = (c: Obj | undefined): Obj[] =>
    c && Array.isArray(get(c, 'parts')) ? (get(c, 'parts') as Obj[]).filter((p) => isObj(get(p, 'functionCall'))) : []
  for (let i = 0; i < contents.length; i++) {
    const parts = get(contents[i] as Obj, 'parts') as Obj[]
    const responses = parts.filter((p) => isObj(get(p, 'functionResponse'))).length
    if (responses > 0 && responses !== calls(contents[i - 1]).length)
      return bad(
        'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.',
      )
  }
  // Gemini 3+: function calls of the current turn must carry their thought signature.
  if (SIGNING_MODEL.test(model)) {
    let turnStart = 0
    contents.forEach((c, i) => {
      const parts = get(c, 'parts') as Obj[]
      if (c.role !== 'model' && parts.some((p) => isStr(p.text))) turnStart = i
    })
    for (let i = turnStart; i < contents.length; i++) {
      const fcs = calls(contents[i])
      const first = fcs[0]
      if (!first) continue
      const sig = get(first, 'thoughtSignature')
      if (!isStr(sig) || sig.length === 0) {
        const name = (get(first, 'functionCall') as Obj).name
        return bad(
          `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${String(name)}\` , position ${i + 1}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`,
        )
      }
    }
  }
  return undefined
}

function validateBody(body: Obj, route: { model: string; streamMode: RequestCtx['stream'] }, headers: Record<string, string>): Validation {
  const parseErr = parse(body)
  if (parseErr) return parseErr
  const contents = get(body, 'contents')
  if (contents === undefined || (Array.isArray(contents) && contents.length === 0)) return invalid('contents', 'contents is not specified')
  if (!Array.isArray(contents) || !contents.every(isObj))
    return bad(`Invalid value at 'contents' (type.googleapis.com/google.ai.generativelanguage.v1beta.Content), ${JSON.stringify(contents)}`)
  const model = route.model
  if (/does-not-exist|^unknown-/.test(model))
    return {
      ok: false,
      reply: googleError(
        404,
        `models/${model} is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.`,
      ),
    }
  const contentErr = validateContents(contents, model)
  if (contentErr) return contentErr

  const gc = get(body, 'generationConfig')
  let jsonSchema: unknown
  let maxTokens: number | undefined
  let showThinking = false
  if (isObj(gc)) {
    const t = get(gc, 'temperature')
    if (t !== undefined && (typeof t !== 'number' || t < 0 || t > 2))
      return invalid('generation_config.temperature', 'temperature must be in the range [0.0, 2.0]')
    const mime = get(gc, 'responseMimeType')
    const rs = get(gc, 'responseSchema')
    const rjs = get(gc, 'responseJsonSchema')
    if (rs !== undefined && rjs !== undefined)
      return invalid('generation_config.response_schema', 'response_schema and response_json_schema are mutually exclusive; only one of them can be set')
    if ((rs !== undefined || rjs !== undefined) && mime !== 'application/json' && mime !== 'text/x.enum')
      return invalid(
        'generation_config.response_mime_type',
        `response_mime_type must be 'application/json' or 'text/x.enum' when a response schema is set, but got ${JSON.stringify(mime ?? '')}`,
      )
    if (mime === 'application/json') jsonSchema = rjs ?? rs ?? null
    const mot = get(gc, 'maxOutputTokens')
    if (typeof mot === 'number') maxTokens = mot
    const tc = get(gc, 'thinkingConfig')
    showThinking = isObj(tc) && get(tc, 'includeThoughts') === true
  }

  const tools: ToolDecl[] = []
  const rawTools = get(body, 'tools')
  if (Array.isArray(rawTools))
    for (const [i, t] of rawTools.entries()) {
      const decls = isObj(t) ? get(t, 'functionDeclarations') : undefined
      if (!Array.isArray(decls)) continue
      for (const [j, d] of decls.entries()) {
        if (!isObj(d) || !isStr(d.name) || d.name.length === 0)
          return invalid(`tools[${i}].function_declarations[${j}].name`, 'Name cannot be empty.')
        if (!/^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$/.test(d.name))
          return invalid(
            `tools[${i}].function_declarations[${j}].name`,
            'Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:) or dashes (-), with a maximum length of 128.',
          )
        tools.push({ name: d.name, schema: get(d, 'parametersJsonSchema') ?? get(d, 'parameters') ?? {} })
      }
    }
  let forcedTool: string | undefined
  const tcfg = get(body, 'toolConfig')
  const fcc = isObj(tcfg) ? get(tcfg, 'functionCallingConfig') : undefined
  if (isObj(fcc) && isStr(fcc.mode) && fcc.mode.toUpperCase() === 'ANY') {
    const allowed = get(fcc, 'allowedFunctionNames')
    forcedTool = Array.isArray(allowed) && isStr(allowed[0]) ? allowed[0] : ''
  }

  return {
    ok: true,
    ctx: {
      model,
      stream: route.streamMode,
      promptTokens: promptTokens(body, contents),
      jsonSchema,
      tools,
      forcedTool,
      maxTokens,
      includeUsage: false,
      showThinking,
      headers,
    },
  }
}

function usageOf(r: Reply, final: boolean): Obj {
  const { prompt, completion, cached, thinking } = r.usage
  const u: Obj = { promptTokenCount: prompt }
  if (final && completion > 0) u.candidatesTokenCount = completion
  u.totalTokenCount = prompt + thinking + (final ? completion : 0)
  if (cached > 0) u.cachedContentTokenCount = cached
  u.promptTokensDetails = [{ modality: 'TEXT', tokenCount: prompt }]
  if (cached > 0) u.cacheTokensDetails = [{ modality: 'TEXT', tokenCount: cached }]
  if (final && completion > 0) u.candidatesTokensDetails = [{ modality: 'TEXT', tokenCount: completion }]
  if (thinking > 0) u.thoughtsTokenCount = thinking
  return u
}

const SAFETY_RATINGS = [
  { category: 'HARM_CATEGORY_HATE_SPEECH', probability: 'NEGLIGIBLE' },
  { category: 'HARM_CATEGORY_DANGEROUS_CONTENT', probability: 'HIGH', blocked: true },
  { category: 'HARM_CATEGORY_HARASSMENT', probability: 'NEGLIGIBLE' },
  { category: 'HARM_CATEGORY_SEXUALLY_EXPLICIT', probability: 'NEGLIGIBLE' },
]

function functionCallParts(r: Reply): Obj[] {
  return r.toolCalls.map((t, i) => {
    const part: Obj = { functionCall: { name: t.name, args: t.arguments } }
    if (i === 0) part.thoughtSignature = randomBase64(60)
    return part
  })
}

const ERR: Record<string, { message: (model: string, prompt: number) => string }> = {
  rate_limit: {
    message: () =>
      'You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current usage, head to: https://ai.dev/rate-limit.',
  },
  overloaded: { message: () => 'The model is overloaded. Please try again later.' },
  unavailable: { message: () => 'The service is currently unavailable.' },
  server: { message: () => 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting' },
  context_length: { message: (_m, p) => `The input token count (${1048576 + p}) exceeds the maximum number of tokens allowed (1048576).` },
  auth: { message: () => 'API key not valid. Please pass a valid API key.' },
  bad_request: { message: () => 'Request contains an invalid argument.' },
  permission: { message: () => 'The caller does not have permission' },
  not_found: {
    message: (m) =>
      `models/${m} is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.`,
  },
}

const KIND_BY_STATUS: Record<number, string> = {
  400: 'bad_request', 401: 'auth', 403: 'permission', 404: 'not_found', 429: 'rate_limit', 500: 'server', 503: 'overloaded', 504: 'server',
}

function apiKeyInvalid(): NativeReply {
  const message = 'API key not valid. Please pass a valid API key.'
  return googleError(400, message, [
    {
      '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
      reason: 'API_KEY_INVALID',
      domain: 'googleapis.com',
      metadata: { service: 'generativelanguage.googleapis.com' },
    },
    { '@type': 'type.googleapis.com/google.rpc.LocalizedMessage', locale: 'en-US', message },
  ])
}

/** Frame one response object for the chosen streaming mode. */
function frame(ctx: RequestCtx, obj: unknown, index: number): string {
  if (ctx.stream === 'json-array') return `${index === 0 ? '[' : '\n,\r\n'}${pretty(obj)}`
  return `data: ${gjson(obj)}\r\n\r\n`
}

export const google: ProviderImpl = {
  id: 'google',
  basePath: '/v1beta',
  refusalText: '',

  route(method, url) {
    const m = ROUTE.exec(url.pathname)
    if (method !== 'POST' || !m || !m[1]) return undefined
    if (m[2] === 'generateContent') return { model: decodeURIComponent(m[1]) }
    if (m[2] === 'batchEmbedContents') return { model: decodeURIComponent(m[1]), endpoint: 'embeddings' }
    return { model: decodeURIComponent(m[1]), streamMode: url.searchParams.get('alt') === 'sse' ? 'sse' : 'json-array' }
  },

  extra(route, body) {
    return googleEmbeddings(route.model ?? '', body)
  },

  notFound(method, url) {
    return googleError(404, `Method not found: ${method} ${url.pathname}`)
  },

  authenticate(headers, url, apiKey) {
    const key = headers['x-goog-api-key'] ?? url.searchParams.get('key') ?? undefined
    if (key === undefined)
      return googleError(
        403,
        "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
      )
    if (key !== apiKey) return apiKeyInvalid()
    return undefined
  },

  validate(body, isJson, route, headers) {
    if (!isJson) return bad('Invalid JSON payload received. Unexpected token.')
    if (!isObj(body)) return bad(`Invalid JSON payload received. Expected an object, got ${JSON.stringify(body)}.`)
    return validateBody(body, { model: route.model ?? '', streamMode: route.streamMode ?? false }, headers)
  },

  error(b, ctx) {
    const kind = b.errorType ?? KIND_BY_STATUS[b.status] ?? (b.status >= 500 ? 'server' : 'bad_request')
    if (kind === 'auth' && b.status === 400) return apiKeyInvalid()
    const message = (ERR[kind] ?? ERR.server)?.message(ctx.model, ctx.promptTokens) ?? ''
    const details: Obj[] = []
    if (kind === 'rate_limit') {
      details.push(
        {
          '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
          violations: [
            {
              quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests',
              quotaId: 'GenerateRequestsPerMinutePerProjectPerModel-FreeTier',
              quotaDimensions: { location: 'global', model: ctx.model },
              quotaValue: '10',
            },
          ],
        },
        {
          '@type': 'type.googleapis.com/google.rpc.Help',
          links: [{ description: 'Learn more about Gemini API quotas', url: 'https://ai.google.dev/gemini-api/docs/rate-limits' }],
        },
      )
    }
    if (kind === 'rate_limit' || b.retryAfter !== undefined) {
      const ra = b.retryAfter ?? '1s'
      details.push({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: /^\d+(\.\d+)?$/.test(ra) ? `${ra}s` : ra })
    }
    return googleError(b.status, message, details)
  },

  complete(r, ctx) {
    const base = { modelVersion: r.model, responseId: randomAlnum(23) }
    if (r.finish === 'content_filter')
      return googleReply(
        200,
        { promptFeedback: { blockReason: 'SAFETY', safetyRatings: SAFETY_RATINGS }, usageMetadata: usageOf(r, true), ...base },
      )
    const parts: Obj[] = []
    if (r.thinkingText) parts.push({ text: r.thinkingText, thought: true })
    if (r.text) {
      const p: Obj = { text: r.text }
      if (SIGNING_MODEL.test(ctx.model) && r.toolCalls.length === 0) p.thoughtSignature = randomBase64(60)
      parts.push(p)
    }
    parts.push(...functionCallParts(r))
    const candidate: Obj = { content: parts.length > 0 ? { parts, role: 'model' } : {}, finishReason: FINISH[r.finish], index: 0 }
    if (r.finish === 'refusal') candidate.safetyRatings = SAFETY_RATINGS
    if (r.toolCalls.length > 0) candidate.finishMessage = 'Model generated function call(s).'
    return googleReply(200, { candidates: [candidate], usageMetadata: usageOf(r, true), ...base })
  },

  stream(r, ctx) {
    const base = { modelVersion: r.model, responseId: randomAlnum(23) }
    const objs: Obj[] = []
    const chunk = (parts: Obj[] | null, finish?: string, extra?: Obj): Obj => {
      const cand: Obj = { content: parts === null ? {} : { parts, role: 'model' } }
      if (finish) {
        cand.finishReason = finish
        cand.index = 0
      }
      if (extra) Object.assign(cand, extra)
      return { candidates: [cand], usageMetadata: usageOf(r, finish !== undefined), ...base }
    }
    if (r.finish === 'content_filter') {
      objs.push({ promptFeedback: { blockReason: 'SAFETY', safetyRatings: SAFETY_RATINGS }, usageMetadata: usageOf(r, true), ...base })
    } else {
      const finish = FINISH[r.finish]
      if (r.thinkingText) objs.push(chunk([{ text: r.thinkingText, thought: true }]))
      const pieces = [...r.pieces]
      const calls = functionCallParts(r)
      const signing = SIGNING_MODEL.test(ctx.model)
      // The finish reason rides on the last text chunk, unless something else has to come last.
      const lastText = r.finish !== 'refusal' && calls.length === 0 && !signing ? pieces.pop() : undefined
      for (const p of pieces) objs.push(chunk([{ text: p }]))
      if (r.finish === 'refusal') objs.push(chunk(null, finish, { safetyRatings: SAFETY_RATINGS }))
      else if (calls.length > 0) objs.push(chunk(calls, finish, { finishMessage: 'Model generated function call(s).' }))
      else if (signing) objs.push(chunk([{ text: '', thoughtSignature: randomBase64(60) }], finish))
      else objs.push(chunk([{ text: lastText ?? '' }], finish))
    }
    const events = objs.map((o, i) => frame(ctx, o, i))
    const headers =
      ctx.stream === 'json-array'
        ? { ...baseHeaders(), 'content-type': 'application/json; charset=UTF-8' }
        : { ...baseHeaders(), 'content-type': 'text/event-stream' }
    return { events, end: ctx.stream === 'json-array' ? '\n]' : '', headers }
  },

  streamError(type: StreamErrorType | undefined, ctx, written) {
    const kind = type ?? 'server'
    const code = kind === 'rate_limit' ? 429 : kind === 'overloaded' ? 503 : 500
    const obj = { error: { code, message: ERR[kind]?.message(ctx.model, ctx.promptTokens) ?? '', status: RPC_STATUS[code] } }
    return ctx.stream === 'json-array' ? `${frame(ctx, obj, written)}\n]` : frame(ctx, obj, written)
  },

  malformed(ctx, written) {
    if (ctx.stream === 'json-array') return `${written === 0 ? '[' : '\n,\r\n'}{not json`
    return 'data: {not json\r\n\r\n'
  },
}
