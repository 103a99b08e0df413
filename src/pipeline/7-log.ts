// Stage 7: build the request's log entry (usage, cost, latency, attempts) and queue it for writing.

import { isoTime } from '../iso-time'
import { usageTokens } from '../catalog/catalog'
import { providerName, type Target } from '../providers/adapter'
import { providerOfModel } from '../providers/provider-id'
import type { Usage } from '../providers/openai-types'
import { withJsonText } from '../store/json-text'
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
  /** `org` or `key` when gw's own rate limit refused the request. */
  rateLimitScope?: string
  /** What the org's guardrails did (PRODUCT §19), when it has some. */
  guardrails?: GuardrailRecord[]
  /** The response cache's part (PRODUCT §19), when the org's cache is on. */
  cache?: 'hit' | 'miss' | 'refresh'
  /** A hit: what the answer cost when it was first given. */
  costSavedUsd?: number | null
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

/**
 * A body over GW_LOG_BODY_MAX_BYTES is stored as `{truncated, bytes, preview}` (PRODUCT §11); one
 * within it keeps the JSON text it came as, so the writer does not serialise it again.
 */
function capped(value: unknown, text: string | undefined, bytes: number | undefined, max: number): unknown {
  const size = bytes ?? (text === undefined ? undefined : Buffer.byteLength(text))
  if (size === undefined || size <= max) return text === undefined ? value : withJsonText(value, text)
  // At most `max` bytes, cut on a character boundary.
  const buf = Buffer.from((text ?? JSON.stringify(value)).slice(0, max))
  let end = Math.min(max, buf.length)
  while (end > 0 && end < buf.length && ((buf[end] as number) & 0xc0) === 0x80) end--
  const preview = buf.subarray(0, end).toString('utf8')
  return { truncated: true, bytes: size, preview }
}

export function endUserId(ctx: AuthedContext, input: ChatInput | undefined): string | null {
  return ctx.identity.endUserId ?? ctx.headers.get('x-gw-end-user-id') ?? input?.user ?? null
}

/** The request's log entry. A request refused at stage 1 gets one too (no org, no identity): it feeds the
 * metrics and the access log but is never written, since it belongs to no org. */
export function logEntry(deps: Deps, ctx: RequestContext | AuthedContext, input: ChatInput | undefined, o: Outcome): LogEntry {
  const authed = 'identity' in ctx ? ctx : undefined
  const target = o.target
  const usage = o.usage
  const tokens = usageTokens(usage)
  const entry: LogEntry = {
    requestId: ctx.requestId,
    createdAt: isoTime(ctx.receivedAt),
    orgId: authed?.identity.orgId ?? '',
    endpoint: ctx.endpoint,
    authMode: authed?.identity.authMode ?? null,
    subject: authed?.identity.subject ?? null,
    endUserId: authed ? endUserId(authed, input) : null,
    user: input?.user ?? null,
    promptId: authed?.prompt?.id ?? null,
    promptSlug: authed?.prompt?.slug ?? null,
    promptVersion: authed?.prompt?.version ?? null,
    requestedModel: input?.requestedModel ?? null,
    route: input?.route ?? null,
    providerKey: target?.keyName ?? null,
    model: target ? target.model.name : (o.model ?? null),
    // A request that failed before any provider answered still belongs to the provider it named (every report groups it there).
    provider: (target && providerName(target)) ?? providerOfModel(o.model ?? input?.requestedModel ?? '') ?? null,
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
  return entry
}

/**
 * Stage 7: the entry of an authenticated request, with its bodies, queued for the writer. `fields`: what an
 * entry that is not a model request says of itself (an MCP tool call's server and tool, PRODUCT §20).
 */
export function recordRequest(deps: Deps, ctx: AuthedContext, input: ChatInput | undefined, o: Outcome, fields?: Partial<LogEntry>): LogEntry {
  const entry = logEntry(deps, ctx, input, o)
  if (fields) Object.assign(entry, fields)
  if (deps.config.logBodies) {
    const max = deps.config.logBodyMaxBytes
    if (ctx.rawBody) entry.requestBody = capped(ctx.rawBody.value, ctx.rawBody.text, ctx.rawBody.bytes, max)
    if (o.responseBody !== undefined) entry.responseBody = capped(o.responseBody, o.responseText, undefined, max)
  }
  ctx.rawBody?.release?.()
  deps.logs.write(entry)
  return entry
}
