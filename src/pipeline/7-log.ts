// Stage 7: build the request's log entry (usage, cost, latency, attempts) and queue it for writing.

import { isoTime } from '../iso-time'
import { usageTokens } from '../catalog/catalog'
import { providerName, type Target } from '../providers/adapter'
import { providerOfModel } from '../providers/provider-id'
import type { Usage } from '../providers/openai-types'
import type { LogBodies } from '../store/log-path'
import type { StreamedAnswer } from '../store/log-sink'
import type { CachePut } from '../store/types'
import { MAX_IDENTIFIER_CHARS } from '../schemas/chat-body'
import { type RelayedEvents, relayTranscript, streamedAnswer } from '../apis/relay-transcript'
import type { Attempt, Fallback, GuardrailRecord, LogEntry, RequestWarning } from '../domain/log-entry'
import type { AuthedContext, ChatInput, Deps, RequestContext } from './context'
import { NO_FALLBACK } from './5-fallback'

export interface Outcome {
  status: number
  errorCode: string | null
  errorMessage: string | null
  target: Target | null
  /** Model named on a failed request: the last one tried. */
  model?: string | null
  attempts: Attempt[]
  fallback: Fallback
  usage: Usage | null
  usageEstimated: boolean
  /** USD, from the catalog's prices; null when unknown (or nothing was answered). */
  costUsd: number | null
  upstreamLatencyMs: number | null
  ttftMs: number | null
  incomplete: boolean
  refusal: boolean
  warnings: RequestWarning[]
  structuredOutput: LogEntry['structuredOutput']
  responseBody: unknown
  /** responseBody as JSON text, when the caller has serialised it already. */
  responseText?: string
  /** responseBody is a streamed answer as the log keeps it (its text, tool calls, finish reason). */
  responseStreamed?: boolean
  /** A relayed stream's text as the client received it, in place of responseBody: the log thread reads its transcript. */
  responseEvents?: RelayedEvents
  /** `org` or `key` when gw's own rate limit refused the request. */
  rateLimitScope?: string
  /** What the org's guardrails did (PRODUCT §19), when it has some. */
  guardrails?: GuardrailRecord[]
  /** The response cache's part (PRODUCT §19), when the org's cache is on. */
  cache?: 'hit' | 'miss' | 'refresh'
  /** A hit: what the answer cost when it was first given. */
  costSavedUsd?: number | null
  /** A miss whose answer the response cache keeps, handed to the log path with the entry (when it writes the cache: SQLite). */
  kept?: CachePut
  /** The upstream's id of its answer, when it gave one. */
  upstreamId?: string
}

export function failureOutcome(status: number, code: string, message: string, extra: Partial<Outcome> = {}): Outcome {
  return {
    status,
    errorCode: code,
    errorMessage: message,
    target: null,
    attempts: [],
    fallback: NO_FALLBACK,
    usage: null,
    usageEstimated: false,
    costUsd: null,
    upstreamLatencyMs: null,
    ttftMs: null,
    incomplete: false,
    refusal: false,
    warnings: [],
    structuredOutput: null,
    responseBody: undefined,
    ...extra,
  }
}

/** The outcome of an API request that is not a chat (models, logs, usage): only its status. */
export function answeredOutcome(status: number): Outcome {
  return { ...failureOutcome(status, '', ''), errorCode: null, errorMessage: null }
}

export function endUserId(ctx: AuthedContext, input: ChatInput | undefined): string | null {
  return ctx.identity.endUserId ?? ctx.headers.get('x-gw-end-user-id') ?? (input ? input.user : sentField(ctx, 'user')) ?? null
}

/**
 * A field of a request refused before its body was read as valid (`model`, `user`), as sent, when it is
 * a string of at most 256 characters: the log entry still names it for searches and reports.
 */
function sentField(ctx: RequestContext | AuthedContext, name: 'model' | 'user'): string | undefined {
  const body = 'rawBody' in ctx ? ctx.rawBody?.value : undefined
  const v = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[name] : undefined
  return typeof v === 'string' && v.length > 0 && v.length <= MAX_IDENTIFIER_CHARS ? v : undefined
}

/** The request's log entry. A request refused at stage 1 gets one too (no org, no identity): it feeds the
 * metrics and the access log but is never written, since it belongs to no org. */
export function logEntry(deps: Deps, ctx: RequestContext | AuthedContext, input: ChatInput | undefined, o: Outcome): LogEntry {
  const authed = 'identity' in ctx ? ctx : undefined
  const target = o.target
  const usage = o.usage
  const tokens = usageTokens(usage)
  const requestedModel = (input ? input.requestedModel : sentField(ctx, 'model')) ?? null
  const entry: LogEntry = {
    requestId: ctx.requestId,
    createdAt: isoTime(ctx.receivedAt),
    orgId: authed?.identity.orgId ?? '',
    endpoint: ctx.endpoint,
    authMode: authed?.identity.authMode ?? null,
    subject: authed?.identity.subject ?? null,
    endUserId: authed ? endUserId(authed, input) : null,
    user: (input ? input.user : sentField(ctx, 'user')) ?? null,
    promptId: authed?.prompt?.id ?? null,
    promptSlug: authed?.prompt?.slug ?? null,
    promptVersion: authed?.prompt?.version ?? null,
    requestedModel,
    route: input?.route ?? null,
    providerKey: target?.keyName ?? null,
    model: target ? target.model.name : (o.model ?? null),
    // A request that failed before any provider answered still belongs to the provider it named (every report groups it there).
    provider: (target && providerName(target)) ?? providerOfModel(o.model ?? requestedModel ?? '') ?? null,
    stream: input?.stream ?? false,
    status: o.status,
    errorCode: o.errorCode,
    errorMessage: o.errorMessage,
    fallback: o.fallback,
    attempts: o.attempts,
    usage: { ...tokens, totalTokens: usage?.total_tokens ?? 0, estimated: o.usageEstimated },
    costUsd: o.costUsd,
    priceVersion: deps.catalog.priceVersion,
    latencyMs: Math.round(performance.now() - ctx.start),
    upstreamLatencyMs: o.upstreamLatencyMs,
    ttftMs: o.ttftMs,
    incomplete: o.incomplete,
    refusal: o.refusal,
    warnings: o.warnings,
    metadata: input?.metadata ?? {},
    structuredOutput: o.structuredOutput,
  }
  if (o.guardrails?.length) entry.guardrails = o.guardrails
  if (o.cache) entry.cache = o.cache
  if (o.cache === 'hit') entry.costSavedUsd = o.costSavedUsd ?? null
  // Only OpenAI's Responses answers (relayed) have `resp_` ids; gw's own translated ones are not upstream ids.
  if (o.upstreamId?.startsWith('resp_')) entry.responseId = o.upstreamId
  return entry
}

/**
 * The answer as the log keeps it. A relayed stream's transcript is read from the client's text here,
 * once, only for a caller that needs it on this thread (the response cache, a trace); the log thread
 * reads its own.
 */
export function loggedAnswer(o: Outcome): unknown {
  if (o.responseBody === undefined && o.responseEvents) o.responseBody = streamedAnswer(relayTranscript(o.responseEvents))
  return o.responseBody
}

/**
 * Stage 7: the entry of an authenticated request handed to the log path with its bodies as this
 * thread holds them (the request's text as read, the answer's text as sent, else its value); the log
 * thread caps and stores them. A promise when the log queue is full: the request waits for room.
 * `fields`: what an entry that is not a model request says of itself (an MCP tool call's server and
 * tool, PRODUCT §20).
 */
export function recordRequest(
  deps: Deps,
  ctx: AuthedContext,
  input: ChatInput | undefined,
  o: Outcome,
  fields?: Partial<LogEntry>,
): { entry: LogEntry; room: Promise<void> | undefined } {
  const entry = logEntry(deps, ctx, input, o)
  if (fields) Object.assign(entry, fields)
  const bodies: LogBodies = {}
  if (deps.config.logBodies) {
    const raw = ctx.rawBody
    if (raw) bodies.request = { text: raw.text, bytes: raw.bytes }
    const res = o.responseBody
    if (o.responseEvents) bodies.response = { events: o.responseEvents }
    else if (res !== undefined)
      bodies.response = o.responseText !== undefined ? { text: o.responseText } : o.responseStreamed ? { stream: res as StreamedAnswer } : { value: res }
  }
  if (o.kept) bodies.kept = o.kept
  ctx.rawBody?.release?.()
  return { entry, room: deps.logs.record(entry, bodies) }
}
