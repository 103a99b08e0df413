// Admin operations (PRODUCT §6), shared by the HTTP admin API and the `gw` CLI subcommands.

import { checkGuardrails } from '../guardrails/config'
import { randomBytes } from 'node:crypto'
import { oidcUrlProblem } from '../auth/oidc'
import { newServiceKey } from '../auth/service-keys'
import { MAX_TTL_SECONDS, signToken } from '../auth/signed-tokens'
import { badRequest, echo, GatewayError, notFound } from '../errors'
import { compatSettings, DEFAULT_QUIRKS, presetOf } from '../providers/openai-compatible'
import { parseServiceAccountKey } from '../providers/vertex/token-source'
import { isCompatName, isNamedKind, type ProviderId, toProviderId } from '../providers/provider-id'
import {
  checkOidcBody,
  checkOrgBody,
  checkPolicyBody,
  checkBedrockProviderBody,
  checkCompatProviderBody,
  checkAzureProviderBody,
  checkVertexProviderBody,
  checkProviderBody,
  checkRouteBody,
  checkServiceKeyBody,
  checkSigningSecretBody,
} from '../schemas/admin-bodies'
import type { LogEntry } from '../domain/log-entry'
import {
  type OidcConfig,
  ORG_ID,
  type Org,
  type Policy,
  type ProviderRecord,
  type Route,
  type ServiceKeyRecord,
  type SigningSecretRecord,
} from '../domain/org'
import type { AuditQuery, Store } from '../store/types'
import { checkRotateKeyBody } from '../schemas/people-bodies'
import type { BudgetLedger } from '../policy/budget-ledger'
import { type BudgetStatus, budgetStatus } from '../policy/budgets'
import { pruneBefore } from '../store/log-retention'
import type { UsageRow } from '../store/usage-rollup'
import { parseFallbackChain, parseModelRef, unknownProvider } from '../pipeline/chat-input'
import type { ModelRef } from '../pipeline/context'
import { ROUTE_NAME_PATTERN } from '../schemas/admin-bodies'
import { type FieldPath, fieldError } from '../schemas/problems'
import { parseLogQuery } from './log-query'
import { AuditLog } from './audit'
import { PromptAdmin } from './prompt-admin'
import { UserAdmin } from './user-admin'
import { McpAdmin } from '../mcp/admin'
import { parseUsageQuery, usageReport } from './usage-report'


export function maskKey(key: string): string {
  return key.length <= 12 ? '****' : `${key.slice(0, 3)}…${key.slice(-4)}`
}

/** A provider key as the admin API shows it: the key masked, secrets left out. */
export function publicProvider(p: ProviderRecord) {
  return {
    provider: p.provider,
    name: p.name,
    apiKey: maskKey(p.vertex ? '' : p.apiKey),
    baseUrl: p.baseUrl ?? null,
    enabled: p.enabled,
    weight: p.weight,
    updatedAt: p.updatedAt,
    // An OpenAI-compatible provider's settings; its headers' values are never shown (they may carry credentials).
    ...(p.compat
      ? { kind: p.compat.kind, headers: Object.keys(p.compat.headers), models: p.compat.models, quirks: p.compat.quirks, price: p.compat.price ?? null }
      : {}),
    ...(p.compat?.azure ? { deployments: p.compat.azure.deployments, apiVersion: p.compat.azure.apiVersion ?? null } : {}),
    // A Vertex AI provider's settings; its service-account key is never shown, not even masked.
    ...(p.vertex ? { kind: p.vertex.kind, project: p.vertex.project, location: p.vertex.location } : {}),
    // A Bedrock provider: its region and which credentials it has, never the secret or the session token.
    ...(p.bedrock
      ? { kind: p.bedrock.kind, region: p.bedrock.region, auth: p.bedrock.credentials ? 'sigv4' : 'apiKey', accessKeyId: p.bedrock.credentials ? maskKey(p.bedrock.credentials.accessKeyId) : null }
      : {}),
  }
}

/** Provider key names: what a log entry and an attempt show for the key that answered. */
const KEY_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

function providerOf(name: string): ProviderId {
  const provider = toProviderId(name)
  if (!provider) throw badRequest(`Unknown provider ${echo(name)} (openai, anthropic, google, mistral)`)
  return provider
}

/** A provider name of the admin API: a native id, or an OpenAI-compatible provider's name (PRODUCT §17). */
function providerNameOf(name: string): string {
  return toProviderId(name) ?? (isCompatName(name) ? name : providerOf(name))
}

const checkBaseUrl = (baseUrl: string | undefined) => {
  if (baseUrl !== undefined && !/^https?:\/\/[^/]/.test(baseUrl))
    throw fieldError(['baseUrl'], `Invalid baseUrl ${echo(baseUrl)}: expected an http(s) URL`, 'expected an http(s) URL')
  return baseUrl?.replace(/\/+$/, '')
}

/**
 * One of an org's provider keys as given to the admin API or a config file, checked (400 otherwise):
 * a native provider's key; an Azure, Bedrock or Vertex record (its `kind`, implied under the names `azure`,
 * `bedrock`, `vertex`); or (`kind: "openai-compatible"`) an OpenAI-compatible provider named `providerName`.
 */
export function checkProviderKey(providerName: string, name: string, raw: unknown): Omit<ProviderRecord, 'updatedAt'> {
  if (!KEY_NAME.test(name)) throw badRequest(`Invalid key name ${echo(name)}: letters, digits, ".", "_" and "-", at most 64`)
  const declared = typeof raw === 'object' && raw !== null && 'kind' in raw ? (raw as { kind: unknown }).kind : undefined
  // Azure, Bedrock and Vertex are native names (PRODUCT §17): under its own name a record needs no `kind`, and takes no other.
  const named = isNamedKind(providerName)
  if (named && declared !== undefined && declared !== providerName)
    throw fieldError(['kind'], `Invalid kind ${echo(String(declared))} for provider "${providerName}": its records are of kind "${providerName}"`, `expected "${providerName}"`)
  const kind = named ? providerName : declared
  const record = named && declared === undefined && typeof raw === 'object' && raw !== null ? { ...raw, kind } : raw
  if (kind === 'vertex') return checkVertexProvider(providerName, name, record)
  if (kind === 'azure') return checkAzureProvider(providerName, name, record)
  if (kind === 'bedrock') return checkBedrockProvider(providerName, name, record)
  if (kind !== undefined) return checkCompatProvider(providerName, name, raw)
  const provider = providerOf(providerName)
  const body = checkProviderBody(raw)
  return {
    provider,
    name,
    apiKey: body.apiKey,
    baseUrl: checkBaseUrl(body.baseUrl),
    enabled: body.enabled ?? true,
    weight: body.weight ?? 1,
  }
}

/** Headers a record may not set: the request's framing is gw's (the key goes in `apiKey`, or `authorization` when it is not Bearer). */
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/
const RESERVED_HEADERS: ReadonlySet<string> = new Set(['host', 'content-length', 'content-type', 'transfer-encoding', 'connection'])

function checkBedrockProvider(providerName: string, name: string, raw: unknown): Omit<ProviderRecord, 'updatedAt'> {
  if (!isCompatName(providerName))
    throw badRequest(`Invalid provider name ${echo(providerName)} for a Bedrock provider: [a-z][a-z0-9-]{0,31}, not a native provider's name`)
  const body = checkBedrockProviderBody(raw)
  const keys = body.accessKeyId !== undefined || body.secretAccessKey !== undefined || body.sessionToken !== undefined
  if (keys && body.apiKey !== undefined) throw fieldError(['apiKey'], 'Give either accessKeyId and secretAccessKey or apiKey, not both', 'not with access keys')
  if (keys && (body.accessKeyId === undefined || body.secretAccessKey === undefined))
    throw fieldError([body.accessKeyId === undefined ? 'accessKeyId' : 'secretAccessKey'], 'accessKeyId and secretAccessKey go together', 'required')
  if (!keys && body.apiKey === undefined) throw fieldError(['accessKeyId'], 'A Bedrock provider needs accessKeyId and secretAccessKey, or apiKey', 'required')
  const credentials = body.accessKeyId !== undefined && body.secretAccessKey !== undefined
    ? { accessKeyId: body.accessKeyId, secretAccessKey: body.secretAccessKey, ...(body.sessionToken ? { sessionToken: body.sessionToken } : {}) }
    : undefined
  return {
    provider: providerName,
    name,
    apiKey: body.apiKey ?? '',
    baseUrl: checkBaseUrl(body.baseUrl),
    enabled: body.enabled ?? true,
    weight: body.weight ?? 1,
    bedrock: { kind: 'bedrock', region: body.region, credentials },
  }
}

function checkCompatProvider(providerName: string, name: string, raw: unknown): Omit<ProviderRecord, 'updatedAt'> {
  if (!isCompatName(providerName) || isNamedKind(providerName))
    throw badRequest(`Invalid provider name ${echo(providerName)} for an OpenAI-compatible provider: [a-z][a-z0-9-]{0,31}, not a native provider's name`)
  const body = checkCompatProviderBody(raw)
  // A header name must be a token (RFC 9110): the schema's key pattern names it, but a record's keys are not checked by it.
  const malformed = Object.keys(body.headers ?? {}).find((h) => !HEADER_NAME.test(h))
  if (malformed) throw fieldError(['headers', malformed], `Invalid header name ${echo(malformed)}: letters, digits and !#$%&'*+.^_\`|~- only, at most 64`, 'not a header name')
  const reserved = Object.keys(body.headers ?? {}).find((h) => RESERVED_HEADERS.has(h.toLowerCase()))
  if (reserved) throw fieldError(['headers', reserved], `Invalid header ${echo(reserved)}: gw sets it itself`, 'gw sets this header itself')
  const baseUrl = checkBaseUrl(body.baseUrl) ?? presetOf(providerName)?.baseUrl
  if (!baseUrl) throw fieldError(['baseUrl'], `baseUrl is required for ${echo(providerName)} (not a preset)`, 'required')
  return {
    provider: providerName,
    name,
    apiKey: body.apiKey ?? '',
    baseUrl,
    enabled: body.enabled ?? true,
    weight: body.weight ?? 1,
    compat: compatSettings(providerName, body),
  }
}

/** Azure OpenAI (docs/providers.md "Azure OpenAI"): named like an OpenAI-compatible provider, its key in `api-key`. */
function checkAzureProvider(providerName: string, name: string, raw: unknown): Omit<ProviderRecord, 'updatedAt'> {
  if (!isCompatName(providerName))
    throw badRequest(`Invalid provider name ${echo(providerName)} for Azure OpenAI: [a-z][a-z0-9-]{0,31}, not a native provider's name`)
  const body = checkAzureProviderBody(raw)
  return {
    provider: providerName,
    name,
    apiKey: body.apiKey,
    baseUrl: checkBaseUrl(body.baseUrl) as string,
    enabled: body.enabled ?? true,
    weight: body.weight ?? 1,
    compat: { kind: 'azure', headers: {}, models: body.models ?? [], quirks: DEFAULT_QUIRKS, price: body.price, azure: { deployments: body.deployments ?? {}, apiVersion: body.apiVersion } },
  }
}

function checkVertexProvider(providerName: string, name: string, raw: unknown): Omit<ProviderRecord, 'updatedAt'> {
  if (!isCompatName(providerName))
    throw badRequest(`Invalid provider name ${echo(providerName)} for a Vertex AI provider: [a-z][a-z0-9-]{0,31}, not a native provider's name`)
  const body = checkVertexProviderBody(raw)
  let json: unknown = body.serviceAccountKey ?? body.serviceAccount
  if (json === undefined) throw fieldError(['serviceAccountKey'], "serviceAccountKey is required: the service account's JSON key (also taken as serviceAccount)", 'required')
  if (typeof json === 'string') {
    try {
      json = JSON.parse(json)
    } catch {
      throw fieldError(['serviceAccountKey'], 'Invalid serviceAccountKey: not JSON', 'not JSON')
    }
  }
  const key = parseServiceAccountKey(json)
  return {
    provider: providerName,
    name,
    apiKey: JSON.stringify(key),
    baseUrl: checkBaseUrl(body.baseUrl),
    enabled: body.enabled ?? true,
    weight: body.weight ?? 1,
    vertex: { kind: 'vertex', project: body.project, location: body.location },
  }
}

/**
 * A route as given to the admin API or a config file, checked (400 otherwise). `providers`, when
 * given, are the org's providers: a target or fallback entry naming an OpenAI-compatible provider
 * outside them is refused like an unknown prefix.
 */
export function checkRoute(name: string, raw: unknown, providers?: ReadonlySet<string>): Omit<Route, 'updatedAt'> {
  if (!new RegExp(ROUTE_NAME_PATTERN).test(name))
    throw badRequest(`Invalid route name ${echo(name)}: letters, digits, ".", "_", ":" and "-", at most 128, no "/"`)
  const b = checkRouteBody(raw)
  // Targets and fallback entries are provider/model names, checked like a request's.
  const known = (ref: ModelRef, at: FieldPath) => {
    if (providers && ref.kind === 'openai-compatible' && !providers.has(ref.provider)) throw unknownProvider(ref.name, ref.provider, at)
  }
  b.targets.forEach((x, i) => known(parseModelRef(x.model, ['targets', i, 'model']), ['targets', i, 'model']))
  parseFallbackChain(b.fallback, 'fallback').forEach((e, i) => known(e.model, ['fallback', i, 'model']))
  return {
    name,
    targets: b.targets.map((x) => ({ model: x.model, weight: x.weight ?? 1 })),
    strategy: b.strategy ?? 'weighted',
    fallback: (b.fallback ?? []).map((e) => ({ model: e.model, ...(e.triggers ? { triggers: e.triggers } : {}) })),
  }
}

export class AdminService {
  readonly prompts: PromptAdmin
  /** Every change below appends its entry here (PRODUCT §18; docs/architecture.md, "Roles and the audit log"). */
  readonly audit: AuditLog
  readonly users: UserAdmin
  /** The org's MCP servers (PRODUCT §20). */
  readonly mcp: McpAdmin

  constructor(
    private readonly store: Store,
    /** Called after every change to an org, so caches drop it. */
    private readonly changed: (orgId: string) => void = () => {},
  ) {
    this.audit = new AuditLog(store.audit)
    this.prompts = new PromptAdmin(store, (orgId) => this.requireOrg(orgId), this.audit)
    this.users = new UserAdmin(store, this.audit)
    this.mcp = new McpAdmin(store, (orgId) => this.requireOrg(orgId), changed, this.audit)
  }

  async requireOrg(orgId: string): Promise<Org> {
    const org = await this.store.orgs.getOrg(orgId)
    if (!org) throw notFound(`Org "${orgId}" not found`)
    return org
  }

  async createOrg(raw: unknown): Promise<{ id: string; name: string }> {
    const body = checkOrgBody(raw)
    const id = body.id ?? crypto.randomUUID()
    if (!ORG_ID.test(id)) throw badRequest(`Invalid org id ${echo(id)}: lowercase letters, digits, "-" and "_", at most 64`)
    if (await this.store.orgs.getOrg(id)) throw new GatewayError(409, 'gateway_error', `Org "${id}" already exists`)
    const org = await this.store.orgs.createOrg({ id, name: body.name })
    await this.audit.record({ action: 'org.create', org: org.id, target: `org:${org.id}`, before: null, after: { id: org.id, name: org.name } })
    return { id: org.id, name: org.name }
  }

  async describeOrg(orgId: string) {
    const org = await this.requireOrg(orgId)
    const providers = await this.store.orgs.getProviders(orgId)
    const keys = await this.store.keys.listServiceKeys(orgId)
    const secrets = await this.store.auth.listSigningSecrets(orgId)
    const routes = await this.store.routes.getRoutes(orgId)
    return {
      id: org.id,
      name: org.name,
      createdAt: org.createdAt,
      policy: org.policy,
      providers: providers.map(publicProvider),
      routes,
      serviceKeys: keys.map(publicKey),
      signingSecrets: secrets.map(publicSecret),
      oidc: publicOidc(await this.store.auth.getOidc(orgId)),
    }
  }

  async listOrgs() {
    const orgs = await this.store.orgs.listOrgs()
    return { data: orgs.map((o) => ({ id: o.id, name: o.name, createdAt: o.createdAt })) }
  }

  async listServiceKeys(orgId: string) {
    await this.requireOrg(orgId)
    return { data: (await this.store.keys.listServiceKeys(orgId)).map(publicKey) }
  }

  async listSigningSecrets(orgId: string) {
    await this.requireOrg(orgId)
    return { data: (await this.store.auth.listSigningSecrets(orgId)).map(publicSecret) }
  }

  /** A page of the org's request log (the §9 query), newest first. */
  async listLogs(orgId: string, params: URLSearchParams) {
    await this.requireOrg(orgId)
    return this.store.logs.queryLogs(parseLogQuery(orgId, params))
  }

  async getLog(orgId: string, requestId: string): Promise<LogEntry> {
    await this.requireOrg(orgId)
    const entry = await this.store.logs.getLog(orgId, requestId)
    if (!entry) throw notFound(`No log entry ${echo(requestId)} in org "${orgId}"`)
    return entry
  }

  async putPolicy(orgId: string, raw: unknown): Promise<Policy> {
    const before = (await this.requireOrg(orgId)).policy
    const policy = checkPolicyBody(raw)
    checkGuardrails(policy.guardrails)
    await this.store.orgs.putPolicy(orgId, policy)
    this.changed(orgId)
    await this.audit.record({ action: 'policy.set', org: orgId, target: 'policy', before, after: policy })
    return policy
  }

  /** PUT /admin/orgs/:org/providers/:provider(/keys/:name): one of the org's keys for a provider (PRODUCT §13). */
  async putProvider(orgId: string, providerName: string, raw: unknown, name = 'default') {
    await this.requireOrg(orgId)
    const checked = checkProviderKey(providerName, name, raw)
    const before = await this.providerKey(orgId, checked.provider, name)
    const rec = await this.store.orgs.putProvider(orgId, checked)
    this.changed(orgId)
    const after = publicProvider(rec)
    await this.audit.record({ action: 'provider.set', org: orgId, target: `provider:${rec.provider}/${name}`, before: before && publicProvider(before), after })
    return after
  }

  async deleteProviderKey(orgId: string, providerName: string, name: string): Promise<void> {
    await this.requireOrg(orgId)
    const provider = providerNameOf(providerName)
    const before = await this.providerKey(orgId, provider, name)
    if (!(await this.store.orgs.deleteProviderKey(orgId, provider, name)))
      throw notFound(`No ${provider} key named ${echo(name)} in org "${orgId}"`)
    this.changed(orgId)
    await this.audit.record({ action: 'provider.delete', org: orgId, target: `provider:${provider}/${name}`, before: before && publicProvider(before), after: null })
  }

  private async providerKey(orgId: string, provider: string, name: string): Promise<ProviderRecord | undefined> {
    return (await this.store.orgs.getProviders(orgId)).find((p) => p.provider === provider && p.name === name)
  }


  async createServiceKey(orgId: string, raw: unknown = {}): Promise<{ id: string; key: string }> {
    await this.requireOrg(orgId)
    const body = checkServiceKeyBody(raw)
    const { id, key, hash } = newServiceKey()
    const { requestsPerMinute, tokensPerMinute } = body
    const limits = { ...(requestsPerMinute ? { requestsPerMinute } : {}), ...(tokensPerMinute ? { tokensPerMinute } : {}) }
    let expiresAt: string | undefined
    if (body.expiresAt !== undefined) {
      const at = /^\d{4}-\d\d-\d\dT/.test(body.expiresAt) ? Date.parse(body.expiresAt) : Number.NaN
      if (!Number.isFinite(at)) throw fieldError(['expiresAt'], `Invalid expiresAt ${echo(body.expiresAt)}: an ISO 8601 time such as 2027-01-31T00:00:00Z`, 'not an ISO 8601 time')
      if (at <= Date.now()) throw fieldError(['expiresAt'], `Invalid expiresAt ${echo(body.expiresAt)}: it is already past`, 'in the past')
      expiresAt = new Date(at).toISOString()
    }
    const scopes = body.scopes && (body.scopes.endpoints || body.scopes.models) ? body.scopes : undefined
    const rec = await this.store.keys.createServiceKey({ id, orgId, name: body.name, hash, limits, expiresAt, scopes })
    if (body.mcp) await this.store.mcp.putKeyPolicy(orgId, id, body.mcp)
    await this.audit.record({ action: 'service-key.create', org: orgId, target: `service-key:${id}`, before: null, after: publicKey(rec) })
    return { id, key }
  }

  /**
   * POST /admin/orgs/:org/service-keys/:id/rotate: a new key with the old one's name, limits, scopes and
   * expiry; the old one keeps working for `graceSeconds` (default 0: it is revoked at once).
   */
  async rotateServiceKey(orgId: string, id: string, raw: unknown = {}, now = Date.now()): Promise<{ id: string; key: string; oldKeyExpiresAt: string }> {
    await this.requireOrg(orgId)
    const { graceSeconds = 0 } = checkRotateKeyBody(raw)
    const old = await this.store.keys.getServiceKey(id)
    if (!old || old.orgId !== orgId || old.revokedAt || (old.expiresAt && Date.parse(old.expiresAt) <= now))
      throw notFound(`Service key "${id}" not found in org "${orgId}" (or already revoked or expired)`)
    const made = newServiceKey()
    const rec = await this.store.keys.createServiceKey({ id: made.id, orgId, name: old.name, hash: made.hash, limits: old.limits, expiresAt: old.expiresAt, scopes: old.scopes })
    // Its MCP tool policy too: a rotation never widens what the key may call (PRODUCT §20).
    const tools = await this.store.mcp.getKeyPolicy(id)
    if (tools) await this.store.mcp.putKeyPolicy(orgId, made.id, tools)
    const until = new Date(now + graceSeconds * 1000).toISOString()
    if (graceSeconds === 0) await this.store.keys.revokeServiceKey(orgId, id)
    else await this.store.keys.expireServiceKey(orgId, id, until)
    this.changed(orgId)
    const oldAfter = await this.store.keys.getServiceKey(id)
    await this.audit.record({
      action: 'service-key.rotate',
      org: orgId,
      target: `service-key:${id}`,
      before: publicKey(old),
      after: { old: oldAfter && publicKey(oldAfter), new: publicKey(rec) },
    })
    return { id: made.id, key: made.key, oldKeyExpiresAt: until }
  }

  /** A page of the audit log (PRODUCT §18), newest first. */
  auditPage(q: AuditQuery) {
    return this.store.audit.query(q)
  }

  /** PUT /admin/orgs/:org/routes/:name: creates or replaces a route (PRODUCT §13). */
  async putRoute(orgId: string, name: string, raw: unknown): Promise<Route> {
    await this.requireOrg(orgId)
    const providers = new Set((await this.store.orgs.getProviders(orgId)).map((p) => p.provider))
    const checked = checkRoute(name, raw, providers)
    const before = (await this.store.routes.getRoutes(orgId)).find((r) => r.name === name) ?? null
    const route = await this.store.routes.putRoute(orgId, checked)
    this.changed(orgId)
    await this.audit.record({ action: 'route.set', org: orgId, target: `route:${name}`, before, after: route })
    return route
  }

  async listRoutes(orgId: string): Promise<{ data: Route[] }> {
    await this.requireOrg(orgId)
    return { data: await this.store.routes.getRoutes(orgId) }
  }

  async deleteRoute(orgId: string, name: string): Promise<void> {
    await this.requireOrg(orgId)
    const before = (await this.store.routes.getRoutes(orgId)).find((r) => r.name === name) ?? null
    if (!(await this.store.routes.deleteRoute(orgId, name))) throw notFound(`No route "${name.slice(0, 64)}" in org "${orgId}"`)
    this.changed(orgId)
    await this.audit.record({ action: 'route.delete', org: orgId, target: `route:${name}`, before, after: null })
  }

  /** The org's usage report (PRODUCT §11) for the query parameters of GET /admin/orgs/:org/usage. */
  async usage(orgId: string, params: URLSearchParams): Promise<{ data: UsageRow[] }> {
    await this.requireOrg(orgId)
    return { data: await usageReport(this.store.logs, parseUsageQuery(orgId, params)) }
  }

  /** The org's budgets with their spend in the current period: per live service key, per end user with spend. */
  async budgets(orgId: string, ledger: BudgetLedger, now = Date.now()): Promise<{ data: BudgetStatus[] }> {
    const org = await this.requireOrg(orgId)
    const logs = this.store.logs
    const data = await budgetStatus(ledger, logs, orgId, org.policy.budgets ?? [], async (scope, period) => {
      const spenders = await logs.usage({ orgId, groupBy: scope, fromDay: period.fromDay, toDay: period.toDay })
      const ids = new Set(spenders.flatMap((r) => (r.key === null ? [] : [r.key])))
      if (scope === 'key') for (const k of await this.store.keys.listServiceKeys(orgId)) if (!k.revokedAt) ids.add(k.id)
      return [...ids]
    }, now)
    return { data }
  }

  /** Deletes raw log entries older than `olderThanMs` now (roll-ups stay); returns how many. */
  async pruneLogs(olderThanMs: number): Promise<{ deleted: number }> {
    const deleted = await pruneBefore(this.store.logs, Date.now() - olderThanMs)
    await this.audit.record({ action: 'logs.prune', org: null, target: 'logs', before: null, after: { olderThanMs, deleted } })
    return { deleted }
  }

  async revokeServiceKey(orgId: string, id: string): Promise<void> {
    await this.requireOrg(orgId)
    const before = await this.store.keys.getServiceKey(id)
    if (!(await this.store.keys.revokeServiceKey(orgId, id)))
      throw notFound(`Service key "${id}" not found in org "${orgId}" (or already revoked)`)
    this.changed(orgId)
    const after = await this.store.keys.getServiceKey(id)
    await this.audit.record({ action: 'service-key.revoke', org: orgId, target: `service-key:${id}`, before: before && publicKey(before), after: after && publicKey(after) })
  }

  /** A new GwSigned secret; generated (256 random bits) when none is given. Shown only in this answer. */
  async addSigningSecret(orgId: string, raw: unknown = {}): Promise<{ kid: string; secret: string }> {
    await this.requireOrg(orgId)
    const body = checkSigningSecretBody(raw)
    const kid = body.kid ?? `k_${randomBytes(6).toString('hex')}`
    if ((await this.store.auth.listSigningSecrets(orgId)).some((s) => s.kid === kid))
      throw new GatewayError(409, 'gateway_error', `Org "${orgId}" already has a signing secret with kid "${kid}"`)
    const secret = body.secret ?? randomBytes(32).toString('base64url')
    const rec = await this.store.auth.addSigningSecret({ orgId, kid, secret })
    this.changed(orgId)
    await this.audit.record({ action: 'signing-secret.create', org: orgId, target: `signing-secret:${kid}`, before: null, after: publicSecret(rec) })
    return { kid, secret }
  }

  async deleteSigningSecret(orgId: string, kid: string): Promise<void> {
    await this.requireOrg(orgId)
    const before = (await this.store.auth.listSigningSecrets(orgId)).find((s) => s.kid === kid)
    if (!(await this.store.auth.deleteSigningSecret(orgId, kid)))
      throw notFound(`Signing secret "${kid}" not found in org "${orgId}"`)
    this.changed(orgId)
    await this.audit.record({ action: 'signing-secret.delete', org: orgId, target: `signing-secret:${kid}`, before: before && publicSecret(before), after: null })
  }

  async putOidc(orgId: string, raw: unknown) {
    await this.requireOrg(orgId)
    const body = checkOidcBody(raw)
    for (const [field, url] of [['issuer', body.issuer], ['jwksUri', body.jwksUri]] as const) {
      const problem = url === undefined ? undefined : oidcUrlProblem(url)
      if (problem) throw badRequest(`Invalid ${field} ${echo(url)}: ${problem}`)
    }
    const before = publicOidc(await this.store.auth.getOidc(orgId))
    const rec = await this.store.auth.putOidc({
      orgId,
      issuer: body.issuer,
      audience: body.audience,
      jwksUri: body.jwksUri,
      orgClaim: body.orgClaim,
    })
    this.changed(orgId)
    const after = publicOidc(rec)
    await this.audit.record({ action: 'oidc.set', org: orgId, target: 'oidc', before, after })
    return after
  }

  /** A GwSigned token signed with the org's newest secret (or the one `kid` names): for tests and examples. */
  async signToken(orgId: string, req: TokenRequest): Promise<string> {
    await this.requireOrg(orgId)
    if (!Number.isInteger(req.ttl) || req.ttl < 1 || req.ttl > MAX_TTL_SECONDS)
      throw badRequest(`Invalid ttl ${echo(req.ttl)}: whole seconds from 1 to ${MAX_TTL_SECONDS}`)
    const secrets = await this.store.auth.listSigningSecrets(orgId)
    const secret = req.kid === undefined ? secrets.at(-1) : secrets.find((s) => s.kid === req.kid)
    if (!secret)
      throw notFound(req.kid ? `No signing secret "${req.kid}" in org "${orgId}"` : `Org "${orgId}" has no signing secret yet: create one first (gw secret create)`)
    return signToken(secret, { orgId, ...req })
  }
}

/** What `gw token sign` needs; ttl in seconds. */
export interface TokenRequest {
  sub: string
  ttl: number
  kid?: string
  endUserId?: string
}

function publicKey(k: ServiceKeyRecord) {
  return {
    id: k.id,
    name: k.name ?? null,
    createdAt: k.createdAt,
    revokedAt: k.revokedAt ?? null,
    lastUsedAt: k.lastUsedAt ?? null,
    expiresAt: k.expiresAt ?? null,
    scopes: k.scopes ?? null,
    ...k.limits,
  }
}

function publicSecret(s: SigningSecretRecord) {
  return { kid: s.kid, createdAt: s.createdAt }
}

function publicOidc(c: OidcConfig | undefined) {
  if (!c) return null
  return { issuer: c.issuer, audience: c.audience, jwksUri: c.jwksUri ?? null, orgClaim: c.orgClaim ?? null, updatedAt: c.updatedAt }
}
