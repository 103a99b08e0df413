// Row shapes both stores read (SQLite and PostgreSQL name columns alike) and their mapping to records.

import { type SecretBox, sealedFor } from '../crypto/secret-box'
import type { BedrockSettings } from '../providers/bedrock/settings'
import type { AwsCredentials } from '../providers/bedrock/sigv4'
import type { CompatSettings } from '../providers/openai-compatible'
import type { VertexSettings } from '../providers/vertex/vertex'
import { isCompatName, toProviderId } from '../providers/provider-id'
import type { KeyScopes, OidcConfig, Org, Policy, ProviderRecord, RateLimits, ServiceKeyRecord, SigningSecretRecord } from '../domain/org'
import type { AdminTokenRecord, AuditEntry, Role, User } from '../domain/people'
import type { PromptRecord, PromptVersion, VariableDef } from '../domain/prompt'

/** A JSON column: text in SQLite, already parsed from jsonb in PostgreSQL. */
type Json<T> = string | T
const parsed = <T>(v: Json<T>): T => (typeof v === 'string' ? (JSON.parse(v) as T) : v)

export interface OrgRow {
  id: string
  name: string
  policy: Json<Policy>
  created_at: string
}
export const toOrg = (r: OrgRow): Org => ({ id: r.id, name: r.name, policy: parsed(r.policy), createdAt: r.created_at })

export interface ProviderRow {
  org_id: string
  provider: string
  name: string
  weight: number
  api_key_enc: string
  base_url: string | null
  /** 0/1 in SQLite, a boolean in PostgreSQL. */
  enabled: number | boolean
  /** An OpenAI-compatible provider's models, quirks and price (its headers are sealed with the key); null for native ones. */
  compat: Json<CompatColumn> | null
  updated_at: string
}

/** A Bedrock provider's row keeps `{kind: "bedrock", region}` in the `compat` column; its AWS keys are sealed with the key. */
type BedrockColumn = Omit<BedrockSettings, 'credentials'>

/** The `compat` column: an OpenAI-compatible provider's settings but its headers, a Vertex AI provider's, or a Bedrock provider's (PRODUCT §17). */
type CompatColumn = Omit<CompatSettings, 'headers'> | VertexSettings | BedrockColumn

/**
 * What `api_key_enc` seals: the key, or for an OpenAI-compatible provider the key and its headers (they may
 * carry credentials), or for a Bedrock provider the key and its AWS access keys.
 */
export function sealedKey(rec: Pick<ProviderRecord, 'apiKey' | 'compat' | 'bedrock'>): string {
  if (rec.bedrock) return JSON.stringify({ apiKey: rec.apiKey, aws: rec.bedrock.credentials ?? null })
  return rec.compat ? JSON.stringify({ apiKey: rec.apiKey, headers: rec.compat.headers }) : rec.apiKey
}

/** The `compat` column's value for a record (headers and AWS keys left out: they are sealed). */
export function compatColumn(rec: Pick<ProviderRecord, 'compat' | 'vertex' | 'bedrock'>): CompatColumn | null {
  if (rec.vertex) return rec.vertex
  if (rec.bedrock) return { kind: 'bedrock', region: rec.bedrock.region }
  if (!rec.compat) return null
  const { headers: _, ...rest } = rec.compat
  return rest
}

export function toProvider(box: SecretBox, r: ProviderRow): ProviderRecord {
  const provider = r.compat === null ? toProviderId(r.provider) : isCompatName(r.provider) ? r.provider : undefined
  if (!provider) throw new Error(`unknown provider "${r.provider}" in provider_keys`)
  const opened = box.open(r.api_key_enc, sealedFor.providerKey(r.org_id, r.provider, r.name))
  let apiKey = opened
  let compat: CompatSettings | undefined
  let vertex: VertexSettings | undefined
  let bedrock: BedrockSettings | undefined
  const column = r.compat === null ? null : parsed(r.compat)
  if (column?.kind === 'vertex') vertex = column
  else if (column?.kind === 'bedrock') {
    const secret = JSON.parse(opened) as { apiKey: string; aws: AwsCredentials | null }
    apiKey = secret.apiKey
    bedrock = { kind: 'bedrock', region: column.region, credentials: secret.aws ?? undefined }
  } else if (column !== null) {
    const secret = JSON.parse(opened) as { apiKey: string; headers: Record<string, string> }
    apiKey = secret.apiKey
    compat = { ...column, headers: secret.headers }
  }
  return {
    provider,
    name: r.name,
    weight: r.weight,
    apiKey,
    baseUrl: r.base_url ?? undefined,
    enabled: r.enabled === 1 || r.enabled === true,
    compat,
    ...(vertex ? { vertex } : {}),
    ...(bedrock ? { bedrock } : {}),
    updatedAt: r.updated_at,
  }
}

export interface KeyRow {
  id: string
  org_id: string
  name: string | null
  key_hash: Uint8Array
  created_at: string
  revoked_at: string | null
  last_used_at: string | null
  requests_per_minute: number | null
  tokens_per_minute: number | null
  expires_at: string | null
  scopes: Json<KeyScopes> | null
}
function limitsOf(r: KeyRow): RateLimits {
  const limits: RateLimits = {}
  if (r.requests_per_minute !== null) limits.requestsPerMinute = r.requests_per_minute
  if (r.tokens_per_minute !== null) limits.tokensPerMinute = r.tokens_per_minute
  return limits
}
export const toKey = (r: KeyRow): ServiceKeyRecord => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name ?? undefined,
  hash: new Uint8Array(r.key_hash),
  createdAt: r.created_at,
  revokedAt: r.revoked_at ?? undefined,
  lastUsedAt: r.last_used_at ?? undefined,
  limits: limitsOf(r),
  expiresAt: r.expires_at ?? undefined,
  scopes: r.scopes === null ? undefined : parsed(r.scopes),
})

export interface SecretRow {
  org_id: string
  kid: string
  secret_enc: string
  created_at: string
}
export const toSecret = (box: SecretBox, r: SecretRow): SigningSecretRecord => ({
  orgId: r.org_id,
  kid: r.kid,
  secret: box.open(r.secret_enc, sealedFor.signingSecret(r.org_id, r.kid)),
  createdAt: r.created_at,
})

export interface OidcRow {
  org_id: string
  issuer: string
  audience: string
  jwks_uri: string | null
  org_claim: string | null
  updated_at: string
}
export const toOidc = (r: OidcRow): OidcConfig => ({
  orgId: r.org_id,
  issuer: r.issuer,
  audience: r.audience,
  jwksUri: r.jwks_uri ?? undefined,
  orgClaim: r.org_claim ?? undefined,
  updatedAt: r.updated_at,
})

export interface PromptRow {
  id: string
  org_id: string
  slug: string
  name: string | null
  published_version: number | null
  current_version: number | null
  source_file: string | null
  created_at: string
}
export const toPrompt = (r: PromptRow): PromptRecord => ({
  id: r.id,
  orgId: r.org_id,
  slug: r.slug,
  name: r.name ?? undefined,
  publishedVersion: r.published_version ?? undefined,
  currentVersion: r.current_version ?? undefined,
  sourceFile: r.source_file ?? undefined,
  createdAt: r.created_at,
})

export interface VersionRow {
  prompt_id: string
  version: number
  system_template: string | null
  user_template: string
  variables: Json<VariableDef[]>
  model: string
  temperature: number | null
  max_tokens: number | null
  content_hash: string
  created_at: string
}
export const toVersion = (r: VersionRow): PromptVersion => ({
  promptId: r.prompt_id,
  version: r.version,
  systemTemplate: r.system_template ?? undefined,
  userTemplate: r.user_template,
  variables: parsed(r.variables),
  model: r.model,
  temperature: r.temperature ?? undefined,
  maxTokens: r.max_tokens ?? undefined,
  contentHash: r.content_hash,
  createdAt: r.created_at,
})

export interface UserRow {
  id: string
  email: string
  name: string | null
  role: string
  orgs: Json<string[]>
  password_hash: string | null
  created_at: string
  updated_at: string
}

export const toUser = (r: UserRow): User => ({
  id: r.id,
  email: r.email,
  name: r.name ?? undefined,
  role: r.role as Role,
  orgs: parsed(r.orgs),
  hasPassword: r.password_hash !== null,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
})

export interface AdminTokenRow {
  id: string
  user_id: string
  name: string | null
  token_hash: Uint8Array
  created_at: string
  last_used_at: string | null
}

export const toAdminToken = (r: AdminTokenRow): AdminTokenRecord => ({
  id: r.id,
  userId: r.user_id,
  name: r.name ?? undefined,
  hash: new Uint8Array(r.token_hash),
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at ?? undefined,
})

export interface AuditRow {
  seq: number | string
  id: string
  time: string
  actor_kind: string
  actor_id: string | null
  actor_email: string | null
  action: string
  org_id: string | null
  target: string
  before_json: Json<unknown> | null
  after_json: Json<unknown> | null
  request_id: string | null
  ip: string | null
}

export const toAuditEntry = (r: AuditRow): AuditEntry => ({
  id: r.id,
  time: r.time,
  actor: {
    kind: r.actor_kind as AuditEntry['actor']['kind'],
    ...(r.actor_id !== null ? { id: r.actor_id } : {}),
    ...(r.actor_email !== null ? { email: r.actor_email } : {}),
  },
  action: r.action,
  org: r.org_id,
  target: r.target,
  before: r.before_json === null ? null : parsed(r.before_json),
  after: r.after_json === null ? null : parsed(r.after_json),
  requestId: r.request_id,
  ip: r.ip,
})

/** The audit query's cursor: the last entry's sequence number, opaque to clients. */
export const auditCursor = (seq: number | string) => Buffer.from(`a${seq}`).toString('base64url')

export function auditCursorSeq(cursor: string | undefined): number | undefined {
  if (cursor === undefined) return undefined
  const m = /^a(\d{1,18})$/.exec(Buffer.from(cursor, 'base64url').toString())
  if (!m) throw new RangeError('cursor')
  return Number(m[1])
}
