// The storage interface the rest of the code uses, with its queries and report rows; the records it
// stores are the domain types (src/domain/). Implementations: src/store/sqlite, src/store/postgres.

import type { LogEntry } from '../domain/log-entry'
import type { Org, OidcConfig, Policy, ProviderRecord, RateLimits, Route, ServiceKeyRecord, SigningSecretRecord } from '../domain/org'
import type { PromptRecord, PromptVersion, PromptVersionContent } from '../domain/prompt'
import type { UsageQuery, UsageRow } from './usage-rollup'
import type { McpStore } from '../mcp/store'

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
  deleteProviderKey(orgId: string, provider: string, name: string): Promise<boolean>
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

/** Cached answers by org and request hash, each with its expiry; an org's oldest go first past its size bound. */
export interface ResponseCacheStore {
  /** The value stored under the key, unless it expired at `now`. */
  get(orgId: string, key: string, now: number): Promise<string | undefined>
  /** Stores (or replaces) a value; then drops the org's expired entries and its oldest past `maxOrgBytes`. */
  put(orgId: string, key: string, value: string, expiresAt: number, now: number, maxOrgBytes: number): Promise<void>
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
  /** The MCP gateway's servers, users' tokens and key tool policies (PRODUCT §20). */
  readonly mcp: McpStore
  /** The exact response cache (PRODUCT §19), when Redis does not hold it. */
  readonly cache: ResponseCacheStore
  /** Migrations are done: the store can serve (false while a database down at start is awaited). */
  readonly ready: boolean
  /** Resolves once `ready` (a PostgreSQL store retries an unreachable database until then); rejects on close. */
  readonly whenReady: Promise<void>
  /** Resolves when the database answers; rejects (StoreUnavailableError) when it does not. */
  ping(): Promise<void>
  close(): Promise<void>
}
