// The four native upstream providers gw speaks to, the org's own OpenAI-compatible ones, and how a `provider/model-id` string names one.

export const PROVIDER_IDS = ['openai', 'anthropic', 'google', 'mistral'] as const
export type ProviderId = (typeof PROVIDER_IDS)[number]

/**
 * What a model ref's prefix names (PRODUCT §17): one of the four native providers, or one of the
 * org's OpenAI-compatible providers, named by the org (`ollama`, `groq`, …) and spoken to by the
 * OpenAI adapter with the provider's quirks.
 */
export type ProviderKind = ProviderId | 'openai-compatible'

/**
 * The native API an adapter speaks (src/providers/registry.ts): one of the four's, or Bedrock's Converse
 * API. Every provider an org names is spoken to in one of these (docs/providers.md, "Provider kinds").
 */
export type Wire = ProviderId | 'bedrock'

/**
 * The native providers beyond the four (PRODUCT §17): an org's record of its kind, under its own name
 * (`azure/…`) or another (`azure-eu/…`); never an OpenAI-compatible provider's name.
 */
const NAMED_KINDS: readonly string[] = ['azure', 'bedrock', 'vertex']
export const isNamedKind = (name: string): boolean => NAMED_KINDS.includes(name)

/** Names of OpenAI-compatible providers: `[a-z][a-z0-9-]{0,31}`, never a native name or alias. */
export const COMPAT_NAME = /^[a-z][a-z0-9-]{0,31}$/

/** `provider/model-id`: the one way gw names a model (responses, headers, log entries, the catalog). */
export function modelName(provider: string, id: string): string {
  return `${provider}/${id}`
}

/** Each native provider by its name, and the prefix aliases accepted in model strings (`gemini/…` is `google/…`). */
const BY_PREFIX = new Map<string, ProviderId>([...PROVIDER_IDS.map((p): [string, ProviderId] => [p, p]), ['gemini', 'google']])

/** The native provider a prefix names, in any case (called several times per request: one map lookup when lower-case). */
export function toProviderId(prefix: string): ProviderId | undefined {
  return BY_PREFIX.get(prefix) ?? BY_PREFIX.get(prefix.toLowerCase())
}

/** A name an OpenAI-compatible provider may take: shaped like one, and not native. */
export function isCompatName(name: string): boolean {
  return COMPAT_NAME.test(name) && toProviderId(name) === undefined
}

/** The provider a `provider/model-id` string names, if its prefix is one (a route name has none). */
export function providerOfModel(model: string): ProviderId | undefined {
  const slash = model.indexOf('/')
  return slash > 0 ? toProviderId(model.slice(0, slash)) : undefined
}
