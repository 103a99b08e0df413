// The adapter for each provider id.

import type { ProviderAdapter } from './adapter'
import { anthropic } from './anthropic'
import { google } from './google'
import { mistral } from './mistral'
import { openai } from './openai'
import type { ProviderId } from './provider-id'

const ADAPTERS: Record<ProviderId, ProviderAdapter> = { openai, anthropic, google, mistral }

export function adapterFor(provider: ProviderId): ProviderAdapter {
  return ADAPTERS[provider]
}
