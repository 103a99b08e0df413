// The four upstream providers gw speaks to, and how a `provider/model-id` string names one.

export const PROVIDER_IDS = ['openai', 'anthropic', 'google', 'mistral'] as const
export type ProviderId = (typeof PROVIDER_IDS)[number]

/** `provider/model-id`: the one way gw names a model (responses, headers, log entries, the catalog). */
export function modelName(provider: ProviderId, id: string): string {
  return `${provider}/${id}`
}

/** Prefix aliases accepted in model strings (`gemini/…` is `google/…`). */
const ALIASES: Record<string, ProviderId> = { gemini: 'google' }

export function toProviderId(prefix: string): ProviderId | undefined {
  const p = prefix.toLowerCase()
  if ((PROVIDER_IDS as readonly string[]).includes(p)) return p as ProviderId
  return ALIASES[p]
}

/** The provider a `provider/model-id` string names, if its prefix is one (a route name has none). */
export function providerOfModel(model: string): ProviderId | undefined {
  const slash = model.indexOf('/')
  return slash > 0 ? toProviderId(model.slice(0, slash)) : undefined
}
