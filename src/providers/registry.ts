// The adapter for each provider id.

import type { ProviderAdapter } from './adapter'
import { mistral } from './mistral'
import { openai } from './openai'
import type { ProviderId } from './provider-id'

const ADAPTERS: Partial<Record<ProviderId, ProviderAdapter>> = { openai, mistral }

export function adapterFor(provider: ProviderId): ProviderAdapter | undefined {
  return ADAPTERS[provider]
}
