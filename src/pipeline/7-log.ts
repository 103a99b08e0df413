// Stage 7: build the request's log entry (usage, cost, latency, attempts) and queue it for writing.

import { costUsd } from '../catalog/catalog'
import type { Target } from '../providers/adapter'
import type { Usage } from '../providers/openai-types'
import type { Attempt, LogEntry } from '../store/types'
import type { ChatInput, Deps, RequestContext } from './context'
import type { Fallback } from './5-dispatch'

/** Bodies larger than this are stored as a truncated preview. */
const BODY_CAP = 64 * 1024

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

const NO_FALLBACK = { used: false, reason: null, model: null }

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

function capped(value: unknown, text: string | undefined, bytes: number | undefined): unknown {
  const size = bytes ?? text?.length
  if (size === undefined || size <= BODY_CAP) return value
  const preview = (text ?? JSON.stringify(value)).slice(0, BODY_CAP)
  return { truncated: true, bytes: size, preview }
}

export function endUserId(ctx: RequestContext, input: ChatInput | undefined): string | null {
  return ctx.identity?.endUserId ?? ctx.headers.get('x-gw-end-user-id') ?? input?.user ?? null
}

/** Queues the entry; returns its cost (null when unknown or not logged). */
export function recordRequest(deps: Deps, ctx: RequestContext, input: ChatInput | undefined, o: Outcome): number | null {
  const identity = ctx.identity
  if (!identity) return null // unauthenticated requests belong to no org and are not logged
  const target = o.target
  const usage = o.usage
  const cached = usage?.prompt_tokens_details?.cached_tokens ?? 0
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
    model: target ? `${target.provider}/${target.model.id}` : (o.model ?? null),
    provider: target?.provider ?? (o.model ? (o.model.split('/')[0] ?? null) : null),
    stream: input?.stream ?? false,
    status: o.status,
    errorCode: o.errorCode,
    errorMessage: o.errorMessage,
    fallback: o.fallback,
    attempts: o.attempts,
    usage: {
      promptTokens: usage?.prompt_tokens ?? 0,
      completionTokens: usage?.completion_tokens ?? 0,
      totalTokens: usage?.total_tokens ?? 0,
      cachedTokens: cached,
      estimated: o.usageEstimated,
    },
    costUsd:
      target && usage
        ? costUsd(target.model, {
            promptTokens: usage.prompt_tokens,
            completionTokens: usage.completion_tokens,
            cachedTokens: cached,
            cacheWriteTokens: usage.prompt_tokens_details?.cache_write_tokens ?? 0,
          })
        : null,
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
    if (ctx.rawBody) entry.requestBody = capped(ctx.rawBody.value, ctx.rawBody.text, ctx.rawBody.bytes)
    if (o.responseBody !== undefined) entry.responseBody = capped(o.responseBody, undefined, o.responseBytes)
  }
  deps.logs.write(entry)
  return entry.costUsd
}
