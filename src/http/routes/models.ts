// GET /v1/models: the catalog models the caller's org can use, in OpenAI's list format.

import { Elysia } from 'elysia'
import { authenticateRequest } from '../../pipeline'
import type { Deps } from '../../pipeline/context'
import { modelUnavailable } from '../../policy/model-access'
import { PROVIDER_IDS } from '../../providers/provider-id'
import { contextFor } from '../request-context'

export const modelRoutes = (deps: Deps) =>
  new Elysia({ name: 'model-routes' }).get('/v1/models', async ({ request }) => {
    const ctx = await authenticateRequest(deps, contextFor(request, '/v1/models'))
    const org = ctx.org
    const data = []
    for (const provider of PROVIDER_IDS)
      for (const m of deps.catalog.list(provider)) {
        const ref = { provider, id: m.id, name: m.name }
        if (!modelUnavailable(org, ref)) data.push({ id: ref.name, object: 'model', created: 0, owned_by: provider })
      }
    return new Response(JSON.stringify({ object: 'list', data }), {
      headers: { 'content-type': 'application/json', 'x-gw-request-id': ctx.requestId, 'x-gw-auth-mode': ctx.identity.authMode },
    })
  })
