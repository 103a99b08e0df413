// Stage 6: turn the upstream answer into the response the client gets — one JSON body, or an SSE
// stream — in the endpoint's shape (its AnswerShape: the encoders are in src/apis/), then hand the
// outcome to the request's settlement.

import { type ErrorShape, errorShapeFor, GatewayError } from '../errors'
import { costUsd, usageTokens } from '../catalog/catalog'
import type { StreamPart, UpstreamCompletion, UpstreamFailure } from '../providers/adapter'
import type { ChunkChoice, FinishReason, Usage } from '../providers/openai-types'
import { addChoices, type RelayedEvents, type RelayReader, relayTranscript, streamedAnswer, type Transcript } from '../apis/relay-transcript'
import { SSE_HEADERS } from '../sse/encode'
import { estimateTokens } from '../tokens'
import type { UpstreamAttempt } from './5-attempt'
import type { Dispatched } from './5-fallback'
import type { AuthedContext, Deps } from './context'
import { failureOutcome, type Outcome } from './7-log'
import { checkStructuredOutput } from './structured-output'

const utf8 = new TextEncoder()
const utf8in = new TextDecoder()

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
  /** An upstream event relayed as it came (pass-through). */
  relay(part: Extract<StreamPart, { type: 'relay' }>): string
  /** The answer is complete: the closing events, with the usage the upstream reported (or estimated) and its cost. */
  end(usage: Usage, cost: number | null, finish: FinishReason | null): string
  /** The stream failed after its first byte: the endpoint's error event, then its end (`error`: gw's own refusal, a guardrail's; else a provider error). */
  fail(message: string, error?: GatewayError): string
  /** What it holds back and has not written (the chat shape's finishing chunk, waiting for the usage): read into the log of a stream the client left. */
  held?(): string
}

/** The response format of an endpoint. */
export interface AnswerShape {
  /** Body of a non-streamed answer (`cost`: null when unknown). */
  json(c: UpstreamCompletion, usage: Usage, cost: number | null, info: AnswerInfo): unknown
  stream(info: AnswerInfo): StreamEncoder
}

/** Headers every successful answer carries; `x-gw-cost-usd` when the cost is known (non-streamed answers). */
export function successHeaders(ctx: AuthedContext, d: Dispatched, cost: number | null = null): Record<string, string> {
  const h: Record<string, string> = {
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
  const prompt = d.promptEstimate()
  const completion = estimateTokens(completionText)
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
}

/** What the answer cost: the upstream's own charge when it reports one (OpenRouter), else at the catalog's prices (PRODUCT §11); null when unknown. */
const costOf = (d: Dispatched, usage: Usage) => usage.cost ?? costUsd(d.attempt.target.model, usageTokens(usage))

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
    estimatePromptTokens: d.promptEstimate,
  }
}

/**
 * Ends the request: its log entry, its charges given back. A promise while its token count is being
 * written to the counters every instance shares: the answer's last bytes wait for it (PRODUCT §10).
 */
export type Finish = (o: Outcome) => Promise<void> | undefined

/** Settles the request's token count alone, before a stream's closing events (its log entry follows them); a promise as for Finish. */
export type CountTokens = (usedTokens: number) => Promise<void> | undefined

/**
 * The JSON answer. `review` (the request's guardrails, PRODUCT §19) may change the answer's texts, or
 * refuse it with a GatewayError: the request then ends with that error, its usage and cost logged.
 */
export async function jsonAnswer(
  deps: Deps,
  ctx: AuthedContext,
  d: Dispatched,
  finish: Finish,
  shape: AnswerShape,
  review?: (c: UpstreamCompletion) => Promise<void>,
): Promise<Response> {
  if (d.answer.kind !== 'json') throw new Error('jsonAnswer needs a JSON answer')
  const c = d.answer.completion
  const usage = c.usage ?? estimateUsage(d, c.choices.map((ch) => ch.message.content ?? '').join(''))
  const cost = costOf(d, usage)
  try {
    await review?.(c)
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err
    const counted = finish({ ...baseOutcome(d), status: err.status, errorCode: err.code, errorMessage: err.message, usage, usageEstimated: !c.usage, costUsd: cost, responseBody: undefined })
    if (counted) await counted
    throw err
  }
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
    upstreamId: c.id,
  })
  if (counted) await counted
  return new Response(json, {
    status: 200,
    headers: { 'content-type': 'application/json', ...successHeaders(ctx, d, cost) },
  })
}

/**
 * How a stream ends: its answer complete, a failure after its first byte (the upstream's, or gw cutting
 * it at shutdown), or the client gone (it disconnected, or stopped reading).
 */
type Ending = { kind: 'complete' } | { kind: 'failed'; failure: UpstreamFailure; error?: GatewayError } | { kind: 'left'; why: string }

/**
 * A change the request's guardrails make to the parsed parts on their way to the encoder (PRODUCT §19,
 * src/guardrails/stream.ts): given each read (null once the upstream is over) and may hold text back,
 * returning it later; may throw a GatewayError that ends the stream with its message. A promise only
 * when it must wait for something (an output webhook reading the whole answer).
 */
export type PartsTransform = (parts: StreamPart[] | null) => StreamPart[] | null | Promise<StreamPart[] | null>

/**
 * A client that stops reading holds the upstream connection: once it has taken nothing for
 * GW_CLIENT_READ_TIMEOUT_MS (time spent waiting for the upstream does not count), the stream's
 * `idle()` ends it. One lazily armed timer; each pull only moves `waitingSince`.
 */
class ReadWatch {
  private waitingSince = 0
  private timer: ReturnType<typeof setTimeout> | undefined
  private stopped = false

  constructor(
    private readonly timeoutMs: number,
    private readonly stream: { idle(): void },
  ) {}

  /** Something was written: the client's turn to read. */
  waiting(): void {
    this.waitingSince = performance.now()
    this.timer ??= setTimeout(this.check, this.timeoutMs)
  }

  /** The client asked for more. */
  reading(): void {
    this.waitingSince = 0
  }

  stop(): void {
    this.stopped = true
    clearTimeout(this.timer)
  }

  private readonly check = () => {
    this.timer = undefined
    if (this.stopped || this.waitingSince === 0) return
    const left = this.waitingSince + this.timeoutMs - performance.now()
    if (left > 1) this.timer = setTimeout(this.check, left)
    else this.stream.idle()
  }
}

/**
 * The SSE answer: the attempt's parts pumped through the endpoint's stream encoder to the client, and
 * one way to end it (`end`), whatever ends it.
 */
export function streamAnswer(
  deps: Deps,
  ctx: AuthedContext,
  d: Dispatched,
  finish: Finish,
  shape: AnswerShape,
  countTokens: CountTokens,
  transform?: PartsTransform,
): Response {
  if (d.answer.kind !== 'stream') throw new Error('streamAnswer needs a stream answer')
  const pump = new StreamPump(deps, ctx, d, d.answer.attempt, d.answer.head, finish, shape, countTokens, transform)
  return new Response(new ReadableStream<Uint8Array>(pump), { status: 200, headers: { ...SSE_HEADERS, ...successHeaders(ctx, d) } })
}

/**
 * One streamed answer, as one object (its state in fields, its steps in methods: no closure per
 * stream but `cut`): the response body's source, pulled by Bun as the client reads.
 */
class StreamPump implements UnderlyingDefaultSource<Uint8Array> {
  private readonly encoder: StreamEncoder
  /** What the stream has said so far, for the usage estimate and the log (a stream not relayed). */
  private readonly transcript: Transcript = { content: '', toolCalls: [], finish: null }
  /** A relayed stream (or chat chunks passed on as bytes): what the client received, in order (bytes as relayed, text as written), for the log thread to read. */
  private readonly relayReader: RelayReader | undefined
  private readonly relayed: (Uint8Array | string)[] = []
  private relayedTranscript: Transcript | undefined
  /** What `received()` read last without held text, and from how many relayed pieces. */
  private lastReceived: { pieces: number; events: RelayedEvents } | undefined
  /** The closing events (end or error) are written: nothing is held back any more. */
  private closingWritten = false
  private reported: Usage | undefined
  /** The upstream's id of its answer (a `meta` part), for the log. */
  private upstreamId: string | undefined
  private upstreamEnded = false
  private shuttingDown = false
  private ended = false
  private clientGone = false
  private controller: ReadableStreamDefaultController<Uint8Array> | undefined
  private readonly watch: ReadWatch
  /** Usage (reported, else estimated) and cost, worked out once when the answer is over. */
  private final: { usage: Usage; cost: number | null } | undefined

  constructor(
    private readonly deps: Deps,
    private readonly ctx: AuthedContext,
    private readonly d: Dispatched,
    private readonly attempt: UpstreamAttempt,
    private pending: StreamPart[] | null,
    private readonly finish: Finish,
    shape: AnswerShape,
    private readonly countTokens: CountTokens,
    private readonly transform: PartsTransform | undefined,
  ) {
    this.encoder = shape.stream(answerInfo(deps, ctx, d))
    deps.inFlight.add(this.cut)
    this.watch = new ReadWatch(deps.config.clientReadTimeoutMs, this)
    this.relayReader = attempt.relayReader
  }

  /**
   * What the client has received so far (relayed bytes decoded: each piece ends an event, so each
   * decodes alone); with `held`, also what the encoder held back from a client that left (the answer
   * the upstream gave, for the log).
   */
  private received(held = false): RelayedEvents | undefined {
    if (!this.relayReader) return undefined
    // The same pieces read again (the log's text, then the usage estimate or structured-output check): decoded once.
    const last = this.lastReceived
    if (!held && last?.pieces === this.relayed.length) return last.events
    let text = ''
    for (const r of this.relayed) text += typeof r === 'string' ? r : utf8in.decode(r)
    if (held) text += this.encoder.held?.() ?? ''
    const events: RelayedEvents = { reader: this.relayReader, text }
    if (!held) this.lastReceived = { pieces: this.relayed.length, events }
    return events
  }

  /**
   * The answer's text, only when needed (a usage estimate, a structured-output check), once the
   * upstream is done: a relayed stream's (chat chunks passed on included) read again from what the
   * client received, with what the encoder still holds back until the closing events are written;
   * else the transcript.
   */
  private content(): string {
    if (!this.relayReader) return this.transcript.content
    return (this.relayedTranscript ??= relayTranscript(this.received(!this.closingWritten) as RelayedEvents)).content
  }

  /** At shutdown gw cuts the stream: the attempt is closed, and the failure it then reports is told as gw's. */
  private readonly cut = () => {
    this.shuttingDown = true
    this.attempt.close()
  }

  start(c: ReadableStreamDefaultController<Uint8Array>): void {
    this.controller = c
  }

  async pull(): Promise<void> {
    this.watch.reading()
    try {
      for (;;) {
        let parts: StreamPart[] | null = this.pending ?? (await this.attempt.next())
        this.pending = null
        if (this.transform) {
          const changed = this.transform(parts)
          parts = changed instanceof Promise ? await changed : changed
        }
        if (this.ended) return
        if (parts === null)
          return await this.end(
            this.upstreamEnded
              ? { kind: 'complete' }
              : { kind: 'failed', failure: { kind: 'provider_error', message: 'the upstream stream ended before it was complete' } },
          )
        const pumped = this.pump(parts)
        if (typeof pumped === 'object') return await this.end(pumped)
        if (pumped) return this.watch.waiting()
      }
    } catch (err) {
      const error = err instanceof GatewayError ? err : undefined
      await this.end({ kind: 'failed', failure: { kind: 'provider_error', message: err instanceof Error ? err.message : String(err) }, error })
    }
  }

  cancel(): void {
    this.clientGone = true
    void this.end({ kind: 'left', why: 'the client disconnected before the end of the stream' })
  }

  /** The client took nothing for GW_CLIENT_READ_TIMEOUT_MS (ReadWatch). */
  idle(): void {
    this.clientGone = true
    void this.end({ kind: 'left', why: `the client read nothing for ${this.deps.config.clientReadTimeoutMs} ms: the stream was ended` })
    this.controller?.error(new Error('the client stopped reading'))
  }

  private write(text: string): boolean {
    if (!text) return false
    this.controller?.enqueue(utf8.encode(text))
    if (this.relayReader) this.relayed.push(text)
    return true
  }

  private usageAndCost(): { usage: Usage; cost: number | null } {
    if (!this.final) {
      const u = this.reported ?? estimateUsage(this.d, this.content())
      this.final = { usage: u, cost: costOf(this.d, u) }
    }
    return this.final
  }

  /** What the stream used, for the token count; undefined when that cannot be worked out (a bug: the outcome reports it). */
  private usedTokens(): number | undefined {
    try {
      return this.usageAndCost().usage.total_tokens
    } catch {
      return undefined
    }
  }

  /**
   * Ends the stream, once. While the client is there its token count is settled first (the counters
   * every instance shares hold it before the client reads the end, PRODUCT §10), then the closing
   * events are written (the answer's end, or its error event) and the stream closed. The request is
   * then settled with its outcome: the log entry follows the answer's check against its schema.
   */
  private async end(how: Ending): Promise<void> {
    if (this.ended) return
    this.ended = true
    this.watch.stop()
    this.deps.inFlight.delete(this.cut)
    this.attempt.close()
    if (how.kind === 'failed' && this.shuttingDown) how = { kind: 'failed', failure: { ...how.failure, message: 'gw is shutting down: the answer was cut short' } }
    if (how.kind !== 'left') {
      const used = this.usedTokens()
      const counted = used === undefined ? undefined : this.countTokens(used)
      if (counted) await counted
      // The client may have left meanwhile: then nothing is written, and it is what the log says.
      if (this.clientGone) how = { kind: 'left', why: 'the client disconnected before the end of the stream' }
      else how = this.writeClosing(how)
    }
    this.settle(how)
  }

  private failed(failure: UpstreamFailure, error?: GatewayError): string {
    return this.encoder.fail(
      this.shuttingDown || error ? failure.message : `The upstream stream failed after the answer had started (${failure.kind}): ${failure.message}`,
      error,
    )
  }

  /** The closing events of a complete answer, or its error event; an answer whose end cannot be written (a bug) ends with the error event. */
  private writeClosing(how: Exclude<Ending, { kind: 'left' }>): Ending {
    let text: string
    try {
      text =
        how.kind === 'complete'
          ? this.encoder.end(this.usageAndCost().usage, this.usageAndCost().cost, this.transcript.finish)
          : this.failed(how.failure, how.error)
    } catch (err) {
      how = { kind: 'failed', failure: { kind: 'provider_error', message: err instanceof Error ? err.message : String(err) } }
      text = this.failed(how.failure)
    }
    this.write(text)
    this.closingWritten = true
    this.controller?.close()
    return how
  }

  /** The request's settlement, with the stream's outcome; a bug building it is reported and settled as a 500. */
  private settle(how: Ending): void {
    void this.outcomeOf(how)
      .catch((err: unknown) => {
        this.unexpected(err)
        return failureOutcome(500, 'gateway_error', 'Internal error', { attempts: this.d.attempts, target: this.d.attempt.target })
      })
      .then(this.finish)
      .catch((err: unknown) => this.unexpected(err))
  }

  private unexpected(err: unknown): void {
    console.error(`gw: unexpected error in request ${this.ctx.requestId}:`, err instanceof Error ? err.stack : err)
  }

  private async outcomeOf(how: Ending): Promise<Outcome> {
    const t = this.transcript
    const events = this.received(how.kind === 'left')
    const failure = how.kind === 'failed' ? how.failure : undefined
    return {
      ...baseOutcome(this.d),
      structuredOutput: await checkStructuredOutput(this.attempt.body, () => this.content()),
      errorCode: failure ? (how.kind === 'failed' && how.error?.code) || 'provider_error' : null,
      errorMessage: failure?.message ?? (how.kind === 'left' ? how.why : null),
      incomplete: how.kind !== 'complete',
      usage: this.usageAndCost().usage,
      usageEstimated: !this.reported,
      costUsd: this.usageAndCost().cost,
      // A relayed stream's transcript is assembled by the log thread from the text the client received.
      responseBody: events ? undefined : streamedAnswer(t),
      ...(events ? { responseEvents: events } : {}),
      responseStreamed: true,
      upstreamId: this.upstreamId,
    }
  }

  /**
   * The parts of one upstream read, through the encoder; true when something was written. Their text
   * goes out as one chunk per read (one encode, one enqueue), relayed bytes as they came, in order.
   */
  private pump(parts: StreamPart[]): Ending | boolean {
    const encoder = this.encoder
    let out = ''
    let relayed = false
    for (const p of parts) {
      switch (p.type) {
        case 'meta':
          encoder.meta(p.id, p.created)
          this.upstreamId = p.id ?? this.upstreamId
          break
        case 'choices':
          addChoices(this.transcript, p.choices)
          out += encoder.choices(p.choices)
          break
        case 'relay':
          out += encoder.relay(p)
          break
        case 'bytes':
          // Relayed as received (the encoder has been told of each of its events by their `relay` parts), or
          // chat chunks passed on (not parsed here: the log, and content() if needed, read them from the client's text).
          this.write(out)
          out = ''
          this.controller?.enqueue(p.bytes)
          this.relayed.push(p.bytes)
          relayed = true
          break
        case 'usage':
          this.reported = p.usage
          break
        case 'end':
          this.upstreamEnded = true
          break
        case 'failure':
          this.write(out)
          return { kind: 'failed', failure: p.failure }
      }
    }
    return this.write(out) || relayed
  }
}
