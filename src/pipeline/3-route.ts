// Stage 3: resolve each model of the request (primary, then the fallback chain) to an upstream
// target: the catalog entry, and one of the org's keys for the provider — drawn by weight among the
// enabled keys whose cool-down and breaker admit requests (PRODUCT §13), the others kept in reserve.

import type { Catalog, ResolvedModel } from '../catalog/catalog'
import type { FailureKind, Target } from '../providers/adapter'
import { kindOfRecord, kindSpec } from '../providers/registry'
import type { ProviderRecord } from '../domain/org'
import type { ChatInput, Deps, ModelRef, OrgContext } from './context'
import { modelUnavailable } from '../policy/model-access'

export interface Candidate {
  ref: ModelRef
  /** Undefined when the org cannot use this model; `unavailable` says why. */
  target: Target | undefined
  /** The provider's other enabled keys, in the order to try them after a key failure (PRODUCT §4a) on `target`'s key. */
  spareKeys: readonly Target[]
  unavailable: string | undefined
  /** Chain entries only: the failure kinds it fires on (undefined = all but refusal_detected). */
  triggers: FailureKind[] | undefined
}

/** A weighted draw among the healthy keys (all enabled keys when none is healthy), then the rest by weight. */
function orderKeys(keys: readonly ProviderRecord[], healthy: (k: ProviderRecord) => boolean, random = Math.random): ProviderRecord[] {
  const enabled = keys.filter((k) => k.enabled)
  // One key or none to use (most providers): nothing to draw or order; health only picks among keys.
  if (enabled.length < 2) return enabled
  const ok = enabled.filter(healthy)
  const pool = ok.length ? ok : enabled
  const total = pool.reduce((n, k) => n + k.weight, 0)
  let r = random() * total
  const first = pool.find((k) => (r -= k.weight) < 0) ?? pool[pool.length - 1]
  if (!first) return []
  return [first, ...enabled.filter((k) => k !== first).sort((a, b) => b.weight - a.weight)]
}

/** The model's catalog entry (limits, price) as the provider's kind resolves it (docs/providers.md "Provider kinds"). */
export function resolveModel(catalog: Catalog, org: OrgContext, ref: ModelRef): ResolvedModel {
  const rec = org.providers.get(ref.provider)?.[0]
  return kindSpec(kindOfRecord(rec, ref.provider)).resolve(catalog, ref, rec)
}

/**
 * The targets of a model whose provider has at most one enabled key (most): nothing is drawn, so they are
 * the same for every request of an org context (a new one whenever the org, its keys or its policy
 * change), and are made once per model and stream flag instead of per request.
 */
const fixedTargets = new WeakMap<OrgContext, { json: Map<string, readonly Target[]>; stream: Map<string, readonly Target[]> }>()
/** Models kept per org context and stream flag, at most: model names come from clients; past it the next ones are made per request. */
const MAX_FIXED = 1000
const NO_TARGETS: readonly Target[] = []

function targetsOf(deps: Deps, org: OrgContext, ref: ModelRef, stream: boolean): readonly Target[] {
  let cache = fixedTargets.get(org)
  if (!cache) fixedTargets.set(org, (cache = { json: new Map(), stream: new Map() }))
  const fixed = stream ? cache.stream : cache.json
  const known = fixed.get(ref.name)
  if (known) return known
  const model = resolveModel(deps.catalog, org, ref)
  const keys = orderKeys(org.providers.get(ref.provider) ?? [], (k) => deps.health.available(org.org.id, ref.name, { name: k.name, revision: k.updatedAt }))
  const targets = keys.map((k): Target => {
    const kind = kindOfRecord(k, ref.provider)
    return {
      ...kindSpec(kind).locate(k, ref.provider, ref.id, deps.config.baseUrls),
      kind,
      model,
      apiKey: k.apiKey,
      keyName: k.name,
      keyRevision: k.updatedAt,
      stream,
      ...(org.org.policy.promptCaching === 'auto' ? { promptCaching: true } : {}),
    }
  })
  // Several enabled keys: drawn by weight among the healthy ones, request by request.
  if (keys.length < 2 && fixed.size < MAX_FIXED) fixed.set(ref.name, targets)
  return targets
}

function toCandidate(deps: Deps, org: OrgContext, ref: ModelRef, stream: boolean, triggers?: FailureKind[]): Candidate {
  const unavailable = modelUnavailable(org, ref)
  const targets = unavailable ? NO_TARGETS : targetsOf(deps, org, ref, stream)
  return { ref, target: targets[0], spareKeys: targets.length > 1 ? targets.slice(1) : NO_TARGETS, unavailable, triggers }
}

export function route(deps: Deps, org: OrgContext, input: ChatInput): Candidate[] {
  const candidates = [toCandidate(deps, org, input.model, input.stream)]
  for (const e of input.fallbackChain) candidates.push(toCandidate(deps, org, e.model, input.stream, e.triggers))
  return candidates
}
