// Stage 3: resolve each model of the request (primary, then the fallback chain) to an upstream
// target: the catalog entry, and one of the org's keys for the provider — drawn by weight among the
// enabled keys whose cool-down and breaker admit requests (PRODUCT §13), the others kept in reserve.

import { type Catalog, outsideCatalog, type ResolvedModel } from '../catalog/catalog'
import type { FailureKind, Target } from '../providers/adapter'
import { toProviderId, wireOf } from '../providers/provider-id'
import { vertexBaseUrl, vertexWire } from '../providers/vertex/vertex'
import type { ProviderRecord } from '../domain/org'
import { bedrockBaseUrl } from '../providers/bedrock/converse'
import { bedrockTarget } from '../providers/bedrock/settings'
import type { ChatInput, Deps, ModelRef, OrgContext } from './context'
import { modelUnavailable } from '../policy/model-access'

export interface Candidate {
  ref: ModelRef
  /** Undefined when the org cannot use this model; `unavailable` says why. */
  target: Target | undefined
  /** The provider's other enabled keys, in the order to try them after a key failure (PRODUCT §4a) on `target`'s key. */
  spareKeys: Target[]
  unavailable: string | undefined
  /** Chain entries only: the failure kinds it fires on (undefined = all but refusal_detected). */
  triggers: FailureKind[] | undefined
}

/** A weighted draw among the healthy keys (all enabled keys when none is healthy), then the rest by weight. */
function orderKeys(keys: readonly ProviderRecord[], healthy: (k: ProviderRecord) => boolean, random = Math.random): ProviderRecord[] {
  const enabled = keys.filter((k) => k.enabled)
  const ok = enabled.filter(healthy)
  const pool = ok.length ? ok : enabled
  const total = pool.reduce((n, k) => n + k.weight, 0)
  let r = random() * total
  const first = pool.find((k) => (r -= k.weight) < 0) ?? pool[pool.length - 1]
  if (!first) return []
  return [first, ...enabled.filter((k) => k !== first).sort((a, b) => b.weight - a.weight)]
}

/**
 * The catalog's entry for a native provider's model; for an OpenAI-compatible provider's, general
 * defaults priced as its record says (a local preset: 0; none: unknown).
 */
export function resolveModel(catalog: Catalog, org: OrgContext, ref: ModelRef): ResolvedModel {
  const native = toProviderId(ref.provider)
  if (native) return catalog.resolve(native, ref.id)
  // A Vertex AI provider's model, named as the client named it, with the catalog's entry of the same
  // model (Vertex's `claude-sonnet-4@20250514` is `claude-sonnet-4-20250514`).
  if (org.providers.get(ref.provider)?.some((k) => k.vertex)) return { ...catalog.resolve(vertexWire(ref.id), ref.id.replace('@', '-')), id: ref.id, name: ref.name }
  const compat = org.providers.get(ref.provider)?.find((k) => k.compat)?.compat
  // Azure OpenAI serves OpenAI's models: a model id the catalog lists for openai takes its entry and price (docs/providers.md
  // "Azure OpenAI"); it stays unknown (`known: false`) like every org-named provider's, so metrics label it `other`.
  if (compat?.kind === 'azure') {
    const m = catalog.resolve('openai', ref.id)
    return { ...m, name: ref.name, known: false, info: { ...m.info, price: compat.price ?? (m.known ? m.info.price : null) } }
  }
  return outsideCatalog(wireOf(ref.kind), ref.name, ref.id, compat?.price)
}

function toCandidate(deps: Deps, org: OrgContext, ref: ModelRef, stream: boolean, triggers?: FailureKind[]): Candidate {
  const unavailable = modelUnavailable(org, ref)
  const model = resolveModel(deps.catalog, org, ref)
  const keys = unavailable ? [] : orderKeys(org.providers.get(ref.provider) ?? [], (k) => deps.health.available(org.org.id, ref.name, { name: k.name, revision: k.updatedAt }))
  const wire = keys.some((k) => k.vertex) ? vertexWire(ref.id) : wireOf(ref.kind)
  const targets = keys.map(
    (k): Target => ({
      provider: wire,
      model,
      baseUrl: k.baseUrl ?? (k.vertex ? vertexBaseUrl(k.vertex.location) : deps.config.baseUrls[wire]),
      apiKey: k.apiKey,
      keyName: k.name,
      keyRevision: k.updatedAt,
      stream,
      ...(k.compat ? { compat: { name: ref.provider, headers: k.compat.headers, quirks: k.compat.quirks, ...(k.compat.azure ? { azure: k.compat.azure } : {}) } } : {}),
      ...(k.vertex ? { vertex: { name: ref.provider, project: k.vertex.project, location: k.vertex.location, model: ref.id } } : {}),
      ...(k.bedrock ? { baseUrl: k.baseUrl ?? bedrockBaseUrl(k.bedrock.region), bedrock: bedrockTarget(ref.provider, k) } : {}),
    }),
  )
  return { ref, target: targets[0], spareKeys: targets.slice(1), unavailable, triggers }
}

export function route(deps: Deps, org: OrgContext, input: ChatInput): Candidate[] {
  return [
    toCandidate(deps, org, input.model, input.stream),
    ...input.fallbackChain.map((e) => toCandidate(deps, org, e.model, input.stream, e.triggers)),
  ]
}
