// Stage 7: build the request's log entry (usage, cost, latency, attempts) and queue it for writing.

import { costUsd } from '../catalog/catalog'
import type { Target } from '../providers/adapter'
import type { Usage } from '../providers/openai-types'
import type { Attempt, LogEntry } from '../store/types'
import type { AuthedContext, ChatInput, Deps } from './context'
import { type Fallback, NO_FALLBACK } from './5-fallback'

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
  upstreamLatencyMs: number | null
  ttftMs: number | null
  incomplete: boolean
  refusal: boolean
  warnings: string[]
  structuredOutput: LogEntry['structuredOutput']
  responseBody: unknown
  /** Serialized size of responseBody when the caller already knows it. */
  responseBytes?: number
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

/** A body over GW_LOG_BODY_MAX_BYTES is stored as `{truncated, bytes, preview}` (PRODUCT §11). */
function capped(value: unknown, text: string | undefined, bytes: number | undefined, max: number): unknown {
  const size = bytes ?? (text === undefined ? undefined : Buffer.byteLength(text))
  if (size === undefined || size <= max) return value
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

/** Builds the request's log entry, queues it for writing and returns it. */
export function recordRequest(deps: Deps, ctx: AuthedContext, input: ChatInput | undefined, o: Outcome): LogEntry {
  const identity = ctx.identity
  const target = o.target
  const usage = o.usage
  const tokens = {
    promptTokens: usage?.prompt_tokens ?? 0,
    completionTokens: usage?.completion_tokens ?? 0,
    cachedTokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
    cacheWriteTokens: usage?.prompt_tokens_details?.cache_write_tokens ?? 0,
    reasoningTokens: usage?.completion_tokens_details?.reasoning_tokens ?? 0,
  }
  const entry: LogEntry = {
    requestId: ctx.requestId,
    createdAt: ctx.receivedAt.toISOString(),
    orgId: identity.orgId,
    endpoint: ctx.endpoint,
    authMode: identity.authMode,
    subject: identity.subject,
    endUserId: endUserId(ctx, input),
    user: input?.user ?? null,
    promptId: ctx.prompt?.id ?? null,
    promptSlug: ctx.prompt?.slug ?? null,
    promptVersion: ctx.prompt?.version ?? null,
    requestedModel: input?.requestedModel ?? null,
    model: target ? target.model.name : (o.model ?? null),
    provider: target?.provider ?? (o.model ? (o.model.split('/')[0] ?? null) : null),
    stream: input?.stream ?? false,
    status: o.status,
    errorCode: o.errorCode,
    errorMessage: o.errorMessage,
    fallback: o.fallback,
    attempts: o.attempts,
    usage: { ...tokens, totalTokens: usage?.total_tokens ?? 0, estimated: o.usageEstimated },
    costUsd: target && usage ? costUsd(target.model, tokens) : null,
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
  if (deps.config.logBodies) {
    const max = deps.config.logBodyMaxBytes
    if (ctx.rawBody) entry.requestBody = capped(ctx.rawBody.value, ctx.rawBody.text, ctx.rawBody.bytes, max)
    if (o.responseBody !== undefined) entry.responseBody = capped(o.responseBody, undefined, o.responseBytes, max)
  }
  deps.logs.write(entry)
  return entry
}
