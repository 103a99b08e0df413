// An org and what it owns: policy (limits, budgets), provider keys, routes, service keys, signing secrets, OIDC.

import type { Static } from '@sinclair/typebox'
import type { BedrockSettings } from '../providers/bedrock/settings'
import type { CompatSettings } from '../providers/openai-compatible'
import type { VertexSettings } from '../providers/vertex/vertex'
import type { PolicyBody } from '../schemas/admin-bodies'

/**
 * An org's policy (PRODUCT §4, §5, §11): the type of the schema `PUT /admin/orgs/:org/policy` checks
 * (`PolicyBody`, src/schemas/admin-bodies.ts, where its fields are described).
 */
export type Policy = Static<typeof PolicyBody>

/** A spending limit (PRODUCT §11). */
export type Budget = NonNullable<Policy['budgets']>[number]
export type BudgetScope = Budget['scope']
export type BudgetPeriod = Budget['period']

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
  /** A native provider id, or the name of an OpenAI-compatible provider (then `compat` is set). */
  provider: string
  /** `default` for the key of PUT /admin/orgs/:org/providers/:provider (PRODUCT §13). */
  name: string
  /** Share of the provider's traffic among its enabled keys. */
  weight: number
  apiKey: string
  baseUrl: string | undefined
  enabled: boolean
  /** Set for OpenAI-compatible providers (PRODUCT §17): headers, models, quirks, price. */
  compat?: CompatSettings
  /** Set for Vertex AI providers (PRODUCT §17): project and location; `apiKey` is the service-account JSON key. */
  vertex?: VertexSettings
  /** Set for Bedrock providers (PRODUCT §17): the region, and AWS access keys (sealed like the key) unless `apiKey` is a Bedrock API key. */
  bedrock?: BedrockSettings
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
  /** When it stops working (ISO time): its expiry, or the end of its grace after a rotation. */
  expiresAt: string | undefined
  /** What it may call (PRODUCT §18); undefined: everything. */
  scopes: KeyScopes | undefined
}

/** A service key's scopes: the endpoint paths and model globs it may use (absent: any). */
export interface KeyScopes {
  endpoints?: string[]
  models?: string[]
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
