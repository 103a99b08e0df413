// The admin API (PRODUCT §6) under /admin, behind `Authorization: Bearer $GW_ADMIN_TOKEN`.

import { Elysia } from 'elysia'
import type { AdminService } from '../../admin/admin-service'
import { GuessBrake } from '../../auth/guess-brake'
import { parseStatsQuery } from '../../admin/stats-query'
import { GatewayError, notFound, unauthorized } from '../../errors'
import { handleAdminPromptRun } from '../../pipeline'
import type { Deps } from '../../pipeline/context'
import { CSRF_HEADER, SESSION_COOKIE, type SessionKeeper, sameSecret } from '../../ui/session'
import type { ClientAddresses, PeerSource } from '../client-address'
import { contextFor, cookieOf, readJsonBody, requestIdOf, sameOrigin } from '../request-context'
import { withBody } from './pipeline-post'

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
    headers: { 'content-type': 'application/json', 'x-gw-request-id': requestIdOf(request) ?? '' },
  })
}

const ADMIN_BODY_LIMIT = 1024 * 1024

export const readAdminBody = async (request: Request) => (await readJsonBody(request, ADMIN_BODY_LIMIT)).value

/** For bodies that may be left out entirely (`{name?}`): no body means `{}`. */
async function readOptionalBody(request: Request): Promise<unknown> {
  const hasBody = Number(request.headers.get('content-length') ?? 0) > 0 || request.headers.has('transfer-encoding')
  return hasBody ? readAdminBody(request) : {}
}

export const adminRoutes = (deps: Deps, admin: AdminService, guard: AdminGuard) =>
  new Elysia({ name: 'admin-routes', prefix: '/admin' })
    .onBeforeHandle(({ request, server }) => guard.check(request, server))
    .post('/orgs', async ({ request }) => json(request, await admin.createOrg(await readAdminBody(request)), 201), {
      parse: 'none',
    })
    .get('/orgs', async ({ request }) => json(request, await admin.listOrgs()))
    .get('/orgs/:org', async ({ request, params }) => json(request, await admin.describeOrg(params.org)))
    .get('/orgs/:org/service-keys', async ({ request, params }) => json(request, await admin.listServiceKeys(params.org)))
    .get('/orgs/:org/signing-secrets', async ({ request, params }) => json(request, await admin.listSigningSecrets(params.org)))
    .get('/orgs/:org/prompts', async ({ request, params }) => json(request, await admin.prompts.list(params.org)))
    .get('/orgs/:org/logs', async ({ request, params }) => {
      await deps.logs.flush()
      return json(request, await admin.listLogs(params.org, new URL(request.url).searchParams))
    })
    .get('/orgs/:org/logs/:id', async ({ request, params }) =>
      json(request, deps.logs.pendingEntry(params.org, params.id) ?? (await admin.getLog(params.org, params.id))),
    )
    .get('/orgs/:org/stats', async ({ request, params }) => {
      await admin.requireOrg(params.org)
      const q = parseStatsQuery(params.org, new URL(request.url).searchParams)
      await deps.logs.flush()
      return json(request, { since: q.since, until: q.until, bucketMs: q.bucketMs, by: q.by, ...(await deps.store.logs.stats(q)) })
    })
    .get('/orgs/:org/usage', async ({ request, params }) => {
      await deps.logs.flush()
      return json(request, await admin.usage(params.org, new URL(request.url).searchParams))
    })
    .get('/orgs/:org/routes', async ({ request, params }) => json(request, await admin.listRoutes(params.org)))
    .put(
      '/orgs/:org/routes/:name',
      async ({ request, params }) => json(request, await admin.putRoute(params.org, params.name, await readAdminBody(request))),
      { parse: 'none' },
    )
    .delete('/orgs/:org/routes/:name', async ({ request, params }) => {
      await admin.deleteRoute(params.org, params.name)
      return json(request, null, 204)
    })
    .get('/orgs/:org/budgets', async ({ request, params }) => {
      await deps.logs.flush()
      return json(request, await admin.budgets(params.org, deps.budgets))
    })
    .put(
      '/orgs/:org/policy',
      async ({ request, params }) => json(request, await admin.putPolicy(params.org, await readAdminBody(request))),
      { parse: 'none' },
    )
    .put(
      '/orgs/:org/providers/:provider',
      async ({ request, params }) =>
        json(request, await admin.putProvider(params.org, params.provider, await readAdminBody(request))),
      { parse: 'none' },
    )
    .put(
      '/orgs/:org/providers/:provider/keys/:name',
      async ({ request, params }) =>
        json(request, await admin.putProvider(params.org, params.provider, await readAdminBody(request), params.name)),
      { parse: 'none' },
    )
    .delete('/orgs/:org/providers/:provider/keys/:name', async ({ request, params }) => {
      await admin.deleteProviderKey(params.org, params.provider, params.name)
      return json(request, null, 204)
    })
    .post(
      '/orgs/:org/service-keys',
      async ({ request, params }) =>
        json(request, await admin.createServiceKey(params.org, await readOptionalBody(request)), 201),
      { parse: 'none' },
    )
    .delete('/orgs/:org/service-keys/:id', async ({ request, params }) => {
      await admin.revokeServiceKey(params.org, params.id)
      return json(request, null, 204)
    })
    .post(
      '/orgs/:org/signing-secrets',
      async ({ request, params }) =>
        json(request, await admin.addSigningSecret(params.org, await readOptionalBody(request)), 201),
      { parse: 'none' },
    )
    .delete('/orgs/:org/signing-secrets/:kid', async ({ request, params }) => {
      await admin.deleteSigningSecret(params.org, params.kid)
      return json(request, null, 204)
    })
    .put(
      '/orgs/:org/oidc',
      async ({ request, params }) => json(request, await admin.putOidc(params.org, await readAdminBody(request))),
      { parse: 'none' },
    )
    .post(
      '/orgs/:org/prompts',
      async ({ request, params }) => json(request, await admin.prompts.createPrompt(params.org, await readAdminBody(request)), 201),
      { parse: 'none' },
    )
    .get('/orgs/:org/prompts/:prompt', async ({ request, params }) =>
      json(request, await admin.prompts.describe(params.org, params.prompt)),
    )
    .post(
      '/orgs/:org/prompts/:prompt/versions',
      async ({ request, params }) =>
        json(request, await admin.prompts.addVersion(params.org, params.prompt, await readAdminBody(request)), 201),
      { parse: 'none' },
    )
    .post(
      '/orgs/:org/prompts/:prompt/run',
      ({ request, params, server }) =>
        withBody(deps, request, server, {}, (readBody) =>
          handleAdminPromptRun(
            deps,
            contextFor(request, '/admin/prompts/run'),
            params.org,
            params.prompt,
            new URL(request.url).searchParams.get('version'),
            readBody,
          ),
        ),
      { parse: 'none' },
    )
    .post('/orgs/:org/prompts/:prompt/versions/:n/publish', async ({ request, params }) =>
      json(request, await admin.prompts.publish(params.org, params.prompt, params.n)),
    )
    .put(
      '/orgs/:org/partials/:name',
      async ({ request, params }) => json(request, await admin.prompts.putPartial(params.org, params.name, await readAdminBody(request))),
      { parse: 'none' },
    )
