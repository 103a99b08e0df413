// The exact response cache (PRODUCT §19): whether a request may be answered from it (the org's policy,
// `x-gw-cache`, `x-gw-cache-ttl`), its key (a hash of the request as it goes upstream), what is kept of
// an answer (never an error, a refusal or an answer cut short) and the answer made from a kept one.

import { badRequest, errorShapeFor } from '../errors'
import { NO_FALLBACK } from '../pipeline/5-fallback'
import type { AnswerInfo, AnswerShape, Finish } from '../pipeline/6-normalise'
import { failureOutcome, loggedAnswer, type Outcome } from '../pipeline/7-log'
import type { AuthedContext, ChatInput, Deps, RawBody } from '../pipeline/context'
import type { Plan } from '../pipeline/endpoint'
import type { UpstreamCompletion } from '../providers/adapter'
import type { ChunkChoice, Usage } from '../providers/openai-types'
import { SSE_HEADERS } from '../sse/encode'
import type { CachePut } from '../store/types'
import { type Kept, keptText, streamedCompletion } from './kept-answer'

/** Answers larger than this are not kept unless the policy says otherwise. */
export const DEFAULT_MAX_ENTRY_BYTES = 1_048_576
const MAX_TTL_SECONDS = 2_592_000

/** What a request does with the cache: `x-gw-cache` is `hit`, `miss` or `off` on its answer. */
export interface CacheUse {
  key: string
  /** Looked up (false: `x-gw-cache: refresh`, which stores a fresh answer over the kept one). */
  read: boolean
  ttlMs: number
  maxEntryBytes: number
}

/** Body fields that never change an answer, left out of the key (PRODUCT §19: `user`, metadata, the stream flag). */
const IGNORED = new Set(['user', 'metadata', 'stream', 'stream_options', 'model', 'prompt_id', 'x-gw-prompt-id', 'fallback_chain', 'x-gw-fallback-chain'])

function keyed(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value
  const out: Record<string, unknown> = {}
  const fields = value as Record<string, unknown>
  for (const k in fields) if (Object.hasOwn(fields, k) && !IGNORED.has(k)) out[k] = fields[k]
  return out
}

/**
 * The request's key: the endpoint, the model it goes to and the body as it goes upstream (and, for an
 * endpoint that sends its own body — Messages, Responses, embeddings — that body as received).
 */
export function cacheKey(ctx: AuthedContext, input: ChatInput, plan: Plan, raw: RawBody | undefined): string {
  const material = JSON.stringify([ctx.endpoint, input.model.name, keyed(input.body), input.outputSchema ?? null, plan.sendsClientBody ? keyed(raw?.value) : null])
  return Bun.SHA256.hash(material, 'base64url')
}

/** How this request uses the cache, or undefined when it does not (the org's cache is off, or `x-gw-cache: off`). */
export function cacheUse(ctx: AuthedContext, input: ChatInput, plan: Plan): CacheUse | undefined {
  const policy = ctx.org.org.policy.cache
  if (policy?.mode !== 'exact') return undefined
  const asked = ctx.headers.get('x-gw-cache')?.trim().toLowerCase()
  if (asked !== undefined && asked !== 'off' && asked !== 'refresh')
    throw badRequest(`Invalid header "x-gw-cache": expected "off" or "refresh", got "${asked.slice(0, 32)}"`)
  if (asked === 'off') return undefined
  // Responses that continue a stored conversation are not answered from the cache (stateless only, PRODUCT §19).
  const raw = ctx.rawBody?.value as { previous_response_id?: unknown } | undefined
  if (raw?.previous_response_id) return undefined
  let ttl = policy.ttlSeconds
  const ttlHeader = ctx.headers.get('x-gw-cache-ttl')
  if (ttlHeader !== null) {
    ttl = Number(ttlHeader)
    if (!/^\d+$/.test(ttlHeader.trim()) || ttl < 1 || ttl > MAX_TTL_SECONDS)
      throw badRequest(`Invalid header "x-gw-cache-ttl": expected whole seconds from 1 to ${MAX_TTL_SECONDS}`)
  }
  return {
    key: cacheKey(ctx, input, plan, ctx.rawBody),
    read: asked !== 'refresh',
    ttlMs: ttl * 1000,
    maxEntryBytes: policy.maxEntryBytes ?? DEFAULT_MAX_ENTRY_BYTES,
  }
}

/** The kept answer for the request, or undefined (none, expired, unreadable, or the cache unreachable: a miss). */
export async function lookUp(deps: Deps, ctx: AuthedContext, use: CacheUse): Promise<Kept | undefined> {
  try {
    const text = await deps.cache.get(ctx.org.org.id, use.key, Date.now())
    if (text === undefined) return undefined
    const kept = JSON.parse(text) as Kept
    return kept.v === 1 ? kept : undefined
  } catch {
    return undefined
  }
}

/**
 * Keeps the answer of a request that ended with it, once the answer has gone out: only a complete one
 * (200, not cut short, no refusal, given by the model asked for, a finish that is not `length` or a
 * filter; see keptText). When the
 * log thread writes the cache (SQLite), the put is returned for the settlement to hand over with the
 * request's log entry (written in the entry's transaction, off this thread; a relayed stream's kept
 * answer is made there too, from the text the client received); else it is put here.
 */
export function keep(deps: Deps, ctx: AuthedContext, use: CacheUse, o: Outcome, completion: UpstreamCompletion | undefined): CachePut | undefined {
  if (o.status !== 200 || o.errorCode || o.incomplete || o.refusal || !o.target || !o.usage) return undefined
  // Kept under the model asked for: an answer a fallback model gave is not that model's answer.
  if (o.fallback.used) return undefined
  const model = o.target.model.name
  const now = Date.now()
  const put = { orgId: ctx.org.org.id, key: use.key, expiresAt: now + use.ttlMs, now, maxOrgBytes: deps.config.cacheMaxOrgBytes }
  if (deps.logs.keepsAnswers && !completion && o.responseEvents && o.responseBody === undefined)
    return { ...put, stream: { events: o.responseEvents, model, usage: o.usage, costUsd: o.costUsd, maxEntryBytes: use.maxEntryBytes } }
  const text = keptText(model, completion ?? streamedCompletion(loggedAnswer(o)), o.usage, o.costUsd, use.maxEntryBytes)
  if (text === undefined) return undefined
  if (deps.logs.keepsAnswers) return { ...put, value: text }
  deps.cache.put(put.orgId, put.key, text, put.expiresAt, now, put.maxOrgBytes).catch((err: unknown) => {
    // Said once a minute at most: while the store or Redis is away every miss would say it.
    if (now - lastPutError < 60_000) return
    lastPutError = now
    console.error('gw: keeping an answer in the response cache failed (said once a minute at most):', err instanceof Error ? err.message : err)
  })
  return undefined
}

let lastPutError = -Infinity

const ZERO: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }

/**
 * The answer from a kept one, in the caller's form: the endpoint's JSON body, or its stream replayed
 * (each choice's text, tool calls and finish, then the usage and the end). Logged with `cache: "hit"`,
 * no tokens, cost 0 and the cost it saved.
 */
export async function cachedAnswer(deps: Deps, ctx: AuthedContext, input: ChatInput, kept: Kept, shape: AnswerShape, finish: Finish): Promise<Response> {
  const info: AnswerInfo = {
    requestId: ctx.requestId,
    model: kept.model,
    created: Math.floor(Date.now() / 1000),
    errorShape: errorShapeFor(ctx.headers, deps.config.errorFormat),
    estimatePromptTokens: () => kept.usage.prompt_tokens,
  }
  const c = kept.completion
  let text: string
  let body: unknown
  if (input.stream) {
    const encoder = shape.stream(info)
    text = ''
    for (const ch of c.choices) {
      const m = ch.message
      const delta: ChunkChoice['delta'] = { role: 'assistant' }
      if (m.content) delta.content = m.content
      if (m.tool_calls?.length) delta.tool_calls = m.tool_calls.map((tc, index) => ({ index, id: tc.id, type: 'function', function: tc.function }))
      text += encoder.choices([{ index: ch.index, delta, finish_reason: null }])
      text += encoder.choices([{ index: ch.index, delta: {}, finish_reason: ch.finish_reason }])
    }
    text += encoder.end(kept.usage, 0, c.choices[0]?.finish_reason ?? 'stop')
    body = { content: c.choices[0]?.message.content ?? '', finish_reason: c.choices[0]?.finish_reason ?? 'stop' }
  } else {
    body = shape.json(c, kept.usage, 0, info)
    text = JSON.stringify(body)
  }
  const counted = finish({
    ...failureOutcome(200, '', ''),
    errorCode: null,
    errorMessage: null,
    model: kept.model,
    fallback: NO_FALLBACK,
    usage: ZERO,
    costUsd: 0,
    responseBody: body,
    responseText: input.stream ? undefined : text,
    cache: 'hit',
    costSavedUsd: kept.costUsd,
    // A replayed stream's first bytes go out with the answer, now.
    ttftMs: input.stream ? Math.round(performance.now() - ctx.start) : null,
  })
  if (counted) await counted
  const headers: Record<string, string> = {
    ...(input.stream ? SSE_HEADERS : { 'content-type': 'application/json' }),
    'x-gw-model': kept.model,
    'x-gw-auth-mode': ctx.identity.authMode,
    'x-gw-cost-usd': '0',
    'x-gw-cache': 'hit',
  }
  return new Response(text, { status: 200, headers })
}
