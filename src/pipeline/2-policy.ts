// Stage 2: enforce the org's policy (PRODUCT §5, §6) before anything is sent upstream; rate limits are charged last.

import { GatewayError } from '../errors'
import { modelUnavailable } from '../policy/model-access'
import { countPromptTokens } from '../policy/prompt-tokens'
import { DEFAULT_MAX_STREAMS_PER_KEY, DEFAULT_MAX_STREAMS_PER_ORG } from '../policy/stream-slots'
import type { LimitCheck } from '../policy/rate-limiter'
import { estimatePromptTokens } from '../tokens'
import type { RateLimits } from '../store/types'
import type { ChatInput, Deps, Identity, OrgContext } from './context'

/** What a request was charged against the rate limits, to be corrected with its real usage, and its stream slot. */
export interface Charge {
  tokenKeys: string[]
  tokens: number
  at: number
  /** Gives back the stream slot a streamed request holds until its log entry is written. */
  releaseStream?: () => void
}

const violation = (message: string) => new GatewayError(403, 'policy_violation', message)
const tooMany = (message: string) => new GatewayError(400, 'token_limit_exceeded', message)

export async function enforcePolicy(
  deps: Deps,
  identity: Identity,
  org: OrgContext,
  input: ChatInput,
  signal?: AbortSignal,
): Promise<Charge | undefined> {
  const policy = org.org.policy
  const why = modelUnavailable(org, input.model)
  if (why) throw new GatewayError(403, 'model_not_allowed', `Model not allowed: ${why}`)
  if (policy.allowStreaming === false && input.stream)
    throw violation(`Streaming is not allowed for org "${org.org.id}": send the request with "stream": false`)
  const missing = (policy.requiredMetadata ?? []).filter((k) => input.metadata[k] === undefined)
  if (missing.length) throw violation(`Required metadata missing: ${missing.map((k) => `"${k}"`).join(', ')}`)
  const term = blockedTerm(policy.blockedTerms, input)
  if (term !== undefined) throw violation(`The request contains a blocked term ("${term}")`)

  if (policy.maxTokens !== undefined) {
    // Every field an adapter may turn into the provider's output limit is checked, not just the first set.
    const limit = policy.maxTokens
    const over = OUTPUT_LIMIT_FIELDS.find((f) => (input.body[f] ?? 0) > limit)
    if (over) throw tooMany(`${over} ${input.body[over]} exceeds the org's limit of ${limit}`)
    if (OUTPUT_LIMIT_FIELDS.every((f) => input.body[f] === undefined)) input.body.max_tokens = limit
  }
  let promptTokens: number | undefined
  if (policy.maxPromptTokens !== undefined) {
    // Counting stops past the limit, so a long prompt costs no more than the limit's worth of work.
    const extra = input.outputSchema?.schema
    promptTokens = await countPromptTokens(input.body, { extra, stopAbove: policy.maxPromptTokens, signal })
    if (promptTokens > policy.maxPromptTokens)
      throw tooMany(`The prompt has at least ${promptTokens} tokens, over the org's limit of ${policy.maxPromptTokens}`)
  }
  const releaseStream = input.stream ? takeStreamSlot(deps, identity, org) : undefined
  try {
    const charge = await chargeRateLimits(deps, identity, org, () => promptTokens ?? estimatePromptTokens(input.body.messages))
    if (!releaseStream) return charge
    return { ...(charge ?? { tokenKeys: [], tokens: 0, at: 0 }), releaseStream }
  } catch (err) {
    releaseStream?.()
    throw err
  }
}

/** One of the org's and one of the credential's concurrent stream slots, or 429 when either is full. */
function takeStreamSlot(deps: Deps, identity: Identity, org: OrgContext): () => void {
  const { policy, id } = org.org
  const orgLimit = policy.maxConcurrentStreams ?? DEFAULT_MAX_STREAMS_PER_ORG
  const keyLimit = policy.maxConcurrentStreamsPerKey ?? DEFAULT_MAX_STREAMS_PER_KEY
  const slot = deps.streams.acquire([
    { key: `org:${id}`, limit: orgLimit },
    { key: `cred:${id}:${identity.authMode}:${identity.subject}`, limit: keyLimit },
  ])
  if ('release' in slot) return slot.release
  const who = slot.full.key.startsWith('org:') ? `org "${id}"` : 'this credential'
  throw new GatewayError(429, 'rate_limit_exceeded', `Too many concurrent streams for ${who}: at most ${slot.full.limit} at once`, {
    headers: { 'retry-after': '1' },
  })
}

/** The fields adapters read as the answer's token limit (PRODUCT §4). */
const OUTPUT_LIMIT_FIELDS = ['max_tokens', 'max_completion_tokens'] as const

/** Every string (and object key) in a JSON value, without recursion (depth is capped at parse time anyway). */
function* stringsIn(value: unknown): Generator<string> {
  const stack: unknown[] = [value]
  while (stack.length) {
    const v = stack.pop()
    if (typeof v === 'string') yield v
    else if (Array.isArray(v)) stack.push(...v)
    else if (typeof v === 'object' && v !== null)
      for (const [k, x] of Object.entries(v)) {
        yield k
        stack.push(x)
      }
  }
}

/**
 * First blocked term found (case-insensitive) in anything that reaches a provider: message text,
 * tool descriptions and arguments, the output schema and any other field the client sent.
 */
function blockedTerm(terms: string[] | undefined, input: ChatInput): string | undefined {
  if (!terms?.length) return undefined
  const lower = terms.map((t) => t.toLowerCase())
  // The model name is the gateway's routing, not prompt text.
  for (const s of stringsIn([{ ...input.body, model: undefined }, input.outputSchema?.schema])) {
    const text = s.toLowerCase()
    const hit = lower.findIndex((t) => text.includes(t))
    if (hit >= 0) return terms[hit]
  }
  return undefined
}

interface Scope {
  key: string
  limits: RateLimits
  what: string
}

/** Charges the org's (and the key's own) per-minute limits; the prompt is counted only when a token limit applies. */
async function chargeRateLimits(deps: Deps, identity: Identity, org: OrgContext, promptTokens: () => number): Promise<Charge | undefined> {
  const scopes: Scope[] = [{ key: `org:${org.org.id}`, limits: org.org.policy, what: `org "${org.org.id}"` }]
  if (identity.keyLimits) scopes.push({ key: `key:${identity.subject}`, limits: identity.keyLimits, what: 'this service key' })
  const checks: (LimitCheck & { scope: Scope })[] = []
  const tokenKeys: string[] = []
  let tokens = 0
  for (const scope of scopes) {
    const { requestsPerMinute: rpm, tokensPerMinute: tpm } = scope.limits
    if (rpm !== undefined) checks.push({ key: `${scope.key}:rpm`, limit: rpm, cost: 1, scope })
    if (tpm !== undefined) {
      if (!tokenKeys.length) tokens = promptTokens()
      tokenKeys.push(`${scope.key}:tpm`)
      checks.push({ key: `${scope.key}:tpm`, limit: tpm, cost: tokens, scope })
    }
  }
  if (!checks.length) return undefined
  const at = Date.now()
  const admission = await deps.limiter.admit(checks, at)
  if (!admission.ok) {
    const hit = checks.find((c) => c.key === admission.key) as (typeof checks)[number]
    const unit = hit.key.endsWith(':tpm') ? 'tokens' : 'requests'
    throw new GatewayError(
      429,
      'rate_limit_exceeded',
      `Rate limit exceeded for ${hit.scope.what}: ${hit.limit} ${unit} per minute; retry in ${admission.retryAfterSeconds} s`,
      { headers: { 'retry-after': String(admission.retryAfterSeconds) } },
    )
  }
  return tokenKeys.length ? { tokenKeys, tokens, at } : undefined
}

/** Replaces a request's token charge by what the provider reported it used. */
export function settleCharge(deps: Deps, charge: Charge | undefined, usedTokens: number): void {
  if (!charge) return
  charge.releaseStream?.()
  if (charge.tokenKeys.length) void deps.limiter.adjust(charge.tokenKeys, usedTokens - charge.tokens, charge.at)
}
