// The admin API (PRODUCT §6) under /admin, behind `Authorization: Bearer $GW_ADMIN_TOKEN`.

import { timingSafeEqual } from 'node:crypto'
import { Elysia } from 'elysia'
import type { AdminService } from '../../admin/admin-service'
import { notFound, unauthorized } from '../../errors'
import type { Deps } from '../../pipeline/context'
import { readJsonBody, requestIdOf } from '../request-context'

export function checkAdmin(token: string | undefined, request: Request): void {
  // Without GW_ADMIN_TOKEN the admin API does not exist.
  if (!token) throw notFound(`No route for ${request.method} ${new URL(request.url).pathname}`)
  const m = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get('authorization') ?? '')
  if (!m) throw unauthorized('Missing admin credential (expected "Authorization: Bearer <GW_ADMIN_TOKEN>")')
  const given = Buffer.from(m[1] as string)
  const want = Buffer.from(token)
  if (given.length !== want.length || !timingSafeEqual(given, want)) throw unauthorized('Invalid admin token')
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

export const adminRoutes = (deps: Deps, admin: AdminService) =>
  new Elysia({ name: 'admin-routes', prefix: '/admin' })
    .onBeforeHandle(({ request }) => checkAdmin(deps.config.adminToken, request))
    .post('/orgs', async ({ request }) => json(request, await admin.createOrg(await readAdminBody(request)), 201), {
      parse: 'none',
    })
    .get('/orgs/:org', async ({ request, params }) => json(request, await admin.describeOrg(params.org)))
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
    .post('/orgs/:org/prompts/:prompt/versions/:n/publish', async ({ request, params }) =>
      json(request, await admin.prompts.publish(params.org, params.prompt, params.n)),
    )
    .put(
      '/orgs/:org/partials/:name',
      async ({ request, params }) => json(request, await admin.prompts.putPartial(params.org, params.name, await readAdminBody(request))),
      { parse: 'none' },
    )
