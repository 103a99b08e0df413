// An org and what it owns: policy (limits, budgets), provider keys, routes, service keys, signing secrets, OIDC.

import type { ProviderId } from '../providers/provider-id'

export interface Policy {
  disabledProviders?: string[]
  allowedModels?: string[]
  maxTokens?: number
  maxPromptTokens?: number
  requestsPerMinute?: number
  tokensPerMinute?: number
  allowStreaming?: boolean
  blockedTerms?: string[]
  requiredMetadata?: string[]
  /** Per-org override of GW_UPSTREAM_TIMEOUT_MS. */
  upstreamTimeoutMs?: number
  /** Streams the org may have open at once (default 4,096). */
  maxConcurrentStreams?: number
  /** Streams one service key or token subject may have open at once (default 1,024). */
  maxConcurrentStreamsPerKey?: number
  /** Spending limits (PRODUCT §11). */
  budgets?: Budget[]
  /** Under a budget, models without a known price are refused unless this is true. */
  allowUnpricedModels?: boolean
}

export type BudgetScope = 'org' | 'key' | 'endUser'

export type BudgetPeriod = 'day' | 'month' | 'total'

export interface Budget {
  scope: BudgetScope
  usd: number
  period: BudgetPeriod
}

/** Org ids: lowercase letters, digits, "-" and "_", 1–64 characters, starting with a letter or digit. */
export const ORG_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/

export interface Org {
  id: string
  name: string
  policy: Policy
  createdAt: string
}

/** One of an org's keys for a provider; `apiKey` is decrypted only in memory, never returned by the admin API. */
export interface ProviderRecord {
  provider: ProviderId
  /** `default` for the key of PUT /admin/orgs/:org/providers/:provider (PRODUCT §13). */
  name: string
  /** Share of the provider's traffic among its enabled keys. */
  weight: number
  apiKey: string
  baseUrl: string | undefined
  enabled: boolean
  updatedAt: string
}

export interface ServiceKeyRecord {
  id: string
  orgId: string
  name: string | undefined
  /** SHA-256 of the full key. */
  hash: Uint8Array
  createdAt: string
  revokedAt: string | undefined
  lastUsedAt: string | undefined
  /** This key's own limits, applied on top of the org's. */
  limits: RateLimits
}

export interface RateLimits {
  requestsPerMinute?: number
  tokensPerMinute?: number
}

/** An HS256 secret for GwSigned tokens; `secret` is decrypted only in memory. */
export interface SigningSecretRecord {
  orgId: string
  kid: string
  secret: string
  createdAt: string
}

/** Where an org's OIDC tokens come from and how their org is found. */
export interface OidcConfig {
  orgId: string
  issuer: string
  audience: string
  /** Unset: discovered from `<issuer>/.well-known/openid-configuration`. */
  jwksUri: string | undefined
  /** Claim naming the org; unset: the issuer is bound to this org. */
  orgClaim: string | undefined
  updatedAt: string
}

/** A model name of the org's own mapping to weighted targets (PRODUCT §13). */
export interface Route {
  name: string
  targets: { model: string; weight: number }[]
  strategy: 'weighted' | 'lowest-latency'
  /** Fallback entries after the chosen target, as in a request's fallback_chain (PRODUCT §4a). */
  fallback: { model: string; triggers?: string[] }[]
  updatedAt: string
}
