// Shapes the dashboard reads from the admin API (see docs/dashboard.md).

export type { LogEntry } from '../domain/log-entry'
export type { Route } from '../domain/org'
export type { LogStats } from '../store/types'
export type { BudgetStatus } from '../policy/budgets'
export type { UsageRow } from '../store/usage-rollup'

/** GET /admin/me: who is signed in, with which role, in which orgs (null: every org). */
export type Me = { kind: 'admin-token'; role: 'owner'; orgs: null } | UserMe

/** GET /admin/me for a user (a dashboard session or a personal token). */
export interface UserMe {
  kind: 'user'
  id: string
  email: string
  name: string | null
  role: 'owner' | 'admin' | 'viewer'
  orgs: string[] | null
}

export interface OrgSummary {
  id: string
  name: string
  createdAt: string
}

export interface ServiceKeyInfo {
  id: string
  name: string | null
  createdAt: string
  revokedAt: string | null
  lastUsedAt: string | null
  /** When it stops working (its expiry, or the end of a rotation's grace). */
  expiresAt: string | null
  scopes: { endpoints?: string[]; models?: string[] } | null
  requestsPerMinute?: number
  tokensPerMinute?: number
}

export interface ProviderInfo {
  provider: string
  /** Several keys per provider (PRODUCT §13); `gw provider set` names its key `default`. */
  name: string
  weight: number
  apiKey: string
  baseUrl: string | null
  enabled: boolean
  updatedAt: string
  /** Set for a provider record (docs/providers.md); absent for a native provider's key. */
  kind?: 'openai-compatible' | 'azure' | 'bedrock' | 'vertex'
  /** OpenAI-compatible and Azure: the model ids listed; header names only, never their values. */
  models?: string[]
  headers?: string[]
  deployments?: Record<string, string>
  apiVersion?: string | null
  /** Bedrock: the region, and the access key id masked (null with a Bedrock API key). */
  region?: string
  auth?: 'sigv4' | 'apiKey'
  accessKeyId?: string | null
  /** Vertex AI. */
  project?: string
  location?: string
}

export interface OrgDetail {
  id: string
  name: string
  createdAt: string
  policy: Record<string, unknown>
  providers: ProviderInfo[]
  serviceKeys: ServiceKeyInfo[]
  signingSecrets: { kid: string; createdAt: string }[]
  oidc: { issuer: string; audience: string; jwksUri: string | null; orgClaim: string | null } | null
}

export interface PromptSummary {
  id: string
  slug: string
  name: string | null
  publishedVersion: number | null
  currentVersion: number | null
  /** The prompt file that manages it (loaded again at every start), or null. */
  sourceFile: string | null
  createdAt: string
}

export interface PromptVersionInfo {
  version: number
  systemTemplate?: string
  userTemplate: string
  variables: { name: string; type: string; required: boolean }[]
  model: string
  temperature?: number
  maxTokens?: number
  createdAt: string
}

export interface PromptDetail extends Omit<PromptSummary, 'createdAt'> {
  versions: PromptVersionInfo[]
}

export interface Page<T> {
  data: T[]
  nextCursor: string | null
}
