// Stage 2: enforce the org's policy (PRODUCT §5, §6) before anything is sent upstream; rate limits are charged last.

import { GatewayError } from '../errors'
import { modelUnavailable } from '../policy/model-access'
import { checkModelScope } from './1-auth'
import { TermMatcher } from '../policy/blocked-terms'
import { applicableBudgets, type BudgetHold, LEASE_MARGIN_MS, maxCostUsd, reserveBudgets, settleBudgets } from '../policy/budgets'
import type { LimitCheck } from '../policy/rate-limiter'
import { INSTANCE_CLAIM } from '../policy/stream-slots'
import type { RateLimits } from '../domain/org'
import { unknownProvider } from './chat-input'
import type { ChatInput, Deps, Identity, ModelRef, OrgContext, RawBody } from './context'
import { resolveModel } from './3-route'
import type { PolicyView } from './policy-view'

/**
 * What a request was charged against the rate limits and budgets, to be corrected with its real
 * usage and cost, and the stream slot it holds: all given back together when its log entry is written.
 */
export interface Charge {
  tokenKeys: string[]
  tokens: number
  at: number
  budget: BudgetHold | undefined
  releaseStream?: () => void
}

const violation = (message: string) => new GatewayError(403, 'policy_violation', message)
const tooMany = (message: string) => new GatewayError(400, 'token_limit_exceeded', message)

export async function enforcePolicy(
  deps: Deps,
  identity: Identity,
  org: OrgContext,
  input: ChatInput,
  endUserId: string | null,
  signal?: AbortSignal,
  raw?: RawBody,
): Promise<Charge | undefined> {
  const policy = org.org.policy
  // The request's models: its own (-1), then its fallback chain's (no list is made for them: this runs on every request).
  const last = input.fallbackChain.length
  for (let i = -1; i < last; i++) {
    const ref = modelAt(input, i)
    if (ref.kind === 'openai-compatible' && !org.providers.has(ref.provider)) throw unknownProvider(ref.name, ref.provider, i < 0 ? ['model'] : ['fallback_chain', i, 'model'])
  }
  const why = modelUnavailable(org, input.model)
  if (why) throw new GatewayError(403, 'model_not_allowed', `Model not allowed: ${why}`)
  if (identity.scopes?.models) for (let i = -1; i < last; i++) checkModelScope(identity, modelAt(input, i).name)
  if (policy.allowStreaming === false && input.stream)
    throw violation(`Streaming is not allowed for org "${org.org.id}": send the request with "stream": false`)
  const missing = policy.requiredMetadata?.filter((k) => input.metadata[k] === undefined)
  if (missing?.length) throw violation(`Required metadata missing: ${missing.map((k) => `"${k}"`).join(', ')}`)
  const view = input.view
  const term = await blockedTerm(policy.blockedTerms, view, signal)
  if (term !== undefined) throw violation(`The request contains a blocked term ("${term}")`)

  // A request that generates no text (embeddings, count_tokens) has no output limit to refuse or fill.
  if (policy.maxTokens !== undefined && view.output) {
    // Every field an adapter may turn into the provider's output limit is checked, not just the first set.
    const limit = policy.maxTokens
    const set = view.output.set()
    const over = set.find(([, n]) => n > limit)
    if (over) throw tooMany(`${over[0]} ${over[1]} exceeds the org's limit of ${limit}`)
    if (!set.length) view.output.fill(limit)
  }
  let promptTokens: number | undefined
  if (policy.maxPromptTokens !== undefined) {
    // Counted only when its bytes say it could be over the limit; counting stops past the limit, so a
    // long prompt costs no more than the limit's worth of work.
    if (view.promptTokensAtMost() > policy.maxPromptTokens) {
      promptTokens = await view.countPromptTokens({ stopAbove: policy.maxPromptTokens, signal })
      if (promptTokens > policy.maxPromptTokens)
        throw tooMany(`The prompt has at least ${promptTokens} tokens, over the org's limit of ${policy.maxPromptTokens}`)
    }
  }
  const releaseStream = input.stream ? takeStreamSlot(deps, identity, org) : undefined
  let budget: BudgetHold | undefined
  try {
    budget = await reserveBudget(deps, identity, org, input, endUserId, raw, signal)
    const rate = await chargeRateLimits(deps, identity, org, () => promptTokens ?? view.promptEstimate())
    return rate || budget || releaseStream ? { tokenKeys: [], tokens: 0, at: 0, ...rate, budget, releaseStream } : undefined
  } catch (err) {
    releaseStream?.()
    settleBudgets(deps.budgets, budget, 0)
    throw err
  }
}

/** The request's model (`i` -1) or its fallback chain's `i`th. */
function modelAt(input: ChatInput, i: number): ModelRef {
  return i < 0 ? input.model : (input.fallbackChain[i] as ChatInput['fallbackChain'][number]).model
}

/** One of the org's and one of the credential's concurrent stream slots, or 429 when either is full (503 when the instance's is). */
function takeStreamSlot(deps: Deps, identity: Identity, org: OrgContext): () => void {
  const { policy, id } = org.org
  const orgLimit = policy.maxConcurrentStreams ?? deps.streams.caps.org
  const keyLimit = policy.maxConcurrentStreamsPerKey ?? deps.streams.caps.key
  const slot = deps.streams.acquire([
    { key: `org:${id}`, limit: orgLimit },
    { key: `cred:${id}:${identity.authMode}:${identity.subject}`, limit: keyLimit },
  ])
  if ('release' in slot) return slot.release
  if (slot.full.key === INSTANCE_CLAIM)
    throw new GatewayError(503, 'gateway_error', `This gateway has ${slot.full.limit} streams open, all it takes at once: try again shortly`, {
      headers: { 'retry-after': '1' },
    })
  const scope = slot.full.key.startsWith('org:') ? 'org' : 'key'
  throw new GatewayError(
    429,
    'rate_limit_exceeded',
    `Too many concurrent streams for ${scope === 'org' ? `org "${id}"` : 'this credential'}: at most ${slot.full.limit} at once`,
    { headers: { 'retry-after': '1' }, scope },
  )
}

/**
 * Reserves the request's largest possible cost (over every model it may reach) on the budgets it
 * falls under, held for the upstream timeout plus a margin and renewed while the request runs.
 */
async function reserveBudget(
  deps: Deps,
  identity: Identity,
  org: OrgContext,
  input: ChatInput,
  endUserId: string | null,
  raw: RawBody | undefined,
  signal: AbortSignal | undefined,
): Promise<BudgetHold | undefined> {
  const policy = org.org.policy
  if (!policy.budgets?.length) return undefined
  const now = Date.now()
  const subjects = { orgId: org.org.id, keyId: identity.authMode === 'GwKey' ? identity.subject : undefined, endUserId: endUserId ?? undefined }
  const budgets = applicableBudgets(policy.budgets, subjects, now)
  if (!budgets.length) return undefined
  const bounds = input.view.costBounds(raw)
  let amount = 0
  for (const ref of [input.model, ...input.fallbackChain.map((e) => e.model)]) {
    const cost = maxCostUsd(resolveModel(deps.catalog, org, ref).info, bounds)
    if (cost === null && !policy.allowUnpricedModels)
      throw violation(
        `Model "${ref.name.slice(0, 64)}" has no known price and org "${org.org.id}" has a budget: use a priced model, or set allowUnpricedModels: true in the policy`,
      )
    amount = Math.max(amount, cost ?? 0)
  }
  const leaseMs = (policy.upstreamTimeoutMs ?? deps.config.upstreamTimeoutMs) + LEASE_MARGIN_MS
  return reserveBudgets(deps.budgets, deps.store.logs, budgets, org.org.id, amount, leaseMs, now, signal)
}

/** One matcher per policy's term list (policies are cached objects, so a list is built into a matcher once). */
const matchers = new WeakMap<string[], TermMatcher>()

/**
 * First blocked term found (case-insensitive) in anything that reaches a provider, as the request's view
 * says: message text, tool descriptions and arguments, the output schema and any other field the client
 * sent; an embeddings request's inputs.
 */
function blockedTerm(terms: string[] | undefined, view: PolicyView, signal?: AbortSignal): Promise<string | undefined> | undefined {
  if (!terms?.length) return undefined
  let matcher = matchers.get(terms)
  if (!matcher) matchers.set(terms, (matcher = new TermMatcher(terms)))
  return matcher.find(view.screened(), signal)
}

/** The counters of one scope's limits (an org's, or a service key's own): their keys made once, not per request. */
interface Scope {
  rpm: string
  tpm: string
  /** Says whose limit it is in a refusal. */
  what: string
}

/** Scopes by org id, and by the id of a service key with limits of its own (bounded sets). */
const orgScopes = new Map<string, Scope>()
const keyScopes = new Map<string, Scope>()

function newScope(of: Map<string, Scope>, id: string, prefix: string, what: string): Scope {
  const s = { rpm: `${prefix}:${id}:rpm`, tpm: `${prefix}:${id}:tpm`, what }
  of.set(id, s)
  return s
}

/** Charges the org's (and the key's own) per-minute limits; the prompt is counted only when a token limit applies. */
async function chargeRateLimits(
  deps: Deps,
  identity: Identity,
  org: OrgContext,
  promptTokens: () => number,
): Promise<Omit<Charge, 'budget'> | undefined> {
  const checks: (LimitCheck & { scope: Scope })[] = []
  const tokenKeys: string[] = []
  let tokens = 0
  const add = (scope: Scope, limits: RateLimits) => {
    const { requestsPerMinute: rpm, tokensPerMinute: tpm } = limits
    if (rpm !== undefined) checks.push({ key: scope.rpm, limit: rpm, cost: 1, scope })
    if (tpm !== undefined) {
      if (!tokenKeys.length) tokens = promptTokens()
      tokenKeys.push(scope.tpm)
      // Admitted while the window is below the limit; charged its estimate now, corrected when it ends (PRODUCT §10).
      checks.push({ key: scope.tpm, limit: tpm, cost: tokens, need: 1, scope })
    }
  }
  const id = org.org.id
  add(orgScopes.get(id) ?? newScope(orgScopes, id, 'org', `org "${id}"`), org.org.policy)
  if (identity.keyLimits) add(keyScopes.get(identity.subject) ?? newScope(keyScopes, identity.subject, 'key', 'this service key'), identity.keyLimits)
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
      { headers: { 'retry-after': String(admission.retryAfterSeconds) }, scope: hit.key.startsWith('key:') ? 'key' : 'org' },
    )
  }
  return tokenKeys.length ? { tokenKeys, tokens, at } : undefined
}

/**
 * Replaces a request's token charge by what it really used, once (later calls do nothing). A
 * promise while the correction is written to the counters every instance shares: the answer's last
 * bytes wait for it (PRODUCT §10); undefined when it was made at once (in memory) or there is none.
 */
export function settleTokens(deps: Deps, charge: Charge | undefined, usedTokens: number): Promise<void> | undefined {
  if (!charge?.tokenKeys.length) return undefined
  const keys = charge.tokenKeys
  charge.tokenKeys = []
  return deps.limiter.adjust(keys, usedTokens - charge.tokens, charge.at)
}

/** Replaces a request's token charge and budget reservation by what it really used and cost; a promise as settleTokens says. */
export function settleCharge(deps: Deps, charge: Charge | undefined, usedTokens: number, costUsd: number | null): Promise<void> | undefined {
  if (!charge) return undefined
  charge.releaseStream?.()
  const counted = settleTokens(deps, charge, usedTokens)
  settleBudgets(deps.budgets, charge.budget, costUsd)
  return counted
}
