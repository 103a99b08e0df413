// The admin API (PRODUCT §6, §18) under /admin: the admin token, a user's session or personal token; every route role-checked and audited (guarded).

import type { AdminService } from '../../admin/admin-service'
import { type Access, actorOf, authorize, orgsOf, type Principal } from '../../admin/access'
import { asActor, currentChange } from '../../admin/audit'
import type { UserAdmin } from '../../admin/user-admin'
import { isAdminTokenShaped } from '../../auth/admin-tokens'
import type { User } from '../../domain/people'
import { GuessBrake } from '../../auth/guess-brake'
import { parseStatsQuery } from '../../admin/stats-query'
import { GatewayError, notFound, unauthorized } from '../../errors'
import { parseAuditQuery } from '../../admin/log-query'
import { AdminTokenBody, AuditQuery, PasswordBody, RotateKeyBody, UserBody, UserPatchBody } from '../../schemas/people-bodies'
import { promptRun, runPromptAsAdmin } from '../../apis/prompts/endpoint'
import type { Deps } from '../../pipeline/context'
import { CSRF_HEADER, SESSION_COOKIE, type SessionKeeper, sameSecret } from '../../ui/session'
import {
  AnyObject,
  CreatedOrg,
  CreatedPrompt,
  CreatedPromptVersion,
  CreatedServiceKey,
  CreatedSigningSecret,
  ListOf,
  LogEntryAnswer,
  LogPage,
  LogQuery,
  OidcAnswer,
  OrgAnswer,
  OrgSummary,
  PartialAnswer,
  PromptAnswer,
  ProviderKey,
  PublishedPrompt,
  RouteAnswer,
  StatsAnswer,
  StatsQuery,
  UsageQuery,
  UsageReport,
} from '../../schemas/admin-answers'
import {
  OidcBody,
  OrgBody,
  PartialBody,
  PolicyBody,
  PromptBody,
  PromptVersionBody,
  AnyProviderBody,
  RouteBody,
  ServiceKeyBody,
  SigningSecretBody,
} from '../../schemas/admin-bodies'
import { ChatCompletionAnswer } from '../../schemas/answers'
import { PromptVersionQuery, RunBody } from '../../schemas/prompt-run-body'
import type { ClientAddresses, PeerSource } from '../client-address'
import type { ApiOperation } from '../../schemas/api-operation'
import { type Handlers, type OperationCall, type OperationHandler, operationRoutes, ownOperations } from '../operation-routes'
import { contextFor, cookieOf, readJsonBody, requestIdOf, sameOrigin } from '../request-context'
import { withBody } from './request-body'

/**
 * The admin credential: `Authorization: Bearer $GW_ADMIN_TOKEN` (the break-glass owner), a personal admin
 * token (`gw_at_…`, acting with its user's role), or a dashboard session cookie, which must also carry its
 * CSRF token (and a same-origin Origin, when the browser sends one) to change anything. Wrong tokens are
 * slowed per client address (GuessBrake; the address per GW_TRUSTED_PROXIES); the right one never is.
 */
export class AdminGuard {
  constructor(
    private readonly token: string | undefined,
    readonly sessions: SessionKeeper | undefined,
    readonly addresses: ClientAddresses,
    private readonly users?: UserAdmin,
    /** GW_PUBLIC_URL: gw's address as browsers reach it, for the links it gives (else the request's origin). */
    readonly publicUrl?: string,
    private readonly brake = new GuessBrake(),
  ) {}

  /**
   * Throws unless the request carries an owner's credential (`withSession`: a session cookie counts too):
   * what is server-wide (/metrics, every org's figures) is an owner's to read (PRODUCT §18).
   */
  async check(request: Request, server: PeerSource | null, withSession = true): Promise<void> {
    authorize(await this.principal(request, server, withSession), 'owner', {})
  }

  /** Who the request's credential stands for; throws 401 (404 without GW_ADMIN_TOKEN) when it stands for nobody. */
  async principal(request: Request, server: PeerSource | null, withSession = true): Promise<Principal> {
    // Without GW_ADMIN_TOKEN the admin API does not exist.
    if (!this.token) throw notFound(`No route for ${request.method} ${new URL(request.url).pathname}`)
    const header = request.headers.get('authorization')
    const sessions = withSession ? this.sessions : undefined
    if (header === null && sessions) {
      const session = await sessions.verify(cookieOf(request, SESSION_COOKIE))
      if (!session) throw unauthorized('Missing admin credential (expected "Authorization: Bearer <GW_ADMIN_TOKEN>")')
      if (request.method !== 'GET' && request.method !== 'HEAD' && (!sameOrigin(request) || !sessions.checkCsrf(session, request.headers.get(CSRF_HEADER))))
        throw new GatewayError(403, 'forbidden', `A change made with a dashboard session needs its ${CSRF_HEADER} header, from the dashboard's own origin`)
      if (session.userId === undefined) return { kind: 'admin-token' }
      const user = await this.users?.get(session.userId)
      if (!user) throw unauthorized('The user of this dashboard session was removed')
      return { kind: 'user', user }
    }
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')
    if (!m) throw unauthorized('Missing admin credential (expected "Authorization: Bearer <GW_ADMIN_TOKEN>")')
    const given = m[1] as string
    if (isAdminTokenShaped(given) && this.users) {
      const users = this.users
      let user: User | undefined
      if (!(await this.brake.attempt(this.addresses.of(request, server), where(request), async () => !!(user = await users.userOfToken(given)))) || !user)
        throw unauthorized('Invalid personal admin token (revoked, or its user was removed)')
      return { kind: 'user', user }
    }
    if (!(await this.tokenMatches(given, request, server))) throw unauthorized('Invalid admin token')
    return { kind: 'admin-token' }
  }

  /** Runs a credential check (a password, a sign-in link) under the same per-client brake as wrong tokens. */
  slowed(request: Request, server: PeerSource | null, check: () => Promise<boolean>): Promise<boolean> {
    return this.brake.attempt(this.addresses.of(request, server), where(request), check)
  }

  /** The user behind a dashboard session, or undefined for the admin token's session (or no users). */
  userOf(id: string | undefined): Promise<User | undefined> {
    return id === undefined || !this.users ? Promise.resolve(undefined) : this.users.get(id)
  }

  /** Whether `given` is the admin token; a wrong one is answered after its client's delay. */
  tokenMatches(given: string, request: Request, server: PeerSource | null): Promise<boolean> {
    const token = this.token
    return this.brake.attempt(this.addresses.of(request, server), where(request), () => token !== undefined && sameSecret(given, token))
  }
}

const where = (request: Request) => `${request.method} ${new URL(request.url).pathname.slice(0, 64)}`

export function json(request: Request, body: unknown, status = 200): Response {
  return new Response(status === 204 ? null : JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json' },
  })
}

const ADMIN_BODY_LIMIT = 1024 * 1024

export const readAdminBody = async (request: Request) => (await readJsonBody(request, ADMIN_BODY_LIMIT)).value

/** For bodies that may be left out entirely (`{name?}`): no body means `{}`. */
async function readOptionalBody(request: Request): Promise<unknown> {
  const hasBody = Number(request.headers.get('content-length') ?? 0) > 0 || request.headers.has('transfer-encoding')
  return hasBody ? readAdminBody(request) : {}
}

const ORG = '/admin/orgs/:org'

/** The admin API's operations: each route's method and path, written once (the routes and the OpenAPI document read them). */
export const ADMIN_OPERATIONS = ownOperations('admin', [
  { id: 'createOrg', method: 'POST', path: '/admin/orgs', summary: 'Create an org', body: OrgBody, answer: CreatedOrg, status: 201, access: 'owner' },
  { id: 'listOrgs', method: 'GET', path: '/admin/orgs', summary: 'List the orgs (those the caller has a role in)', answer: ListOf(OrgSummary, 'OrgList') },
  { id: 'getMe', method: 'GET', path: '/admin/me', summary: 'Who the credential stands for: its role and orgs', answer: AnyObject },
  { id: 'listAudit', method: 'GET', path: '/admin/audit', summary: 'A page of the audit log, newest first (the orgs the caller has a role in)', query: AuditQuery, answer: AnyObject },
  { id: 'createUser', method: 'POST', path: '/admin/users', summary: 'Create a user with a role', body: UserBody, answer: AnyObject, status: 201, access: 'owner' },
  { id: 'listUsers', method: 'GET', path: '/admin/users', summary: 'The users', answer: ListOf(AnyObject, 'UserList'), access: 'owner' },
  { id: 'getUser', method: 'GET', path: '/admin/users/:id', summary: 'A user with its personal admin tokens (never the tokens themselves)', answer: AnyObject, access: 'self' },
  { id: 'patchUser', method: 'PATCH', path: '/admin/users/:id', summary: "Change a user's name, role or orgs", body: UserPatchBody, answer: AnyObject, access: 'owner' },
  { id: 'deleteUser', method: 'DELETE', path: '/admin/users/:id', summary: 'Remove a user (its tokens and sessions end with it)', status: 204, access: 'owner' },
  { id: 'createUserToken', method: 'POST', path: '/admin/users/:id/tokens', summary: 'A personal admin token acting with the user\'s role (shown only here)', body: AdminTokenBody, answer: AnyObject, status: 201, access: 'self' },
  { id: 'revokeUserToken', method: 'DELETE', path: '/admin/users/:id/tokens/:tokenId', summary: 'Revoke one of the user\'s personal admin tokens (401 from its next request on)', status: 204, access: 'self' },
  { id: 'createSignInLink', method: 'POST', path: '/admin/users/:id/sign-in-link', summary: 'A first-sign-in link for the user (works once, for 24 hours; shown only here)', answer: AnyObject, status: 201, access: 'owner' },
  { id: 'setUserPassword', method: 'PUT', path: '/admin/users/:id/password', summary: "Set the user's dashboard password", body: PasswordBody, status: 204, access: 'self' },
  { id: 'getOrg', method: 'GET', path: ORG, summary: 'An org with its policy, provider keys (masked), routes, service keys, signing secrets and OIDC', answer: OrgAnswer },
  { id: 'listServiceKeys', method: 'GET', path: `${ORG}/service-keys`, summary: "The org's service keys (never the keys themselves)", answer: ListOf(AnyObject, 'ServiceKeyList') },
  { id: 'listSigningSecrets', method: 'GET', path: `${ORG}/signing-secrets`, summary: "The org's signing secrets (kids only)", answer: ListOf(AnyObject, 'SigningSecretList') },
  { id: 'listPrompts', method: 'GET', path: `${ORG}/prompts`, summary: "The org's saved prompts", answer: ListOf(PromptAnswer, 'PromptList') },
  { id: 'listOrgLogs', method: 'GET', path: `${ORG}/logs`, summary: "A page of the org's request log, newest first", query: LogQuery, answer: LogPage },
  { id: 'getOrgLog', method: 'GET', path: `${ORG}/logs/:id`, summary: 'One log entry', answer: LogEntryAnswer },
  { id: 'getOrgStats', method: 'GET', path: `${ORG}/stats`, summary: "The org's traffic in time buckets (the dashboard's charts)", query: StatsQuery, answer: StatsAnswer },
  { id: 'getOrgUsage', method: 'GET', path: `${ORG}/usage`, summary: "The org's usage report (PRODUCT §11)", query: UsageQuery, answer: UsageReport },
  { id: 'listRoutes', method: 'GET', path: `${ORG}/routes`, summary: "The org's routes (PRODUCT §13)", answer: ListOf(RouteAnswer, 'RouteList') },
  { id: 'putRoute', method: 'PUT', path: `${ORG}/routes/:name`, summary: 'Create or replace a route', body: RouteBody, answer: RouteAnswer },
  { id: 'deleteRoute', method: 'DELETE', path: `${ORG}/routes/:name`, summary: 'Delete a route', status: 204 },
  { id: 'getBudgets', method: 'GET', path: `${ORG}/budgets`, summary: "The org's budgets with their spend in the current period", answer: ListOf(AnyObject, 'BudgetList') },
  { id: 'putPolicy', method: 'PUT', path: `${ORG}/policy`, summary: "Replace the org's policy", body: PolicyBody, answer: PolicyBody },
  { id: 'putProviderKey', method: 'PUT', path: `${ORG}/providers/:provider`, summary: "Set the org's default key for a provider, or an OpenAI-compatible provider named :provider", body: AnyProviderBody, answer: ProviderKey },
  { id: 'putNamedProviderKey', method: 'PUT', path: `${ORG}/providers/:provider/keys/:name`, summary: 'Set one of several named keys for a provider', body: AnyProviderBody, answer: ProviderKey },
  { id: 'deleteProviderKey', method: 'DELETE', path: `${ORG}/providers/:provider/keys/:name`, summary: 'Delete a named provider key', status: 204 },
  { id: 'createServiceKey', method: 'POST', path: `${ORG}/service-keys`, summary: 'Create a service key (the key is shown only in this answer)', body: ServiceKeyBody, answer: CreatedServiceKey, status: 201 },
  { id: 'revokeServiceKey', method: 'DELETE', path: `${ORG}/service-keys/:id`, summary: 'Revoke a service key', status: 204 },
  { id: 'rotateServiceKey', method: 'POST', path: `${ORG}/service-keys/:id/rotate`, summary: 'A new key with the same name, scopes and limits; the old one works until the grace ends', body: RotateKeyBody, answer: CreatedServiceKey, status: 201 },
  { id: 'addSigningSecret', method: 'POST', path: `${ORG}/signing-secrets`, summary: 'Add a GwSigned signing secret (generated when absent; shown only here)', body: SigningSecretBody, answer: CreatedSigningSecret, status: 201 },
  { id: 'deleteSigningSecret', method: 'DELETE', path: `${ORG}/signing-secrets/:kid`, summary: 'Delete a signing secret', status: 204 },
  { id: 'putOidc', method: 'PUT', path: `${ORG}/oidc`, summary: "Set the org's OIDC issuer for Bearer tokens", body: OidcBody, answer: OidcAnswer },
  { id: 'createPrompt', method: 'POST', path: `${ORG}/prompts`, summary: 'Create a saved prompt', body: PromptBody, answer: CreatedPrompt, status: 201 },
  { id: 'getPrompt', method: 'GET', path: `${ORG}/prompts/:prompt`, summary: 'A prompt with its versions', answer: PromptAnswer },
  { id: 'addPromptVersion', method: 'POST', path: `${ORG}/prompts/:prompt/versions`, summary: 'Add a version to a prompt', body: PromptVersionBody, answer: CreatedPromptVersion, status: 201 },
  { id: 'runPromptAsAdmin', method: 'POST', path: `${ORG}/prompts/:prompt/run`, summary: "Run a prompt as the org (the dashboard's playground)", query: PromptVersionQuery, body: RunBody, answer: ChatCompletionAnswer, streams: true, audited: false },
  { id: 'publishPromptVersion', method: 'POST', path: `${ORG}/prompts/:prompt/versions/:n/publish`, summary: 'Publish a version', answer: PublishedPrompt },
  { id: 'putPartial', method: 'PUT', path: `${ORG}/partials/:name`, summary: 'Create or replace a template partial', body: PartialBody, answer: PartialAnswer },
])

/** An admin operation: what it needs of the caller's role (by default `read` for GET, else `change`), and whether it changes state. */
type AdminOperation = ApiOperation & { access?: Access; audited?: boolean }

/** What an admin handler gets: the call and who makes it. */
export interface AdminCall extends OperationCall {
  principal: Principal
}

/** One handler per declared admin operation, none missing, none extra. */
export type AdminHandlers<Ops extends readonly AdminOperation[]> = { [Id in Ops[number]['id']]: (c: AdminCall) => Response | Promise<Response> }

const accessOf = (op: AdminOperation): Access => op.access ?? (op.method === 'GET' ? 'read' : 'change')

/**
 * The one way into every admin route (docs/architecture.md, "Roles and the audit log"): the credential
 * becomes a principal (401 otherwise), its role is checked against the operation (403 `forbidden`,
 * before the body is read and before anything changes), and the handler runs in a change context
 * naming the actor, request id and client address, so each change it makes appends its audit entry.
 * A change that appended none (an operation whose service code does not record its own) gets one
 * here: the operation's id as action, its path parameters as target, its answer (secrets masked) as after.
 */
export function guarded<const Ops extends readonly AdminOperation[]>(operations: Ops, guard: AdminGuard, admin: AdminService, handlers: AdminHandlers<Ops>): Handlers<Ops> {
  const out: Partial<Record<string, OperationHandler>> = {}
  for (const op of operations) {
    const handle = (handlers as Record<string, (c: AdminCall) => Response | Promise<Response>>)[op.id] as (c: AdminCall) => Response | Promise<Response>
    const changes = op.method !== 'GET' && op.audited !== false
    out[op.id] = async (call) => {
      const c = { ...call, params: call.params ?? {} }
      const principal = await guard.principal(c.request, c.server)
      authorize(principal, accessOf(op), c.params)
      const request = { requestId: requestIdOf(c.request) ?? null, ip: guard.addresses.of(c.request, c.server) }
      return asActor(actorOf(principal), async () => {
        const res = await handle({ ...c, principal })
        if (changes && res.ok && !currentChange()?.recorded) {
          const after = res.status === 204 ? null : await res.clone().json().catch(() => null)
          const target = Object.entries(c.params).filter(([k]) => k !== 'org').map(([k, v]) => `${k}:${v}`).join('/') || op.path
          await admin.audit.record({ action: op.id, org: c.params.org ?? null, target, before: null, after })
        }
        return res
      }, request)
    }
  }
  return out as Handlers<Ops>
}

const org = (c: OperationCall) => c.params.org as string
const query = (c: OperationCall) => new URL(c.request.url).searchParams

export const adminRoutes = (deps: Deps, admin: AdminService, guard: AdminGuard) =>
  operationRoutes(
    'admin-routes',
    ADMIN_OPERATIONS,
    guarded(ADMIN_OPERATIONS, guard, admin, {
      createOrg: async ({ request }) => json(request, await admin.createOrg(await readAdminBody(request)), 201),
      listOrgs: async (c) => {
        const within = orgsOf(c.principal)
        const all = await admin.listOrgs()
        return json(c.request, within ? { data: all.data.filter((o) => within.includes(o.id)) } : all)
      },
      getMe: async (c) => json(c.request, describePrincipal(c.principal)),
      listAudit: async (c) => {
        const q = parseAuditQuery(query(c))
        if (q.org !== undefined) authorize(c.principal, 'read', { org: q.org })
        const within = orgsOf(c.principal)
        return json(c.request, await admin.auditPage({ ...q, ...(within ? { withinOrgs: within } : {}) }))
      },
      createUser: async (c) => json(c.request, await admin.users.create(await readAdminBody(c.request)), 201),
      listUsers: async (c) => json(c.request, await admin.users.list()),
      getUser: async (c) => json(c.request, await admin.users.describe(c.params.id as string)),
      patchUser: async (c) => json(c.request, await admin.users.update(c.params.id as string, await readAdminBody(c.request))),
      deleteUser: async (c) => {
        await admin.users.remove(c.params.id as string)
        return json(c.request, null, 204)
      },
      createUserToken: async (c) => json(c.request, await admin.users.createToken(c.params.id as string, await readOptionalBody(c.request)), 201),
      revokeUserToken: async (c) => {
        await admin.users.revokeToken(c.params.id as string, c.params.tokenId as string)
        return json(c.request, null, 204)
      },
      createSignInLink: async (c) => {
        const { secret, expiresAt } = await admin.users.signInLink(c.params.id as string)
        return json(c.request, { link: `${guard.publicUrl ?? new URL(c.request.url).origin}/ui/#first-sign-in=${secret}`, expiresAt }, 201)
      },
      setUserPassword: async (c) => {
        await admin.users.setPassword(c.params.id as string, await readAdminBody(c.request))
        return json(c.request, null, 204)
      },
      getOrg: async (c) => json(c.request, await admin.describeOrg(org(c))),
      listServiceKeys: async (c) => json(c.request, await admin.listServiceKeys(org(c))),
      listSigningSecrets: async (c) => json(c.request, await admin.listSigningSecrets(org(c))),
      listPrompts: async (c) => json(c.request, await admin.prompts.list(org(c))),
      listOrgLogs: async (c) => {
        await deps.logs.flush()
        return json(c.request, await admin.listLogs(org(c), query(c)))
      },
      getOrgLog: async (c) => json(c.request, deps.logs.pendingEntry(org(c), c.params.id as string) ?? (await admin.getLog(org(c), c.params.id as string))),
      getOrgStats: async (c) => {
        await admin.requireOrg(org(c))
        const q = parseStatsQuery(org(c), query(c))
        await deps.logs.flush()
        return json(c.request, { since: q.since, until: q.until, bucketMs: q.bucketMs, by: q.by, ...(await deps.store.logs.stats(q)) })
      },
      getOrgUsage: async (c) => {
        await deps.logs.flush()
        return json(c.request, await admin.usage(org(c), query(c)))
      },
      listRoutes: async (c) => json(c.request, await admin.listRoutes(org(c))),
      putRoute: async (c) => json(c.request, await admin.putRoute(org(c), c.params.name as string, await readAdminBody(c.request))),
      deleteRoute: async (c) => {
        await admin.deleteRoute(org(c), c.params.name as string)
        return json(c.request, null, 204)
      },
      getBudgets: async (c) => {
        await deps.logs.flush()
        return json(c.request, await admin.budgets(org(c), deps.budgets))
      },
      putPolicy: async (c) => json(c.request, await admin.putPolicy(org(c), await readAdminBody(c.request))),
      putProviderKey: async (c) => json(c.request, await admin.putProvider(org(c), c.params.provider as string, await readAdminBody(c.request))),
      putNamedProviderKey: async (c) =>
        json(c.request, await admin.putProvider(org(c), c.params.provider as string, await readAdminBody(c.request), c.params.name)),
      deleteProviderKey: async (c) => {
        await admin.deleteProviderKey(org(c), c.params.provider as string, c.params.name as string)
        return json(c.request, null, 204)
      },
      createServiceKey: async (c) => json(c.request, await admin.createServiceKey(org(c), await readOptionalBody(c.request)), 201),
      revokeServiceKey: async (c) => {
        await admin.revokeServiceKey(org(c), c.params.id as string)
        return json(c.request, null, 204)
      },
      rotateServiceKey: async (c) => json(c.request, await admin.rotateServiceKey(org(c), c.params.id as string, await readOptionalBody(c.request)), 201),
      addSigningSecret: async (c) => json(c.request, await admin.addSigningSecret(org(c), await readOptionalBody(c.request)), 201),
      deleteSigningSecret: async (c) => {
        await admin.deleteSigningSecret(org(c), c.params.kid as string)
        return json(c.request, null, 204)
      },
      putOidc: async (c) => json(c.request, await admin.putOidc(org(c), await readAdminBody(c.request))),
      createPrompt: async (c) => json(c.request, await admin.prompts.createPrompt(org(c), await readAdminBody(c.request)), 201),
      getPrompt: async (c) => json(c.request, await admin.prompts.describe(org(c), c.params.prompt as string)),
      addPromptVersion: async (c) =>
        json(c.request, await admin.prompts.addVersion(org(c), c.params.prompt as string, await readAdminBody(c.request)), 201),
      runPromptAsAdmin: ({ request, params, server }) =>
        withBody(deps, request, server, {}, (readBody) =>
          runPromptAsAdmin(deps, contextFor(request, '/admin/prompts/run', promptRun), params.org as string, {
            readBody,
            params: { idOrSlug: params.prompt as string },
            url: request.url,
          }),
        ),
      publishPromptVersion: async (c) => json(c.request, await admin.prompts.publish(org(c), c.params.prompt as string, c.params.n as string)),
      putPartial: async (c) => json(c.request, await admin.prompts.putPartial(org(c), c.params.name as string, await readAdminBody(c.request))),
    }),
  )

/** GET /admin/me: who the dashboard or a script is signed in as. */
function describePrincipal(p: Principal) {
  if (p.kind === 'admin-token') return { kind: 'admin-token', role: 'owner', orgs: null }
  return { kind: 'user', id: p.user.id, email: p.user.email, name: p.user.name ?? null, role: p.user.role, orgs: p.user.role === 'owner' ? null : p.user.orgs }
}
