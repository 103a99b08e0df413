// Records gw stores (orgs, policies, keys, log entries) and the storage interface the rest of the code uses.
// One SQLite implementation today (src/store/sqlite); a Postgres one plugs in behind the same interface.

import type { FailureClass, FailureKind } from '../providers/adapter'
import type { ProviderId } from '../providers/provider-id'
import type { UsageQuery, UsageRow } from './usage-rollup'

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

export interface OrgStore {
  createOrg(org: { id: string; name: string }): Promise<Org>
  getOrg(id: string): Promise<Org | undefined>
  /** Every org, by id. */
  listOrgs(): Promise<Org[]>
  putPolicy(orgId: string, policy: Policy): Promise<void>
  /** `apiKey` arrives in clear; the store encrypts it at rest. */
  putProvider(orgId: string, rec: Omit<ProviderRecord, 'updatedAt'>): Promise<ProviderRecord>
  /** Every key of every provider, by provider then name. */
  getProviders(orgId: string): Promise<ProviderRecord[]>
  /** Returns false when the org has no such key. */
  deleteProviderKey(orgId: string, provider: ProviderId, name: string): Promise<boolean>
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

export interface RouteStore {
  putRoute(orgId: string, route: Omit<Route, 'updatedAt'>): Promise<Route>
  getRoutes(orgId: string): Promise<Route[]>
  /** Returns false when the org has no such route. */
  deleteRoute(orgId: string, name: string): Promise<boolean>
}

export interface KeyStore {
  createServiceKey(rec: Omit<ServiceKeyRecord, 'createdAt' | 'revokedAt' | 'lastUsedAt' | 'limits'> & { limits?: RateLimits }): Promise<ServiceKeyRecord>
  getServiceKey(id: string): Promise<ServiceKeyRecord | undefined>
  listServiceKeys(orgId: string): Promise<ServiceKeyRecord[]>
  /** Returns false when no such live key exists in that org. */
  revokeServiceKey(orgId: string, id: string): Promise<boolean>
  /** Notes a key's use at `atMs` (epoch ms); written with the others at most once a second. */
  touchServiceKey(id: string, atMs: number): void
}

export interface AuthStore {
  /** `secret` arrives in clear; the store encrypts it at rest. */
  addSigningSecret(rec: Omit<SigningSecretRecord, 'createdAt'>): Promise<SigningSecretRecord>
  listSigningSecrets(orgId: string): Promise<SigningSecretRecord[]>
  /** Returns false when the org has no secret with that kid. */
  deleteSigningSecret(orgId: string, kid: string): Promise<boolean>
  putOidc(rec: Omit<OidcConfig, 'updatedAt'>): Promise<OidcConfig>
  getOidc(orgId: string): Promise<OidcConfig | undefined>
  oidcByIssuer(issuer: string): Promise<OidcConfig[]>
}

/** Dashboard sessions (docs/dashboard.md), shared by every instance on the database. Only a hash of a session's id is stored. */
export interface SessionStore {
  /** Records a signed-in session until `expiresAt` (epoch ms); sessions expired by `now` are dropped. */
  createSession(idHash: string, expiresAt: number, now: number): Promise<void>
  /** The session's expiry (epoch ms) while it is signed in and not expired at `now`; undefined otherwise. */
  sessionExpiry(idHash: string, now: number): Promise<number | undefined>
  /** Signs the session out everywhere; false when there was no such session. */
  deleteSession(idHash: string): Promise<boolean>
}

export interface PromptRecord {
  /** A UUID. */
  id: string
  orgId: string
  slug: string
  name: string | undefined
  publishedVersion: number | undefined
  /** Highest version number; undefined before the first version is saved. */
  currentVersion: number | undefined
  /** The prompt file it is loaded from at every start (docs/prompts.md), which then wins over versions saved otherwise. */
  sourceFile: string | undefined
  createdAt: string
}

export type VariableType = 'string' | 'number' | 'boolean' | 'json'

export interface VariableDef {
  name: string
  type: VariableType
  required: boolean
}

/** What a prompt version holds; versions never change once saved. */
export interface PromptVersionContent {
  systemTemplate: string | undefined
  userTemplate: string
  variables: VariableDef[]
  /** `provider/model-name`. */
  model: string
  temperature: number | undefined
  maxTokens: number | undefined
}

export interface PromptVersion extends PromptVersionContent {
  promptId: string
  version: number
  contentHash: string
  createdAt: string
}

export interface PromptStore {
  createPrompt(rec: { id: string; orgId: string; slug: string; name: string | undefined }): Promise<PromptRecord>
  /** By UUID or slug, within the org. */
  findPrompt(orgId: string, idOrSlug: string): Promise<PromptRecord | undefined>
  listPrompts(orgId: string): Promise<PromptRecord[]>
  /** Saves the next numbered version (atomically), publishing it when asked. */
  addVersion(promptId: string, content: PromptVersionContent, contentHash: string, publish: boolean): Promise<PromptVersion>
  getVersion(promptId: string, version: number): Promise<PromptVersion | undefined>
  listVersions(promptId: string): Promise<PromptVersion[]>
  /** Returns false when the version does not exist. */
  publish(promptId: string, version: number): Promise<boolean>
  /** Records the prompt file that manages the prompt (undefined: none). */
  setSourceFile(promptId: string, sourceFile: string | undefined): Promise<void>
  putPartial(orgId: string, name: string, template: string): Promise<void>
  getPartials(orgId: string): Promise<Map<string, string>>
}

/** How one attempt ended: answered, failed with a failure kind (PRODUCT §4a), or not tried at all. */
export type FailureOutcome = 'ok' | FailureKind | 'skipped'

/** Which chain entry answered and the failure kind that made it fire (`x-gw-fallback-*`). */
export interface Fallback {
  used: boolean
  reason: FailureKind | null
  model: string | null
}

/** Something gw changed in the request to fit the model it went to (PRODUCT §4), on the log entry. */
export interface RequestWarning {
  type: 'param_removed' | 'param_clamped' | 'param_relaxed'
  /** The request field concerned (`temperature`, `max_tokens`, …). */
  setting: string
  /** What was done, for people: `clamped 1.5 to 1 for mistral/mistral-small-latest`. */
  detail: string
}

export interface Attempt {
  model: string
  /** The name of the org's provider key used (PRODUCT §13); absent when none was (a skipped entry). */
  key?: string
  outcome: FailureOutcome
  /** Whose failure it was (PRODUCT §4a): `key`, `request` or `provider`; absent on answers and skipped entries. */
  class?: FailureClass
  status: number | null
  latencyMs: number
  message?: string
}

export interface LogEntry {
  requestId: string
  createdAt: string
  orgId: string
  endpoint: string
  authMode: string | null
  subject: string | null
  endUserId: string | null
  user: string | null
  promptId: string | null
  promptSlug: string | null
  promptVersion: number | null
  requestedModel: string | null
  /** The org's route the request named, when it named one (`model` is then the target that answered). */
  route: string | null
  /** The name of the provider key that answered (PRODUCT §13). */
  providerKey: string | null
  model: string | null
  provider: string | null
  stream: boolean
  status: number
  errorCode: string | null
  errorMessage: string | null
  fallback: Fallback
  attempts: Attempt[]
  /** cachedTokens and cacheWriteTokens are parts of promptTokens, reasoningTokens of completionTokens. */
  usage: {
    promptTokens: number
    completionTokens: number
    totalTokens: number
    cachedTokens: number
    cacheWriteTokens: number
    reasoningTokens: number
    estimated: boolean
  }
  /** null when the model's price is unknown (never 0). */
  costUsd: number | null
  /** The catalog's price table version the cost was computed with. */
  priceVersion: string
  latencyMs: number
  upstreamLatencyMs: number | null
  ttftMs: number | null
  /** A streamed answer that ended on an error after content had been sent. */
  incomplete: boolean
  refusal: boolean
  warnings: RequestWarning[]
  metadata: Record<string, string | number | boolean>
  /** Structured-output outcome: did the answer parse as JSON and match the schema. */
  structuredOutput: { parsed: boolean; matchesSchema: boolean | null } | null
  requestBody?: unknown
  responseBody?: unknown
}

export interface LogQuery {
  orgId: string
  metadata: [string, string][]
  model?: string
  provider?: string
  status?: number | 'success' | 'error'
  user?: string
  since?: number
  until?: number
  limit: number
  cursor?: string
}

export interface SpendQuery {
  orgId: string
  /** A roll-up dimension: '' (the whole org), 'key' or 'endUser'. */
  dim: string
  value: string
  fromDay: string
  toDay: string
}

/** Time-bucketed figures for the dashboard's overview (`since` ≤ t < `until`, buckets of `bucketMs`). */
export interface LogStatsQuery {
  orgId: string
  since: number
  until: number
  bucketMs: number
  by: 'model' | 'provider'
}

export interface LogStats {
  /** Start of each bucket (epoch ms), oldest first. */
  buckets: number[]
  /** One series per model (or provider), each array aligned with `buckets`. */
  series: { key: string | null; requests: number[]; errors: number[]; tokens: number[]; costUsd: number[] }[]
  /** Percentiles per bucket over every entry (null: no entry); approximate within 10 %. */
  latencyMs: { p50: (number | null)[]; p95: (number | null)[] }
  ttftMs: { p50: (number | null)[]; p95: (number | null)[] }
}

export interface LogStore {
  /** Writes a batch in one transaction. */
  insertLogs(entries: LogEntry[]): Promise<void>
  /** Batches the log writer may have in flight at once (default 1): a server database works on them in parallel. */
  readonly writeConcurrency?: number
  getLog(orgId: string, requestId: string): Promise<LogEntry | undefined>
  queryLogs(q: LogQuery): Promise<{ data: LogEntry[]; nextCursor: string | null }>
  countLogs(orgId?: string): Promise<number>
  /** Deletes up to `limit` of the oldest entries created before `before` (epoch ms), bodies and tags included; roll-ups stay. Returns how many. */
  pruneLogs(before: number, limit: number): Promise<number>
  /** Usage report from the daily roll-ups (PRODUCT §11). */
  usage(q: UsageQuery): Promise<UsageRow[]>
  /** Known cost summed over a roll-up dimension's value and days (inclusive): what a budget has spent. */
  spend(q: SpendQuery): Promise<number>
  /** Time-bucketed figures for the dashboard's overview, from the raw entries. */
  stats(q: LogStatsQuery): Promise<LogStats>
}

export interface Store {
  readonly kind: 'sqlite' | 'postgres'
  readonly orgs: OrgStore
  readonly keys: KeyStore
  readonly auth: AuthStore
  readonly prompts: PromptStore
  readonly routes: RouteStore
  readonly sessions: SessionStore
  readonly logs: LogStore
  /** Migrations are done: the store can serve (false while a database down at start is awaited). */
  readonly ready: boolean
  /** Resolves once `ready` (a PostgreSQL store retries an unreachable database until then); rejects on close. */
  readonly whenReady: Promise<void>
  /** Resolves when the database answers; rejects (StoreUnavailableError) when it does not. */
  ping(): Promise<void>
  close(): Promise<void>
}
