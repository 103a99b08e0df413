// Fake Amazon Bedrock Runtime: Converse (JSON) and ConverseStream (event-stream frames), every request's SigV4 checked.
//
// Shapes from AWS's public "Amazon Bedrock Runtime API Reference" (actions Converse and ConverseStream:
// request members messages/system/inferenceConfig/toolConfig, the answer's output.message, stopReason and
// usage with cacheReadInputTokens/cacheWriteInputTokens; the stream's messageStart, contentBlockStart,
// contentBlockDelta, contentBlockStop, messageStop and metadata events; errors as `{"message": …}` with
// `x-amzn-errortype`, and in a stream as `:message-type` `exception` frames). Signatures: sigv4-verify.ts.

import { eventFrame, exceptionFrame } from './event-stream-encode.ts'
import { isObj } from './common.ts'
import { type FakeAwsKey, sigV4Refusal, verifySigV4 } from './sigv4-verify.ts'

/** What the fake answers next (one per request; the default answers text). */
export type BedrockPlan =
  | { kind: 'text'; text: string; stopReason?: string }
  | { kind: 'tool'; name: string; input: Record<string, unknown> }
  | { kind: 'error'; status: number; type: string; message: string }
  /** A stream that starts, then carries an exception frame (e.g. `throttlingException`). */
  | { kind: 'stream-exception'; type: string; message: string }

export interface SeenRequest {
  modelId: string
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
      const m = /^\/model\/([^/]+)\/(converse|converse-stream)$/.exec(new URL(req.url).pathname)
      if (req.method !== 'POST' || !m?.[1]) return awsError(404, 'UnknownOperationException', 'Unknown operation')
      const modelId = decodeURIComponent(m[1])
      const stream = m[2] === 'converse-stream'
      let body: unknown
      try {
        body = JSON.parse(new TextDecoder().decode(bytes))
      } catch {
        return awsError(400, 'SerializationException', 'Unexpected character')
      }
      seen.push({ modelId, stream, body: isObj(body) ? body : {}, headers: req.headers, signer })
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
