// The adapter for each wire (the native API spoken) and the entry of each provider kind (docs/providers.md, "Provider kinds").

import { outsideCatalog } from '../catalog/catalog'
import type { ProviderRecord } from '../domain/org'
import type { ProviderAdapter, ProviderKindSpec, Target, TargetKind } from './adapter'
import { anthropic } from './anthropic'
import { azureKind } from './azure'
import { bedrock } from './bedrock'
import { bedrockKind } from './bedrock/kind'
import { google } from './google'
import { mistral } from './mistral'
import { openai } from './openai'
import { compatKind } from './openai-compatible'
import { type ProviderId, toProviderId, type Wire } from './provider-id'
import { vertexKind } from './vertex/vertex'

const ADAPTERS: Record<Wire, ProviderAdapter> = { openai, anthropic, google, mistral, bedrock }

export function adapterFor(wire: Wire): ProviderAdapter {
  return ADAPTERS[wire]
}

/** gen_ai.provider.name of the four (GenAI conventions). */
export const GENAI_PROVIDER: Record<ProviderId, string> = {
  openai: 'openai',
  anthropic: 'anthropic',
  google: 'gcp.gemini',
  mistral: 'mistral_ai',
}

/** The four as they are: their key in their own header, their catalog section, their `GW_*_BASE_URL`. */
const nativeKind: ProviderKindSpec = {
  locate: (rec, name, _modelId, baseUrls) => {
    const id = toProviderId(name) as ProviderId
    return { provider: id, baseUrl: rec.baseUrl ?? baseUrls[id] }
  },
  resolve: (catalog, ref) => {
    const id = toProviderId(ref.provider)
    return id ? catalog.resolve(id, ref.id) : outsideCatalog('openai', ref.name, ref.id, undefined)
  },
  genAiName: (t) => GENAI_PROVIDER[t.provider as ProviderId] ?? t.provider,
}

const KINDS: Record<TargetKind, ProviderKindSpec> = {
  native: nativeKind,
  'openai-compatible': compatKind,
  azure: azureKind,
  bedrock: bedrockKind,
  vertex: vertexKind,
}

export function kindSpec(kind: TargetKind): ProviderKindSpec {
  return KINDS[kind]
}

/** The kind of a provider the org names `name`, from one of its records (none: a native name is native, another an OpenAI-compatible one). */
export function kindOfRecord(rec: ProviderRecord | undefined, name: string): TargetKind {
  if (rec?.bedrock) return 'bedrock'
  if (rec?.vertex) return 'vertex'
  if (rec?.compat) return rec.compat.kind
  return toProviderId(name) ? 'native' : 'openai-compatible'
}

/** The kind entry of an attempt's target. */
export const kindOf = (t: Target): ProviderKindSpec => KINDS[t.kind]
