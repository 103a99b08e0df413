// Fake Amazon Bedrock Runtime: Converse (JSON), ConverseStream (event-stream frames) and InvokeModel for Titan and Cohere embeddings, every request's SigV4 checked.
//
// Shapes from AWS's public "Amazon Bedrock Runtime API Reference" (actions Converse and ConverseStream:
// request members messages/system/inferenceConfig/toolConfig, the answer's output.message, stopReason and
// usage with cacheReadInputTokens/cacheWriteInputTokens; the stream's messageStart, contentBlockStart,
// contentBlockDelta, contentBlockStop, messageStop and metadata events; errors as `{"message": …}` with
// `x-amzn-errortype`, and in a stream as `:message-type` `exception` frames). Signatures: sigv4-verify.ts.

import { encodeFrame, eventFrame, exceptionFrame } from './event-stream-encode.ts'
import { countWords, isObj, jsonReply, randomAlnum, splitJson, textOf } from './common.ts'
import { type FakeAwsKey, sigV4Refusal, verifySigV4 } from './sigv4-verify.ts'
import type { FinishKind, NativeReply, Obj, ProviderImpl, Reply, RequestCtx, StreamErrorType } from './types.ts'

/** What the fake answers next (one per request; the default answers text). */
export type BedrockPlan =
  | { kind: 'text'; text: string; stopReason?: string }
  | { kind: 'tool'; name: string; input: Record<string, unknown> }
  | { kind: 'error'; status: number; type: string; message: string }
  /** A stream that starts, then carries an exception frame (e.g. `throttlingException`). */
  | { kind: 'stream-exception'; type: string; message: string }

export interface SeenRequest {
  modelId: string
  /** Which action: Converse, ConverseStream, or InvokeModel (embeddings). */
  action: 'converse' | 'converse-stream' | 'invoke'
  stream: boolean
  body: Record<string, unknown>
  headers: Headers
  /** The access key id that signed it, or `bearer` for a Bedrock API key. */
  signer: string
}

export interface FakeBedrock {
  url: string
  seen: SeenRequest[]
  plan(...p: BedrockPlan[]): void
  stop(): void
}

export const USAGE = { inputTokens: 11, outputTokens: 7, totalTokens: 18, cacheReadInputTokens: 5, cacheWriteInputTokens: 3 }

const awsReply = (status: number, type: string, message: string): NativeReply => ({
  status,
  body: JSON.stringify({ message }),
  headers: { 'content-type': 'application/json', 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, 'x-amzn-requestid': crypto.randomUUID() },
})

const awsError = (status: number, type: string, message: string): Response =>
  Response.json({ message }, { status, headers: { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, 'x-amzn-requestid': crypto.randomUUID() } })

/** The checks Converse makes before answering (ValidationException, as AWS words them). */
function validate(body: unknown): string | undefined {
  if (!isObj(body) || !Array.isArray(body.messages) || body.messages.length === 0) return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.'
  let last = ''
  for (const [i, m] of body.messages.entries()) {
    if (!isObj(m) || (m.role !== 'user' && m.role !== 'assistant')) return `1 validation error detected: Value at 'messages.${i + 1}.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]`
    if (i === 0 && m.role !== 'user') return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.'
    if (m.role === last) return 'A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.'
    if (!Array.isArray(m.content) || m.content.length === 0) return `The content field in the Message object at messages.${i}.content is empty. Add a ContentBlock object to the content field and try again.`
    for (const [j, b] of m.content.entries())
      if (isObj(b) && typeof b.text === 'string' && !b.text.trim())
        return `The text field in the ContentBlock object at messages.${i}.content.${j} is blank. Add text to the text field, and try again.`
    if (!body.toolConfig && m.content.some((b: unknown) => isObj(b) && ('toolUse' in b || 'toolResult' in b)))
      return 'The toolConfig field must be defined when using toolUse and toolResult content blocks.'
    last = m.role
  }
  for (const k of Object.keys(body)) if (!['messages', 'system', 'inferenceConfig', 'toolConfig', 'additionalModelRequestFields'].includes(k)) return `Malformed input request: extraneous key [${k}] is not permitted`
  return undefined
}

function streamOf(plan: BedrockPlan): Response {
  const frames: Uint8Array[] = [eventFrame('messageStart', { role: 'assistant' }, 7)]
  if (plan.kind === 'stream-exception') frames.push(exceptionFrame(plan.type, plan.message))
  else if (plan.kind === 'tool') {
    frames.push(eventFrame('contentBlockStart', { contentBlockIndex: 0, start: { toolUse: { toolUseId: 'tooluse_fake1', name: plan.name } } }))
    const args = JSON.stringify(plan.input)
    const half = Math.floor(args.length / 2)
    for (const part of [args.slice(0, half), args.slice(half)]) frames.push(eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { toolUse: { input: part } } }, 3))
    frames.push(eventFrame('contentBlockStop', { contentBlockIndex: 0 }), eventFrame('messageStop', { stopReason: 'tool_use' }))
    frames.push(eventFrame('metadata', { usage: USAGE, metrics: { latencyMs: 42 } }))
  } else if (plan.kind === 'text') {
    for (const word of plan.text.split(/(?<= )/)) frames.push(eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: word } }, 5))
    frames.push(eventFrame('contentBlockStop', { contentBlockIndex: 0 }), eventFrame('messageStop', { stopReason: plan.stopReason ?? 'end_turn' }))
    frames.push(eventFrame('metadata', { usage: USAGE, metrics: { latencyMs: 42 } }))
  }
  // Frames straddle chunk boundaries, as they do on the wire.
  const all = Buffer.concat(frames)
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      for (let at = 0; at < all.length; at += 61) c.enqueue(all.subarray(at, at + 61))
      c.close()
    },
  })
  return new Response(body, { headers: { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': crypto.randomUUID() } })
}

function jsonOf(plan: Exclude<BedrockPlan, { kind: 'error' | 'stream-exception' }>): Response {
  const content = plan.kind === 'tool' ? [{ toolUse: { toolUseId: 'tooluse_fake1', name: plan.name, input: plan.input } }] : [{ text: plan.text }]
  const stopReason = plan.kind === 'tool' ? 'tool_use' : (plan.stopReason ?? 'end_turn')
  return Response.json({ output: { message: { role: 'assistant', content } }, stopReason, usage: USAGE, metrics: { latencyMs: 42 } })
}

/** A vector of `n` floats, made from the text (the same text always embeds the same). */
function vectorOf(text: string, n: number): number[] {
  const seed = [...text].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7)
  return Array.from({ length: n }, (_, i) => Math.round(Math.sin(seed + i) * 1e6) / 1e6)
}

const TITAN_KEYS = ['inputText', 'dimensions', 'normalize', 'embeddingTypes']
const COHERE_KEYS = ['texts', 'input_type', 'truncate', 'embedding_types', 'output_dimension', 'images', 'inputs', 'max_tokens']
const COHERE_INPUT_TYPES = ['search_document', 'search_query', 'classification', 'clustering']

/**
 * InvokeModel for the embeddings models, after the Bedrock user guide's model parameters: Titan Text Embeddings
 * (`{inputText, dimensions?, normalize?}` → `{embedding, inputTextTokenCount}`, V2 sizes 256/512/1024, default 1024;
 * V1 1536) and Cohere Embed (`{texts, input_type}` → `{embeddings, id, response_type, texts}`, 1024 floats, no token count).
 */
function invokeEmbeddings(modelId: string, body: unknown): NativeReply {
  if (!isObj(body)) return awsReply(400, 'ValidationException', 'Malformed input request, please reformat your input and try again.')
  if (modelId.startsWith('amazon.titan-embed-text')) {
    const extra = Object.keys(body).find((k) => !TITAN_KEYS.includes(k))
    if (extra) return awsReply(400, 'ValidationException', `Malformed input request: extraneous key [${extra}] is not permitted, please reformat your input and try again.`)
    if (typeof body.inputText !== 'string' || !body.inputText) return awsReply(400, 'ValidationException', 'Malformed input request: #/inputText: expected minLength: 1, please reformat your input and try again.')
    const v2 = modelId.startsWith('amazon.titan-embed-text-v2')
    if (body.dimensions !== undefined && (!v2 || ![256, 512, 1024].includes(body.dimensions as number)))
      return awsReply(400, 'ValidationException', 'Malformed input request: #/dimensions: 100 is not a valid enum value, please reformat your input and try again.')
    const size = v2 ? ((body.dimensions as number | undefined) ?? 1024) : 1536
    return jsonReply(200, { embedding: vectorOf(body.inputText, size), inputTextTokenCount: body.inputText.split(/\s+/).filter(Boolean).length })
  }
  if (modelId.startsWith('cohere.embed-')) {
    const extra = Object.keys(body).find((k) => !COHERE_KEYS.includes(k))
    if (extra) return awsReply(400, 'ValidationException', `Malformed input request: extraneous key [${extra}] is not permitted, please reformat your input and try again.`)
    if (!Array.isArray(body.texts) || body.texts.length === 0 || body.texts.length > 96 || !body.texts.every((t) => typeof t === 'string'))
      return awsReply(400, 'ValidationException', 'Malformed input request: #/texts: expected 1 to 96 strings, please reformat your input and try again.')
    if (!COHERE_INPUT_TYPES.includes(body.input_type as string)) return awsReply(400, 'ValidationException', 'Malformed input request: #/input_type: expected one of search_document, search_query, classification, clustering')
    return jsonReply(200, { embeddings: body.texts.map((t) => vectorOf(t as string, 1024)), id: crypto.randomUUID(), response_type: 'embeddings_floats', texts: body.texts })
  }
  return awsReply(400, 'ValidationException', `The provided model identifier is invalid for InvokeModel: ${modelId}`)
}

/** Starts the fake on a free port; `keys` are the access keys it knows, `apiKeys` the Bedrock API keys. */
export function startFakeBedrock(opts: { region: string; keys: Record<string, FakeAwsKey>; apiKeys?: string[] }): FakeBedrock {
  const seen: SeenRequest[] = []
  const plans: BedrockPlan[] = []
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const bytes = new Uint8Array(await req.arrayBuffer())
      const bearer = /^Bearer (.+)$/.exec(req.headers.get('authorization') ?? '')?.[1]
      let signer = 'bearer'
      if (bearer !== undefined) {
        if (!opts.apiKeys?.includes(bearer)) return awsError(403, 'UnrecognizedClientException', 'The security token included in the request is invalid.')
      } else {
        const verdict = verifySigV4(req, bytes, { region: opts.region, service: 'bedrock', keys: opts.keys })
        if (!verdict.ok) return sigV4Refusal(verdict)
        signer = verdict.accessKeyId
      }
      const m = /^\/model\/([^/]+)\/(converse|converse-stream|invoke)$/.exec(new URL(req.url).pathname)
      if (req.method !== 'POST' || !m?.[1]) return awsError(404, 'UnknownOperationException', 'Unknown operation')
      const modelId = decodeURIComponent(m[1])
      const action = m[2] as SeenRequest['action']
      const stream = action === 'converse-stream'
      let body: unknown
      try {
        body = JSON.parse(new TextDecoder().decode(bytes))
      } catch {
        return awsError(400, 'SerializationException', 'Unexpected character')
      }
      seen.push({ modelId, action, stream, body: isObj(body) ? body : {}, headers: req.headers, signer })
      if (action === 'invoke') {
        const r = invokeEmbeddings(modelId, body)
        return new Response(r.body, { status: r.status, headers: r.headers })
      }
      const invalid = validate(body)
      if (invalid) return awsError(400, 'ValidationException', invalid)
      const plan = plans.shift() ?? { kind: 'text', text: `Hello from ${modelId}` }
      if (plan.kind === 'error') return awsError(plan.status, plan.type, plan.message)
      if (stream) return streamOf(plan)
      if (plan.kind === 'stream-exception') return awsError(500, 'InternalServerException', plan.message)
      return jsonOf(plan)
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}`,
    seen,
    plan: (...p) => plans.push(...p),
    stop: () => server.stop(true),
  }
}

// ---------------------------------------------------------------------------------------------
// The same protocol as a provider module of the scripted fakes (test/fakes/upstream.ts), for the shared
// provider matrix (test/conformance): replies planned from the request, errors and broken streams on demand.


const STOP: Record<FinishKind, string> = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use', content_filter: 'guardrail_intervened', refusal: 'guardrail_intervened' }

/** Bedrock's error types for the statuses a test asks for (Converse's documented errors). */
const ERRORS: Record<number, [string, string]> = {
  400: ['ValidationException', 'Malformed input request, please reformat your input and try again.'],
  403: ['AccessDeniedException', "You don't have access to the model with the specified model ID."],
  404: ['ResourceNotFoundException', 'Could not resolve the foundation model from the provided model identifier.'],
  408: ['ModelTimeoutException', 'Model has timed out in processing the request.'],
  424: ['ModelErrorException', 'The model returned an error.'],
  429: ['ThrottlingException', 'Too many requests, please wait before trying again.'],
  500: ['InternalServerException', 'The server encountered an internal error while processing the request.'],
  503: ['ServiceUnavailableException', 'Bedrock is unable to process your request.'],
}

const STREAM_ERRORS: Record<StreamErrorType, [string, string]> = {
  rate_limit: ['throttlingException', 'Too many requests, please wait before trying again.'],
  overloaded: ['serviceUnavailableException', 'Bedrock is unable to process your request.'],
  server: ['internalServerException', 'The server encountered an internal error while processing the request.'],
}

/** A frame's bytes as the scripted fake writes them (one latin1 character per byte: `binary`). */
const bytes = (frame: Uint8Array): string => Buffer.from(frame).toString('latin1')

/** Tokens the fake counts for a Converse body: 3 per message or system block, plus its words (as the OpenAI fake counts a chat). */
function promptTokensOf(body: Obj): number {
  const blocks = [...(Array.isArray(body.system) ? body.system : []), ...(Array.isArray(body.messages) ? body.messages : [])]
  let n = 0
  for (const b of blocks) n += 3 + countWords(textOf(isObj(b) && Array.isArray(b.content) ? b.content.map((c) => (isObj(c) && isObj(c.toolResult) ? c.toolResult.content : c)) : b))
  return n
}

function usageOf(r: Reply): Obj {
  const input = r.usage.prompt - r.usage.cached - r.usage.cacheWrite
  const output = r.usage.completion + r.usage.thinking
  return { inputTokens: input, outputTokens: output, totalTokens: r.usage.prompt + output, cacheReadInputTokens: r.usage.cached, cacheWriteInputTokens: r.usage.cacheWrite }
}

const toolUseId = () => `tooluse_${randomAlnum(22)}`

/** Converse and ConverseStream, SigV4-checked with `accessKeyId` and the fake's key as its secret. */
export function bedrockConverse(opts: { region: string; accessKeyId: string }): ProviderImpl {
  return {
    id: 'bedrock',
    basePath: '',
    binary: true,
    // A guardrail's blocked-output message (the text Bedrock answers in its place).
    refusalText: 'Sorry, the model cannot answer this question.',

    route(method, url) {
      const m = /^\/model\/([^/]+)\/(converse|converse-stream|invoke)$/.exec(url.pathname)
      if (method !== 'POST' || !m?.[1]) return undefined
      const model = decodeURIComponent(m[1])
      if (m[2] === 'invoke') return { endpoint: 'invoke', model }
      return m[2] === 'converse-stream' ? { model, streamMode: 'sse' } : { model }
    },

    // InvokeModel: the embeddings models.
    extra: (route, body) => invokeEmbeddings(route.model ?? '', body),

    notFound: () => awsReply(404, 'UnknownOperationException', 'Unknown operation'),

    authenticate(headers, url, apiKey, request) {
      const req = new Request(url.href, { method: request.method, headers })
      const verdict = verifySigV4(req, new TextEncoder().encode(request.text), { region: opts.region, service: 'bedrock', keys: { [opts.accessKeyId]: { secretAccessKey: apiKey } } })
      return verdict.ok ? undefined : awsReply(verdict.status, verdict.errorType, verdict.message)
    },

    validate(body, isJson, route, headers) {
      if (!isJson || !isObj(body)) return { ok: false, reply: awsReply(400, 'SerializationException', 'Unexpected character') }
      const invalid = validate(body)
      if (invalid) return { ok: false, reply: awsReply(400, 'ValidationException', invalid) }
      const tc = isObj(body.toolConfig) ? body.toolConfig : undefined
      const tools = (Array.isArray(tc?.tools) ? tc.tools : []).flatMap((t) =>
        isObj(t) && isObj(t.toolSpec) ? [{ name: String(t.toolSpec.name), schema: isObj(t.toolSpec.inputSchema) ? t.toolSpec.inputSchema.json : {} }] : [],
      )
      const choice = isObj(tc?.toolChoice) ? tc.toolChoice : undefined
      const forcedTool = isObj(choice?.any) ? '' : isObj(choice?.tool) ? String(choice.tool.name) : undefined
      const inference = isObj(body.inferenceConfig) ? body.inferenceConfig : {}
      const ctx: RequestCtx = {
        model: route.model ?? '',
        stream: route.streamMode ? 'sse' : false,
        promptTokens: promptTokensOf(body),
        jsonSchema: undefined,
        tools,
        forcedTool,
        maxTokens: typeof inference.maxTokens === 'number' ? inference.maxTokens : undefined,
        includeUsage: false,
        showThinking: false,
        headers,
      }
      return { ok: true, ctx }
    },

    error(b) {
      if (b.errorType === 'context_length') return awsReply(400, 'ValidationException', 'Input is too long for requested model.')
      const [type, message] = ERRORS[b.status] ?? (b.status >= 500 ? (ERRORS[500] as [string, string]) : (ERRORS[400] as [string, string]))
      return awsReply(b.status, type, message)
    },

    complete(r) {
      const content = [...(r.text ? [{ text: r.text }] : []), ...r.toolCalls.map((t) => ({ toolUse: { toolUseId: toolUseId(), name: t.name, input: t.arguments } }))]
      return { status: 200, body: JSON.stringify({ output: { message: { role: 'assistant', content } }, stopReason: STOP[r.finish], usage: usageOf(r), metrics: { latencyMs: 42 } }), headers: { 'content-type': 'application/json', 'x-amzn-requestid': crypto.randomUUID() } }
    },

    stream(r) {
      const frames: Uint8Array[] = [eventFrame('messageStart', { role: 'assistant' }, 7)]
      let index = 0
      if (r.text) {
        for (const piece of r.pieces) frames.push(eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: piece } }, 5))
        frames.push(eventFrame('contentBlockStop', { contentBlockIndex: 0 }))
        index = 1
      }
      for (const t of r.toolCalls) {
        frames.push(eventFrame('contentBlockStart', { contentBlockIndex: index, start: { toolUse: { toolUseId: toolUseId(), name: t.name } } }))
        for (const part of splitJson(JSON.stringify(t.arguments))) frames.push(eventFrame('contentBlockDelta', { contentBlockIndex: index, delta: { toolUse: { input: part } } }, 3))
        frames.push(eventFrame('contentBlockStop', { contentBlockIndex: index++ }))
      }
      frames.push(eventFrame('messageStop', { stopReason: STOP[r.finish] }), eventFrame('metadata', { usage: usageOf(r), metrics: { latencyMs: 42 } }))
      return { events: frames.map(bytes), end: '', headers: { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': crypto.randomUUID() } }
    },

    streamError(type) {
      const [name, message] = STREAM_ERRORS[type ?? 'server']
      return bytes(exceptionFrame(name, message))
    },

    // A frame whose CRCs are right but whose payload is not the event's JSON.
    malformed: () => bytes(encodeFrame([{ name: ':event-type', type: 'string', value: 'contentBlockDelta' }, { name: ':content-type', type: 'string', value: 'application/json' }, { name: ':message-type', type: 'string', value: 'event' }], '{not json')),
  }
}
