// Stage 6: turn the upstream answer into the response the client gets — one JSON body, or an SSE
// stream — in the endpoint's shape (OpenAI chat here; Anthropic Messages and OpenAI Responses in
// src/apis/), then hand the outcome to the log.

import { type ErrorShape, errorShapeFor, GatewayError } from '../errors'
import { costUsd, usageTokens } from '../catalog/catalog'
import type { StreamPart, UpstreamCompletion, UpstreamFailure } from '../providers/adapter'
import type { ChatChunk, ChatCompletion, ChunkChoice, FinishReason, ToolCall, Usage } from '../providers/openai-types'
import { SSE_DONE, SSE_HEADERS, sseData } from '../sse/encode'
import { estimatePromptTokens, estimateTokens } from '../tokens'
import type { Dispatched } from './5-fallback'
import type { AuthedContext, Deps } from './context'
import { failureOutcome, type Outcome } from './7-log'
import { checkStructuredOutput } from './structured-output'

const utf8 = new TextEncoder()

/** What every shape knows about the answer it writes. */
export interface AnswerInfo {
  requestId: string
  /** `provider/model-id` of the answering model. */
  model: string
  created: number
  /** The error shape the client asked for (GW_ERROR_FORMAT, x-gw-error-format), for gw's own shape. */
  errorShape: ErrorShape
  /** Prompt tokens estimated before the upstream reported any (for events that need a count up front). */
  estimatePromptTokens(): number
}

/** Writes one stream in an endpoint's format; each method returns the SSE text to send ('' = nothing yet). */
export interface StreamEncoder {
  /** The upstream's answer id and creation time, when it gives them. */
  meta(id: string | undefined, created: number | undefined): void
  choices(choices: ChunkChoice[]): string
  /**
   * An OpenAI chat chunk passed on unread (a `raw` part): only the chat shape writes it as it is; for
   * the others stage 6 reads it into choices first.
   */
  chunk?(json: string): string
  /** An upstream event relayed as it came (pass-through). */
  relay(part: Extract<StreamPart, { type: 'relay' }>): string
  /** The answer is complete: the closing events, with the usage the upstream reported (or estimated) and its cost. */
  end(usage: Usage, cost: number | null, finish: FinishReason | null): string
  /** The stream failed after its first byte: the endpoint's error event, then its end. */
  fail(message: string): string
}

/** The response format of an endpoint. */
export interface AnswerShape {
  /** Body of a non-streamed answer (`cost`: null when unknown). */
  json(c: UpstreamCompletion, usage: Usage, cost: number | null, info: AnswerInfo): unknown
  stream(info: AnswerInfo): StreamEncoder
}

/**
 * OpenAI chat completions, gw's own format, with the cost in `usage.cost_usd` (PRODUCT §11). Usage
 * goes where PRODUCT §4 puts it: with `stream_options.include_usage`, in a last chunk with
 * `choices: []` (OpenAI's shape); without it, on the chunk that carries the finish_reason (held back
 * until the usage is known), so `chunk.choices[0]` is always safe.
 */
export function chatShape(includeUsage: boolean): AnswerShape {
  return {
    json(c, usage, cost, info): ChatCompletion {
      return {
        ...c.extra,
        id: c.id ?? `chatcmpl-${info.requestId}`,
        object: 'chat.completion',
        created: info.created,
        model: info.model,
        choices: c.choices,
        usage: { ...usage, cost_usd: cost },
      }
    },
    stream(info) {
      let id = `chatcmpl-${info.requestId}`
      let created = info.created
      /** The chunk with the finish_reason, held back to carry the usage (without include_usage). */
      let finishing: ChunkChoice[] | undefined
      const chunk = (choices: ChunkChoice[], extra?: { usage: Usage }): ChatChunk => ({
        id,
        object: 'chat.completion.chunk',
        created,
        model: info.model,
        choices,
        ...extra,
      })
      return {
        meta(upstreamId, upstreamCreated) {
          if (upstreamId) id = upstreamId
          if (upstreamCreated) created = upstreamCreated
        },
        choices(choices) {
          if (!choices.some((c) => c.finish_reason !== null)) return sseData(chunk(choices))
          // Held back to carry the usage; a later finish (other choices) joins it.
          finishing = finishing ? [...finishing, ...choices] : choices
          return ''
        },
        chunk: (json) => `data: ${json}\n\n`,
        relay: () => '',
        end(reported, cost) {
          const usage = { ...reported, cost_usd: cost }
          const last = finishing ?? [{ index: 0, delta: {}, finish_reason: 'stop' as const }]
          const closing = includeUsage ? sseData(chunk(last)) + sseData(chunk([], { usage })) : sseData(chunk(last, { usage }))
          return closing + SSE_DONE
        },
        fail(message) {
          const held = finishing ? sseData(chunk(finishing)) : ''
          const error = new GatewayError(502, 'provider_error', message)
          return `${held}${sseData(error.toBody(info.requestId, info.errorShape))}${SSE_DONE}`
        },
      }
    },
  }
}

/** Headers every successful answer carries; `x-gw-cost-usd` when the cost is known (non-streamed answers). */
export function successHeaders(ctx: AuthedContext, d: Dispatched, cost: number | null = null): Record<string, string> {
  const h: Record<string, string> = {
    'x-gw-request-id': ctx.requestId,
    'x-gw-model': d.attempt.target.model.name,
    'x-gw-auth-mode': ctx.identity.authMode,
  }
  if (cost !== null) h['x-gw-cost-usd'] = String(cost)
  if (d.fallback.used && d.fallback.model) {
    h['x-gw-fallback'] = 'true'
    h['x-gw-fallback-reason'] = d.fallback.reason ?? 'provider_error'
    h['x-gw-fallback-model'] = d.fallback.model
  }
  return h
}

function estimateUsage(d: Dispatched, completionText: string): Usage {
  const prompt = estimatePromptTokens(d.attempt.body.messages)
  const completion = estimateTokens(completionText)
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
}

/** What the answer cost at the catalog's prices (PRODUCT §11); null when the model's price is unknown. */
const costOf = (d: Dispatched, usage: Usage) => costUsd(d.attempt.target.model, usageTokens(usage))

function baseOutcome(d: Dispatched): Omit<Outcome, 'usage' | 'usageEstimated' | 'costUsd' | 'responseBody'> {
  return {
    status: 200,
    errorCode: null,
    errorMessage: null,
    target: d.attempt.target,
    attempts: d.attempts,
    fallback: d.fallback,
    upstreamLatencyMs: d.attempt.headersMs,
    ttftMs: d.attempt.ttftMs,
    incomplete: false,
    refusal: d.attempt.refusal,
    warnings: d.warnings,
    structuredOutput: null,
  }
}

function answerInfo(deps: Deps, ctx: AuthedContext, d: Dispatched): AnswerInfo {
  return {
    requestId: ctx.requestId,
    model: d.attempt.target.model.name,
    created: Math.floor(Date.now() / 1000),
    errorShape: errorShapeFor(ctx.headers, deps.config.errorFormat),
    estimatePromptTokens: () => estimatePromptTokens(d.attempt.body.messages),
  }
}

/**
 * Ends the request: its log entry, its charges given back. A promise while its token count is being
 * written to the counters every instance shares: the answer's last bytes wait for it (PRODUCT §10).
 */
export type Finish = (o: Outcome) => Promise<void> | undefined

/** Settles the request's token count alone, before a stream's closing events (its log entry follows them); a promise as for Finish. */
export type CountTokens = (usedTokens: number) => Promise<void> | undefined

export async function jsonAnswer(deps: Deps, ctx: AuthedContext, d: Dispatched, finish: Finish, shape: AnswerShape): Promise<Response> {
  if (d.answer.kind !== 'json') throw new Error('jsonAnswer needs a JSON answer')
  const c = d.answer.completion
  const text = c.choices.map((ch) => ch.message.content ?? '').join('')
  const usage = c.usage ?? estimateUsage(d, text)
  const cost = costOf(d, usage)
  const body = shape.json(c, usage, cost, answerInfo(deps, ctx, d))
  // A relayed answer (the provider's own body, unchanged) goes out as the bytes that came in.
  const json = body === c.native ? d.answer.text : JSON.stringify(body)
  const counted = finish({
    ...baseOutcome(d),
    structuredOutput: await checkStructuredOutput(d.attempt.body, c.choices[0]?.message.content ?? null),
    usage,
    usageEstimated: !c.usage,
    costUsd: cost,
    responseBody: body,
    responseText: json,
  })
  if (counted) await counted
  return new Response(json, {
    status: 200,
    headers: { 'content-type': 'application/json', ...successHeaders(ctx, d, cost) },
  })
}

/** What the stream has said so far, for the usage estimate and the log. */
interface Transcript {
  content: string
  toolCalls: ToolCall[]
  finish: FinishReason | null
  /** Raw chunks passed on unread (plain text of choice 0), read in order when the text is needed. */
  unread: string[]
}

/** Appends the text of the raw chunks passed on so far: one JSON.parse each, after they were sent. */
function readRaw(t: Transcript): void {
  for (const json of t.unread) {
    const chunk = JSON.parse(json) as { choices: { delta: { content: string } }[] }
    t.content += chunk.choices[0]?.delta.content ?? ''
  }
  t.unread.length = 0
}

function noteChoices(t: Transcript, choices: ChunkChoice[]): void {
  if (t.unread.length) readRaw(t)
  for (const c of choices) {
    if (c.index !== 0) continue
    if (c.delta.content) t.content += c.delta.content
    if (c.delta.refusal) t.content += c.delta.refusal
    for (const tc of c.delta.tool_calls ?? []) {
      const slot = (t.toolCalls[tc.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } })
      if (tc.id) slot.id = tc.id
      if (tc.function?.name) slot.function.name += tc.function.name
      if (tc.function?.arguments) slot.function.arguments += tc.function.arguments
    }
    if (c.finish_reason) t.finish = c.finish_reason
  }
}

/** The choices of an OpenAI chat chunk passed on unread, for shapes that do not write it as it is. */
function chunkChoices(json: string): ChunkChoice[] {
  return (JSON.parse(json) as { choices: ChunkChoice[] }).choices
}

/** The SSE answer, written by the endpoint's stream encoder. */
export function streamAnswer(
  deps: Deps,
  ctx: AuthedContext,
  d: Dispatched,
  finish: Finish,
  shape: AnswerShape,
  countTokens: CountTokens,
): Response {
  if (d.answer.kind !== 'stream') throw new Error('streamAnswer needs a stream answer')
  const { attempt } = d.answer
  let pending: StreamPart[] | null = d.answer.head
  const encoder = shape.stream(answerInfo(deps, ctx, d))
  let usage: Usage | undefined
  let ended = false
  let closed = false
  let shuttingDown = false
  const terminate = () => {
    shuttingDown = true
    attempt.close()
  }
  deps.openStreams.add(terminate)
  // A client that stops reading holds the upstream connection: once it has taken nothing for
  // GW_CLIENT_READ_TIMEOUT_MS (time spent waiting for the upstream does not count), the stream is
  // ended. One lazily armed timer; each pull only moves `waitingSince`.
  const readTimeoutMs = deps.config.clientReadTimeoutMs
  let waitingSince = 0
  let readTimer: ReturnType<typeof setTimeout> | undefined
  let stream: ReadableStreamDefaultController<Uint8Array> | undefined
  const checkReader = () => {
    readTimer = undefined
    if (closed || waitingSince === 0) return
    const left = waitingSince + readTimeoutMs - performance.now()
    if (left > 1) {
      readTimer = setTimeout(checkReader, left)
      return
    }
    done(undefined, `the client read nothing for ${readTimeoutMs} ms: the stream was ended`)
    stream?.error(new Error('the client stopped reading'))
  }
  const awaitReader = () => {
    waitingSince = performance.now()
    readTimer ??= setTimeout(checkReader, readTimeoutMs)
  }
  const transcript: Transcript = { content: '', toolCalls: [], finish: null, unread: [] }
  const write = (controller: ReadableStreamDefaultController<Uint8Array>, text: string) => {
    if (text) controller.enqueue(utf8.encode(text))
    return text !== ''
  }

  /** Usage (reported, else estimated) and cost, worked out once when the stream ends. */
  let final: { usage: Usage; cost: number | null } | undefined
  const settle = () => {
    if (!final) {
      readRaw(transcript)
      const u = usage ?? estimateUsage(d, transcript.content)
      final = { usage: u, cost: costOf(d, u) }
    }
    return final
  }

  /** Ends the stream once: `clientLeft` says why the client's side ended it early. */
  const done = (failure?: UpstreamFailure, clientLeft?: string) => {
    if (closed) return
    closed = true
    clearTimeout(readTimer)
    deps.openStreams.delete(terminate)
    attempt.close()
    // The log entry follows once the answer is checked against its schema (in turns: structured-output.ts).
    const unexpected = (err: unknown) =>
      console.error(`gw: unexpected error in request ${ctx.requestId}:`, err instanceof Error ? err.stack : err)
    void streamOutcome(failure, clientLeft)
      .catch((err: unknown) => {
        // A bug on gw's side: reported like the error handler reports one, and the request still
        // settled once (finish does nothing the second time); the stream ends as it was going to.
        unexpected(err)
        return failureOutcome(500, 'gateway_error', 'Internal error', { attempts: d.attempts, target: d.attempt.target })
      })
      .then(finish)
      .catch(unexpected)
  }

  const streamOutcome = async (failure: UpstreamFailure | undefined, clientLeft: string | undefined): Promise<Outcome> => {
    readRaw(transcript)
    return {
      ...baseOutcome(d),
      structuredOutput: await checkStructuredOutput(attempt.body, transcript.content),
      errorCode: failure ? 'provider_error' : null,
      errorMessage: failure?.message ?? clientLeft ?? null,
      incomplete: !!failure || clientLeft !== undefined,
      usage: settle().usage,
      usageEstimated: !usage,
      costUsd: settle().cost,
      responseBody: {
        content: transcript.content,
        ...(transcript.toolCalls.length ? { tool_calls: transcript.toolCalls } : {}),
        finish_reason: transcript.finish,
      },
    }
  }

  /**
   * Writes the stream's closing events (`closing`) and ends it, once its token count is settled:
   * at once in memory; when that is a promise (shared counters), after it (PRODUCT §10).
   */
  const closeStream = (controller: ReadableStreamDefaultController<Uint8Array>, closing: () => string, failure?: UpstreamFailure) => {
    const end = () => {
      // The client may have left (or gw cut the stream) meanwhile: then it was ended already.
      if (closed) return
      write(controller, closing())
      done(failure)
      controller.close()
    }
    const used = usedTokens()
    const counted = used === undefined ? undefined : countTokens(used)
    return counted ? counted.then(end) : end()
  }
  /** What the stream used, for the token count; when that cannot be worked out (a bug: the outcome reports it), the settlement counts it. */
  const usedTokens = () => {
    try {
      return settle().usage.total_tokens
    } catch {
      return undefined
    }
  }
  const complete = (controller: ReadableStreamDefaultController<Uint8Array>) =>
    closeStream(controller, () => {
      const { usage: reported, cost } = settle()
      return encoder.end(reported, cost, transcript.finish)
    })

  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      stream = controller
    },
    async pull(controller) {
      waitingSince = 0
      try {
        for (;;) {
          const parts: StreamPart[] | null = pending ?? (await attempt.next())
          pending = null
          if (closed) return
          if (parts === null) {
            const closing = ended
              ? complete(controller)
              : failStream(controller, { kind: 'provider_error', message: 'the upstream stream ended before it was complete' })
            if (closing) await closing
            return
          }
          let wrote = false
          for (const p of parts) {
            switch (p.type) {
              case 'meta':
                encoder.meta(p.id, p.created)
                break
              case 'raw':
                if (encoder.chunk) {
                  transcript.unread.push(p.json)
                  if (write(controller, encoder.chunk(p.json))) wrote = true
                  break
                }
                {
                  const choices = chunkChoices(p.json)
                  noteChoices(transcript, choices)
                  if (write(controller, encoder.choices(choices))) wrote = true
                }
                break
              case 'choices':
                noteChoices(transcript, p.choices)
                if (write(controller, encoder.choices(p.choices))) wrote = true
                break
              case 'relay':
                if (write(controller, encoder.relay(p))) wrote = true
                break
              case 'usage':
                usage = p.usage
                break
              case 'end':
                ended = true
                break
              case 'failure': {
                const closing = failStream(controller, p.failure)
                if (closing) await closing
                return
              }
            }
          }
          if (wrote) {
            awaitReader()
            return
          }
        }
      } catch (err) {
        const closing = failStream(controller, { kind: 'provider_error', message: err instanceof Error ? err.message : String(err) })
        if (closing) await closing
      }
    },
    cancel() {
      done(undefined, 'the client disconnected before the end of the stream')
    },
  })

  function failStream(controller: ReadableStreamDefaultController<Uint8Array>, failure: UpstreamFailure) {
    // At shutdown the cut is gw's doing: the client and the log entry say so, not that the provider failed.
    const cut = shuttingDown ? { ...failure, message: 'gw is shutting down: the answer was cut short' } : failure
    const message = shuttingDown ? cut.message : `The upstream stream failed after the answer had started (${failure.kind}): ${failure.message}`
    return closeStream(controller, () => encoder.fail(message), cut)
  }

  return new Response(body, { status: 200, headers: { ...SSE_HEADERS, ...successHeaders(ctx, d) } })
}
