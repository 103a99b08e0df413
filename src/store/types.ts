// The storage interface the rest of the code uses, with its queries and report rows; the records it
// stores are the domain types (src/domain/). Implementations: src/store/sqlite, src/store/postgres.

import type { LogEntry } from '../domain/log-entry'
import type { KeyScopes, Org, OidcConfig, Policy, ProviderRecord, RateLimits, Route, ServiceKeyRecord, SigningSecretRecord } from '../domain/org'
import type { AdminTokenRecord, AuditEntry, Role, User } from '../domain/people'
import type { PromptRecord, PromptVersion, PromptVersionContent } from '../domain/prompt'
import type { UsageQuery, UsageRow, UsageSum } from './usage-rollup'
import type { McpStore } from '../mcp/store'
import type { RelayedEvents } from '../apis/relay-transcript'
import type { Usage } from '../providers/openai-types'

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
  /** Opens one stored provider key, when there is any: throws when GW_SECRET is not the one the keys were sealed with. */
  openOneKey(): Promise<void>
}

export interface RouteStore {
  putRoute(orgId: string, route: Omit<Route, 'updatedAt'>): Promise<Route>
  getRoutes(orgId: string): Promise<Route[]>
  /** Returns false when the org has no such route. */
  deleteRoute(orgId: string, name: string): Promise<boolean>
}

export interface KeyStore {
  createServiceKey(
    rec: Omit<ServiceKeyRecord, 'createdAt' | 'revokedAt' | 'lastUsedAt' | 'limits' | 'expiresAt' | 'scopes'> & { limits?: RateLimits; expiresAt?: string; scopes?: KeyScopes },
  ): Promise<ServiceKeyRecord>
  getServiceKey(id: string): Promise<ServiceKeyRecord | undefined>
  listServiceKeys(orgId: string): Promise<ServiceKeyRecord[]>
  /** Returns false when no such live key exists in that org. */
  revokeServiceKey(orgId: string, id: string): Promise<boolean>
  /** Sets a live key's expiry (a rotated key's grace); false when no such live key exists in that org. */
  expireServiceKey(orgId: string, id: string, expiresAt: string): Promise<boolean>
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
  /** Records a signed-in session until `expiresAt` (epoch ms), of a user or (none) the admin token; sessions expired by `now` are dropped. */
  createSession(idHash: string, expiresAt: number, now: number, userId?: string): Promise<void>
  /** The session's expiry (epoch ms) and user while it is signed in and not expired at `now`; undefined otherwise. */
  session(idHash: string, now: number): Promise<{ expiresAt: number; userId: string | undefined } | undefined>
  /** Signs the session out everywhere; false when there was no such session. */
  deleteSession(idHash: string): Promise<boolean>
}

/** Users, their personal admin tokens and first-sign-in links (PRODUCT §18). Emails are stored lowercased. */
export interface UserStore {
  /** A StoreConflictError when the email is taken. */
  createUser(rec: { id: string; email: string; name: string | undefined; role: Role; orgs: string[] }): Promise<User>
  getUser(id: string): Promise<User | undefined>
  userByEmail(email: string): Promise<User | undefined>
  /** Every user, by email. */
  listUsers(): Promise<User[]>
  /** Undefined when there is no such user. `name: null` clears the name. */
  updateUser(id: string, patch: { name?: string | null; role?: Role; orgs?: string[] }): Promise<User | undefined>
  /** Deletes the user with its tokens, sessions and links; false when there was none. */
  deleteUser(id: string): Promise<boolean>
  /** An Argon2id hash (undefined: no password); false when there is no such user. */
  setPasswordHash(id: string, hash: string | undefined): Promise<boolean>
  passwordHash(id: string): Promise<string | undefined>
  createAdminToken(rec: Omit<AdminTokenRecord, 'createdAt' | 'lastUsedAt'>): Promise<AdminTokenRecord>
  getAdminToken(id: string): Promise<AdminTokenRecord | undefined>
  listAdminTokens(userId: string): Promise<AdminTokenRecord[]>
  /** Deletes one of the user's tokens; false when the user has no such token. */
  deleteAdminToken(userId: string, id: string): Promise<boolean>
  /** Notes the token's last use (an ISO time). */
  touchAdminToken(id: string, at: string): Promise<void>
  /** A first-sign-in link's hash, valid until `expiresAt` (epoch ms). */
  putSignInLink(linkHash: string, userId: string, expiresAt: number): Promise<void>
  /** The user a link signs in, once: the link is deleted; undefined when unknown or expired at `now`. */
  takeSignInLink(linkHash: string, now: number): Promise<string | undefined>
}

/** What GET /admin/audit asks (PRODUCT §18): newest first, `cursor` from the previous page. */
export interface AuditQuery {
  org?: string
  /** Only entries of these orgs (a viewer's or admin's scope); undefined: every entry. */
  withinOrgs?: readonly string[]
  /** An actor's kind, user id or email. */
  actor?: string
  /** An action, or a prefix ending in "." (`service-key.`). */
  action?: string
  since?: number
  until?: number
  limit: number
  cursor?: string
}

/** The audit log: appended to, read, and pruned only by its retention; never updated. */
export interface AuditStore {
  append(entry: AuditEntry): Promise<void>
  query(q: AuditQuery): Promise<{ data: AuditEntry[]; nextCursor: string | null }>
  /** Deletes up to `limit` of the oldest entries before `before` (epoch ms); how many. */
  prune(before: number, limit: number): Promise<number>
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
  /** Writes a batch in one transaction (with the response cache puts its entries carry, SQLite). */
  insertLogs(entries: LogEntry[]): Promise<void>
  /** Response cache keys (`org\nkey`) the batches written since the last call dropped (SQLite; see KeptAnswers). */
  takeDroppedCacheKeys?(): string[]
  /** Batches the log writer may have in flight at once (default 1): a server database works on them in parallel. */
  readonly writeConcurrency?: number
  /**
   * Batches one transaction may take while the writer is behind (default 1). SQLite: every commit writes
   * each page it touched to the WAL, and the indexes keyed by end user or tag value are touched all over
   * whatever the batch's size, so a backlog is caught up fastest in large transactions.
   */
  readonly catchUpBatches?: number
  getLog(orgId: string, requestId: string): Promise<LogEntry | undefined>
  /** The entry of the Responses answer OpenAI gave with this id, relayed by gw (LogEntry.responseId). */
  getLogByResponseId(orgId: string, responseId: string): Promise<LogEntry | undefined>
  queryLogs(q: LogQuery): Promise<{ data: LogEntry[]; nextCursor: string | null }>
  countLogs(orgId?: string): Promise<number>
  /** Deletes up to `limit` of the oldest entries created before `before` (epoch ms), bodies and tags included; roll-ups stay. Returns how many. */
  pruneLogs(before: number, limit: number): Promise<number>
  /** Usage report from the daily roll-ups (PRODUCT §11). */
  usage(q: UsageQuery): Promise<UsageSum[]>
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
  /**
   * Set when the log path may write this cache's puts with the requests' log entries, on the log
   * thread (SQLite): the serving thread then only notes them (see KeptAnswers).
   */
  readonly keptByLog?: KeptAnswers
}

/**
 * One answer kept by the response cache: `put`'s arguments, as handed to the log thread with its
 * request's entry. Its answer is its JSON text, or, for a relayed stream, made from the text the
 * client received where it is needed (keptValue in src/cache/kept-answer.ts: on the log thread, or
 * for a repeat before the write).
 */
export type CachePut = ValuePut | StreamPut

/** What every put says besides its answer. */
interface PutArguments {
  orgId: string
  key: string
  expiresAt: number
  now: number
  maxOrgBytes: number
  /** False when the key is surely not stored (the serving thread knows every stored key): its old size is not read. */
  replaces?: boolean
}

/** A put whose answer is its JSON text. */
export interface ValuePut extends PutArguments {
  value: string
}

/** A relayed stream's put: its answer is made from `stream` once, into `made` ('' when it is not kept: not complete, too large). */
export interface StreamPut extends PutArguments {
  stream: KeptStream
  made?: string
}

/** What a relayed stream's kept answer is made from: the text the client received, and what the serving thread knew of the answer. */
export interface KeptStream {
  events: RelayedEvents
  model: string
  usage: Usage
  costUsd: number | null
  maxEntryBytes: number
}

/**
 * The serving thread's side of a response cache whose puts the log thread writes, each in the
 * transaction of its request's log entry (SQLite): it answers for a put from memory until then, and
 * forgets the keys the log thread dropped.
 */
export interface KeptAnswers {
  /** A put handed over with its entry; false when too many bytes wait already (the answer is not kept). */
  handOver(put: CachePut): boolean
  /** The put's entry settled: written with it (or given up). */
  settled(put: CachePut): void
  /** Keys (`org\nkey`) the log thread dropped from the table: expired, or past the org's size bound. */
  forget(slots: readonly string[]): void
}

export interface Store {
  readonly kind: 'sqlite' | 'postgres'
  readonly orgs: OrgStore
  readonly keys: KeyStore
  readonly auth: AuthStore
  readonly prompts: PromptStore
  readonly routes: RouteStore
  readonly sessions: SessionStore
  readonly users: UserStore
  readonly audit: AuditStore
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
