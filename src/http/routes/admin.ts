// The admin API (PRODUCT §6) under /admin, behind `Authorization: Bearer $GW_ADMIN_TOKEN`.

import type { AdminService } from '../../admin/admin-service'
import { GuessBrake } from '../../auth/guess-brake'
import { parseStatsQuery } from '../../admin/stats-query'
import { GatewayError, notFound, unauthorized } from '../../errors'
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
import { type OperationCall, operationRoutes, ownOperations } from '../operation-routes'
import { contextFor, cookieOf, readJsonBody, sameOrigin } from '../request-context'
import { withBody } from './request-body'

/**
 * The admin credential: `Authorization: Bearer $GW_ADMIN_TOKEN`, or a dashboard session cookie, which
 * must also carry its CSRF token (and a same-origin Origin, when the browser sends one) to change anything.
 * Wrong tokens are slowed per client address (GuessBrake; the address per GW_TRUSTED_PROXIES); the
 * right one never is.
 */
export class AdminGuard {
  constructor(
    private readonly token: string | undefined,
    readonly sessions: SessionKeeper | undefined,
    private readonly addresses: ClientAddresses,
    private readonly brake = new GuessBrake(),
  ) {}

  /** Throws unless the request carries the admin credential (`withSession`: a session cookie counts too). */
  async check(request: Request, server: PeerSource | null, withSession = true): Promise<void> {
    // Without GW_ADMIN_TOKEN the admin API does not exist.
    if (!this.token) throw notFound(`No route for ${request.method} ${new URL(request.url).pathname}`)
    const header = request.headers.get('authorization')
    const sessions = withSession ? this.sessions : undefined
    if (header === null && sessions) {
      const session = await sessions.verify(cookieOf(request, SESSION_COOKIE))
      if (!session) throw unauthorized('Missing admin credential (expected "Authorization: Bearer <GW_ADMIN_TOKEN>")')
      if (request.method === 'GET' || request.method === 'HEAD') return
      if (!sameOrigin(request) || !sessions.checkCsrf(session, request.headers.get(CSRF_HEADER)))
        throw new GatewayError(403, 'forbidden', `A change made with a dashboard session needs its ${CSRF_HEADER} header, from the dashboard's own origin`)
      return
    }
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')
    if (!m) throw unauthorized('Missing admin credential (expected "Authorization: Bearer <GW_ADMIN_TOKEN>")')
    if (!(await this.tokenMatches(m[1] as string, request, server))) throw unauthorized('Invalid admin token')
  }

  /** Whether `given` is the admin token; a wrong one is answered after its client's delay. */
  tokenMatches(given: string, request: Request, server: PeerSource | null): Promise<boolean> {
    const token = this.token
    const where = `${request.method} ${new URL(request.url).pathname.slice(0, 64)}`
    return this.brake.attempt(this.addresses.of(request, server), where, () => token !== undefined && sameSecret(given, token))
  }
}

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
  { id: 'createOrg', method: 'POST', path: '/admin/orgs', summary: 'Create an org', body: OrgBody, answer: CreatedOrg, status: 201 },
  { id: 'listOrgs', method: 'GET', path: '/admin/orgs', summary: 'List the orgs', answer: ListOf(OrgSummary, 'OrgList') },
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
  { id: 'addSigningSecret', method: 'POST', path: `${ORG}/signing-secrets`, summary: 'Add a GwSigned signing secret (generated when absent; shown only here)', body: SigningSecretBody, answer: CreatedSigningSecret, status: 201 },
  { id: 'deleteSigningSecret', method: 'DELETE', path: `${ORG}/signing-secrets/:kid`, summary: 'Delete a signing secret', status: 204 },
  { id: 'putOidc', method: 'PUT', path: `${ORG}/oidc`, summary: "Set the org's OIDC issuer for Bearer tokens", body: OidcBody, answer: OidcAnswer },
  { id: 'createPrompt', method: 'POST', path: `${ORG}/prompts`, summary: 'Create a saved prompt', body: PromptBody, answer: CreatedPrompt, status: 201 },
  { id: 'getPrompt', method: 'GET', path: `${ORG}/prompts/:prompt`, summary: 'A prompt with its versions', answer: PromptAnswer },
  { id: 'addPromptVersion', method: 'POST', path: `${ORG}/prompts/:prompt/versions`, summary: 'Add a version to a prompt', body: PromptVersionBody, answer: CreatedPromptVersion, status: 201 },
  { id: 'runPromptAsAdmin', method: 'POST', path: `${ORG}/prompts/:prompt/run`, summary: "Run a prompt as the org (the dashboard's playground)", query: PromptVersionQuery, body: RunBody, answer: ChatCompletionAnswer, streams: true },
  { id: 'publishPromptVersion', method: 'POST', path: `${ORG}/prompts/:prompt/versions/:n/publish`, summary: 'Publish a version', answer: PublishedPrompt },
  { id: 'putPartial', method: 'PUT', path: `${ORG}/partials/:name`, summary: 'Create or replace a template partial', body: PartialBody, answer: PartialAnswer },
])

const org = (c: OperationCall) => c.params.org as string
const query = (c: OperationCall) => new URL(c.request.url).searchParams

export const adminRoutes = (deps: Deps, admin: AdminService, guard: AdminGuard) =>
  operationRoutes(
    'admin-routes',
    ADMIN_OPERATIONS,
    {
      createOrg: async ({ request }) => json(request, await admin.createOrg(await readAdminBody(request)), 201),
      listOrgs: async ({ request }) => json(request, await admin.listOrgs()),
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
            query: new URL(request.url).searchParams,
          }),
        ),
      publishPromptVersion: async (c) => json(c.request, await admin.prompts.publish(org(c), c.params.prompt as string, c.params.n as string)),
      putPartial: async (c) => json(c.request, await admin.prompts.putPartial(org(c), c.params.name as string, await readAdminBody(c.request))),
    },
    ({ request, server }) => guard.check(request, server),
  )
