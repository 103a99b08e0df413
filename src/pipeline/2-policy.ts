// Stage 2: enforce the org's policy (PRODUCT §5, §6) before anything is sent upstream; rate limits are charged last.

import { GatewayError } from '../errors'
import { modelUnavailable } from '../policy/model-access'
import { countPromptTokens } from '../policy/prompt-tokens'
import { applicableBudgets, type BudgetHold, maxCostUsd, reserveBudgets, settleBudgets } from '../policy/budgets'
import type { LimitCheck } from '../policy/rate-limiter'
import { estimatePromptTokens, messageText } from '../tokens'
import type { RateLimits } from '../store/types'
import type { ChatInput, Deps, Identity, OrgContext } from './context'

/** What a request was charged against the rate limits and budgets, to be corrected with its real usage and cost. */
export interface Charge {
  tokenKeys: string[]
  tokens: number
  at: number
  budget: BudgetHold | undefined
}

const violation = (message: string) => new GatewayError(403, 'policy_violation', message)
const tooMany = (message: string) => new GatewayError(400, 'token_limit_exceeded', message)

export async function enforcePolicy(
  deps: Deps,
  identity: Identity,
  org: OrgContext,
  input: ChatInput,
  endUserId: string | null,
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

  const maxOut = input.body.max_completion_tokens ?? input.body.max_tokens
  if (policy.maxTokens !== undefined) {
    if (maxOut !== undefined && maxOut > policy.maxTokens)
      throw tooMany(`max_tokens ${maxOut} exceeds the org's limit of ${policy.maxTokens}`)
    if (maxOut === undefined) input.body.max_tokens = policy.maxTokens
  }
  let promptTokens: number | undefined
  if (policy.maxPromptTokens !== undefined) {
    promptTokens = await countPromptTokens(input.body.messages)
    if (promptTokens > policy.maxPromptTokens)
      throw tooMany(`The prompt has ${promptTokens} tokens, over the org's limit of ${policy.maxPromptTokens}`)
  }
  const budget = await reserveBudget(deps, identity, org, input, endUserId)
  try {
    const rate = await chargeRateLimits(deps, identity, org, () => promptTokens ?? estimatePromptTokens(input.body.messages))
    return rate || budget ? { tokenKeys: [], tokens: 0, at: 0, ...rate, budget } : undefined
  } catch (err) {
    settleBudgets(deps.budgets, budget, 0)
    throw err
  }
}

/** Reserves the request's largest possible cost (over every model it may reach) on the budgets it falls under. */
async function reserveBudget(
  deps: Deps,
  identity: Identity,
  org: OrgContext,
  input: ChatInput,
  endUserId: string | null,
): Promise<BudgetHold | undefined> {
  const policy = org.org.policy
  if (!policy.budgets?.length) return undefined
  const now = Date.now()
  const subjects = { orgId: org.org.id, keyId: identity.authMode === 'GwKey' ? identity.subject : undefined, endUserId: endUserId ?? undefined }
  const budgets = applicableBudgets(policy.budgets, subjects, now)
  if (!budgets.length) return undefined
  const bytes = Buffer.byteLength(JSON.stringify(input.body))
  let images = 0
  for (const m of input.body.messages) if (Array.isArray(m.content)) for (const p of m.content) if (p.type === 'image_url') images++
  const maxOut = input.body.max_completion_tokens ?? input.body.max_tokens
  let amount = 0
  for (const ref of [input.model, ...input.fallbackChain.map((e) => e.model)]) {
    const cost = maxCostUsd(deps.catalog.resolve(ref.provider, ref.id).info, bytes, images, maxOut)
    if (cost === null && !policy.allowUnpricedModels)
      throw violation(
        `Model "${ref.name.slice(0, 64)}" has no known price and org "${org.org.id}" has a budget: use a priced model, or set allowUnpricedModels: true in the policy`,
      )
    amount = Math.max(amount, cost ?? 0)
  }
  return reserveBudgets(deps.budgets, deps.store.logs, budgets, org.org.id, amount, now)
}

/** First blocked term found (case-insensitive) in the message text, if any. */
function blockedTerm(terms: string[] | undefined, input: ChatInput): string | undefined {
  if (!terms?.length) return undefined
  const text = input.body.messages.map(messageText).join('\n').toLowerCase()
  return terms.find((t) => text.includes(t.toLowerCase()))
}

interface Scope {
  key: string
  limits: RateLimits
  what: string
}

/** Charges the org's (and the key's own) per-minute limits; the prompt is counted only when a token limit applies. */
async function chargeRateLimits(
  deps: Deps,
  identity: Identity,
  org: OrgContext,
  promptTokens: () => number,
): Promise<Omit<Charge, 'budget'> | undefined> {
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

/** Replaces a request's token charge and budget reservation by what it really used and cost. */
export function settleCharge(deps: Deps, charge: Charge | undefined, usedTokens: number, costUsd: number | null): void {
  if (!charge) return
  if (charge.tokenKeys.length) void deps.limiter.adjust(charge.tokenKeys, usedTokens - charge.tokens, charge.at)
  settleBudgets(deps.budgets, charge.budget, costUsd)
}
